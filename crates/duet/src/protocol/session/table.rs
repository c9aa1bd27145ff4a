//! The sessions a transport holds by id (a handshake-era HTTP session's `Mcp-Session-Id`, a
//! legacy SSE session's `session_id`): each bound to the principal that created it, the caps
//! (per principal, and over the server), idle expiry, and where each session's unprompted
//! messages go. A [`Kind::Replicated`] session's go to its standing stream, which the
//! transport keeps ([`SessionStreams`]: a Streamable HTTP session's GET stream log); a
//! [`Kind::Pinned`] session's, its answers among them, to its [`Outbox`], which the stream
//! it lives with drains. A session made here is this replica's own; one adopted from
//! another replica's record (`replicated.rs`) is a copy. One replica delivers a session's
//! changes: the one holding its standing stream, or holding it last, else the one that
//! made it ([`GetStream`]).

use super::outbox::Outbox;
use super::{Session, SessionSnapshot};
use crate::backplane::GetStream;
use crate::layer::Principal;
use crate::protocol::Server;
use crate::signals::Transport;
use async_trait::async_trait;
use duet_wire::jsonrpc::{Sink, encode};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// What the transport holding a table keeps for each replicated session: the stream its
/// unprompted messages are written to, and what of it lies in the backplane.
#[async_trait]
pub(crate) trait SessionStreams: Send + Sync {
    /// Where session `id` sends what it sends unprompted (its standing stream).
    fn standing(&self, id: &str) -> Sink;
    /// Removes what the transport keeps of session `id` in the backplane, once it ended
    /// everywhere.
    async fn forget(&self, id: &str);
}

/// How many sessions there may be, and how long one lives unused.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionLimits {
    /// Sessions open at once, over the whole server.
    pub max_sessions: usize,
    /// Sessions one principal may hold open.
    pub max_per_principal: usize,
    /// How long a session lives without a request (and its record in the backplane).
    pub idle_timeout: Duration,
}

/// Where a session lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Its record is in the backplane and any replica may adopt a copy; it reaches its
    /// client while its standing stream is open (Streamable HTTP).
    Replicated,
    /// It lives on the replica holding its stream, which carries its answers too: other
    /// replicas route its messages there (legacy SSE).
    Pinned,
}

/// The session's record as far as a copy took it on.
#[derive(Default)]
struct Taken {
    /// The record's revision; `None` before any.
    revision: Option<u64>,
    stream: GetStream,
}

/// A session held here, under its id.
pub(crate) struct Hosted {
    pub id: String,
    pub principal_id: String,
    pub kind: Kind,
    pub session: Session,
    /// A pinned session's stream drains it; a replicated session has none.
    pub outbox: Option<Arc<Outbox>>,
    /// Ends the session's streams here (the session ended, or the server shuts down).
    pub stop: CancellationToken,
    /// Nanoseconds since the table's epoch.
    last_used: AtomicU64,
    /// When the session's record was last written to the backplane (same clock).
    pub(super) saved: AtomicU64,
    /// Whether its stream is open here.
    streaming: AtomicBool,
    /// What this copy took on of the session's record: which write, and the replica
    /// whose GET stream of the session is open, as far as this one knows.
    taken: Mutex<Taken>,
    /// Adopted from another replica's record.
    copy: bool,
}

