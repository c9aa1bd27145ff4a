//! A session: one connection that lasts (stdio, a handshake-era HTTP session, a legacy SSE
//! session), and how its messages are taken in. Its first request decides its era, in
//! arrival order; each later message is routed by the era rules (`admission.rs`, and the
//! session's own: a handshake-era session refuses the 2026 envelope). Requests on it can be
//! cancelled by `notifications/cancelled`. What its requests act on (what `initialize`
//! agreed, subscriptions, questions to the client, change delivery, the client's roots) is
//! `state.rs`; what replicas share of it, `snapshot.rs`. The sessions a transport holds by
//! id (caps, idle expiry) are `table.rs`; their records across replicas, `replicated.rs`;
//! the queue of a session whose answers wait for its stream, `outbox.rs`. A 2026-07-28
//! request needs none of this: over HTTP it runs without a session ([`Server::answer`]).

#[cfg(feature = "http")]
pub(crate) mod outbox;
#[cfg(feature = "http")]
mod replicated;
mod roots;
mod snapshot;
pub(crate) mod state;
#[cfg(feature = "http")]
pub(crate) mod table;

pub use snapshot::SessionSnapshot;
pub(crate) use state::AskError;
use state::SessionShared;

use super::admission;
use super::batch;
use super::call::Call;
use super::envelope::{self, Terms};
use super::owed::Owed;
use super::shared::Server;
use super::{Era, Version};
use crate::layer::{LogLevel, Principal};
use crate::signals::Transport;
use duet_wire::jsonrpc::{RequestId, Response, RpcError, Sink, code};
use duet_wire::message::{Incoming, Message, Notification, Request};
use duet_wire::method::Method;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio_util::sync::CancellationToken;

/// One connection's session. Cheap to clone.
#[derive(Clone)]
pub struct Session {
    pub(crate) inner: Arc<SessionShared>,
}

impl Session {
    pub(crate) fn new(server: Server, send: Sink, principal: Arc<Principal>, transport: Option<Transport>) -> Self {
        Session { inner: Arc::new(SessionShared::new(server, send, principal, transport)) }
    }

    /// The engine the session runs on.
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
}

/// A running request: cancels its token and forgets it when the request ends.
struct InFlight {
    session: Arc<SessionShared>,
    id: RequestId,
    cancel: CancellationToken,
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
