//! A session: the state of one connection that lasts (stdio, a handshake-era HTTP session,
//! a legacy SSE session). Its first request decides its era; a handshake-era session holds
//! what `initialize` agreed on, its log threshold and resource subscriptions, and the
//! requests duet sent its client. Requests on it can be cancelled by
//! `notifications/cancelled`, and it receives change notifications. It learns its client's
//! roots (`roots.rs`). A 2026-07-28 request needs none of this: over HTTP it runs without
//! a session ([`Server::answer`]).

use super::admission;
use super::batch;
use super::call::Call;
use super::envelope::{self, Terms};
use super::listen::change_notification;
use super::owed::Owed;
use super::roots::SessionRoots;
use super::server::Server;
use super::snapshot::SessionSnapshot;
use super::subscribed::Subscribed;
use super::{Era, Version};
use crate::layer::{Change, LogLevel, NO_CAPABILITIES, Principal};
use crate::signals::{self, Transport};
use duet_wire::jsonrpc::{RequestId, Response, RpcError, Sink, code};
use duet_wire::message::{Incoming, Message, Notification, Request};
use duet_wire::method::Method;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// One connection's session. Cheap to clone.
#[derive(Clone)]
pub struct Session {
    pub(crate) inner: Arc<SessionShared>,
}

pub(crate) struct SessionShared {
    pub server: Server,
    principal: Arc<Principal>,
    pub(super) send: Sink,
    state: Mutex<SessionState>,
    inflight: Mutex<HashMap<RequestId, CancellationToken>>,
    pub(super) closed: CancellationToken,
    /// Requests duet sent to the client (handshake era), waiting for its responses.
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, RpcError>>>>,
    next_request: AtomicU64,
    /// Whether layer changes are delivered through this session's send; not where another
    /// replica holding the same session delivers them.
    changes_here: AtomicBool,
    /// How the connection came, for the signals (`None`: the program did not say).
    pub transport: Option<Transport>,
    opened: Instant,
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

impl Session {
    pub(crate) fn new(server: Server, send: Sink, principal: Arc<Principal>, transport: Option<Transport>) -> Self {
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
        Session {
            inner: Arc::new(SessionShared {
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
            }),
        }
    }

    pub fn server(&self) -> &Server {
        &self.inner.server
    }

    /// The era, once the first request decided it.
    pub fn era(&self) -> Option<Era> {
        self.inner.era()
    }

    /// The version negotiated by `initialize` (handshake era).
    pub fn protocol_version(&self) -> Option<Version> {
        self.inner.state().version
    }

    /// Handles one message (an object or a batch; a `Value` decodes through the framing
    /// rules). `sink` receives this message's request notifications (an SSE stream); without
    /// one they go to the session's send. `principal` overrides the session's for this
    /// message.
    ///
    /// The message is admitted when this is called, not when the future first runs: a first
    /// request with a valid 2026 envelope makes the session 2026-07-28 at once, so work a
    /// transport spawns in arrival order decides the era in that order (an `initialize`
    /// behind it is refused every time).
    pub fn handle<M: Into<Message>>(
        &self,
        message: M,
        sink: Option<Sink>,
        principal: Option<Arc<Principal>>,
    ) -> impl Future<Output = Option<Message<Response>>> + Send + use<M> {
        let message = message.into();
        self.inner.claim_era(&message);
        // Tracked from now, so a cancel that arrives before the work runs still reaches it.
        let admitted = match &message {
            Message::One(Incoming::Request(request)) => Some(self.inner.admit(request.id.clone())),
            _ => None,
        };
        let inner = self.inner.clone();
        Owed::of(&message).guard(async move {
            let (sink, principal) = (sink.as_ref(), principal.as_ref());
            match message {
                Message::One(one) => inner.handle_one(one, sink, principal, admitted).await.map(Message::One),
                Message::Batch(items) => {
                    let refusal = admission::batch(&items, None).or_else(|| {
                        let state = inner.state();
                        batch::refusal(state.version.filter(|_| state.init_responded), state.era == Some(Era::Modern))
                    });
                    let bounds = inner.server.options().batch_bounds();
                    batch::answer(items, refusal, bounds, |m| inner.handle_one(m, sink, principal, None)).await
                }
            }
        })
    }