impl Hosted {
    /// Marks a stream open; `false` when one already was. While it is, what the session
    /// sends unprompted reaches the client.
    pub(crate) fn open_stream(&self) -> bool {
        !self.streaming.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn close_stream(&self) {
        self.streaming.store(false, Ordering::Release);
    }

    fn is_streaming(&self) -> bool {
        self.streaming.load(Ordering::Acquire)
    }

    fn taken(&self) -> std::sync::MutexGuard<'_, Taken> {
        self.taken.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn get_stream(&self) -> GetStream {
        self.taken().stream
    }

    /// Takes on where the session's GET stream is: the replica holding it, or holding it
    /// last, delivers the session's changes, and before any did, the replica that made
    /// the session. What any replica sends the client unprompted reaches it while the
    /// stream is open, wherever it is.
    pub(crate) fn set_get_stream(&self, stream: GetStream) {
        self.take_stream(&mut self.taken(), stream);
    }

    /// Takes on revision `revision` of the session's record (its state and GET stream),
    /// unless this copy took on that one or a later one already: the replicas' messages
    /// may come in another order than the record's writes.
    pub(crate) fn take_on(&self, revision: u64, state: &SessionSnapshot, stream: GetStream) -> Result<(), String> {
        let mut taken = self.taken();
        if taken.revision.is_some_and(|had| had >= revision) {
            return Ok(());
        }
        self.session.restore(state)?;
        taken.revision = Some(revision);
        self.take_stream(&mut taken, stream);
        Ok(())
    }

    fn take_stream(&self, taken: &mut Taken, stream: GetStream) {
        taken.stream = stream;
        let here = self.session.server().replica_id();
        let deliverer = stream.deliverer();
        self.session.deliver_changes(deliverer == Some(here) || (deliverer.is_none() && !self.copy));
        self.session.set_reachable(stream.open.is_some());
    }

    fn end(&self) {
        self.session.close();
        self.stop.cancel();
        if let Some(outbox) = &self.outbox {
            outbox.close();
        }
    }
}

/// A session made, and the one the per-principal cap ended to make room for it (which
/// must end on the other replicas too).
pub(crate) struct Created {
    pub session: Arc<Hosted>,
    pub evicted: Option<String>,
}

/// Why a session could not be made or adopted here (HTTP: 503): a cap, a record that is
/// not this caller's or cannot be read, or a backplane that cannot say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unavailable(pub Cow<'static, str>);

impl Unavailable {
    pub(crate) fn new(why: impl Into<Cow<'static, str>>) -> Self {
        Unavailable(why.into())
    }
}

/// The sessions held here, by id.
pub(crate) struct SessionTable {
    sessions: Mutex<HashMap<String, Arc<Hosted>>>,
    /// The engine a session made here runs on.
    pub(super) server: Server,
    /// Where a replicated session's unprompted messages are written.
    pub(super) streams: Arc<dyn SessionStreams>,
    epoch: Instant,
    pub(super) limits: SessionLimits,
}

impl SessionTable {
    pub(crate) fn new(server: Server, streams: Arc<dyn SessionStreams>, limits: SessionLimits) -> Self {
        let sessions = Mutex::new(HashMap::new());
        SessionTable { sessions, server, streams, epoch: Instant::now(), limits }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Hosted>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// How many sessions `principal` may hold, and why one more is refused when none of
    /// them is idle. The anonymous principal is every client of a server without
    /// authentication: a cap of its own would let any client end the others' sessions
    /// with a few `initialize`s, so its sessions are capped by the server's cap alone.
    pub(crate) fn cap_of(&self, principal: &Principal) -> (usize, Unavailable) {
        match principal.is_anonymous() {
            true => (self.limits.max_sessions, Unavailable::new("Too many sessions")),
            false => (self.limits.max_per_principal, Unavailable::new("Too many sessions for this caller")),
        }
    }

    /// Creates a session for `principal`. At its cap (see [`cap_of`](Self::cap_of)) the least
    /// recently used idle session of that principal is evicted; when none is idle, or the
    /// table is full, creation fails.
    pub(crate) fn create(&self, principal: &Principal, kind: Kind) -> Result<Created, Unavailable> {
        let id = crate::client_ids::new();
        self.insert(self.entry(id, principal, kind, false), principal)
    }

    /// A copy of session `id`, another replica's, for `principal`, as revision `revision`
    /// of its record has it: in the state `snapshot` gives, its GET stream where `stream`
    /// says. The copy already here if another request adopted it first.
    pub(crate) fn adopt(
        &self,
        id: &str,
        principal: &Principal,
        revision: u64,
        snapshot: &SessionSnapshot,
        stream: GetStream,
    ) -> Result<Created, Unavailable> {
        if let Some(held) = self.get(id, principal) {
            return Ok(Created { session: held, evicted: None });
        }
        let entry = self.entry(id.to_string(), principal, Kind::Replicated, true);
        if let Err(why) = entry.take_on(revision, snapshot, stream) {
            tracing::warn!(session = %id, "cannot adopt a session another replica made: {why}");
            return Err(Unavailable::new("Session state is not readable"));
        }
        self.insert(entry, principal)
    }

    fn entry(&self, id: String, principal: &Principal, kind: Kind, copy: bool) -> Arc<Hosted> {
        let (send, outbox): (Sink, _) = match kind {
            Kind::Replicated => (self.streams.standing(&id), None),
            Kind::Pinned => {
                let outbox = Arc::new(Outbox::default());
                let pushed = outbox.clone();
                (Arc::new(move |message| pushed.push(encode(&message))), Some(outbox))
            }
        };
        let session = self.server.connect_over(Transport::Tcp, send, principal.clone());
        session.deliver_changes(!copy);
        // A replicated session's messages reach its client once its standing stream is open.
        session.set_reachable(kind == Kind::Pinned);
        let now = self.now();
        Arc::new(Hosted {
            id,
            principal_id: principal.id.clone(),
            kind,
            session,
            outbox,
            stop: CancellationToken::new(),
            last_used: AtomicU64::new(now),
            saved: AtomicU64::new(now),
            streaming: AtomicBool::new(false),
            taken: Mutex::default(),
            copy,
        })
    }

    fn insert(&self, entry: Arc<Hosted>, principal: &Principal) -> Result<Created, Unavailable> {
        let evicted = {
            let mut sessions = self.lock();
            if let Some(held) = sessions.get(&entry.id) {
                // Another request adopted it first; never hand one caller another's.
                return if held.principal_id == principal.id {
                    Ok(Created { session: held.clone(), evicted: None })
                } else {
                    Err(Unavailable::new("Session belongs to another caller"))
                };
            }
            let mine: Vec<&Arc<Hosted>> = sessions.values().filter(|s| s.principal_id == principal.id).collect();
            let mut evicted = None;
            let (cap, full) = self.cap_of(principal);
            if mine.len() >= cap {
                let idle =
                    mine.into_iter().filter(|s| !s.is_streaming()).min_by_key(|s| s.last_used.load(Ordering::Relaxed));
                let Some(oldest) = idle.map(|s| s.id.clone()) else {
                    return Err(full);
                };
                evicted = sessions.remove(&oldest);
            }
            if sessions.len() >= self.limits.max_sessions {
                return Err(Unavailable::new("Too many sessions"));
            }
            sessions.insert(entry.id.clone(), entry.clone());
            evicted
        };
        let evicted = evicted.map(|old| {
            tracing::info!(principal = %principal.id, "session cap reached; ended the least recently used idle session");
            old.end();
            old.id.clone()
        });
        Ok(Created { session: entry, evicted })
    }

    /// The session `id` of `principal`, marked used; `None` for another principal's.
    pub(crate) fn get(&self, id: &str, principal: &Principal) -> Option<Arc<Hosted>> {
        let s = self.lock().get(id).filter(|s| s.principal_id == principal.id).cloned()?;
        s.last_used.store(self.now(), Ordering::Relaxed);
        Some(s)
    }

    /// The session `id`, whoever's it is, without marking it used.
    pub(crate) fn peek(&self, id: &str) -> Option<Arc<Hosted>> {
        self.lock().get(id).cloned()
    }

    pub(crate) fn remove(&self, id: &str) -> Option<Arc<Hosted>> {
        let s = self.lock().remove(id)?;
        s.end();
        Some(s)
    }

    /// Ends sessions idle longer than the idle timeout that have no open stream.
    pub(crate) fn reap(&self) -> usize {
        let cutoff = self.now().saturating_sub(self.limits.idle_timeout.as_nanos() as u64);
        let expired: Vec<Arc<Hosted>> = {
            let mut sessions = self.lock();
            let ids: Vec<String> = sessions
                .values()
                .filter(|s| !s.is_streaming() && s.last_used.load(Ordering::Relaxed) < cutoff)
                .map(|s| s.id.clone())
                .collect();
            ids.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        for s in &expired {
            s.end();
        }
        expired.len()
    }

    /// Ends the standing streams of replicated sessions (at shutdown), leaving the sessions
    /// and their requests running; a pinned session's stream carries its answers, so it
    /// stays open until the session ends.
    pub(crate) fn close_standing_streams(&self) {
        for s in self.lock().values().filter(|s| s.kind == Kind::Replicated) {
            s.stop.cancel();
        }
    }

    /// Requests still running in sessions.
    pub(crate) fn inflight(&self) -> usize {
        self.lock().values().map(|s| s.session.inflight()).sum()
    }

    pub(crate) fn close_all(&self) {
        let all: Vec<Arc<Hosted>> = self.lock().drain().map(|(_, s)| s).collect();
        for s in all {
            s.end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::{Registry, ServerInfo};
    use serde_json::Value;

    /// Standing streams that keep what each session sent, by session id.
    #[derive(Default, Clone)]
    struct Kept(Arc<Mutex<HashMap<String, Vec<Value>>>>);

    impl Kept {
        fn of(&self, id: &str) -> Vec<Value> {
            self.0.lock().unwrap().get(id).cloned().unwrap_or_default()
        }
    }

    #[async_trait]
    impl SessionStreams for Kept {
        fn standing(&self, id: &str) -> Sink {
            let (kept, id) = (self.0.clone(), id.to_string());
            Arc::new(move |message| kept.lock().unwrap().entry(id.clone()).or_default().push(message))
        }

        async fn forget(&self, id: &str) {
            self.0.lock().unwrap().remove(id);
        }
    }

    fn table_of(server: &Server, kept: &Kept, max_sessions: usize, max_per_principal: usize) -> SessionTable {
        let limits = SessionLimits { max_sessions, max_per_principal, idle_timeout: Duration::from_secs(60) };
        SessionTable::new(server.clone(), Arc::new(kept.clone()), limits)
    }

    fn table(max_sessions: usize, max_per_principal: usize) -> SessionTable {
        let server = Server::new(Arc::new(Registry::new(ServerInfo::new("t", "1"))), Default::default());
        table_of(&server, &Kept::default(), max_sessions, max_per_principal)
    }

    fn unavailable(why: &'static str) -> Option<Unavailable> {
        Some(Unavailable::new(why))
    }

    #[tokio::test]
    async fn caps_and_ownership() {
        let table = table(3, 2);
        let (alice, bob) = (Principal::new("alice", ["x"]), Principal::new("bob", ["x"]));
        let a1 = table.create(&alice, Kind::Replicated).unwrap().session;
        assert_eq!(a1.id.len(), 32);
        assert!(table.get(&a1.id, &bob).is_none());
        let a2 = table.create(&alice, Kind::Replicated).unwrap().session;
        table.get(&a1.id, &alice);
        // Alice is at her cap: her least recently used idle session (a2) goes.
        let _a3 = table.create(&alice, Kind::Replicated).unwrap().session;
        assert!(table.get(&a2.id, &alice).is_none() && table.get(&a1.id, &alice).is_some());
        table.create(&bob, Kind::Replicated).unwrap();
        assert_eq!(table.create(&bob, Kind::Replicated).err(), unavailable("Too many sessions"));
        // Every session of a principal streaming: nothing to evict.
        let table = self::table(10, 1);
        let s = table.create(&alice, Kind::Replicated).unwrap().session;
        assert!(s.open_stream() && !s.open_stream());
        assert_eq!(table.create(&alice, Kind::Replicated).err(), unavailable("Too many sessions for this caller"));
    }

    #[tokio::test]
    async fn anonymous_sessions_are_capped_by_the_servers_cap_alone() {
        let table = table(3, 1);
        let anonymous = Principal::anonymous();
        let made: Vec<_> = (0..3).map(|_| table.create(&anonymous, Kind::Replicated).unwrap()).collect();
        assert!(made.iter().all(|m| m.evicted.is_none()), "the per-principal cap is not the anonymous one's");
        table.get(&made[0].session.id, &anonymous);
        // At the server's cap the least recently used idle session goes.
        let fourth = table.create(&anonymous, Kind::Replicated).unwrap();
        assert_eq!(fourth.evicted.as_deref(), Some(made[1].session.id.as_str()));
        for held in [&made[0], &made[2], &fourth] {
            held.session.open_stream();
        }
        assert_eq!(table.create(&anonymous, Kind::Replicated).err(), unavailable("Too many sessions"));
    }

    #[tokio::test]
    async fn one_replica_delivers_a_sessions_changes() {
        use crate::layer::Change;
        let registry = Registry::new(ServerInfo::new("t", "1"));
        let feed = registry.change_feed();
        let server = Server::new(Arc::new(registry), Default::default());
        let kept = Kept::default();
        let table = table_of(&server, &kept, 10, 10);
        let p = Principal::anonymous();
        let own = table.create(&p, Kind::Replicated).unwrap().session;
        let snapshot = SessionSnapshot {
            version: "2025-11-25".into(),
            client_capabilities: serde_json::json!({}),
            log_level: "info".into(),
            subscriptions: vec![],
            initialized: true,
            roots_changes: 0,
        };
        own.session.restore(&snapshot).unwrap();
        let copy = table.adopt("0123", &p, 1, &snapshot, GetStream::default()).unwrap().session;
        assert_eq!(copy.session.snapshot(), Some(snapshot.clone()));
        // No stream open anywhere: the replica that made the session delivers.
        feed.notify(Change::ToolsChanged);
        // Its standing stream opens here on the copy: the copy delivers, the maker does not.
        let here = server.replica_id();
        let opened = GetStream::opened(here);
        own.set_get_stream(opened);
        copy.set_get_stream(opened);
        own.set_get_stream(GetStream::opened(here.wrapping_add(1)));
        feed.notify(Change::PromptsChanged);
        // The stream closes: the copy that held it goes on delivering, the maker still not,
        // so no change falls between them while the others learn of it.
        copy.set_get_stream(opened.closed(here));
        own.set_get_stream(GetStream::opened(here.wrapping_add(1)).closed(here.wrapping_add(1)));
        feed.notify(Change::ResourcesChanged);
        let methods = |id: &str| kept.of(id).iter().map(|m| m["method"].to_string()).collect::<Vec<_>>();
        let (made, copied) = (methods(&own.id), methods(&copy.id));
        assert_eq!(made.len(), 1, "{made:?}");
        assert!(made[0].contains("tools/list_changed"));
        assert_eq!(copied.len(), 2, "{copied:?}");
        assert!(copied[0].contains("prompts/list_changed") && copied[1].contains("resources/list_changed"));
        let again = table.adopt("0123", &p, 1, &snapshot, GetStream::default()).unwrap().session;
        assert!(Arc::ptr_eq(&again, &copy), "adopted once");
        assert!(table.adopt("0123", &Principal::new("bob", ["x"]), 1, &snapshot, GetStream::default()).is_err());
    }

    #[tokio::test]
    async fn reaping_spares_streaming_sessions() {
        let server = Server::new(Arc::new(Registry::new(ServerInfo::new("t", "1"))), Default::default());
        let limits = SessionLimits { max_sessions: 10, max_per_principal: 10, idle_timeout: Duration::from_millis(1) };
        let table = SessionTable::new(server, Arc::new(Kept::default()), limits);
        let p = Principal::anonymous();
        let idle = table.create(&p, Kind::Replicated).unwrap().session;
        let busy = table.create(&p, Kind::Replicated).unwrap().session;
        busy.open_stream();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(table.reap(), 1);
        assert!(table.get(&idle.id, &p).is_none() && table.get(&busy.id, &p).is_some());
    }
}
