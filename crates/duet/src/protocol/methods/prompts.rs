//! `prompts/get`: arguments are strings (numbers and booleans are accepted as their text).

use super::{Call, input, required_str};
use crate::layer::PromptResult;
use crate::protocol::render;
use duet_wire::jsonrpc::{Rendered, RpcError};
use serde_json::Value;
use std::collections::BTreeMap;

pub(super) async fn get(call: &Call<'_>) -> Result<Rendered, RpcError> {
    let name = required_str(call, "name")?;
    let args = string_arguments(call.params.get("arguments"))?;
    let arguments = serde_json::to_value(&args).unwrap_or(Value::Null);
    let layer = &call.shared.layer;
    let invoke = |cx| layer.get_prompt(name, args.clone(), cx);
    let finish = |done: Result<PromptResult, String>| {
        call.found.ran(false);
        let result = done.map_err(super::input_failed)?;
        call.complete(render::prompt_result(&result, call.version()), None)
    };
    input::run(call, name, &arguments, invoke, |e| e.to_rpc(), finish).await
}

/// Reads an `arguments` object whose values are strings (or scalars written as strings).
pub(super) fn string_arguments(value: Option<&Value>) -> Result<BTreeMap<String, String>, RpcError> {
    let map = match value {
        None | Some(Value::Null) => return Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(RpcError::invalid_params("arguments must be an object")),
    };
    map.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            Value::Number(_) | Value::Bool(_) => Ok((k.clone(), v.to_string())),
            _ => Err(RpcError::invalid_params(format!("argument {k:?} must be a string"))),
        })
        .collect()
}