    /// The state another replica needs to serve this session; `None` until `initialize`
    /// was answered (or for a 2026-07-28 session, which needs none).
    pub fn snapshot(&self) -> Option<SessionSnapshot> {
        let state = self.inner.state();
        let version = state.version.filter(|_| state.init_responded && state.era == Some(Era::Handshake))?;
        Some(SessionSnapshot {
            version: version.as_str().to_string(),
            client_capabilities: Value::clone(&state.client_capabilities),
            log_level: state.log_threshold.as_str().to_string(),
            subscriptions: state.subscriptions.sorted(),
            initialized: state.initialized,
            roots_changes: self.inner.roots.changes(),
        })
    }

    /// Takes on the state `snapshot` describes, as if `initialize` (and whatever changed the
    /// state since) had run here. Refused when it names a version or level this server
    /// does not know.
    pub fn restore(&self, snapshot: &SessionSnapshot) -> Result<(), String> {
        let version = Version::parse(&snapshot.version)
            .filter(|v| !v.is_modern())
            .ok_or_else(|| format!("unknown protocol version {:?}", snapshot.version))?;
        let level = LogLevel::parse(&snapshot.log_level)
            .ok_or_else(|| format!("unknown log level {:?}", snapshot.log_level))?;
        let mut state = self.inner.state();
        state.era = Some(Era::Handshake);
        state.version = Some(version);
        state.init_responded = true;
        state.initialized = snapshot.initialized;
        state.client_capabilities = Arc::new(snapshot.client_capabilities.clone());
        state.log_threshold = level;
        state.subscriptions = snapshot.subscriptions.iter().cloned().collect();
        drop(state);
        self.inner.roots.catch_up(snapshot.roots_changes);
        self.inner.refresh_roots();
        Ok(())
    }

    /// Tells the session whether what it sends unprompted reaches the client now. A
    /// transport whose channel for that comes and goes says so (Streamable HTTP: while
    /// the session's GET stream is open); a session starts reachable. The client's roots
    /// are asked for through that channel only while it is reachable, and otherwise
    /// through the request that needs them.
    pub fn set_reachable(&self, reachable: bool) {
        self.inner.set_reachable(reachable);
    }

    /// Whether `id` names a request running in this session, or one duet sent the client
    /// and waits for the answer of: what a cancellation or a response from the client
    /// needs to find.
    pub fn knows(&self, id: &RequestId) -> bool {
        self.inner.inflight.lock().unwrap_or_else(|p| p.into_inner()).contains_key(id)
            || self.inner.pending.lock().unwrap_or_else(|p| p.into_inner()).contains_key(id)
    }

    /// Whether this session delivers layer changes to its client (the default). A session
    /// that several replicas hold (a handshake-era HTTP session behind a load balancer)
    /// delivers them from one replica only.
    pub fn deliver_changes(&self, here: bool) {
        self.inner.changes_here.store(here, Ordering::Release);
    }

    /// Ends the session: in-flight requests are cancelled without responses.
    pub fn close(&self) {
        self.inner.closed.cancel();
    }

    /// The number of requests still running.
    pub fn inflight(&self) -> usize {
        self.inner.inflight.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl SessionShared {
    pub(crate) fn state(&self) -> MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn era(&self) -> Option<Era> {
        self.state().era
    }

    /// The era rule in arrival order: a session without an era becomes 2026-07-28 when a
    /// request with a valid envelope arrives (the same test [`route`](Self::route) applies
    /// when the request runs). `initialize` decides the other era when it runs; transports
    /// run it inline.
    fn claim_era(&self, message: &Message) {
        let Message::One(Incoming::Request(request)) = message else { return };
        let mut state = self.state();
        if state.era.is_none()
            && envelope::era_of(&request.meta, None) == Era::Modern
            && envelope::read(&mut request.meta.clone()).is_ok()
        {
            state.era = Some(Era::Modern);
        }
    }

    /// Tracks request `id` as in flight: `notifications/cancelled` naming it, or the end of
    /// the session, cancels it from now on.
    fn admit(self: &Arc<Self>, id: RequestId) -> InFlight {
        let cancel = self.closed.child_token();
        self.inflight.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), cancel.clone());
        InFlight { session: self.clone(), id, cancel }
    }

    /// Handles one message of the session; a request may have been admitted already.
    async fn handle_one(
        self: &Arc<Self>,
        message: Incoming,
        sink: Option<&Sink>,
        principal: Option<&Arc<Principal>>,
        admitted: Option<InFlight>,
    ) -> Option<Response> {
        match message {
            Incoming::Invalid(response) => Some(response),
            Incoming::Response { id: Some(id), outcome } => {
                let waiting = self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
                if let Some(waiting) = waiting {
                    let _ = waiting.send(outcome);
                }
                None
            }
            Incoming::Response { id: None, .. } | Incoming::Dropped => None,
            Incoming::Notification(notification) => {
                self.handle_notification(&notification);
                None
            }
            Incoming::Request(request) => {
                let in_flight = admitted.unwrap_or_else(|| self.admit(request.id.clone()));
                self.handle_request(request, sink, principal, in_flight).await
            }
        }
    }

