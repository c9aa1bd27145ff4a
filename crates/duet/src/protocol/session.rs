//! The era state of one connection (handshake era) or one request (2026): framing, batch
//! rules, the era rules, method routing, cancellation, and change delivery to a legacy
//! session. A transport feeds it decoded messages and writes back what it answers.

use super::envelope::{self, Envelope};
use super::listen::{change_notification, uri_covers};
use super::methods;
use super::server::{Server, SessionOptions};
use super::shape::{self, CacheHints};
use super::{Era, Version};
use crate::jsonrpc::{
    LATEST_HANDSHAKE_VERSION, MODERN_VERSIONS, Output, RequestId, Response, RpcError, Sink, code, log_level_rank,
};
use crate::layer::{ANONYMOUS, Change, NO_CAPABILITIES, Principal, RequestCx};
use crate::message::{Incoming, Message, Meta};
use futures::FutureExt;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// What the engine answers to one message: nothing, one response, or a batch of them.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    One(Response),
    Batch(Vec<Response>),
}

impl Answer {
    pub fn responses(&self) -> &[Response] {
        match self {
            Answer::One(r) => std::slice::from_ref(r),
            Answer::Batch(rs) => rs,
        }
    }

    /// Compact single-line JSON.
    pub fn to_line(&self) -> String {
        let Answer::Batch(rs) = self else { return self.responses()[0].to_line() };
        let mut out = Vec::with_capacity(rs.iter().map(Response::line_capacity).sum::<usize>() + rs.len() + 1);
        out.push(b'[');
        for (i, r) in rs.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            r.write_line(&mut out);
        }
        out.push(b']');
        String::from_utf8(out).unwrap_or_default()
    }
}

/// One connection's session. Cheap to clone.
#[derive(Clone)]
pub struct Session {
    pub(crate) inner: Arc<SessionShared>,
}

pub(crate) struct SessionShared {
    pub server: Server,
    principal: Arc<Principal>,
    send: Option<Sink>,
    state: Mutex<SessionState>,
    inflight: Mutex<HashMap<RequestId, CancellationToken>>,
    closed: CancellationToken,
    /// Requests duet sent to the client (handshake era), waiting for its responses.
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, RpcError>>>>,
    next_request: AtomicU64,
    /// Whether the session lives beyond one request, so the client can answer it.
    lasting: bool,
}

pub(crate) struct SessionState {
    pub era: Option<Era>,
    pub version: Option<Version>,
    pub init_responded: bool,
    pub initialized: bool,
    pub client_capabilities: Arc<Value>,
    /// Rank of the lowest level sent (handshake era).
    pub log_threshold: usize,
    pub subscriptions: HashSet<String>,
}

/// One request on its way through the engine: who, at which version, with what the client
/// declared, and where its notifications go.
pub(crate) struct Call<'a> {
    pub session: &'a SessionShared,
    pub id: RequestId,
    pub method: String,
    /// The params without `_meta`, which is in `meta`.
    pub params: Map<String, Value>,
    pub meta: Meta,
    pub version: Version,
    pub principal: Arc<Principal>,
    pub client_capabilities: Arc<Value>,
    pub log_level: Option<String>,
    pub notify: Option<Sink>,
    pub cancel: CancellationToken,
}

