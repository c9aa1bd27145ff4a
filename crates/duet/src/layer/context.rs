//! Everything one request knows: who asks, what the client can do, its roots, how to report
//! progress and log messages, when to stop, the client's answers to earlier questions,
//! whether it may run on as a task, and the program's shared state (a
//! [`Registry`](super::Registry)'s). Nothing here says which era or transport carried the
//! request.

use super::roots::{ClientRoots, RootsSource};
use crate::layer::{LogLevel, Principal};
use duet_wire::jsonrpc::{RequestId, Sink, notification};
use duet_wire::method::Method;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The capabilities of a client that declared none (yet), made once and shared.
pub(crate) static NO_CAPABILITIES: LazyLock<Arc<Value>> = LazyLock::new(|| Arc::new(json!({})));

/// The per-request context handed to every handler, with the state `S` the handlers of
/// its registry share. Cheap to clone when `S` is.
#[derive(Clone)]
pub struct RequestCx<S = ()> {
    inner: Arc<Inner>,
    state: S,
    /// What the layers around the handler allow it to reach (see [`RequestCx::may_reach`]).
    reach: Option<ReachCheck>,
}

/// Whether a request may reach the resource a canonical URI names: `Err` says why not (the
/// scopes it lacks, say), in words a client may read.
pub type ReachCheck = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

struct Inner {
    principal: Arc<Principal>,
    client_capabilities: Arc<Value>,
    request_id: Option<RequestId>,
    progress_token: Option<RequestId>,
    last_progress: Mutex<Option<f64>>,
    log_threshold: Option<LogLevel>,
    notify: Option<Sink>,
    cancel: CancellationToken,
    input_responses: Map<String, Value>,
    state: Option<Value>,
    roots: Roots,
    task: Option<Arc<TaskLink>>,
}

/// Where the client's roots come from.
enum Roots {
    Known(ClientRoots),
    /// The session, which may have to ask the client first.
    Session(Arc<dyn RootsSource>),
}

/// The engine's side of a call that may become a task: whether its handler asked to
/// ([`RequestCx::become_task`]), whether it is one now, and where its notifications go
/// (the request's stream until it becomes a task; then nowhere, or a 2025-11-25 session).
pub(crate) struct TaskLink {
    asked: AtomicBool,
    wake: Notify,
    is_task: AtomicBool,
    sink: Mutex<Option<Sink>>,
}

impl TaskLink {
    pub(crate) fn new(sink: Option<Sink>) -> Arc<Self> {
        Arc::new(TaskLink {
            asked: AtomicBool::new(false),
            wake: Notify::new(),
            is_task: AtomicBool::new(false),
            sink: Mutex::new(sink),
        })
    }

    /// Whether the handler asked to become a task.
    pub(crate) fn was_asked(&self) -> bool {
        self.asked.load(Ordering::Acquire)
    }

    /// Resolves once the handler asked to become a task.
    pub(crate) async fn asked(&self) {
        if !self.asked.load(Ordering::Acquire) {
            self.wake.notified().await;
        }
    }

    /// The call is a task from now on; its notifications go to `sink`.
    pub(crate) fn became(&self, sink: Option<Sink>) {
        self.is_task.store(true, Ordering::Release);
        *self.sink.lock().unwrap_or_else(|p| p.into_inner()) = sink;
    }

    fn sink(&self) -> Option<Sink> {
        self.sink.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A sink that sends where the call's notifications go at the time, else to `fallback`.
    pub(crate) fn current_sink(self: &Arc<Self>, fallback: Sink) -> Sink {
        let link = self.clone();
        Arc::new(move |message| match link.sink() {
            Some(sink) => sink(message),
            None => fallback(message),
        })
    }
}

/// Builds a [`RequestCx`]; the engine uses it, and so can tests and in-process callers.
pub struct RequestCxBuilder {
    principal: Arc<Principal>,
    client_capabilities: Option<Arc<Value>>,
    request_id: Option<RequestId>,
    progress_token: Option<RequestId>,
    log_threshold: Option<LogLevel>,
    notify: Option<Sink>,
    cancel: Option<CancellationToken>,
    input_responses: Map<String, Value>,
    state: Option<Value>,
    roots: Roots,
    task: Option<Arc<TaskLink>>,
}

impl RequestCx {
    /// A context for an in-process call by `principal`: no client, no notifications.
    pub fn builder(principal: impl Into<Arc<Principal>>) -> RequestCxBuilder {
        RequestCxBuilder {
            principal: principal.into(),
            client_capabilities: None,
            request_id: None,
            progress_token: None,
            log_threshold: None,
            notify: None,
            cancel: None,
            input_responses: Map::new(),
            state: None,
            roots: Roots::Known(ClientRoots::Unstated),
            task: None,
        }
    }
}

impl<S> RequestCx<S> {
    /// The state the handlers of the request's registry share.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The same context with other shared state.
    pub fn with_state<T>(self, state: T) -> RequestCx<T> {
        RequestCx { inner: self.inner, state, reach: self.reach }
    }

