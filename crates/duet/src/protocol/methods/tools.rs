//! `tools/call`: validates the request, runs the tool, and shapes its result for the
//! client's version. Only an unknown tool is a protocol error.

use super::{Call, input, required_str};
use crate::jsonrpc::{Rendered, RpcError};
use crate::layer::{LayerError, ToolResult};
use crate::protocol::wire;
use serde_json::{Map, Value, json};

pub(super) async fn call(call: &Call<'_>) -> Result<Rendered, RpcError> {
    let name = required_str(call, "name")?;
    let none = Value::Object(Map::new());
    let arguments = match call.params.get("arguments") {
        None | Some(Value::Null) => &none,
        Some(object @ Value::Object(_)) => object,
        Some(_) => return Err(RpcError::invalid_params("arguments must be an object")),
    };
    let layer = &call.shared.layer;
    let invoke = |cx| layer.call_tool(name, arguments.as_object().cloned().unwrap_or_default(), cx);
    let fail = |e| match e {
        LayerError::NotFound(_) => {
            RpcError::invalid_params(format!("Unknown tool: {name}")).with_data(json!({"name": name}))
        }
        e => e.to_rpc(),
    };
    // A tool that could not get its input fails as a tool: the model can act on that.
    let finish = |done: Result<ToolResult, String>| {
        let result = done.unwrap_or_else(ToolResult::error);
        call.found.ran(result.is_error);
        call.complete(wire::tool_result(&result, call.version()), result.meta.as_ref())
    };
    input::run(call, name, arguments, invoke, fail, finish).await
}
