//! Handshake-era HTTP sessions: the table keyed by `Mcp-Session-Id`, each session bound to
//! the principal that created it, its bounded outbox of server-initiated messages (drained
//! by the GET stream, or by the legacy SSE stream), the caps, and idle expiry. A session
//! made here is this replica's own; one adopted from another replica's record
//! (`replicated.rs`) is a copy, whose outbox takes messages only while its stream is open
//! here, so the replica streaming a session is the one that delivers its changes.

use crate::jsonrpc::{Sink, encode};
use crate::layer::Principal;
use crate::protocol::{Server, Session, SessionSnapshot};
use crate::signals::Transport;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Messages kept for a session whose stream is not reading; the oldest go first.
pub const OUTBOX_CAPACITY: usize = 512;

/// Server-initiated messages (compact JSON lines) waiting for a stream.
#[derive(Default)]
pub struct Outbox {
    queue: Mutex<VecDeque<String>>,
    ready: Notify,
    closed: AtomicBool,
}

impl Outbox {
    pub fn push(&self, message: String) {
        {
            let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            if q.len() >= OUTBOX_CAPACITY {
                q.pop_front();
            }
            q.push_back(message);
        }
        self.ready.notify_one();
    }

    /// The next message; `None` once the outbox is closed and drained.
    pub async fn next(&self) -> Option<String> {
        loop {
            let notified = self.ready.notified();
            if let Some(m) = self.queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front() {
                return Some(m);
            }
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            notified.await;
        }
    }

    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.ready.notify_waiters();
        self.ready.notify_one();
    }
}

/// Which transport created the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Streamable,
    LegacySse,
}

pub struct HttpSession {
    pub id: String,
    pub principal_id: String,
    pub kind: Kind,
    pub session: Session,
    pub outbox: Arc<Outbox>,
    /// Nanoseconds since the table's epoch.
    last_used: AtomicU64,
    /// When the session's record was last written to the backplane (same clock).
    pub(super) saved: AtomicU64,
    streaming: Arc<AtomicBool>,
}

impl HttpSession {
    /// Marks a stream open; `false` when one already was.
    pub fn open_stream(&self) -> bool {
        !self.streaming.swap(true, Ordering::AcqRel)
    }

    pub fn close_stream(&self) {
        self.streaming.store(false, Ordering::Release);
    }

    fn is_streaming(&self) -> bool {
        self.streaming.load(Ordering::Acquire)
    }

    fn end(&self) {
        self.session.close();
        self.outbox.close();
    }
}

/// A session made, and the one the per-principal cap ended to make room for it (which
/// must end on the other replicas too).
pub struct Created {
    pub session: Arc<HttpSession>,
    pub evicted: Option<String>,
}

/// Why a session could not be created (503).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full(pub &'static str);

pub struct SessionTable {
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    epoch: Instant,
    max_sessions: usize,
    max_per_principal: usize,
}

