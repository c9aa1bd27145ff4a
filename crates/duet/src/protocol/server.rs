//! The engine's entry points: [`Server::new`] makes the engine's state (`shared.rs`) and
//! ties it to the layer's changes and the backplane's bus; a transport either connects a
//! [`Session`] (a connection that lasts) or has the server answer a message on its own
//! ([`Server::answer`]: a 2026-07-28 request, or a stateless handshake-era one), which
//! builds nothing but the request.

use super::admission;
use super::batch;
use super::call::Call;
use super::directories::Directories;
use super::envelope::{self, Terms};
use super::limits::Limiter;
use super::listen::Listens;
use super::mirrored::MirroredByTool;
use super::options::ServerOptions;
use super::owed::Owed;
use super::pages::Pages;
use super::session::Session;
use super::shared::{ChangeReceiver, Server, Shared};
use super::tasks::Tasks;
use super::{Era, Version};
use crate::auth::ScopedLayer;
use crate::backplane::{Event, Published, Subscriber};
use crate::layer::{Change, Layer, Listener, NO_CAPABILITIES, Principal};
use crate::mrtr::seal::Sealer;
use crate::signals::{OperationHistograms, Transport};
use crate::state_key::{STATE_KEY_ENV, StateKey, StateKeys};
use duet_wire::jsonrpc::{Response, RpcError, Sink};
use duet_wire::message::{Incoming, Message, Request};
use std::sync::{Arc, Mutex, Weak};
use tokio_util::sync::CancellationToken;

impl Server {
    /// The engine serving `layer`: it follows the layer's changes and the backplane's bus
    /// from now on. Without a state key in the options it makes a random one (and says so).
    /// With a scope map in the options it serves `layer` through a [`ScopedLayer`].
    pub fn new(layer: Arc<dyn Layer>, options: ServerOptions) -> Self {
        let layer: Arc<dyn Layer> = match &options.scopes {
            Some(map) => Arc::new(ScopedLayer::new(layer, map.clone())),
            None => layer,
        };
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
            let running = tasks.clone();
            let limiter =
                Limiter::new(options.rate_limits.clone(), Box::new(move |principal| running.running_for(principal)));
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
                limiter,
                replica_id,
                sessions: Mutex::new(Vec::new()),
                _listeners: (listener, subscriber),
            }
        });
        Server { shared }
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
        let receiver: Arc<dyn ChangeReceiver> = session.inner.clone();
        self.shared.register(Arc::downgrade(&receiver));
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
}