    /// Whether the request may reach the resource `uri` names (canonical, as
    /// [`crate::file_uri::from_path`] writes a file's), however its handler reaches it: a
    /// tool's `path` argument, the file a prompt embeds, a completion, a search. `resources/read`
    /// is checked before its handler runs; a handler that opens, lists or completes resources
    /// by other ways asks here before each, and leaves out (or refuses) what it may not
    /// reach. A [`ScopedLayer`](crate::auth::ScopedLayer) puts the `[resources]` rules of
    /// its scope map here; without one, everything may be reached.
    pub fn may_reach(&self, uri: &str) -> Result<(), String> {
        self.reach.as_ref().map_or(Ok(()), |check| check(uri))
    }

    /// The same context, reaching only what `check` allows as well as what it did.
    pub fn reaching_only(mut self, check: ReachCheck) -> Self {
        self.reach = Some(match self.reach.take() {
            None => check,
            Some(outer) => Arc::new(move |uri: &str| outer(uri).and_then(|()| check(uri))),
        });
        self
    }

    /// The check of [`RequestCx::may_reach`], to take along where the context does not go.
    pub fn reach_check(&self) -> Option<ReachCheck> {
        self.reach.clone()
    }

    /// Who made the request.
    pub fn principal(&self) -> &Principal {
        &self.inner.principal
    }

    /// The JSON-RPC id of the request, when it has one (an in-process call may not).
    pub fn request_id(&self) -> Option<&RequestId> {
        self.inner.request_id.as_ref()
    }

    /// The capabilities the client declared (at `initialize`, or in this request's envelope).
    pub fn client_capabilities(&self) -> &Value {
        &self.inner.client_capabilities
    }

    /// Whether the client declared a capability, e.g. `"sampling"` or `"elicitation"`.
    pub fn client_supports(&self, capability: &str) -> bool {
        self.inner.client_capabilities.get(capability).is_some_and(|v| !v.is_null())
    }

    /// The client's roots ([`ClientRoots`]): the directories a handshake-era client that
    /// declared the `roots` capability says it works in, when the server asks for them
    /// ([`ServerOptions::client_roots`]). Waits while the session is asking the client (at
    /// most [`ServerOptions::roots_timeout`]); a request the session has not asked for
    /// since the client said its roots changed asks now, through this request.
    ///
    /// [`ServerOptions::client_roots`]: crate::protocol::ServerOptions::client_roots
    /// [`ServerOptions::roots_timeout`]: crate::protocol::ServerOptions::roots_timeout
    pub async fn client_roots(&self) -> ClientRoots {
        match &self.inner.roots {
            Roots::Known(roots) => roots.clone(),
            Roots::Session(source) => source.client_roots().await,
        }
    }

    /// The client's answers to the input requests of the handler's previous run, by key.
    pub fn input_responses(&self) -> &Map<String, Value> {
        &self.inner.input_responses
    }

    /// The client's answer to the input request asked under `key`, if it came.
    pub fn input(&self, key: &str) -> Option<&Value> {
        self.inner.input_responses.get(key)
    }

    /// The user's answer to the elicitation form asked under `key`, its content read as a
    /// `T` (the type the form was asked with, see [`InputRequired::elicit`], or
    /// `Map<String, Value>` for any form). `None` when there is no answer, it is not an
    /// elicitation result, or accepted content does not fit `T`: then ask again.
    ///
    /// [`InputRequired::elicit`]: super::InputRequired::elicit
    pub fn elicited<T: DeserializeOwned>(&self, key: &str) -> Option<Elicited<T>> {
        let answer = self.input(key)?.as_object()?;
        match answer.get("action")?.as_str()? {
            "accept" => T::deserialize(answer.get("content")?).ok().map(Elicited::Accepted),
            "decline" => Some(Elicited::Declined),
            "cancel" => Some(Elicited::Cancelled),
            _ => None,
        }
    }

    /// The state the handler's previous run attached to its input requests
    /// ([`InputRequired::request_state`]), back unchanged: sealed by the engine while it
    /// travelled through the client, so it is what this server wrote.
    ///
    /// [`InputRequired::request_state`]: super::InputRequired::request_state
    pub fn request_state(&self) -> Option<&Value> {
        self.inner.state.as_ref()
    }

