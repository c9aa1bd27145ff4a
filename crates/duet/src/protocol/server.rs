//! The engine's shared half: the layer, the options, and what spans connections — the
//! handshake-era sessions and the open listen streams that layer changes fan out to, and
//! the tasks. A
//! transport either connects a [`Session`] (a connection that lasts) or has the server
//! answer a message on its own ([`Server::answer`]: a 2026-07-28 request, or a stateless
//! handshake-era one), which builds nothing but the request.

use super::admission::{self, Mirrors};
use super::batch;
use super::batch::BatchBounds;
use super::call::Call;
use super::directories::Directories;
use super::envelope::{self, Terms};
use super::listen::Listens;
use super::mirrored::MirroredByTool;
use super::owed::Owed;
use super::pages::Pages;
use super::render::CacheHints;
use super::session::{Session, SessionShared};
use super::subscribed::Bounds;
use super::tasks::{TaskOptions, Tasks};
use super::{Era, Version};
use crate::backplane::{Backplane, Event, Published, Subscriber};
use crate::layer::{Change, Layer, Listener, LogLevel, NO_CAPABILITIES, Principal, ServerInfo};
use crate::mrtr::seal::{DEFAULT_STATE_TTL, Sealer};
use crate::signals::{OperationHistograms, Transport};
use crate::state_key::{STATE_KEY_ENV, StateKey, StateKeys};
use duet_wire::jsonrpc::{Response, RpcError, Sink};
use duet_wire::message::{Incoming, Message, Request};
use serde_json::value::RawValue;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Engine settings shared by every connection.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Items per page of the list methods; 0 sends everything in one page. The default,
    /// 1000, lists a typical server in one answer (one round trip, and everything even for
    /// a client that does not follow cursors) and pages a large workspace.
    pub page_size: usize,
    /// The log threshold of a handshake-era session before `logging/setLevel`.
    pub default_log_level: LogLevel,
    /// Cache hints stamped on cacheable 2026 results.
    pub cache: CacheHints,
    /// The title in `serverInfo` when the layer's info has none.
    pub title: String,
    /// Keys that seal multi round-trip state; `None` makes a random key at start (state
    /// then survives neither a restart nor a hop to another replica).
    pub state_keys: Option<StateKeys>,
    /// How long a sealed request state stays valid.
    pub state_ttl: Duration,
    /// How long a handshake-era client has to answer a request for input.
    pub input_timeout: Duration,
    /// Ask each handshake-era client that declares the `roots` capability for its roots
    /// (`roots/list`) once it is initialized and whenever it says they changed; handlers
    /// read them with `RequestCx::client_roots`, and `resources/list` asks the layer for
    /// `Layer::resources_within` them. Off by default: a server that does not narrow
    /// what it serves to the client's roots need not ask.
    pub client_roots: bool,
    /// How long a client has to answer `roots/list`; a request that needs the roots waits
    /// at most this long. A client answers from what it knows, so the default is short
    /// (5 s): one that declares roots and never answers delays a request once by no more.
    pub roots_timeout: Duration,
    /// What this server shares with its replicas; in memory by default (one replica).
    /// Each replica serves its own layer: what a layer raises reaches the others' listen
    /// streams and sessions through the backplane's bus. Tasks live in its keys.
    pub backplane: Backplane,
    /// How tasks run, and how many there may be.
    pub tasks: TaskOptions,
    /// Messages one JSON-RPC batch may hold (2024-11-05 and 2025-03-26); a longer batch is
    /// refused whole.
    pub max_batch_items: usize,
    /// Bytes the answer of one JSON-RPC batch may reach (it is held whole until sent):
    /// once it does, the batch's other requests are answered -32029 instead of running.
    pub max_batch_answer_bytes: usize,
    /// Resource subscriptions one handshake-era session, or one `subscriptions/listen`
    /// stream, may hold.
    pub max_subscriptions: usize,
    /// The longest URI, in bytes, a resource subscription may name.
    pub max_subscription_uri_bytes: usize,
    /// What makes each request's OpenTelemetry span (the `otel` feature), as the semantic
    /// conventions for MCP describe it, and where it goes; `None`, the default, makes none.
    /// See [`crate::trace::Tracer`].
    #[cfg(feature = "otel")]
    pub tracer: Option<crate::trace::Tracer>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            page_size: 1000,
            default_log_level: LogLevel::Info,
            cache: CacheHints::default(),
            title: "duet".into(),
            state_keys: None,
            state_ttl: DEFAULT_STATE_TTL,
            input_timeout: Duration::from_secs(300),
            client_roots: false,
            roots_timeout: Duration::from_secs(5),
            backplane: Backplane::memory(),
            tasks: TaskOptions::default(),
            max_batch_items: 100,
            max_batch_answer_bytes: 16 * 1024 * 1024,
            max_subscriptions: 100,
            max_subscription_uri_bytes: 4096,
            #[cfg(feature = "otel")]
            tracer: None,
        }
    }
}

