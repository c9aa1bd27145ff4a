//! The state of one connection that lasts, which its requests act on: what `initialize`
//! agreed and changed since, the requests in flight, the questions duet asked its client
//! and waits to hear about ([`SessionShared::ask`]), the delivery of layer changes, and the
//! asking for the client's roots (what is known of them is `roots.rs`). `mod.rs` hands
//! the connection's messages to it.

use super::roots::{ListRootsResult, MAX_ROOTS, SessionRoots};
use crate::layer::{Change, ClientRoot, ClientRoots, LogLevel, NO_CAPABILITIES, Principal, RootsSource};
use crate::protocol::listen::change_notification;
use crate::protocol::shared::{ChangeReceiver, Server};
use crate::protocol::subscribed::Subscribed;
use crate::protocol::{Era, Version};
use crate::signals::{self, Transport};
use async_trait::async_trait;
use duet_wire::jsonrpc::{RequestId, RpcError, Sink};
use duet_wire::method::Method;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

pub(crate) struct SessionShared {
    pub server: Server,
    pub(super) principal: Arc<Principal>,
    pub(crate) send: Sink,
    pub(super) state: Mutex<SessionState>,
    pub(super) inflight: Mutex<HashMap<RequestId, CancellationToken>>,
    pub(super) closed: CancellationToken,
    /// Requests duet sent to the client (handshake era), waiting for its responses.
    pub(super) pending: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, RpcError>>>>,
    pub(super) next_request: AtomicU64,
    /// Whether layer changes are delivered through this session's send; not where another
    /// replica holding the same session delivers them.
    pub(super) changes_here: AtomicBool,
    /// How the connection came, for the signals (`None`: the program did not say).
    pub transport: Option<Transport>,
    pub(super) opened: Instant,
    pub(super) roots: SessionRoots,
}

pub(crate) struct SessionState {
    pub era: Option<Era>,
    pub version: Option<Version>,
    pub init_responded: bool,
    pub initialized: bool,
    pub client_capabilities: Arc<Value>,
    pub log_threshold: LogLevel,
    pub subscriptions: Subscribed,
}

impl SessionShared {
    /// A new session's state, before its first request.
    pub(super) fn new(server: Server, send: Sink, principal: Arc<Principal>, transport: Option<Transport>) -> Self {
        let state = SessionState {
            era: None,
            version: None,
            init_responded: false,
            initialized: false,
            client_capabilities: NO_CAPABILITIES.clone(),
            log_threshold: server.options().default_log_level,
            subscriptions: Subscribed::default(),
        };
        signals::session_opened();
        SessionShared {
            server,
            principal,
            send,
            state: Mutex::new(state),
            inflight: Mutex::new(HashMap::new()),
            closed: CancellationToken::new(),
            pending: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            changes_here: AtomicBool::new(true),
            transport,
            opened: Instant::now(),
            roots: SessionRoots::default(),
        }
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn era(&self) -> Option<Era> {
        self.state().era
    }

    /// Where what the server sends this session unprompted goes.
    pub(crate) fn sink(&self) -> Sink {
        self.send.clone()
    }

    /// Sends a request to the client (handshake era) and waits for its answer, at most
    /// `limit`.
    pub(crate) async fn ask(
        &self,
        notify: &Sink,
        method: &str,
        params: Option<Value>,
        limit: Duration,
    ) -> Result<Value, AskError> {
        // The replica's id in it: the client's answer may reach another replica's copy of
        // this session, which must not take it for one of its own questions.
        let n = self.next_request.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::Str(format!("duet-{:x}-{n}", self.server.replica_id()));
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), tx);
        let _forget = Forget { session: self, id: id.clone() };
        let mut request = json!({"jsonrpc": "2.0", "id": id.to_value(), "method": method});
        if let Some(params) = params {
            request["params"] = params;
        }
        notify(request);
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(AskError::Rejected(error)),
            Ok(Err(_)) => Err(AskError::NoChannel),
            Err(_) => Err(AskError::Timeout(limit)),
        }
    }

    /// Delivers a layer change to this handshake-era session: list changes once it is
    /// initialized, resource updates for the URIs it subscribed to that the layer lets its
    /// principal see ([`Layer::may_see_resource`](crate::layer::Layer::may_see_resource)).
    pub(crate) fn emit_change(&self, change: &Change) {
        if !self.changes_here.load(Ordering::Acquire) {
            return;
        }
        let deliver = match change {
            Change::ResourceUpdated(uri) => {
                let covered = self.state().subscriptions.covers(uri);
                covered && self.server.layer().may_see_resource(&self.principal, uri)
            }
            _ => self.state().initialized,
        };
        if deliver {
            (self.send)(change_notification(change, None));
        }
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

impl ChangeReceiver for SessionShared {
    /// A handshake-era session delivers layer changes; a 2026 one has listen streams.
    fn receive(&self, change: &Change) {
        if self.era() == Some(Era::Handshake) {
            self.emit_change(change);
        }
    }
}

/// Why a request to the client got no usable answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AskError {
    #[error("the client did not answer within {} s", .0.as_secs())]
    Timeout(Duration),
    #[error("the client answered with an error: {} ({})", .0.message, .0.code)]
    Rejected(RpcError),
    #[error("this connection cannot carry requests to the client (a stateless request has no channel back)")]
    NoChannel,
}

impl Drop for SessionShared {
    fn drop(&mut self) {
        let version = self.state.get_mut().unwrap_or_else(|p| p.into_inner()).version;
        signals::session_ended(self.opened.elapsed(), version, self.transport);
    }
}

/// Drops a pending client request when its waiter goes away.
struct Forget<'a> {
    session: &'a SessionShared,
    id: RequestId,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.session.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
    }
}
