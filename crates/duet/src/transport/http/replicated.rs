//! Handshake-era Streamable HTTP sessions across replicas. The replica that answers a
//! session's `initialize` writes the session's record (its principal and
//! [`SessionSnapshot`]) to the backplane's keys; a replica that gets a request for a
//! session it does not hold adopts a copy from the record. What changes the state
//! (`notifications/initialized`, `logging/setLevel`, subscriptions, the count of the
//! client's root changes) is laid over the record by compare-and-swap, so requests of one
//! session handled at once on two replicas never undo each other, and published, so every
//! copy takes it on; each write counts a revision, and a copy never takes an older one.
//! `DELETE` removes the record and ends every copy.
//! A client's answer to a question duet asked, or its cancellation of a request, reaches
//! the replica the question or request belongs to over the bus. Behind one replica all of
//! this is the in-memory backplane doing the same.

use super::answers::http_error;
use super::body::Body;
use super::resume::StreamName;
use super::sessions::{HttpSession, Kind};
use super::shared::HttpShared;
use crate::backplane::{Event, GetStream, Joined, Published, Routed, SWAP_ATTEMPTS, StoreError};
use crate::layer::Principal;
use crate::protocol::SessionSnapshot;
use duet_wire::jsonrpc::RequestId;
use duet_wire::message::{Incoming, Message};
use duet_wire::method::Method;
use http::{Response, StatusCode};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// What the backplane keeps of one session.
#[derive(Serialize, Deserialize)]
struct Record {
    principal: String,
    state: SessionSnapshot,
    #[serde(flatten)]
    stream: GetStream,
    /// How many times the record was written.
    #[serde(default)]
    revision: u64,
}

fn record_key(id: &str) -> String {
    format!("session:{id}")
}

/// The roster of every session of the server.
const ALL_SESSIONS: &str = "sessions";

/// The roster of the sessions of principal `id`.
fn roster_of(principal: &str) -> String {
    format!("sessions-of:{principal}")
}

/// Where the id of the last event the session's GET streams sent is kept.
pub(super) fn cursor_key(id: &str) -> String {
    format!("session-cursor:{id}")
}

/// The session `id` of `principal`: the copy here, brought up to date from the backplane's
/// record, else one adopted from it. `Ok(None)` when there is no such session (or it is
/// another principal's, or `id` is not of the form session ids have: then the store is not
/// asked); a store that cannot say is a 503, never taken for "no session",
/// unless a copy is here, which then serves as it is. With an immediate backplane (one
/// process) the copy here is current and the record is not read.
pub(super) async fn find(
    shared: &Arc<HttpShared>,
    id: &str,
    principal: &Principal,
) -> Result<Option<Arc<HttpSession>>, Response<Body>> {
    if !crate::client_ids::well_formed(id) {
        return Ok(None);
    }
    let held = shared.sessions.get(id, principal);
    let backplane = &shared.server.options().backplane;
    if held.is_some() && backplane.is_immediate() {
        return Ok(held);
    }
    let bytes = match backplane.keys.get(&record_key(id)).await {
        Ok(bytes) => bytes,
        // The copy here may lag what other replicas did, but it beats no answer.
        Err(e) if held.is_some() => {
            tracing::debug!(session = %id, "serving the session from this replica's copy: {e}");
            return Ok(held);
        }
        Err(e) => return Err(http_error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string())),
    };
    let Some(bytes) = bytes else {
        // Ended elsewhere, expired, or lost with the store: gone everywhere.
        if held.is_some() {
            shared.sessions.remove(id);
        }
        return Ok(None);
    };
    let record: Record = match serde_json::from_slice(&bytes) {
        Ok(record) => record,
        Err(e) => {
            tracing::warn!(session = %id, "ignored a session record that does not parse: {e}");
            return Ok(None);
        }
    };
    if record.principal != principal.id {
        return Ok(None);
    }
    if let Some(held) = held {
        if let Err(why) = held.take_on(record.revision, &record.state, record.stream) {
            tracing::warn!(session = %id, "ignored a session record that does not restore: {why}");
        }
        return Ok(Some(held));
    }
    match shared.sessions.adopt(id, principal, record.revision, &record.state, record.stream) {
        Ok(created) => {
            if let Some(evicted) = created.evicted {
                end(shared, &evicted, &principal.id).await;
            }
            Ok(Some(created.session))
        }
        Err(why) => Err(http_error(StatusCode::SERVICE_UNAVAILABLE, why.0)),
    }
}

