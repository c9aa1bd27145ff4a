//! What a handshake-era session knows of its client's roots (the asking is the session's,
//! `state.rs`), and how it learns them. With
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
//! [`ServerOptions::client_roots`]: crate::protocol::ServerOptions::client_roots
//! [`ServerOptions::roots_timeout`]: crate::protocol::ServerOptions::roots_timeout
//! [`SessionSnapshot`]: super::SessionSnapshot

use crate::layer::{ClientRoot, ClientRoots};
use serde::Deserialize;
use std::sync::atomic::AtomicBool;
use tokio::sync::watch;

/// The most roots one answer may list; the rest are left out (and the log says so).
pub(super) const MAX_ROOTS: usize = 256;

/// One session's roots and the asking for them.
pub(crate) struct SessionRoots {
    pub(super) known: watch::Sender<Known>,
    /// Whether what the session sends unprompted reaches the client now.
    pub(super) reachable: AtomicBool,
    /// A failed ask was logged.
    pub(super) warned: AtomicBool,
}

#[derive(Debug, Clone, Default)]
pub(super) struct Known {
    pub roots: ClientRoots,
    /// How many times the client said its roots changed.
    pub changes: u64,
    /// The `changes` the latest ask was made at (answered or not); `None` before any.
    pub asked_at: Option<u64>,
    /// An ask is under way.
    pub asking: bool,
}

impl Known {
    /// Whether the client said its roots changed since the latest ask.
    pub(super) fn stale(&self) -> bool {
        self.asked_at != Some(self.changes)
    }
}

/// `roots/list`'s result.
#[derive(Deserialize)]
pub(super) struct ListRootsResult {
    pub roots: Vec<ClientRoot>,
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
    pub(super) fn changes(&self) -> u64 {
        self.known.borrow().changes
    }

    /// Takes on another replica's count of changes, when it is ahead.
    pub(super) fn catch_up(&self, changes: u64) {
        self.known.send_if_modified(|k| {
            let ahead = changes > k.changes;
            k.changes = k.changes.max(changes);
            ahead
        });
    }
}