impl ServerOptions {
    /// How many messages one batch may hold, and how many bytes its answer.
    pub(crate) fn batch_bounds(&self) -> BatchBounds {
        BatchBounds { items: self.max_batch_items, answer_bytes: self.max_batch_answer_bytes }
    }

    /// What makes each request's OpenTelemetry span, if anything does.
    pub(crate) fn tracer(&self) -> crate::trace::TracerRef<'_> {
        #[cfg(feature = "otel")]
        return self.tracer.as_ref();
        #[cfg(not(feature = "otel"))]
        None
    }

    /// How many resource subscriptions a subscriber may hold, and how long their URIs may be.
    pub(crate) fn subscription_bounds(&self) -> Bounds {
        Bounds { count: self.max_subscriptions, uri_bytes: self.max_subscription_uri_bytes }
    }
}

/// The shared engine. Cheap to clone.
#[derive(Clone)]
pub struct Server {
    pub(crate) shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub layer: Arc<dyn Layer>,
    pub options: ServerOptions,
    pub info: ServerInfo,
    /// `info` as JSON, rendered once, stamped on every 2026 result.
    pub info_rendered: Box<RawValue>,
    pub listens: Listens,
    /// List pages, each rendered once.
    pub pages: Pages,
    /// The folders of the skills served, indexed once per skills listing.
    pub directories: Directories,
    pub sealer: Sealer,
    pub tasks: Arc<Tasks>,
    /// The handles of the requests' duration histogram, by labels.
    pub operation_histograms: OperationHistograms,
    /// The arguments each listed tool mirrors in headers, read once per listing.
    pub mirrored: MirroredByTool,
    /// Tells this server's changes from those other replicas publish on the bus.
    replica_id: u64,
    sessions: Mutex<Vec<Weak<SessionShared>>>,
    /// Kept alive here; the layer's feed and the bus hold them weakly.
    _listeners: (Arc<Listener>, Arc<Subscriber>),
}