    /// Lets the client go and runs on as a task, when this call may be one: the tool
    /// supports tasks and the client declared it can take one. The client is answered with
    /// the task at once (once it is recorded) and polls for the result or cancels; the
    /// handler carries on, its progress and log messages no longer sent to the client.
    /// Without this the engine makes a call a task when it outlasts a moment
    /// (`TaskOptions::immediate`). Returns whether the call is, or is becoming, a task;
    /// when `false` the handler simply runs on and answers as usual.
    ///
    /// Ask the client for what decides whether to go on (a confirmation) before this: it is
    /// then asked within the call itself. What a task asks for afterwards the client
    /// answers through the task.
    pub fn become_task(&self) -> bool {
        let Some(link) = &self.inner.task else { return false };
        if !link.asked.swap(true, Ordering::AcqRel) {
            link.wake.notify_one();
        }
        true
    }

    /// Whether this call runs as a task now.
    pub fn is_task(&self) -> bool {
        self.inner.task.as_ref().is_some_and(|link| link.is_task.load(Ordering::Acquire))
    }

    /// Where this request's notifications go now.
    fn sink(&self) -> Option<Sink> {
        match &self.inner.task {
            Some(link) => link.sink(),
            None => self.inner.notify.clone(),
        }
    }

    /// Reports progress. Sent only when the client asked for progress, and only when
    /// `progress` is greater than the last value sent.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let (Some(token), Some(notify)) = (&self.inner.progress_token, self.sink()) else {
            return;
        };
        {
            let mut last = self.inner.last_progress.lock().unwrap_or_else(|p| p.into_inner());
            if last.is_some_and(|l| progress <= l) {
                return;
            }
            *last = Some(progress);
        }
        let mut params = Map::new();
        params.insert("progressToken".into(), token.to_value());
        params.insert("progress".into(), number(progress));
        if let Some(total) = total {
            params.insert("total".into(), number(total));
        }
        if let Some(message) = message.filter(|m| !m.is_empty()) {
            params.insert("message".into(), Value::from(message));
        }
        notify(notification(Method::Progress.as_str(), Some(Value::Object(params))));
    }

    /// Sends a log message to the client when `level` reaches the client's threshold.
    /// `level` is read leniently ([`LogLevel::lenient`]: any case, common aliases).
    pub fn log(&self, level: &str, data: impl Into<Value>, logger: Option<&str>) {
        let level = LogLevel::lenient(level);
        tracing::debug!(target: "duet::handler", level = level.as_str(), logger, "handler log");
        let (Some(threshold), Some(notify)) = (self.inner.log_threshold, self.sink()) else {
            return;
        };
        if level < threshold {
            return;
        }
        let mut params = Map::new();
        params.insert("level".into(), Value::from(level.as_str()));
        if let Some(logger) = logger {
            params.insert("logger".into(), Value::from(logger));
        }
        params.insert("data".into(), data.into());
        notify(notification(Method::LogMessage.as_str(), Some(Value::Object(params))));
    }

    /// Resolves when the client cancels the request (or goes away).
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await
    }

    /// Whether the client cancelled the request (or went away).
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }
}

impl RequestCxBuilder {
    /// The request's JSON-RPC id.
    pub fn request_id(mut self, id: RequestId) -> Self {
        self.request_id = Some(id);
        self
    }

    /// The capabilities the client declared; none unless given.
    pub fn client_capabilities(mut self, caps: impl Into<Arc<Value>>) -> Self {
        self.client_capabilities = Some(caps.into());
        self
    }

    /// Where progress and log notifications of this request go.
    pub fn notify(mut self, sink: Sink) -> Self {
        self.notify = Some(sink);
        self
    }

    /// The progress token the request carried; progress is sent only with one.
    pub fn progress_token(mut self, token: Option<RequestId>) -> Self {
        self.progress_token = token;
        self
    }

    /// The lowest level sent to the client; `None` sends no log messages.
    pub fn log_threshold(mut self, level: Option<LogLevel>) -> Self {
        self.log_threshold = level;
        self
    }

    /// The token that cancels the request; a fresh one unless given.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// The client's answers to the input requests of a previous run, by key
    /// ([`RequestCx::input_responses`]).
    pub fn input_responses(mut self, responses: Map<String, Value>) -> Self {
        self.input_responses = responses;
        self
    }

    /// The state a previous run left ([`RequestCx::request_state`]).
    pub fn state(mut self, state: Option<Value>) -> Self {
        self.state = state;
        self
    }

    /// The client's roots, as [`RequestCx::client_roots`] gives them (a test, an
    /// in-process call); none stated unless given.
    pub fn client_roots(mut self, roots: ClientRoots) -> Self {
        self.roots = Roots::Known(roots);
        self
    }

