//! `resources/read`. A missing resource is -32002 on the handshake era and -32602 on
//! 2026-07-28, with the URI in `data` either way.

use super::{Call, finish, input, input_failed, required_str};
use crate::jsonrpc::{RpcError, code};
use crate::layer::LayerError;
use serde_json::{Value, json};

pub(super) async fn read(call: &Call<'_>) -> Result<Value, RpcError> {
    let uri = required_str(call, "uri")?;
    let layer = call.server().layer();
    let invoke = |cx| async move { layer.read_resource(uri, &cx).await };
    let fail = |e| match e {
        LayerError::NotFound(message) => {
            let code = if call.modern() { code::INVALID_PARAMS } else { code::RESOURCE_NOT_FOUND };
            RpcError::new(code, message).with_data(json!({"uri": uri}))
        }
        e => e.to_rpc(),
    };
    let done = input::run(call, uri, &Value::Null, invoke, fail).await?;
    finish(done, |contents| json!({"contents": contents}), input_failed)
}
