//! `resources/read`. A missing resource is -32002 on the handshake era and -32602 on
//! 2026-07-28, with the URI in `data` either way.

use super::{Call, render, required_str};
use crate::jsonrpc::{RpcError, code};
use crate::layer::LayerError;
use serde_json::{Value, json};

pub(super) async fn read(call: &Call<'_>) -> Result<Value, RpcError> {
    let uri = required_str(call, "uri")?;
    let cx = call.request_cx();
    match call.server().layer().read_resource(uri, &cx).await {
        Ok(reply) => render(call, reply, |contents| json!({"contents": contents})),
        Err(LayerError::NotFound(message)) => {
            let code = if call.modern() { code::INVALID_PARAMS } else { code::RESOURCE_NOT_FOUND };
            Err(RpcError::new(code, message).with_data(json!({"uri": uri})))
        }
        Err(e) => Err(e.to_rpc()),
    }
}
