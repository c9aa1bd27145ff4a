//! The engine's state, which every connection and request shares ([`Shared`], behind the
//! [`Server`] handle): the layer, the options, the listen streams, list pages, the sealer,
//! the tasks, and the sessions that layer changes reach. Sessions and requests read it;
//! the entry points that make them are `server.rs`.

use super::admission::{self, Hints};
use super::directories::Directories;
use super::envelope::Terms;
use super::limits::Limiter;
use super::listen::Listens;
use super::mirrored::MirroredByTool;
use super::options::ServerOptions;
use super::pages::Pages;
use super::tasks::Tasks;
use crate::backplane::{Event, Published, Subscriber};
use crate::layer::{Change, Layer, Listener, Principal, ServerInfo};
use crate::mrtr::seal::Sealer;
use crate::signals::OperationHistograms;
use duet_wire::jsonrpc::RpcError;
use duet_wire::message::Request;
use serde_json::value::RawValue;
use std::sync::{Arc, Mutex, Weak};

/// What a layer change reaches besides listen streams: a handshake-era session, which
/// delivers it to its client.
pub(crate) trait ChangeReceiver: Send + Sync {
    /// Takes `change` on, on the thread that raised or received it: never blocks.
    fn receive(&self, change: &Change);
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
    /// The limits per principal every message meets at the gate.
    pub limiter: Limiter,
    /// Tells this server's changes from those other replicas publish on the bus.
    pub(super) replica_id: u64,
    /// The handshake-era sessions, which layer changes reach.
    pub(super) sessions: Mutex<Vec<Weak<dyn ChangeReceiver>>>,
    /// Kept alive here; the layer's feed and the bus hold them weakly.
    pub(super) _listeners: (Arc<Listener>, Arc<Subscriber>),
}

impl Server {
    /// What the server serves.
    pub fn layer(&self) -> &Arc<dyn Layer> {
        &self.shared.layer
    }

    /// The engine's settings.
    pub fn options(&self) -> &ServerOptions {
        &self.shared.options
    }

    /// The `serverInfo` it answers: the layer's, titled from the options when the layer
    /// gives no title.
    pub fn info(&self) -> &ServerInfo {
        &self.shared.info
    }

    /// How many tasks of principal `principal` (its id) run on this replica: the limits
    /// (`ServerOptions::rate_limits`) count them as requests in flight, and so may a program
    /// admitting requests of its own.
    pub fn running_tasks_of(&self, principal: &str) -> usize {
        self.shared.tasks.running_for(principal)
    }

    /// This server's id among the replicas sharing its backplane, random at start.
    pub fn replica_id(&self) -> u64 {
        self.shared.replica_id
    }

    /// The 2026 ladder for `request` (see `admission.rs`): its terms, or why it is refused.
    /// `hints` are the headers its transport carries beside the body, if any.
    pub(crate) fn admit_modern(
        &self,
        principal: &Principal,
        request: &mut Request,
        hints: Option<&dyn Hints>,
    ) -> Result<Terms, RpcError> {
        admission::modern(&self.shared.mirrored, self.shared.layer.as_ref(), principal, request, hints)
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
    pub(super) fn dispatch(&self, change: &Change) {
        self.listens.dispatch(change, self.layer.as_ref());
        let sessions: Vec<Arc<dyn ChangeReceiver>> = {
            let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
            sessions.retain(|s| s.strong_count() > 0);
            sessions.iter().filter_map(Weak::upgrade).collect()
        };
        for session in &sessions {
            session.receive(change);
        }
    }

    /// Lets `session` receive the layer's changes while it lives.
    pub(super) fn register(&self, session: Weak<dyn ChangeReceiver>) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|s| s.strong_count() > 0);
        sessions.push(session);
    }
}