/// Writes the record of a session this replica just made, for the others to adopt.
pub(super) async fn create(shared: &HttpShared, session: &HttpSession) {
    let Some(state) = session.session.snapshot() else { return };
    session.saved.store(shared.sessions.now(), Ordering::Relaxed);
    let record = Record { principal: session.principal_id.clone(), state, stream: GetStream::default(), revision: 1 };
    // Plain data: serializing it cannot fail.
    let bytes = serde_json::to_vec(&record).unwrap_or_default();
    let backplane = &shared.server.options().backplane;
    if let Err(e) = backplane.keys.put(&record_key(&session.id), &bytes, shared.config.session_idle_timeout).await {
        tracing::warn!(session = %session.id, "cannot save the session for the other replicas: {e}");
    }
}

/// Lays what a request changed in the session (its state went from `before` to what it
/// is now) over the record, whatever other replicas changed meanwhile; a request that
/// changed nothing (a subscription held already, one refused) writes nothing.
pub(super) async fn save(shared: &HttpShared, session: &HttpSession, before: &SessionSnapshot) {
    let Some(after) = session.session.snapshot().filter(|after| after != before) else { return };
    update(shared, session, |record| record.state.apply(before, &after)).await;
}

/// Changes the session's record with `change` and renews its expiry, then takes the new
/// record on here and tells the other replicas. A record that is gone stays gone (the
/// session ended); a store that cannot take it is logged (this replica's copy stays as it
/// is, the others may lag).
async fn update(shared: &HttpShared, session: &HttpSession, change: impl Fn(&mut Record)) {
    // An ended session stays ended, whatever its last requests or streams still do.
    if session.stop.is_cancelled() {
        return;
    }
    session.saved.store(shared.sessions.now(), Ordering::Relaxed);
    let record = match write(shared, &session.id, change).await {
        Ok(Some(record)) => record,
        Ok(None) => return,
        Err(e) => return tracing::warn!(session = %session.id, "cannot save the session for the other replicas: {e}"),
    };
    if let Err(why) = session.take_on(record.revision, &record.state, record.stream) {
        tracing::warn!(session = %session.id, "ignored a session record that does not restore: {why}");
    }
    // Published before the request is answered: the streams of other replicas then learn
    // of a new subscription before any change the client makes next.
    let event = Event::Session {
        session: session.id.clone(),
        // Plain data: serializing it cannot fail.
        state: serde_json::to_value(&record.state).ok(),
        stream: record.stream,
        revision: record.revision,
    };
    let backplane = &shared.server.options().backplane;
    if let Err(e) = backplane.bus.publish_now(Published { origin: shared.server.replica_id(), event }).await {
        tracing::warn!(session = %session.id, "cannot tell the other replicas the session's state: {e}");
    }
}

/// Read, change, compare-and-swap: the record as written, `None` when there is none.
async fn write(shared: &HttpShared, id: &str, change: impl Fn(&mut Record)) -> Result<Option<Record>, StoreError> {
    let (keys, key) = (&shared.server.options().backplane.keys, record_key(id));
    for _ in 0..SWAP_ATTEMPTS {
        let Some(old) = keys.get(&key).await? else { return Ok(None) };
        let mut record: Record = serde_json::from_slice(&old)
            .map_err(|e| StoreError(format!("the session's record does not parse: {e}")))?;
        change(&mut record);
        record.revision += 1;
        // Plain data: serializing it cannot fail.
        let new = serde_json::to_vec(&record).unwrap_or_default();
        if keys.swap(&key, &old, &new, shared.config.session_idle_timeout).await? {
            return Ok(Some(record));
        }
    }
    Err(StoreError("too many concurrent changes to the session".into()))
}