impl Session {
    pub(crate) fn new(server: Server, options: SessionOptions) -> Self {
        let default_level = log_level_rank(&server.options().default_log_level).unwrap_or(1);
        let pre_initialized = options.stateless_version.is_some();
        let state = SessionState {
            era: options.stateless_version.map(|_| Era::Handshake),
            version: options.stateless_version,
            init_responded: pre_initialized,
            initialized: pre_initialized,
            client_capabilities: NO_CAPABILITIES.clone(),
            log_threshold: default_level,
            subscriptions: HashSet::new(),
        };
        Session {
            inner: Arc::new(SessionShared {
                server,
                principal: options.principal.map(Arc::new).unwrap_or_else(|| ANONYMOUS.clone()),
                send: options.send,
                state: Mutex::new(state),
                inflight: Mutex::new(HashMap::new()),
                closed: CancellationToken::new(),
                pending: Mutex::new(HashMap::new()),
                next_request: AtomicU64::new(1),
                lasting: options.register,
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

    /// Handles one message given as a JSON value (an object or a batch array); see
    /// [`Session::handle_message`].
    pub async fn handle(&self, message: Value, sink: Option<Sink>, principal: Option<Principal>) -> Option<Answer> {
        self.handle_message(Message::from(message), sink, principal.map(Arc::new)).await
    }

    /// Handles one decoded message. `sink` receives this request's notifications (an SSE
    /// stream); without one they go to the session's send. `principal` overrides the
    /// session's principal for this message.
    pub async fn handle_message(
        &self,
        message: Message,
        sink: Option<Sink>,
        principal: Option<Arc<Principal>>,
    ) -> Option<Answer> {
        match message {
            Message::Batch(items) => self.handle_batch(items, sink, principal).await,
            // A one-shot session's single request is the only one it will see: nothing can
            // reach it to cancel it, so it is not tracked.
            Message::One(single) => {
                let tracked = self.inner.lasting;
                self.inner.handle_one(single, sink.as_ref(), principal.as_ref(), tracked).await.map(Answer::One)
            }
        }
    }

    async fn handle_batch(
        &self,
        items: Vec<Incoming>,
        sink: Option<Sink>,
        principal: Option<Arc<Principal>>,
    ) -> Option<Answer> {
        if items.is_empty() {
            return Some(Answer::One(Response::error(None, RpcError::invalid_request("Invalid Request: empty batch"))));
        }
        let allowed = {
            let state = self.inner.state();
            match (state.init_responded, state.version) {
                (true, Some(v)) if v.allows_batches() => Ok(()),
                (true, Some(v)) => Err(format!("JSON-RPC batches are not supported by protocol version {v}")),
                _ if state.era == Some(Era::Modern) => {
                    Err(format!("JSON-RPC batches are not supported by protocol version {}", MODERN_VERSIONS[0]))
                }
                _ => Err("JSON-RPC batches are not supported before initialization".to_string()),
            }
        };
        if let Err(message) = allowed {
            return Some(Answer::One(Response::error(None, RpcError::invalid_request(message))));
        }
        let runs = items.into_iter().map(|m| self.inner.handle_one(m, sink.as_ref(), principal.as_ref(), true));
        let responses: Vec<Response> = futures::future::join_all(runs).await.into_iter().flatten().collect();
        (!responses.is_empty()).then_some(Answer::Batch(responses))
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

    /// Handles one message; a `tracked` request can be cancelled by a
    /// `notifications/cancelled` that names it.
    async fn handle_one(
        &self,
        message: Incoming,
        sink: Option<&Sink>,
        principal: Option<&Arc<Principal>>,
        tracked: bool,
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
            Incoming::Notification { method, params, .. } => {
                self.handle_notification(&method, &params);
                None
            }
            Incoming::Request { id, method, params, meta } => {
                self.handle_request(id, (method, params, meta), sink, principal, tracked).await
            }
        }
    }

    fn handle_notification(&self, method: &str, params: &Map<String, Value>) {
        match method {
            "notifications/initialized" => {
                let mut state = self.state();
                if state.init_responded {
                    state.initialized = true;
                }
            }
            "notifications/cancelled" => {
                if let Some(id) = params.get("requestId").and_then(RequestId::from_value)
                    && let Some(token) = self.inflight.lock().unwrap_or_else(|p| p.into_inner()).get(&id)
                {
                    token.cancel();
                }
            }
            _ => {}
        }
    }

    async fn handle_request(
        &self,
        id: RequestId,
        asked: Asked,
        sink: Option<&Sink>,
        principal: Option<&Arc<Principal>>,
        tracked: bool,
    ) -> Option<Response> {
        let cancel = self.closed.child_token();
        let tracked_id = tracked.then(|| id.clone());
        if let Some(id) = &tracked_id {
            self.inflight.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), cancel.clone());
        }
        // However the request ends (answered, cancelled, or its future dropped because the
        // client went away), work it started on other tasks sees the cancellation.
        let _in_flight = InFlight { session: self, id: tracked_id, cancel: cancel.clone() };
        let run = async {
            let call = self.route(id.clone(), asked, sink, principal, cancel.clone())?;
            AssertUnwindSafe(call.run()).catch_unwind().await.unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .copied()
                    .or_else(|| panic.downcast_ref::<String>().map(String::as_str));
                tracing::error!(method = %call.method, panic = what.unwrap_or("?"), "a handler panicked");
                Err(RpcError::internal())
            })
        };
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            outcome = run => Some(outcome),
        };
        outcome.map(|outcome| Response { id: Some(id), outcome })
    }

    /// The era rules: decides the session's era on its first request and checks that every
    /// later request belongs to it.
    fn route(
        &self,
        id: RequestId,
        (method, params, meta): Asked,
        sink: Option<&Sink>,
        principal: Option<&Arc<Principal>>,
        cancel: CancellationToken,
    ) -> Result<Call<'_>, RpcError> {
        let mut state = self.state();
        // A request that names a protocol version in `_meta` is a 2026 request.
        let (version, client_capabilities, log_level) = if meta.protocol_version.is_some() {
            if state.era == Some(Era::Handshake) {
                return Err(RpcError::invalid_request(
                    "this session negotiated its protocol version with initialize; requests must not carry the 2026-07-28 _meta envelope",
                ));
            }
            let Envelope { version, client_capabilities, log_level } = envelope::parse(&meta)?;
            state.era = Some(Era::Modern);
            state.version = Some(version);
            (version, Arc::new(client_capabilities.clone()), log_level.map(str::to_owned))
        } else if method == "initialize" {
            if state.era == Some(Era::Modern) {
                let requested = params.get("protocolVersion").cloned().unwrap_or(Value::Null);
                return Err(RpcError::new(
                    code::UNSUPPORTED_PROTOCOL_VERSION,
                    "connection is serving the 2026-07-28 protocol; initialize is not accepted",
                )
                .with_data(json!({"supported": MODERN_VERSIONS, "requested": requested})));
            }
            (Version::parse(LATEST_HANDSHAKE_VERSION).unwrap_or(Version::V2025_11_25), Arc::new(Value::Null), None)
        } else {
            if state.era == Some(Era::Modern) {
                return Err(envelope::missing_keys_error(&[
                    crate::jsonrpc::envelope_key::PROTOCOL_VERSION,
                    crate::jsonrpc::envelope_key::CLIENT_CAPABILITIES,
                ]));
            }
            if !state.init_responded && method != "ping" {
                return Err(RpcError::invalid_request("Server not initialized: send initialize first"));
            }
            let level = crate::jsonrpc::LOG_LEVELS[state.log_threshold.min(7)].to_string();
            (state.version.unwrap_or(Version::V2025_11_25), state.client_capabilities.clone(), Some(level))
        };
        drop(state);
        Ok(Call {
            session: self,
            id,
            method,
            params,
            meta,
            version,
            principal: principal.cloned().unwrap_or_else(|| self.principal.clone()),
            client_capabilities,
            log_level,
            notify: sink.cloned().or_else(|| self.send.clone()),
            cancel,
        })
    }

    /// Delivers a layer change to this handshake-era session: list changes once it is
    /// initialized, resource updates for the URIs it subscribed to.
    pub(crate) fn emit_change(&self, change: &Change) {
        let Some(send) = &self.send else { return };
        let deliver = {
            let state = self.state();
            match change {
                Change::ResourceUpdated(uri) => state.subscriptions.iter().any(|s| uri_covers(s, uri)),
                _ => state.initialized,
            }
        };
        if deliver {
            send(change_notification(change, None));
        }
    }
}

