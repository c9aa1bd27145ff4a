//! The engine's shared half: the layer, the options, and what spans connections — the
//! registered handshake-era sessions and the open listen streams that layer changes fan
//! out to. Transports create one [`Session`] per connection (or per request) from it.

use super::listen::Listens;
use super::pages::Pages;
use super::session::{Session, SessionShared};
use super::shape::CacheHints;
use super::{Era, Version};
use crate::jsonrpc::{SUPPORTED_VERSIONS, Sink};
use crate::layer::{Change, Layer, Principal, ServerInfo};
use crate::mrtr::seal::{DEFAULT_STATE_TTL, STATE_KEY_ENV, Sealer, StateKey, StateKeys};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// Engine settings shared by every connection.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Items per page of the list methods; 0 sends everything in one page.
    pub page_size: usize,
    /// The log threshold of a handshake-era session before `logging/setLevel`.
    pub default_log_level: String,
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
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            page_size: 100,
            default_log_level: "info".into(),
            cache: CacheHints::default(),
            title: "duet".into(),
            state_keys: None,
            state_ttl: DEFAULT_STATE_TTL,
            input_timeout: Duration::from_secs(300),
        }
    }
}

/// How a transport wants its session.
#[derive(Clone, Default)]
pub struct SessionOptions {
    /// Where server-initiated messages go (stdout, an HTTP session's outbox).
    pub send: Option<Sink>,
    /// The principal of requests that bring none of their own; default anonymous.
    pub principal: Option<Principal>,
    /// A handshake-era session that is initialized already at this version (stateless HTTP).
    pub stateless_version: Option<Version>,
    /// Whether the session lasts: it receives change notifications, can ask its client, and
    /// its requests can be cancelled by `notifications/cancelled`. False for one-shot
    /// sessions, which handle one message.
    pub register: bool,
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
    /// `info` as JSON, stamped on every 2026 result: as a value, and rendered for results
    /// serialized straight from typed data.
    pub info_value: Value,
    pub info_rendered: Box<RawValue>,
    pub listens: Listens,
    /// List pages, each rendered once.
    pub pages: Pages,
    pub sealer: Sealer,
    sessions: Mutex<Vec<Weak<SessionShared>>>,
    /// Kept alive here; the layer's feed holds it weakly.
    _listener: Arc<dyn Fn(&Change) + Send + Sync>,
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
        let info_value = serde_json::to_value(&info).unwrap_or(Value::Null);
        // Rendering a value cannot fail: its keys are strings and its numbers finite.
        let info_rendered = serde_json::value::to_raw_value(&info_value).unwrap_or_default();
        let shared = Arc::new_cyclic(|weak: &Weak<Shared>| {
            let weak = weak.clone();
            let listener: Arc<dyn Fn(&Change) + Send + Sync> = Arc::new(move |change: &Change| {
                if let Some(shared) = weak.upgrade() {
                    shared.dispatch(change);
                }
            });
            layer.changes().subscribe(&listener);
            Shared {
                layer: layer.clone(),
                options,
                info,
                info_value,
                info_rendered,
                listens: Listens::default(),
                pages: Pages::default(),
                sealer,
                sessions: Mutex::new(Vec::new()),
                _listener: listener,
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

    /// A new session; registered sessions receive change notifications.
    pub fn session(&self, options: SessionOptions) -> Session {
        let register = options.register;
        let session = Session::new(self.clone(), options);
        if register {
            let mut sessions = self.shared.sessions.lock().unwrap_or_else(|p| p.into_inner());
            sessions.retain(|s| s.strong_count() > 0);
            sessions.push(Arc::downgrade(&session.inner));
        }
        session
    }

    /// Ends every open listen stream with its final result (at shutdown).
    pub fn close_listens(&self) {
        self.shared.listens.close_all();
    }

    /// The number of open listen streams.
    pub fn listen_count(&self) -> usize {
        self.shared.listens.len()
    }

    /// Capabilities advertised to a client of version `v`.
    pub fn capabilities(&self, v: Version) -> Value {
        let mut caps = json!({
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "logging": {},
        });
        if v.has_completions_capability() {
            caps["completions"] = json!({});
        }
        caps
    }

    pub(crate) fn discover(&self) -> Value {
        let mut result = json!({
            "supportedVersions": SUPPORTED_VERSIONS,
            "capabilities": self.capabilities(Version::V2026_07_28),
        });
        if let Some(instructions) = &self.shared.info.instructions {
            result["instructions"] = Value::from(instructions.as_str());
        }
        result
    }
}

impl Shared {
    /// Fans one layer change out to listen streams and handshake-era sessions. Runs on the
    /// thread that raised the change; never blocks.
    fn dispatch(&self, change: &Change) {
        self.listens.dispatch(change);
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