impl SessionTable {
    pub fn new(max_sessions: usize, max_per_principal: usize) -> Self {
        SessionTable { sessions: Mutex::new(HashMap::new()), epoch: Instant::now(), max_sessions, max_per_principal }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Creates a session for `principal`. At the per-principal cap the least recently used
    /// idle session of that principal is evicted; when none is idle, or the table is full,
    /// creation fails.
    pub fn create(&self, server: &Server, principal: &Principal, kind: Kind) -> Result<Created, Full> {
        let id = format!("{:032x}", rand::random::<u128>());
        self.insert(self.entry(server, id, principal, kind, false), principal)
    }

    /// A copy of session `id`, another replica's, for `principal`, in the state
    /// `snapshot` gives; the copy already here if another request adopted it first.
    pub fn adopt(
        &self,
        server: &Server,
        id: &str,
        principal: &Principal,
        snapshot: &SessionSnapshot,
    ) -> Result<Created, Full> {
        if let Some(held) = self.get(id, principal) {
            return Ok(Created { session: held, evicted: None });
        }
        let entry = self.entry(server, id.to_string(), principal, Kind::Streamable, true);
        if let Err(why) = entry.session.restore(snapshot) {
            tracing::warn!(session = %id, "cannot adopt a session another replica made: {why}");
            return Err(Full("Session state is not readable"));
        }
        self.insert(entry, principal)
    }

    fn entry(&self, server: &Server, id: String, principal: &Principal, kind: Kind, copy: bool) -> Arc<HttpSession> {
        let outbox = Arc::new(Outbox::default());
        let streaming = Arc::new(AtomicBool::new(false));
        let send: Sink = {
            let (outbox, streaming) = (outbox.clone(), streaming.clone());
            Arc::new(move |message| {
                if !copy || streaming.load(Ordering::Acquire) {
                    outbox.push(encode(&message));
                }
            })
        };
        let session = server.connect_over(Transport::Tcp, send, principal.clone());
        let now = self.now();
        Arc::new(HttpSession {
            id,
            principal_id: principal.id.clone(),
            kind,
            session,
            outbox,
            last_used: AtomicU64::new(now),
            saved: AtomicU64::new(now),
            streaming,
        })
    }

    fn insert(&self, entry: Arc<HttpSession>, principal: &Principal) -> Result<Created, Full> {
        let evicted = {
            let mut sessions = self.lock();
            if let Some(held) = sessions.get(&entry.id) {
                // Another request adopted it first; never hand one caller another's.
                return if held.principal_id == principal.id {
                    Ok(Created { session: held.clone(), evicted: None })
                } else {
                    Err(Full("Session belongs to another caller"))
                };
            }
            let mine: Vec<&Arc<HttpSession>> = sessions.values().filter(|s| s.principal_id == principal.id).collect();
            let mut evicted = None;
            if mine.len() >= self.max_per_principal {
                let idle =
                    mine.into_iter().filter(|s| !s.is_streaming()).min_by_key(|s| s.last_used.load(Ordering::Relaxed));
                let Some(oldest) = idle.map(|s| s.id.clone()) else {
                    return Err(Full("Too many sessions for this caller"));
                };
                evicted = sessions.remove(&oldest);
            }
            if sessions.len() >= self.max_sessions {
                return Err(Full("Too many sessions"));
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
    pub fn get(&self, id: &str, principal: &Principal) -> Option<Arc<HttpSession>> {
        let s = self.lock().get(id).filter(|s| s.principal_id == principal.id).cloned()?;
        s.last_used.store(self.now(), Ordering::Relaxed);
        Some(s)
    }

    /// The session `id`, whoever's it is, without marking it used.
    pub fn peek(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.lock().get(id).cloned()
    }

    pub fn remove(&self, id: &str) -> Option<Arc<HttpSession>> {
        let s = self.lock().remove(id)?;
        s.end();
        Some(s)
    }

    /// Ends sessions idle longer than `idle` that have no open stream.
    pub fn reap(&self, idle: Duration) -> usize {
        let cutoff = self.now().saturating_sub(idle.as_nanos() as u64);
        let expired: Vec<Arc<HttpSession>> = {
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

    /// Ends the standalone GET streams of Streamable HTTP sessions (at shutdown), leaving
    /// the sessions and their requests running; a legacy session's stream carries its
    /// answers, so it stays open until the session ends.
    pub fn close_get_streams(&self) {
        for s in self.lock().values().filter(|s| s.kind == Kind::Streamable) {
            s.outbox.close();
        }
    }

    /// Requests still running in sessions.
    pub fn inflight(&self) -> usize {
        self.lock().values().map(|s| s.session.inflight()).sum()
    }

    pub fn close_all(&self) {
        let all: Vec<Arc<HttpSession>> = self.lock().drain().map(|(_, s)| s).collect();
        for s in all {
            s.end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::{Registry, ServerInfo};

    fn server() -> Server {
        Server::new(Arc::new(Registry::new(ServerInfo::new("t", "1"))), Default::default())
    }

    #[tokio::test]
    async fn outbox_drops_the_oldest() {
        let o = Outbox::default();
        for i in 0..(OUTBOX_CAPACITY + 2) {
            o.push(i.to_string());
        }
        assert_eq!(o.next().await.as_deref(), Some("2"));
        o.close();
        let mut n = 1;
        while o.next().await.is_some() {
            n += 1;
        }
        assert_eq!(n, OUTBOX_CAPACITY);
    }

    #[tokio::test]
    async fn caps_and_ownership() {
        let table = SessionTable::new(3, 2);
        let (alice, bob) = (Principal::new("alice", ["x"]), Principal::new("bob", ["x"]));
        let a1 = table.create(&server(), &alice, Kind::Streamable).unwrap().session;
        assert_eq!(a1.id.len(), 32);
        assert!(table.get(&a1.id, &bob).is_none());
        let a2 = table.create(&server(), &alice, Kind::Streamable).unwrap().session;
        table.get(&a1.id, &alice);
        // Alice is at her cap: her least recently used idle session (a2) goes.
        let _a3 = table.create(&server(), &alice, Kind::Streamable).unwrap().session;
        assert!(table.get(&a2.id, &alice).is_none() && table.get(&a1.id, &alice).is_some());
        table.create(&server(), &bob, Kind::Streamable).unwrap();
        assert_eq!(table.create(&server(), &bob, Kind::Streamable).err(), Some(Full("Too many sessions")));
        // Every session of a principal streaming: nothing to evict.
        let table = SessionTable::new(10, 1);
        let s = table.create(&server(), &alice, Kind::Streamable).unwrap().session;
        assert!(s.open_stream() && !s.open_stream());
        assert_eq!(
            table.create(&server(), &alice, Kind::Streamable).err(),
            Some(Full("Too many sessions for this caller"))
        );
    }

    #[tokio::test]
    async fn a_copy_takes_changes_only_while_its_stream_is_open_here() {
        use crate::layer::Change;
        let registry = Registry::new(ServerInfo::new("t", "1"));
        let feed = registry.change_feed();
        let server = Server::new(Arc::new(registry), Default::default());
        let table = SessionTable::new(10, 10);
        let p = Principal::anonymous();
        let own = table.create(&server, &p, Kind::Streamable).unwrap().session;
        let snapshot = SessionSnapshot {
            version: "2025-11-25".into(),
            client_capabilities: serde_json::json!({}),
            log_level: "info".into(),
            subscriptions: vec![],
            initialized: true,
        };
        own.session.restore(&snapshot).unwrap();
        let copy = table.adopt(&server, "0123", &p, &snapshot).unwrap().session;
        assert_eq!(copy.session.snapshot(), Some(snapshot.clone()));
        feed.notify(Change::ToolsChanged);
        copy.open_stream();
        feed.notify(Change::PromptsChanged);
        copy.outbox.close();
        own.outbox.close();
        let drain = |outbox: Arc<Outbox>| async move {
            let mut lines = Vec::new();
            while let Some(line) = outbox.next().await {
                lines.push(line);
            }
            lines
        };
        let (copied, kept) = (drain(copy.outbox.clone()).await, drain(own.outbox.clone()).await);
        assert_eq!(copied.len(), 1, "only what came while the stream was open: {copied:?}");
        assert!(copied[0].contains("prompts/list_changed"));
        assert_eq!(kept.len(), 2, "a replica's own session keeps what comes for a stream to open: {kept:?}");
        let again = table.adopt(&server, "0123", &p, &snapshot).unwrap().session;
        assert!(Arc::ptr_eq(&again, &copy), "adopted once");
        assert!(table.adopt(&server, "0123", &Principal::new("bob", ["x"]), &snapshot).is_err());
    }

    #[tokio::test]
    async fn reaping_spares_streaming_sessions() {
        let table = SessionTable::new(10, 10);
        let p = Principal::anonymous();
        let idle = table.create(&server(), &p, Kind::Streamable).unwrap().session;
        let busy = table.create(&server(), &p, Kind::Streamable).unwrap().session;
        busy.open_stream();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(table.reap(Duration::from_millis(1)), 1);
        assert!(table.get(&idle.id, &p).is_none() && table.get(&busy.id, &p).is_some());
    }
}
