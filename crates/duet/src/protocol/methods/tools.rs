//! `tools/call`: validates the request, runs the tool (on as a task when the tool and the
//! client allow it, see `as_task`), and shapes its result for the client's version. Only
//! an unknown tool is a protocol error.

use super::input::Echoed;
use super::{Call, as_task, input, tool_failure};
use crate::layer::ToolResult;
use crate::protocol::render;
use duet_wire::jsonrpc::{Rendered, RpcError};
use duet_wire::params::{CallToolParams, decode};
use serde_json::{Map, Value};

pub(super) async fn call(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let CallToolParams { name, arguments, task, input_responses, request_state } = decode(params)?;
    let name = call.found.named(name);
    // Moved, not copied: the request's own object, which each run of the handler copies.
    let arguments = Value::Object(arguments.unwrap_or_default());
    let echoed = Echoed { responses: input_responses, state: request_state };
    let layer = &call.shared.layer;
    if let Some(way) = as_task::way(call, name, layer.task_support(name, &call.principal), task.as_ref())? {
        return as_task::run(call, name, &arguments, echoed, way).await;
    }
    let invoke = |cx| layer.call_tool(name, arguments.as_object().cloned().unwrap_or_default(), cx);
    // A tool that could not get its input fails as a tool: the model can act on that.
    let finish = |done: Result<ToolResult, String>| {
        let result = done.unwrap_or_else(ToolResult::error);
        call.found.ran(result.is_error);
        call.complete(render::tool_result(&result, call.version()), result.meta.as_ref())
    };
    input::run(call, name, &arguments, echoed, invoke, |e| tool_failure(name, e), finish).await
}
