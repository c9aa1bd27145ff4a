//! `completion/complete`: completes a prompt argument or a template variable.

use super::Call;
use crate::layer::{Completion, CompletionArg, CompletionRef};
use duet_wire::jsonrpc::{Rendered, RpcError};
use duet_wire::params::{CompleteParams, CompletionReference, decode};
use serde::Serialize;
use serde_json::{Map, Value};

#[derive(Serialize)]
struct CompleteResult {
    completion: Completion,
}

pub(super) async fn complete(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let CompleteParams { reference, argument, context } = decode(params)?;
    let reference = match reference {
        CompletionReference::Prompt { name } => CompletionRef::Prompt { name },
        CompletionReference::Resource { uri } => CompletionRef::Resource { uri },
    };
    let context = context.and_then(|c| c.arguments).unwrap_or_default();
    let arg = CompletionArg { name: argument.name, value: argument.value.unwrap_or_default(), context };
    let completion = call.shared.layer.complete(reference, arg, call.request_cx()).await.map_err(|e| e.to_rpc())?;
    call.complete(CompleteResult { completion }, None)
}
