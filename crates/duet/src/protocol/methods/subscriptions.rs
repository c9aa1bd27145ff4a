//! Change subscriptions: `resources/subscribe` and `resources/unsubscribe` on a
//! handshake-era session, `subscriptions/listen` streams on 2026-07-28.

use super::{Call, required_str};
use crate::jsonrpc::{Rendered, RpcError};
use crate::protocol::wire::Empty;

/// Subscribes the session to a URI's updates (`on`) or unsubscribes it. A stateless request
/// has no session to deliver updates to: it is answered and changes nothing.
pub(super) fn subscribe(call: &Call<'_>, on: bool) -> Result<Rendered, RpcError> {
    let uri = required_str(call, "uri")?;
    if let Some(session) = call.session {
        let mut state = session.state();
        if on {
            state.subscriptions.insert(uri.to_string());
        } else {
            state.subscriptions.remove(uri);
        }
    }
    call.complete(Empty {}, None)
}

pub(super) async fn listen(call: &Call<'_>) -> Result<Rendered, RpcError> {
    let Some(notify) = &call.notify else {
        return Err(RpcError::invalid_request("subscriptions/listen needs a stream to deliver notifications on"));
    };
    let own_meta = call.shared.listens.run(&call.id, &call.params, notify).await?;
    call.complete(Empty {}, Some(&own_meta))
}