    fn handle_notification(self: &Arc<Self>, notification: &Notification) {
        match notification.method {
            Method::Initialized => {
                {
                    let mut state = self.state();
                    if !state.init_responded {
                        return;
                    }
                    state.initialized = true;
                }
                self.refresh_roots();
            }
            Method::RootsListChanged => self.roots_changed(),
            Method::Cancelled => {
                if let Some(id) = notification.params.get("requestId").and_then(RequestId::from_value)
                    && let Some(token) = self.inflight.lock().unwrap_or_else(|p| p.into_inner()).get(&id)
                {
                    token.cancel();
                }
            }
            _ => {}
        }
    }

    /// Runs one request, tracked (`in_flight`) so that `notifications/cancelled` naming it
    /// (or the end of the session) cancels it without a response.
    async fn handle_request(
        self: &Arc<Self>,
        mut request: Request,
        sink: Option<&Sink>,
        principal: Option<&Arc<Principal>>,
        in_flight: InFlight,
    ) -> Option<Response> {
        // However the request ends (answered, cancelled, or its future dropped because the
        // client went away), work it started on other tasks sees the cancellation.
        let cancel = in_flight.cancel.clone();
        let terms = match self.route(&mut request) {
            Ok(terms) => terms,
            Err(error) => return Some(Response::error(Some(request.id), error)),
        };
        let principal = principal.unwrap_or(&self.principal).clone();
        let notify = sink.unwrap_or(&self.send).clone();
        let shared = &self.server.shared;
        let call = Call::new(shared, Some(self), request, terms, principal, Some(notify), cancel.clone());
        tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            response = call.respond() => Some(response),
        }
    }

    /// The era rules: the session's first request decides its era, and every later request
    /// must belong to it. Returns the terms the request runs under.
    fn route(&self, request: &mut Request) -> Result<Terms, RpcError> {
        let mut state = self.state();
        match envelope::era_of(&request.meta, None) {
            Era::Modern => {
                if state.era == Some(Era::Handshake) {
                    return Err(RpcError::invalid_request(
                        "this session negotiated its protocol version with initialize; requests must not carry the 2026-07-28 _meta envelope",
                    ));
                }
                let terms = self.server.admit_modern(&self.principal, request, None)?;
                state.era = Some(Era::Modern);
                Ok(terms)
            }
            Era::Handshake if state.era == Some(Era::Modern) => Err(match request.method {
                Method::Initialize => {
                    let requested = request.params.get("protocolVersion").cloned().unwrap_or(Value::Null);
                    RpcError::new(
                        code::UNSUPPORTED_PROTOCOL_VERSION,
                        "connection is serving the 2026-07-28 protocol; initialize is not accepted",
                    )
                    .with_data(json!({"supported": Version::MODERN, "requested": requested}))
                }
                _ => envelope::missing_keys(&request.meta).unwrap_or_else(|| RpcError::invalid_request("no envelope")),
            }),
            Era::Handshake => {
                if !state.init_responded && !matches!(request.method, Method::Initialize | Method::Ping) {
                    return Err(RpcError::invalid_request("Server not initialized: send initialize first"));
                }
                Ok(Terms {
                    version: state.version.unwrap_or(Version::LATEST_HANDSHAKE),
                    client_capabilities: state.client_capabilities.clone(),
                    log_level: Some(state.log_threshold),
                })
            }
        }
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

/// A running request: cancels its token and forgets it when the request ends.
struct InFlight {
    session: Arc<SessionShared>,
    id: RequestId,
    cancel: CancellationToken,
}

impl Drop for SessionShared {
    fn drop(&mut self) {
        let version = self.state.get_mut().unwrap_or_else(|p| p.into_inner()).version;
        signals::session_ended(self.opened.elapsed(), version, self.transport);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.cancel.cancel();
        let mut inflight = self.session.inflight.lock().unwrap_or_else(|p| p.into_inner());
        if inflight.get(&self.id).is_some_and(|t| t == &self.cancel) {
            inflight.remove(&self.id);
        }
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