impl Server {
    pub fn new(layer: Arc<dyn Layer>, options: ServerOptions) -> Self {
        let mut info = layer.info().clone();
        if info.title.is_none() {
            info.title = Some(options.title.clone());
        }
        let keys = options.state_keys.clone().unwrap_or_else(|| {
            tracing::warn!(
                "no state key configured ({STATE_KEY_ENV}): multi round-trip state will not survive a restart or cross replicas"
            );
            StateKeys::new(StateKey::random())
        });
        let sealer = Sealer::new(keys, options.state_ttl);
        // Rendering plain data cannot fail: its keys are strings.
        let info_rendered = serde_json::value::to_raw_value(&info).unwrap_or_default();
        let replica_id = rand::random();
        let shared = Arc::new_cyclic(|weak: &Weak<Shared>| {
            let (own, others, tasks) = (weak.clone(), weak.clone(), weak.clone());
            let listener: Arc<Listener> = Arc::new(move |change: &Change| {
                if let Some(shared) = own.upgrade() {
                    shared.dispatch(change);
                    let event = Event::Change(change.clone());
                    shared.options.backplane.bus.publish(Published { origin: replica_id, event });
                }
            });
            let subscriber: Arc<Subscriber> = Arc::new(move |published: &Published| {
                let Some(shared) = others.upgrade().filter(|_| published.origin != replica_id) else { return };
                match &published.event {
                    Event::Change(change) => shared.dispatch(change),
                    Event::Task(id) => shared.task_changed(id, false),
                    Event::Routed(_) | Event::Session { .. } | Event::Logged { .. } | Event::Resuming { .. } => {}
                }
            });
            let task_changed = Box::new(move |id: &str| {
                if let Some(shared) = tasks.upgrade() {
                    shared.task_changed(id, true);
                }
            });
            let tasks =
                Arc::new(Tasks::new(options.tasks.clone(), options.backplane.keys.clone(), replica_id, task_changed));
            layer.changes().subscribe(&listener);
            options.backplane.bus.subscribe(&subscriber);
            Shared {
                layer: layer.clone(),
                options,
                info,
                info_rendered,
                listens: Listens::default(),
                pages: Pages::default(),
                directories: Directories::default(),
                sealer,
                tasks,
                operation_histograms: OperationHistograms::default(),
                mirrored: MirroredByTool::default(),
                replica_id,
                sessions: Mutex::new(Vec::new()),
                _listeners: (listener, subscriber),
            }
        });
        Server { shared }
    }

    pub fn layer(&self) -> &Arc<dyn Layer> {
        &self.shared.layer
    }

    pub fn options(&self) -> &ServerOptions {
        &self.shared.options
    }

    pub fn info(&self) -> &ServerInfo {
        &self.shared.info
    }

    /// How many tasks of principal `principal` (its id) run on this replica: the HTTP
    /// transport counts them as requests in flight, and so may a program admitting requests
    /// of its own.
    pub fn running_tasks_of(&self, principal: &str) -> usize {
        self.shared.tasks.running_for(principal)
    }

    /// This server's id among the replicas sharing its backplane, random at start.
    pub fn replica_id(&self) -> u64 {
        self.shared.replica_id
    }

    /// A session for a connection that lasts: `send` carries what the server sends
    /// unprompted (change notifications, requests to the client), `principal` is who the
    /// connection runs as. It receives change notifications until it is dropped.
    pub fn connect(&self, send: Sink, principal: Principal) -> Session {
        self.connect_session(send, principal, None)
    }

    /// [`connect`](Self::connect) for a connection that came over `transport`, which the
    /// signals label its requests with.
    pub fn connect_over(&self, transport: Transport, send: Sink, principal: Principal) -> Session {
        self.connect_session(send, principal, Some(transport))
    }