    /// The session the client's roots come from.
    pub(crate) fn roots_source(mut self, source: Arc<dyn RootsSource>) -> Self {
        self.roots = Roots::Session(source);
        self
    }

    /// A call that may become a task: its notifications go where `link` says.
    pub(crate) fn task(mut self, link: Arc<TaskLink>) -> Self {
        self.task = Some(link);
        self
    }

    /// The context, with what was not given left at its default.
    pub fn build(self) -> RequestCx {
        let inner = Inner {
            principal: self.principal,
            client_capabilities: self.client_capabilities.unwrap_or_else(|| NO_CAPABILITIES.clone()),
            request_id: self.request_id,
            progress_token: self.progress_token,
            last_progress: Mutex::new(None),
            log_threshold: self.log_threshold,
            notify: self.notify,
            cancel: self.cancel.unwrap_or_default(),
            input_responses: self.input_responses,
            state: self.state,
            roots: self.roots,
            task: self.task,
        };
        RequestCx { inner: Arc::new(inner), state: (), reach: None }
    }
}

/// The user's answer to an elicitation form.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T> {
    /// The user submitted the form: its content.
    Accepted(T),
    /// The user said no.
    Declined,
    /// The user dismissed the form without choosing.
    Cancelled,
}

impl<T> Elicited<T> {
    /// The action the user took, as MCP names it: `accept`, `decline` or `cancel`.
    pub fn action(&self) -> &'static str {
        match self {
            Elicited::Accepted(_) => "accept",
            Elicited::Declined => "decline",
            Elicited::Cancelled => "cancel",
        }
    }
}

/// Integral progress values go out as integers (`1`, not `1.0`).
fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 { Value::from(v as i64) } else { Value::from(v) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collecting() -> (Sink, Arc<Mutex<Vec<Value>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        (Arc::new(move |v| s.lock().unwrap().push(v)), seen)
    }

    #[test]
    fn progress_needs_a_token_and_increases() {
        let (sink, seen) = collecting();
        let cx = RequestCx::builder(Principal::local()).notify(sink.clone()).build();
        cx.progress(1.0, None, None);
        assert!(seen.lock().unwrap().is_empty());
        let cx = RequestCx::builder(Principal::local())
            .notify(sink)
            .progress_token(Some(RequestId::Str("t".into())))
            .build();
        for p in [1.0, 1.0, 0.5, 2.0] {
            cx.progress(p, Some(3.0), Some("step"));
        }
        let seen = seen.lock().unwrap();
        let values: Vec<_> = seen.iter().map(|n| n["params"]["progress"].clone()).collect();
        assert_eq!(values, vec![json!(1), json!(2)]);
        assert_eq!(seen[0]["params"], json!({"progressToken": "t", "progress": 1, "total": 3, "message": "step"}));
    }

    #[test]
    fn logs_respect_the_threshold() {
        let (sink, seen) = collecting();
        let cx = RequestCx::builder(Principal::local()).notify(sink).log_threshold(Some(LogLevel::Warning)).build();
        cx.log("info", "quiet", None);
        cx.log("warn", "loud", Some("x"));
        cx.log("EMERGENCY", "louder", None);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0]["params"], json!({"level": "warning", "logger": "x", "data": "loud"}));
        assert_eq!(seen[1]["params"]["level"], "emergency");
    }

    #[test]
    fn elicitation_answers_are_typed() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Confirm {
            ok: bool,
        }
        let answers = json!({
            "yes": {"action": "accept", "content": {"ok": true}},
            "odd": {"action": "accept", "content": {"ok": "sure"}},
            "no": {"action": "decline"},
            "later": {"action": "cancel"},
            "junk": {"action": "shrug"},
        });
        let Value::Object(answers) = answers else { unreachable!() };
        let cx = RequestCx::builder(Principal::local()).input_responses(answers).build();
        assert_eq!(cx.elicited::<Confirm>("yes"), Some(Elicited::Accepted(Confirm { ok: true })));
        assert_eq!(cx.elicited::<Confirm>("odd"), None, "content that does not fit is no answer");
        assert!(matches!(cx.elicited::<Map<String, Value>>("odd"), Some(Elicited::Accepted(m)) if m["ok"] == "sure"));
        assert_eq!(cx.elicited::<Confirm>("no"), Some(Elicited::Declined));
        assert_eq!(cx.elicited::<Confirm>("later"), Some(Elicited::Cancelled));
        assert_eq!((cx.elicited::<Confirm>("junk"), cx.elicited::<Confirm>("absent")), (None, None));
    }
}
