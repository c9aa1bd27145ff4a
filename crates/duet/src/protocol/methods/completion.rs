//! `completion/complete`: completes a prompt argument or a template variable.

use super::Call;
use super::prompts::string_arguments;
use crate::layer::{Completion, CompletionArg, CompletionRef};
use duet_wire::jsonrpc::{Rendered, RpcError};
use serde::Serialize;
use serde_json::Value;

#[derive(Serialize)]
struct CompleteResult {
    completion: Completion,
}

pub(super) async fn complete(call: &Call<'_>) -> Result<Rendered, RpcError> {
    let reference =
        parse_ref(call.params.get("ref")).ok_or_else(|| RpcError::invalid_params("Invalid completion ref"))?;
    let argument = call.params.get("argument").and_then(Value::as_object);
    let Some(Value::String(name)) = argument.and_then(|a| a.get("name")) else {
        return Err(RpcError::invalid_params("Invalid completion argument"));
    };
    let value = match argument.and_then(|a| a.get("value")) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(v)) => v.clone(),
        Some(_) => return Err(RpcError::invalid_params("Invalid completion argument")),
    };
    let context = string_arguments(call.params.get("context").and_then(|c| c.get("arguments")))?;
    let arg = CompletionArg { name: name.clone(), value, context };
    let completion = call.shared.layer.complete(reference, arg, call.request_cx()).await.map_err(|e| e.to_rpc())?;
    call.complete(CompleteResult { completion }, None)
}

fn parse_ref(value: Option<&Value>) -> Option<CompletionRef> {
    let r = value?.as_object()?;
    let field = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
    match r.get("type")?.as_str()? {
        "ref/prompt" => Some(CompletionRef::Prompt { name: field("name")? }),
        "ref/resource" => Some(CompletionRef::Resource { uri: field("uri")? }),
        _ => None,
    }
}