/// Counts a new session on the rosters of its principal and of the server, across
/// replicas. At the principal's cap (the server's for the anonymous principal, see
/// `SessionTable::cap_of`), its least recently used session with no open stream ends
/// everywhere to make room; with none such, or at the server's cap, the session is
/// refused (503 with the reason).
pub(super) async fn count(
    shared: &HttpShared,
    session: &HttpSession,
    principal: &Principal,
) -> Result<(), Response<Body>> {
    let (rosters, config) = (&shared.server.options().backplane.rosters, &shared.config);
    let (mine, idle) = (roster_of(&session.principal_id), config.session_idle_timeout);
    let unavailable = |e: crate::backplane::StoreError| http_error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string());
    let (cap, full) = shared.sessions.cap_of(principal);
    let mut evicted = false;
    loop {
        match rosters.join(&mine, &session.id, cap, idle).await {
            Ok(Joined::Joined) => break,
            Ok(Joined::Full { oldest: Some(oldest) }) if !evicted => {
                tracing::info!(principal = %session.principal_id, "session cap reached; ended the least recently used idle session");
                end(shared, &oldest, &session.principal_id).await;
                evicted = true;
            }
            Ok(Joined::Full { .. }) => return Err(http_error(StatusCode::SERVICE_UNAVAILABLE, full.0)),
            Err(e) => return Err(unavailable(e)),
        }
    }
    let refused = match rosters.join(ALL_SESSIONS, &session.id, config.max_sessions, idle).await {
        Ok(Joined::Joined) => return Ok(()),
        Ok(Joined::Full { .. }) => http_error(StatusCode::SERVICE_UNAVAILABLE, "Too many sessions"),
        Err(e) => unavailable(e),
    };
    rosters.leave(&mine, &session.id);
    Err(refused)
}

/// Sets the session's time on the rosters `ahead` of now (zero: used now).
fn touch(shared: &HttpShared, session: &HttpSession, ahead: std::time::Duration) {
    let (rosters, idle) = (&shared.server.options().backplane.rosters, shared.config.session_idle_timeout);
    rosters.touch(&roster_of(&session.principal_id), &session.id, ahead, idle);
    rosters.touch(ALL_SESSIONS, &session.id, ahead, idle);
}

/// Renews the record's expiry, and the session's time on the rosters, once a quarter of
/// the idle timeout has passed since it was written, so a session in use on this replica
/// stays alive for the others.
pub(super) async fn keep_alive(shared: &HttpShared, session: &HttpSession) {
    let quarter = shared.config.session_idle_timeout.as_nanos() as u64 / 4;
    if shared.sessions.now().saturating_sub(session.saved.load(Ordering::Relaxed)) > quarter {
        update(shared, session, |_| {}).await;
        touch(shared, session, Default::default());
    }
}

/// Marks the session's GET stream open here (or closed, unless another replica's opened
/// since), so the replicas agree which of them delivers its changes. While it is open the
/// session stays alive and is not the one the cap ends: its record and its time on the
/// rosters are renewed ahead.
pub(super) async fn streaming(shared: &HttpShared, session: &HttpSession, open: bool) {
    let here = shared.server.replica_id();
    let moved = |stream: GetStream| if open { GetStream::opened(here) } else { stream.closed(here) };
    let stream = session.get_stream();
    if moved(stream) == stream && !open {
        return;
    }
    session.set_get_stream(moved(stream));
    update(shared, session, |record| record.stream = moved(record.stream)).await;
    touch(shared, session, if open { shared.config.session_idle_timeout } else { Default::default() });
}

