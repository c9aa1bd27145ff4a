//! Change subscriptions of both eras: `resources/subscribe` and `resources/unsubscribe` on a
//! handshake-era session, `subscriptions/listen` streams on 2026-07-28.

use super::{Call, required_str};
use crate::jsonrpc::RpcError;
use serde_json::{Map, Value};

pub(super) fn subscribe(call: &Call<'_>, on: bool) -> Result<Value, RpcError> {
    let uri = required_str(call, "uri")?.to_string();
    let mut state = call.session.state();
    if on {
        state.subscriptions.insert(uri);
    } else {
        state.subscriptions.remove(&uri);
    }
    Ok(Value::Object(Map::new()))
}

pub(super) async fn listen(call: &Call<'_>) -> Result<Value, RpcError> {
    let Some(notify) = &call.notify else {
        return Err(RpcError::invalid_request("subscriptions/listen needs a stream to deliver notifications on"));
    };
    call.server().shared.listens.run(&call.id, &call.params, notify).await
}
