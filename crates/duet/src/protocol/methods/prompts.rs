//! `prompts/get`: arguments are strings (numbers and booleans are accepted as their text).

use super::input::Echoed;
use super::{Call, input};
use crate::layer::PromptResult;
use crate::protocol::render;
use duet_wire::jsonrpc::{Rendered, RpcError};
use duet_wire::params::{GetPromptParams, decode};
use serde_json::{Map, Value};

pub(super) async fn get(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let GetPromptParams { name, arguments: args, input_responses, request_state } = decode(params)?;
    let name = call.found.named(name);
    let args = args.unwrap_or_default();
    let arguments = serde_json::to_value(&args).unwrap_or(Value::Null);
    let echoed = Echoed { responses: input_responses, state: request_state };
    let layer = &call.shared.layer;
    let invoke = |cx| layer.get_prompt(name, args.clone(), cx);
    let finish = |done: Result<PromptResult, String>| {
        call.found.ran(false);
        let result = done.map_err(super::input_failed)?;
        call.complete(render::prompt_result(&result, call.version()), None)
    };
    input::run(call, name, &arguments, echoed, invoke, |e| e.to_rpc(), finish).await
}
