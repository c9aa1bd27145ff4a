//! Replicated sessions (Streamable HTTP's) across replicas. The replica that answers a
//! session's `initialize` writes the session's record (its principal and
//! [`SessionSnapshot`]) to the backplane's keys; a replica that gets a request for a
//! session it does not hold adopts a copy from the record. What changes the state
//! (`notifications/initialized`, `logging/setLevel`, subscriptions, the count of the
//! client's root changes) is laid over the record by compare-and-swap, so requests of one
//! session handled at once on two replicas never undo each other, and published, so every
//! copy takes it on; each write counts a revision, and a copy never takes an older one.
//! Ending a session (HTTP: `DELETE`) removes the record and ends every copy.
//! A client's answer to a question duet asked, or its cancellation of a request, reaches
//! the replica the question or request belongs to over the bus. Behind one replica all of
//! this is the in-memory backplane doing the same.

use super::SessionSnapshot;
use super::table::{Hosted, Kind, SessionTable, Unavailable};
use crate::backplane::{Event, GetStream, Joined, Published, Routed, SWAP_ATTEMPTS, StoreError};
use crate::layer::Principal;
use duet_wire::jsonrpc::RequestId;
use duet_wire::message::{Incoming, Message};
use duet_wire::method::Method;
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

impl SessionTable {
    /// The session `id` of `principal`: the copy here, brought up to date from the backplane's
    /// record, else one adopted from it. `Ok(None)` when there is no such session (or it is
    /// another principal's, or `id` is not of the form session ids have: then the store is not
    /// asked); a store that cannot say is a 503, never taken for "no session",
    /// unless a copy is here, which then serves as it is. With an immediate backplane (one
    /// process) the copy here is current and the record is not read.
    pub(crate) async fn find(&self, id: &str, principal: &Principal) -> Result<Option<Arc<Hosted>>, Unavailable> {
        if !crate::client_ids::well_formed(id) {
            return Ok(None);
        }
        let held = self.get(id, principal);
        let backplane = &self.server.options().backplane;
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
            Err(e) => return Err(Unavailable::new(e.to_string())),
        };
        let Some(bytes) = bytes else {
            // Ended elsewhere, expired, or lost with the store: gone everywhere.
            if held.is_some() {
                self.remove(id);
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
        let created = self.adopt(id, principal, record.revision, &record.state, record.stream)?;
        if let Some(evicted) = created.evicted {
            self.end(&evicted, &principal.id).await;
        }
        Ok(Some(created.session))
    }

    /// Writes the record of a session this replica just made, for the others to adopt.
    pub(crate) async fn write_new(&self, session: &Hosted) {
        let Some(state) = session.session.snapshot() else { return };
        session.saved.store(self.now(), Ordering::Relaxed);
        let record =
            Record { principal: session.principal_id.clone(), state, stream: GetStream::default(), revision: 1 };
        // Plain data: serializing it cannot fail.
        let bytes = serde_json::to_vec(&record).unwrap_or_default();
        let backplane = &self.server.options().backplane;
        if let Err(e) = backplane.keys.put(&record_key(&session.id), &bytes, self.limits.idle_timeout).await {
            tracing::warn!(session = %session.id, "cannot save the session for the other replicas: {e}");
        }
    }

    /// Lays what a request changed in the session (its state went from `before` to what it
    /// is now) over the record, whatever other replicas changed meanwhile; a request that
    /// changed nothing (a subscription held already, one refused) writes nothing.
    pub(crate) async fn save(&self, session: &Hosted, before: &SessionSnapshot) {
        let Some(after) = session.session.snapshot().filter(|after| after != before) else { return };
        self.update(session, |record| record.state.apply(before, &after)).await;
    }

    /// Changes the session's record with `change` and renews its expiry, then takes the new
    /// record on here and tells the other replicas. A record that is gone stays gone (the
    /// session ended); a store that cannot take it is logged (this replica's copy stays as it
    /// is, the others may lag).
    async fn update(&self, session: &Hosted, change: impl Fn(&mut Record)) {
        // An ended session stays ended, whatever its last requests or streams still do.
        if session.stop.is_cancelled() {
            return;
        }
        session.saved.store(self.now(), Ordering::Relaxed);
        let record = match self.write(&session.id, change).await {
            Ok(Some(record)) => record,
            Ok(None) => return,
            Err(e) => {
                return tracing::warn!(session = %session.id, "cannot save the session for the other replicas: {e}");
            }
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
        let backplane = &self.server.options().backplane;
        if let Err(e) = backplane.bus.publish_now(Published { origin: self.server.replica_id(), event }).await {
            tracing::warn!(session = %session.id, "cannot tell the other replicas the session's state: {e}");
        }
    }

    /// Read, change, compare-and-swap: the record as written, `None` when there is none.
    async fn write(&self, id: &str, change: impl Fn(&mut Record)) -> Result<Option<Record>, StoreError> {
        let (keys, key) = (&self.server.options().backplane.keys, record_key(id));
        for _ in 0..SWAP_ATTEMPTS {
            let Some(old) = keys.get(&key).await? else { return Ok(None) };
            let mut record: Record = serde_json::from_slice(&old)
                .map_err(|e| StoreError(format!("the session's record does not parse: {e}")))?;
            change(&mut record);
            record.revision += 1;
            // Plain data: serializing it cannot fail.
            let new = serde_json::to_vec(&record).unwrap_or_default();
            if keys.swap(&key, &old, &new, self.limits.idle_timeout).await? {
                return Ok(Some(record));
            }
        }
        Err(StoreError("too many concurrent changes to the session".into()))
    }

    /// Counts a new session on the rosters of its principal and of the server, across
    /// replicas. At the principal's cap (the server's for the anonymous principal, see
    /// [`SessionTable::cap_of`]), its least recently used session with no open stream ends
    /// everywhere to make room; with none such, or at the server's cap, the session is
    /// refused, with the reason.
    pub(crate) async fn count(&self, session: &Hosted, principal: &Principal) -> Result<(), Unavailable> {
        let rosters = &self.server.options().backplane.rosters;
        let (mine, idle) = (roster_of(&session.principal_id), self.limits.idle_timeout);
        let unavailable = |e: StoreError| Unavailable::new(e.to_string());
        let (cap, full) = self.cap_of(principal);
        let mut evicted = false;
        loop {
            match rosters.join(&mine, &session.id, cap, idle).await {
                Ok(Joined::Joined) => break,
                Ok(Joined::Full { oldest: Some(oldest) }) if !evicted => {
                    tracing::info!(principal = %session.principal_id, "session cap reached; ended the least recently used idle session");
                    self.end(&oldest, &session.principal_id).await;
                    evicted = true;
                }
                Ok(Joined::Full { .. }) => return Err(full),
                Err(e) => return Err(unavailable(e)),
            }
        }
        let refused = match rosters.join(ALL_SESSIONS, &session.id, self.limits.max_sessions, idle).await {
            Ok(Joined::Joined) => return Ok(()),
            Ok(Joined::Full { .. }) => Unavailable::new("Too many sessions"),
            Err(e) => unavailable(e),
        };
        rosters.leave(&mine, &session.id);
        Err(refused)
    }

    /// Sets the session's time on the rosters `ahead` of now (zero: used now).
    fn touch(&self, session: &Hosted, ahead: std::time::Duration) {
        let (rosters, idle) = (&self.server.options().backplane.rosters, self.limits.idle_timeout);
        rosters.touch(&roster_of(&session.principal_id), &session.id, ahead, idle);
        rosters.touch(ALL_SESSIONS, &session.id, ahead, idle);
    }

    /// Renews the record's expiry, and the session's time on the rosters, once a quarter of
    /// the idle timeout has passed since it was written, so a session in use on this replica
    /// stays alive for the others.
    pub(crate) async fn keep_alive(&self, session: &Hosted) {
        let quarter = self.limits.idle_timeout.as_nanos() as u64 / 4;
        if self.now().saturating_sub(session.saved.load(Ordering::Relaxed)) > quarter {
            self.update(session, |_| {}).await;
            self.touch(session, Default::default());
        }
    }

    /// Marks the session's standing stream open here (or closed, unless another replica's
    /// opened since), so the replicas agree which of them delivers its changes. While it is open the
    /// session stays alive and is not the one the cap ends: its record and its time on the
    /// rosters are renewed ahead.
    pub(crate) async fn streaming(&self, session: &Hosted, open: bool) {
        let here = self.server.replica_id();
        let moved = |stream: GetStream| if open { GetStream::opened(here) } else { stream.closed(here) };
        let stream = session.get_stream();
        if moved(stream) == stream && !open {
            return;
        }
        session.set_get_stream(moved(stream));
        self.update(session, |record| record.stream = moved(record.stream)).await;
        self.touch(session, if open { self.limits.idle_timeout } else { Default::default() });
    }

    /// Renews an open standing stream's session every quarter of the idle timeout until
    /// `closed`.
    pub(crate) async fn renew_while_streaming(&self, session: &Hosted, closed: tokio_util::sync::CancellationToken) {
        let quarter = self.limits.idle_timeout / 4;
        loop {
            tokio::select! {
                _ = closed.cancelled() => return,
                _ = session.stop.cancelled() => return,
                _ = tokio::time::sleep(quarter) => self.streaming(session, true).await,
            }
        }
    }

    /// Ends session `id` of principal `principal` on every replica (a DELETE, or a cap): its
    /// record, what its transport keeps of its streams and its place on the rosters go, and
    /// every copy is told.
    pub(crate) async fn end(&self, id: &str, principal: &str) {
        self.remove(id);
        let backplane = &self.server.options().backplane;
        backplane.rosters.leave(&roster_of(principal), id);
        backplane.rosters.leave(ALL_SESSIONS, id);
        if let Err(e) = backplane.keys.delete(&record_key(id)).await {
            tracing::warn!(session = %id, "cannot remove the session's record: {e}");
        }
        self.streams.forget(id).await;
        let event = Event::Session { session: id.to_string(), state: None, stream: GetStream::default(), revision: 0 };
        backplane.bus.publish(Published { origin: self.server.replica_id(), event });
    }

    /// What another replica published about a session a copy of which may be here: revision
    /// `revision` of its record, or its end (`state` is `None`).
    pub(crate) fn receive_state(&self, id: &str, state: Option<&serde_json::Value>, stream: GetStream, revision: u64) {
        let Some(state) = state else {
            self.remove(id);
            return;
        };
        let Some(held) = self.peek(id).filter(|s| s.kind == Kind::Replicated) else { return };
        let taken = SessionSnapshot::deserialize(state)
            .map_err(|e| e.to_string())
            .and_then(|state| held.take_on(revision, &state, stream));
        if let Err(why) = taken {
            tracing::warn!(session = %id, "ignored a session state another replica published: {why}");
        }
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

impl SessionTable {
    /// Sends a client's answer or cancellation that this replica's copy knows nothing of to
    /// the replica it concerns; `false` when it is for this copy (or for no one in particular).
    pub(crate) fn route_elsewhere(
        &self,
        session: &Hosted,
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
                self.server.options().backplane.bus.publish(Published { origin: self.server.replica_id(), event });
                true
            }
            _ => false,
        }
    }
}

impl Hosted {
    /// A client's answer or cancellation routed here: handled if this replica's copy of the
    /// session is the one it concerns.
    pub(crate) fn receive_routed(&self, message: Message, principal: Arc<Principal>) {
        if concerns(&message).is_some_and(|id| self.session.knows(&id)) {
            let handled = self.session.handle(message, None, Some(principal));
            tokio::spawn(handled);
        }
    }
}
