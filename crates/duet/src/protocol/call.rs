//! One request on its way through the engine: who asks, under which [`Terms`], where its
//! notifications go, and the session it belongs to (a handshake-era connection) or none (a
//! one-shot request). Its method runs from here, and its result is rendered from here.

use super::Version;
use super::envelope::Terms;
use super::render::{self, CacheHints, Stamp};
use super::session::state::{FromSession, SessionShared};
use super::shared::Shared;
use super::tasks::TaskCx;
use crate::layer::{ClientRoots, Principal, RequestCx, RootsSource, TaskLink};
use crate::signals::Transport;
use duet_wire::jsonrpc::{Rendered, RequestId, RpcError, Sink};
use duet_wire::message::{Meta, Request};
use duet_wire::method::Method;
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;

pub(crate) struct Call<'a> {
    pub shared: &'a Arc<Shared>,
    /// The handshake-era session the request arrived on; `None` for a one-shot request.
    pub session: Option<&'a Arc<SessionShared>>,
    pub id: RequestId,
    pub method: Method,
    /// The params without `_meta`, which is in `meta`; the method takes them (`respond`) and
    /// decodes them into its own struct.
    pub params: Map<String, Value>,
    /// Whether the request retries one that asked for input (it brings answers or state).
    retry: bool,
    pub meta: Meta,
    pub terms: Terms,
    pub principal: Arc<Principal>,
    pub notify: Option<Sink>,
    pub cancel: CancellationToken,
    /// How the request came (`None` when the program that connected did not say).
    pub transport: Option<Transport>,
    /// What the method learnt that the request's signals report.
    pub found: Found,
}

/// What a method learns on the way that the request's duration is labelled with: what the
/// request names (a tool, prompt or resource, once its params are decoded), whether the layer
/// knew the tool or prompt named (only then is its name a label), and whether a tool's result
/// was an error.
#[derive(Default)]
pub(crate) struct Found {
    named: OnceLock<String>,
    target: AtomicBool,
    tool_error: AtomicBool,
}

impl Found {
    /// Keeps the name or URI the request names, decoded from its params, and lends it back.
    pub(super) fn named(&self, name: String) -> &str {
        self.named.get_or_init(|| name)
    }

    /// The name or URI the request names, once its method decoded it.
    pub(super) fn name(&self) -> Option<&str> {
        self.named.get().map(String::as_str)
    }

    /// The layer ran the tool or prompt the request names; `failed` when a tool's result
    /// is an error.
    pub(super) fn ran(&self, failed: bool) {
        self.target.store(true, Ordering::Relaxed);
        self.tool_error.store(failed, Ordering::Relaxed);
    }

    /// Whether the layer ran the tool or prompt the request names.
    pub(super) fn target(&self) -> bool {
        self.target.load(Ordering::Relaxed)
    }

    /// Whether a tool's result was an error.
    pub(super) fn tool_error(&self) -> bool {
        self.tool_error.load(Ordering::Relaxed)
    }
}

impl<'a> Call<'a> {
    pub(super) fn new(
        shared: &'a Arc<Shared>,
        session: Option<&'a Arc<SessionShared>>,
        request: Request,
        terms: Terms,
        principal: Arc<Principal>,
        notify: Option<Sink>,
        cancel: CancellationToken,
    ) -> Self {
        let Request { id, method, params, meta } = request;
        // A one-shot request came over HTTP, the one transport that answers without a session.
        let transport = session.map_or(Some(Transport::Tcp), |session| session.transport);
        let found = Found::default();
        let retry = params.contains_key("inputResponses") || params.contains_key("requestState");
        Call { shared, session, id, method, params, retry, meta, terms, principal, notify, cancel, transport, found }
    }

    pub(super) fn version(&self) -> Version {
        self.terms.version
    }

    pub(super) fn modern(&self) -> bool {
        self.terms.version.is_modern()
    }

    /// The channel this request's messages to the client take: its own stream, else its
    /// session's.
    fn to_client(&self) -> Option<&Sink> {
        self.notify.as_ref().or(self.session.map(|s| &s.send))
    }

