//! Change subscriptions: `resources/subscribe` and `resources/unsubscribe` on a
//! handshake-era session, `subscriptions/listen` streams on 2026-07-28 (which may also
//! follow the caller's tasks, with the tasks extension).

use super::Call;
use crate::protocol::listen::Filter;
use crate::protocol::render::Empty;
use crate::protocol::tasks::{self, TaskRecord};
use duet_wire::jsonrpc::{Rendered, RpcError};
use duet_wire::params::{ListenParams, ResourceParams, decode};
use serde_json::{Map, Value};

/// Subscribes the session to a URI's updates (`on`) or unsubscribes it, within the server's
/// bounds (so many subscriptions a session, URIs so long). A stateless request has no
/// session to deliver updates to: it is answered and changes nothing.
pub(super) fn subscribe(call: &Call<'_>, params: Map<String, Value>, on: bool) -> Result<Rendered, RpcError> {
    let ResourceParams { uri } = decode(params)?;
    let uri = call.found.named(uri);
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

pub(super) async fn listen(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let Some(notify) = &call.notify else {
        return Err(RpcError::invalid_request("subscriptions/listen needs a stream to deliver notifications on"));
    };
    let ListenParams { notifications } = decode(params)?;
    let filter = Filter::parse(&notifications, call.shared.options.subscription_bounds())?;
    let tasks = followed(call, notifications.task_ids.unwrap_or_default()).await?;
    let own_meta = call.shared.listens.run(&call.id, call.principal.clone(), filter, tasks, notify).await?;
    call.complete(Empty {}, Some(&own_meta))
}

/// The tasks a listen request asks to follow (`notifications.taskIds`, `ids`) that are the
/// caller's: the others are left out of the acknowledgement.
async fn followed(call: &Call<'_>, ids: Vec<Value>) -> Result<Vec<TaskRecord>, RpcError> {
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