impl Call<'_> {
    pub fn server(&self) -> &Server {
        &self.session.server
    }

    pub fn modern(&self) -> bool {
        self.version.is_modern()
    }

    /// The `serverInfo` a 2026 result is stamped with; `None` on the handshake era.
    pub fn server_info(&self) -> Option<&RawValue> {
        self.modern().then_some(&self.server().shared.info_rendered)
    }

    /// The handler context of this request, without input.
    pub fn request_cx(&self) -> RequestCx {
        self.request_cx_with(Map::new(), None)
    }

    /// The handler context of this request, with the client's answers to earlier input
    /// requests and the handler's own state.
    pub fn request_cx_with(&self, input_responses: Map<String, Value>, state: Option<Value>) -> RequestCx {
        let progress_token = self.meta.progress_token.as_ref().and_then(RequestId::from_value);
        let mut cx = RequestCx::builder(self.principal.clone())
            .request_id(self.id.clone())
            .client_capabilities(self.client_capabilities.clone())
            .progress_token(progress_token)
            .log_threshold(self.log_level.as_deref())
            .cancel(self.cancel.clone())
            .input_responses(input_responses)
            .state(state);
        if let Some(notify) = &self.notify {
            cx = cx.notify(notify.clone());
        }
        cx.build()
    }

    /// Sends a request to the client (handshake era) and waits for its answer.
    pub async fn ask_client(&self, method: &str, params: Option<Value>) -> Result<Value, AskError> {
        let session = self.session;
        let (Some(notify), true) = (&self.notify, session.lasting) else {
            return Err(AskError::NoChannel);
        };
        let id = RequestId::Str(format!("duet-{}", session.next_request.fetch_add(1, Ordering::Relaxed)));
        let (tx, rx) = oneshot::channel();
        session.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), tx);
        let _forget = Forget { session, id: id.clone() };
        let mut request = json!({"jsonrpc": "2.0", "id": id.to_value(), "method": method});
        if let Some(params) = params {
            request["params"] = params;
        }
        notify(request);
        let limit = self.server().options().input_timeout;
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(AskError::Rejected(error)),
            Ok(Err(_)) => Err(AskError::NoChannel),
            Err(_) => Err(AskError::Timeout(limit)),
        }
    }

    /// Whether this request retries one that asked for input.
    pub fn is_retry(&self) -> bool {
        self.params.contains_key("inputResponses") || self.params.contains_key("requestState")
    }

    /// Stamps this 2026 request's complete result (see [`shape::stamp_modern`]).
    pub fn stamp(&self, result: &mut Value) {
        let server = self.server();
        // A retry's result must not be cached, yet a complete read result carries hints: it
        // gets a time to live of zero.
        let configured = &server.options().cache;
        let cache =
            if self.is_retry() { CacheHints { ttl_ms: 0, scope: configured.scope } } else { configured.clone() };
        shape::stamp_modern(&self.method, result, &server.shared.info_value, &cache);
    }

    /// Runs the request; a value result of a 2026 request is stamped here, rendered results
    /// were stamped when they were rendered.
    async fn run(&self) -> Result<Output, RpcError> {
        match methods::dispatch(self).await? {
            Output::Value(mut result) if self.modern() => {
                self.stamp(&mut result);
                Ok(Output::Value(result))
            }
            output => Ok(output),
        }
    }
}

/// What a request asks: its method, its params and its `_meta`.
type Asked = (String, Map<String, Value>, Meta);

/// Why a request to the client got no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("the client did not answer within {} s", .0.as_secs())]
    Timeout(std::time::Duration),
    #[error("the client answered with an error: {} ({})", .0.message, .0.code)]
    Rejected(RpcError),
    #[error("this connection cannot carry requests to the client (a stateless request has no channel back)")]
    NoChannel,
}

/// A running request: cancels its token and, when it was tracked under `id`, forgets it
/// when the request ends.
struct InFlight<'a> {
    session: &'a SessionShared,
    id: Option<RequestId>,
    cancel: CancellationToken,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.cancel.cancel();
        let Some(id) = &self.id else { return };
        let mut inflight = self.session.inflight.lock().unwrap_or_else(|p| p.into_inner());
        if inflight.get(id).is_some_and(|t| t == &self.cancel) {
            inflight.remove(id);
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
