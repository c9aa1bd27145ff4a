//! The engine's settings ([`ServerOptions`]): pages, log levels, cache hints, the state
//! keys and how long sealed state lives, timeouts for asking the client, the backplane
//! replicas share, tasks, the bounds on batches and subscriptions, the limits per principal
//! and the scopes each primitive needs.

use super::batch::BatchBounds;
use super::limits::RateLimits;
use super::render::CacheHints;
use super::subscribed::Bounds;
use super::tasks::TaskOptions;
use crate::auth::ScopeMap;
use crate::backplane::Backplane;
use crate::layer::LogLevel;
use crate::mrtr::seal::DEFAULT_STATE_TTL;
use crate::state_key::StateKeys;
use std::sync::Arc;
use std::time::Duration;

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
    /// Requests per second and in flight per principal, on every transport; all off by
    /// default.
    pub rate_limits: RateLimits,
    /// Scopes each tool, prompt and resource needs. The engine then serves its layer through
    /// a [`ScopedLayer`](crate::auth::ScopedLayer) (each principal lists only what its
    /// grants cover, and a call of anything else is refused), and over HTTP a request that
    /// lacks them is answered 403 `insufficient_scope` before it runs.
    pub scopes: Option<Arc<ScopeMap>>,
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
            rate_limits: RateLimits::default(),
            scopes: None,
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