/// Renews an open GET stream's session every quarter of the idle timeout until `closed`.
pub(super) async fn renew_while_streaming(
    shared: Arc<HttpShared>,
    session: Arc<HttpSession>,
    closed: tokio_util::sync::CancellationToken,
) {
    let quarter = shared.config.session_idle_timeout / 4;
    loop {
        tokio::select! {
            _ = closed.cancelled() => return,
            _ = session.stop.cancelled() => return,
            _ = tokio::time::sleep(quarter) => streaming(&shared, &session, true).await,
        }
    }
}

/// Ends session `id` of principal `principal` on every replica (a DELETE, or a cap): its
/// record, its GET stream's events and its place on the rosters go, and every copy is told.
pub(super) async fn end(shared: &HttpShared, id: &str, principal: &str) {
    shared.sessions.remove(id);
    let backplane = &shared.server.options().backplane;
    backplane.rosters.leave(&roster_of(principal), id);
    backplane.rosters.leave(ALL_SESSIONS, id);
    for key in [record_key(id), cursor_key(id)] {
        if let Err(e) = backplane.keys.delete(&key).await {
            tracing::warn!(session = %id, "cannot remove the session's record: {e}");
        }
    }
    backplane.events.remove(&StreamName::Get.log(id));
    let event = Event::Session { session: id.to_string(), state: None, stream: GetStream::default(), revision: 0 };
    backplane.bus.publish(Published { origin: shared.server.replica_id(), event });
}

/// What another replica published about a session a copy of which may be here: revision
/// `revision` of its record, or its end (`state` is `None`).
pub(super) fn receive_state(
    shared: &HttpShared,
    id: &str,
    state: Option<&serde_json::Value>,
    stream: GetStream,
    revision: u64,
) {
    let Some(state) = state else {
        shared.sessions.remove(id);
        return;
    };
    let Some(held) = shared.sessions.peek(id).filter(|s| s.kind == Kind::Streamable) else { return };
    let taken = SessionSnapshot::deserialize(state)
        .map_err(|e| e.to_string())
        .and_then(|state| held.take_on(revision, &state, stream));
    if let Err(why) = taken {
        tracing::warn!(session = %id, "ignored a session state another replica published: {why}");
    }
}

/// The request id a client's answer or cancellation in `message` concerns.
fn concerns(message: &Message) -> Option<RequestId> {
    match message {
        Message::One(Incoming::Response { id: Some(id), .. }) => Some(id.clone()),
        Message::One(Incoming::Notification(n)) if n.method == Method::Cancelled => {
            n.params.get("requestId").and_then(RequestId::from_value)
        }
        _ => None,
    }
}

/// Sends a client's answer or cancellation that this replica's copy knows nothing of to
/// the replica it concerns; `false` when it is for this copy (or for no one in particular).
pub(super) fn route_elsewhere(
    shared: &HttpShared,
    session: &HttpSession,
    message: &Message,
    body: &[u8],
    principal: &Principal,
) -> bool {
    match concerns(message) {
        Some(id) if !session.session.knows(&id) => {
            let routed = Routed {
                session: session.id.clone(),
                principal: principal.clone(),
                message: String::from_utf8_lossy(body).into_owned(),
            };
            let event = Event::Routed(routed);
            shared.server.options().backplane.bus.publish(Published { origin: shared.server.replica_id(), event });
            true
        }
        _ => false,
    }
}

/// A client's answer or cancellation routed here: handled if this replica's copy of the
/// session is the one it concerns.
pub(super) fn receive_routed(session: &HttpSession, message: Message, principal: Arc<Principal>) {
    if concerns(&message).is_some_and(|id| session.session.knows(&id)) {
        let handled = session.session.handle(message, None, Some(principal));
        tokio::spawn(handled);
    }
}
