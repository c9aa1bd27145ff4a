//! What a handshake-era session knows of its client's roots, and how it learns them. With
//! [`ServerOptions::client_roots`] on and the `roots` capability declared, the session asks
//! `roots/list` once the client is initialized and again each time it sends
//! `notifications/roots/list_changed`: at once when its own channel reaches the client
//! (stdio, the legacy SSE stream, an open GET stream), else through the first request that
//! needs the roots, whose own stream always does. Requests that need them while an ask is
//! under way wait for its answer. A client that fails to answer, or answers late
//! ([`ServerOptions::roots_timeout`]), keeps what it stated before (at first nothing: the
//! server serves as configured), and the log says so once per session.
//!
//! Across replicas the session's record carries how many times the client said its roots
//! changed ([`SessionSnapshot`]), not the roots: each replica holding a copy asks the client
//! itself when it is behind, through the request in hand, so no replica serves roots the
//! client has since replaced.
//!
//! [`ServerOptions::client_roots`]: super::ServerOptions::client_roots
//! [`ServerOptions::roots_timeout`]: super::ServerOptions::roots_timeout
//! [`SessionSnapshot`]: super::SessionSnapshot

use super::Era;
use super::session::SessionShared;
use crate::layer::{ClientRoot, ClientRoots, RootsSource};
use async_trait::async_trait;
use duet_wire::jsonrpc::Sink;
use duet_wire::method::Method;
use serde::Deserialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::watch;

/// The most roots one answer may list; the rest are left out (and the log says so).
pub const MAX_ROOTS: usize = 256;

/// One session's roots and the asking for them.
pub(crate) struct SessionRoots {
    known: watch::Sender<Known>,
    /// Whether what the session sends unprompted reaches the client now.
    reachable: AtomicBool,
    /// A failed ask was logged.
    warned: AtomicBool,
}

#[derive(Debug, Clone, Default)]
struct Known {
    roots: ClientRoots,
    /// How many times the client said its roots changed.
    changes: u64,
    /// The `changes` the latest ask was made at (answered or not); `None` before any.
    asked_at: Option<u64>,
    /// An ask is under way.
    asking: bool,
}

impl Known {
    fn stale(&self) -> bool {
        self.asked_at != Some(self.changes)
    }
}

/// `roots/list`'s result.
#[derive(Deserialize)]
struct ListRootsResult {
    roots: Vec<ClientRoot>,
}

impl Default for SessionRoots {
    fn default() -> Self {
        SessionRoots {
            known: watch::Sender::new(Known::default()),
            reachable: AtomicBool::new(true),
            warned: AtomicBool::new(false),
        }
    }
}

impl SessionRoots {
    /// How many times the client said its roots changed: what a replica's copy of the
    /// session must have asked since.
    pub fn changes(&self) -> u64 {
        self.known.borrow().changes
    }

    /// Takes on another replica's count of changes, when it is ahead.
    pub fn catch_up(&self, changes: u64) {
        self.known.send_if_modified(|k| {
            let ahead = changes > k.changes;
            k.changes = k.changes.max(changes);
            ahead
        });
    }
}

impl SessionShared {
    /// Whether this session asks its client for roots: the server does, the client
    /// declared them, and the session is of the handshake era.
    fn asks_roots(&self) -> bool {
        let state = self.state();
        self.server.options().client_roots
            && state.era == Some(Era::Handshake)
            && state.client_capabilities.get("roots").is_some_and(|r| !r.is_null())
    }

    /// The client said its roots changed (`notifications/roots/list_changed`).
    pub(crate) fn roots_changed(self: &Arc<Self>) {
        self.roots.known.send_modify(|k| k.changes += 1);
        self.refresh_roots();
    }

    /// Whether what the session sends unprompted reaches the client now; asks for roots
    /// due at once when it does.
    pub(crate) fn set_reachable(self: &Arc<Self>, reachable: bool) {
        self.roots.reachable.store(reachable, Ordering::Release);
        self.refresh_roots();
    }

    /// Asks for the roots through the session's own channel if they are due and it
    /// reaches the client; otherwise the next request that needs them asks.
    pub(crate) fn refresh_roots(self: &Arc<Self>) {
        let initialized = self.state().initialized;
        if initialized && self.roots.reachable.load(Ordering::Acquire) && self.asks_roots() {
            self.start_asking(self.send.clone());
        }
    }

    /// The client's roots as a request that may send through `sink` needs them: waits for
    /// an ask under way, and asks through `sink` when they are due and nobody is asking.
    pub(crate) async fn client_roots(self: &Arc<Self>, sink: &Sink) -> ClientRoots {
        if !self.asks_roots() {
            return ClientRoots::Unstated;
        }
        let mut known = self.roots.known.subscribe();
        loop {
            self.start_asking(sink.clone());
            // The ask ends whatever happens (an answer, an error, the timeout, the end of
            // the session), and its sender lives as long as this session.
            match known.wait_for(|k| !k.asking).await {
                Ok(k) if !k.stale() => return k.roots.clone(),
                Ok(_) => continue,
                Err(_) => return ClientRoots::Unstated,
            }
        }
    }

    /// Starts asking `roots/list` through `sink` unless the roots are current or an ask is
    /// under way. The ask runs on its own task, so a request that gives up waiting does
    /// not leave it half done.
    fn start_asking(self: &Arc<Self>, sink: Sink) {
        let mut at = None;
        self.roots.known.send_if_modified(|k| {
            if k.asking || !k.stale() {
                return false;
            }
            k.asking = true;
            at = Some(k.changes);
            true
        });
        let Some(at) = at else { return };
        let session = self.clone();
        tokio::spawn(async move {
            let answer = session.ask_roots(&sink).await;
            session.roots.known.send_modify(|k| {
                k.asking = false;
                k.asked_at = Some(k.asked_at.map_or(at, |before| before.max(at)));
                if let Ok(roots) = &answer {
                    k.roots = ClientRoots::Listed(roots.clone());
                }
            });
            if let Err(why) = answer
                && !session.roots.warned.swap(true, Ordering::Relaxed)
            {
                tracing::warn!(
                    "the client did not list its roots ({why}); serving what it stated before (at first, everything configured)"
                );
            }
            // The client may have said they changed again while this ask was under way.
            session.refresh_roots();
        });
    }

    async fn ask_roots(&self, sink: &Sink) -> Result<Arc<[ClientRoot]>, String> {
        let limit = self.server.options().roots_timeout;
        let answer = tokio::select! {
            answer = self.ask(sink, Method::RootsList.as_str(), None, limit) => answer.map_err(|e| e.to_string())?,
            _ = self.closed.cancelled() => return Err("the session ended".into()),
        };
        let mut listed: ListRootsResult =
            serde_json::from_value(answer).map_err(|e| format!("its answer is not a roots/list result: {e}"))?;
        if listed.roots.len() > MAX_ROOTS {
            tracing::warn!("the client listed {} roots; only the first {MAX_ROOTS} count", listed.roots.len());
            listed.roots.truncate(MAX_ROOTS);
        }
        tracing::debug!(roots = ?listed.roots.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(), "the client listed its roots");
        Ok(listed.roots.into())
    }
}

/// A request's way to its session's roots, asking through the request's own channel.
pub(crate) struct FromSession {
    pub session: Arc<SessionShared>,
    pub sink: Sink,
}

#[async_trait]
impl RootsSource for FromSession {
    async fn client_roots(&self) -> ClientRoots {
        self.session.client_roots(&self.sink).await
    }
}
