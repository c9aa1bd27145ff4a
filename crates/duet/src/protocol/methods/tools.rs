//! `tools/call`: validates the request, runs the tool (on as a task when the tool and the
//! client allow it, see `as_task`), and shapes its result for the client's version. Only
//! an unknown tool is a protocol error.

use super::{Call, as_task, input, required_str, tool_failure};
use crate::layer::ToolResult;
use crate::protocol::render;
use duet_wire::jsonrpc::{Rendered, RpcError};
use serde_json::{Map, Value};

pub(super) async fn call(call: &Call<'_>) -> Result<Rendered, RpcError> {
    let name = required_str(call, "name")?;
    let none = Value::Object(Map::new());
    let arguments = match call.params.get("arguments") {
        None | Some(Value::Null) => &none,
        Some(object @ Value::Object(_)) => object,
        Some(_) => return Err(RpcError::invalid_params("arguments must be an object")),
    };
    let layer = &call.shared.layer;
    if let Some(way) = as_task::way(call, name, layer.task_support(name, &call.principal))? {
        return as_task::run(call, name, arguments, way).await;
    }
    let invoke = |cx| layer.call_tool(name, arguments.as_object().cloned().unwrap_or_default(), cx);
    // A tool that could not get its input fails as a tool: the model can act on that.
    let finish = |done: Result<ToolResult, String>| {
        let result = done.unwrap_or_else(ToolResult::error);
        call.found.ran(result.is_error);
        call.complete(render::tool_result(&result, call.version()), result.meta.as_ref())
    };
    input::run(call, name, arguments, invoke, |e| tool_failure(name, e), finish).await
}