    /// The client's roots, once its session has them (a handshake-era request only).
    pub(super) async fn client_roots(&self) -> ClientRoots {
        match (self.session, self.to_client()) {
            (Some(session), Some(sink)) if !self.modern() => session.client_roots(sink).await,
            _ => ClientRoots::Unstated,
        }
    }

    /// The handler context of this request, without input.
    pub(super) fn request_cx(&self) -> RequestCx {
        self.request_cx_with(Map::new(), None)
    }

    /// The handler context of this request, with the client's answers to earlier input
    /// requests and the handler's own state.
    pub(super) fn request_cx_with(&self, input_responses: Map<String, Value>, state: Option<Value>) -> RequestCx {
        let progress_token = self.meta.progress_token.as_ref().and_then(RequestId::from_value);
        let mut cx = RequestCx::builder(self.principal.clone())
            .request_id(self.id.clone())
            .client_capabilities(self.terms.client_capabilities.clone())
            .progress_token(progress_token)
            .log_threshold(self.terms.log_level)
            .cancel(self.cancel.clone())
            .input_responses(input_responses)
            .state(state);
        if let Some(notify) = &self.notify {
            cx = cx.notify(notify.clone());
        }
        if let (Some(session), Some(sink)) = (self.session, self.to_client())
            && !self.modern()
        {
            cx = cx.roots_source(Arc::new(FromSession { session: session.clone(), sink: sink.clone() }));
        }
        cx.build()
    }

    /// What each run of this request's handler is told once the request may run on as a
    /// task: its notifications go where `link` says, and `work` stops it.
    pub(super) fn task_cx(&self, link: Arc<TaskLink>, work: CancellationToken) -> TaskCx {
        // A handshake-era task asks for the roots where its messages go: the request's
        // stream until it is a task, the session's after.
        let roots = self.session.filter(|_| !self.modern()).map(|session| {
            let sink = link.current_sink(session.send.clone());
            Arc::new(FromSession { session: session.clone(), sink }) as Arc<dyn RootsSource>
        });
        TaskCx {
            principal: self.principal.clone(),
            capabilities: self.terms.client_capabilities.clone(),
            request_id: self.id.clone(),
            progress_token: self.meta.progress_token.as_ref().and_then(RequestId::from_value),
            log_threshold: self.terms.log_level,
            link,
            work,
            roots,
        }
    }

    /// Whether this request retries one that asked for input.
    pub(super) fn is_retry(&self) -> bool {
        self.retry
    }

    /// Renders a complete result: `body` (without `_meta`) and its own `_meta` entries,
    /// stamped on 2026-07-28.
    pub(super) fn complete(
        &self,
        body: impl Serialize,
        own_meta: Option<&Map<String, Value>>,
    ) -> Result<Rendered, RpcError> {
        let cache = self.method.traits().cacheable.then(|| self.cache_hints());
        render::render(body, own_meta, self.stamp("complete", cache))
    }

    /// Renders the 2026 `input_required` result of a multi round-trip request.
    pub(super) fn input_required(&self, body: impl Serialize) -> Result<Rendered, RpcError> {
        render::render(body, None, self.stamp("input_required", None))
    }

    /// Renders the 2026 `CreateTaskResult` of a request that runs on as a task.
    pub(super) fn task_created(&self, body: impl Serialize) -> Result<Rendered, RpcError> {
        render::render(body, None, self.stamp("task", None))
    }

    fn stamp(&self, result_type: &'static str, cache: Option<CacheHints>) -> Option<Stamp<'a>> {
        self.modern().then_some(Stamp { result_type, cache, server_info: &self.shared.info_rendered })
    }

    /// The hints of this request's cacheable result. A retry's result must not be cached,
    /// yet a complete read result carries hints: it gets a time to live of zero.
    fn cache_hints(&self) -> CacheHints {
        let configured = self.shared.options.cache;
        if self.is_retry() { CacheHints { ttl_ms: 0, ..configured } } else { configured }
    }
}