    fn connect_session(&self, send: Sink, principal: Principal, transport: Option<Transport>) -> Session {
        let session = Session::new(self.clone(), send, Arc::new(principal), transport);
        let mut sessions = self.shared.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|s| s.strong_count() > 0);
        sessions.push(Arc::downgrade(&session.inner));
        session
    }

    /// Answers a message that needs no session, keeping nothing: 2026-07-28 requests, each
    /// read by its own envelope, and, when a stateless transport fixed a handshake-era
    /// version for them (`at`), requests without one. Without `at` such a request is
    /// refused for its missing envelope. Notifications and stray responses are ignored;
    /// `sink` receives the request notifications (progress, logs, a listen stream's
    /// events), and nothing can ask the client a question.
    pub async fn answer(
        &self,
        message: impl Into<Message>,
        at: Option<Version>,
        principal: Arc<Principal>,
        sink: Option<Sink>,
    ) -> Option<Message<Response>> {
        let message = message.into();
        let owed = Owed::of(&message);
        owed.guard(async {
            match message {
                Message::One(one) => self.answer_one(one, at, &principal, sink.as_ref()).await.map(Message::One),
                Message::Batch(items) => {
                    let refusal = admission::batch(&items, at).or_else(|| batch::refusal(at, at.is_none()));
                    let bounds = self.shared.options.batch_bounds();
                    batch::answer(items, refusal, bounds, |m| self.answer_one(m, at, &principal, sink.as_ref())).await
                }
            }
        })
        .await
    }

    async fn answer_one(
        &self,
        message: Incoming,
        at: Option<Version>,
        principal: &Arc<Principal>,
        sink: Option<&Sink>,
    ) -> Option<Response> {
        match message {
            Incoming::Request(mut request) => match self.terms_of(&mut request, at, principal) {
                Ok(terms) => Some(self.answer_request(request, terms, principal.clone(), sink.cloned()).await),
                Err(error) => Some(Response::error(Some(request.id), error)),
            },
            Incoming::Invalid(response) => Some(response),
            _ => None,
        }
    }

    /// The terms of a one-shot request: its envelope's, or the handshake-era version `at`.
    fn terms_of(&self, request: &mut Request, at: Option<Version>, principal: &Principal) -> Result<Terms, RpcError> {
        match (envelope::era_of(&request.meta, at), at) {
            (Era::Modern, _) => self.admit_modern(principal, request, None),
            (Era::Handshake, Some(version)) => Ok(Terms {
                version,
                client_capabilities: NO_CAPABILITIES.clone(),
                log_level: Some(self.shared.options.default_log_level),
            }),
            (Era::Handshake, None) => Err(envelope::missing_keys(&request.meta)
                .unwrap_or_else(|| RpcError::invalid_request("this request needs a session"))),
        }
    }

    /// The 2026 ladder for `request` (see `admission.rs`): its terms, or why it is refused.
    /// `mirrors` are the headers its transport carries beside the body, if any.
    pub(crate) fn admit_modern(
        &self,
        principal: &Principal,
        request: &mut Request,
        mirrors: Option<&dyn Mirrors>,
    ) -> Result<Terms, RpcError> {
        admission::modern((&self.shared.mirrored, self.shared.layer.as_ref()), principal, request, mirrors)
    }

    /// Answers one request whose terms the transport has read (over HTTP, the 2026 ladder
    /// reads the envelope). Dropping the future cancels the request.
    pub(crate) async fn answer_request(
        &self,
        request: Request,
        terms: Terms,
        principal: Arc<Principal>,
        notify: Option<Sink>,
    ) -> Response {
        let cancel = CancellationToken::new();
        let _cancel_when_dropped = cancel.clone().drop_guard();
        Call::new(&self.shared, None, request, terms, principal, notify, cancel).respond().await
    }

    /// Ends every open listen stream with its final result (at shutdown).
    pub fn close_listens(&self) {
        self.shared.listens.close_all();
    }

    /// The number of open listen streams.
    pub fn listen_count(&self) -> usize {
        self.shared.listens.len()
    }
}

impl Shared {
    /// A task's record changed, here (`publish` it to the other replicas) or on another
    /// replica: wakes whoever waits for it here, and tells the listen streams that follow it.
    pub(crate) fn task_changed(self: &Arc<Self>, id: &str, publish: bool) {
        self.tasks.wake(id);
        if self.listens.follows(id)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let (shared, id) = (self.clone(), id.to_string());
            runtime.spawn(async move {
                match shared.tasks.get(&id).await {
                    Ok(Some(record)) => shared.listens.dispatch_task(&record),
                    Ok(None) => {}
                    Err(e) => tracing::warn!(task = %id, "a listen stream misses a change of the task: {e}"),
                }
            });
        }
        if publish {
            let event = Event::Task(id.to_string());
            self.options.backplane.bus.publish(Published { origin: self.replica_id, event });
        }
    }

    /// Fans one change, of this server's layer or from another replica, out to listen
    /// streams and handshake-era sessions. Runs on the thread that raised or received the
    /// change; never blocks.
    fn dispatch(&self, change: &Change) {
        self.listens.dispatch(change, self.layer.as_ref());
        let sessions: Vec<Arc<SessionShared>> = {
            let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
            sessions.retain(|s| s.strong_count() > 0);
            sessions.iter().filter_map(Weak::upgrade).collect()
        };
        for session in sessions.iter().filter(|s| s.era() == Some(Era::Handshake)) {
            session.emit_change(change);
        }
    }
}
