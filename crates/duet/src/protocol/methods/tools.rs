//! `tools/call`: validates the request, runs the tool, and shapes its result for the
//! client's version. Only an unknown tool is a protocol error.

use super::{Call, render, required_str};
use crate::jsonrpc::RpcError;
use crate::layer::LayerError;
use crate::protocol::shape;
use serde_json::{Map, Value, json};

pub(super) async fn call(call: &Call<'_>) -> Result<Value, RpcError> {
    let name = required_str(call, "name")?;
    let args = match call.params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(a)) => a.clone(),
        Some(_) => return Err(RpcError::invalid_params("arguments must be an object")),
    };
    let cx = call.request_cx();
    match call.server().layer().call_tool(name, args, &cx).await {
        Ok(reply) => render(call, reply, |r| shape::tool_result(r, call.version)),
        Err(LayerError::NotFound(_)) => {
            Err(RpcError::invalid_params(format!("Unknown tool: {name}")).with_data(json!({"name": name})))
        }
        Err(e) => Err(e.to_rpc()),
    }
}
