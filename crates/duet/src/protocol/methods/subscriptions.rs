//! Change subscriptions: `resources/subscribe` and `resources/unsubscribe` on a
//! handshake-era session, `subscriptions/listen` streams on 2026-07-28 (which may also
//! follow the caller's tasks, with the tasks extension).

use super::{Call, required_str};
use crate::protocol::listen::Filter;
use crate::protocol::render::Empty;
use crate::protocol::tasks::{self, TaskRecord};
use duet_wire::jsonrpc::{Rendered, RpcError};
use serde_json::Value;

/// Tasks one listen stream may follow.
const MAX_FOLLOWED: usize = 100;

/// Subscribes the session to a URI's updates (`on`) or unsubscribes it, within the server's
/// bounds (so many subscriptions a session, URIs so long). A stateless request has no
/// session to deliver updates to: it is answered and changes nothing.
pub(super) fn subscribe(call: &Call<'_>, on: bool) -> Result<Rendered, RpcError> {
    let uri = required_str(call, "uri")?;
    if let Some(session) = call.session {
        let mut state = session.state();
        if on {
            state.subscriptions.insert(uri, call.shared.options.subscription_bounds())?;
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
    let filter = Filter::parse(&call.params, call.shared.options.subscription_bounds())?;
    let tasks = followed(call).await?;
    let own_meta = call.shared.listens.run(&call.id, call.principal.clone(), filter, tasks, notify).await?;
    call.complete(Empty {}, Some(&own_meta))
}

/// The tasks a listen request asks to follow (`notifications.taskIds`) that are the
/// caller's: the others are left out of the acknowledgement.
async fn followed(call: &Call<'_>) -> Result<Vec<TaskRecord>, RpcError> {
    let asked = call.params.get("notifications").and_then(|n| n.get("taskIds"));
    let ids = match asked {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(ids)) if ids.len() <= MAX_FOLLOWED => ids,
        Some(_) => {
            let why = format!("notifications.taskIds must be an array of at most {MAX_FOLLOWED} task ids");
            return Err(RpcError::invalid_params(why));
        }
    };
    if !ids.is_empty() && !tasks::declared(&call.terms.client_capabilities) {
        return Err(tasks::extension_required("following tasks on subscriptions/listen"));
    }
    let mut records = Vec::with_capacity(ids.len());
    for id in ids.iter().filter_map(Value::as_str) {
        if let Some(record) = call.shared.tasks.read(id, &call.principal).await? {
            records.push(record);
        }
    }
    Ok(records)
}
