//! Settings of the HTTP transport, and their defaults.

use crate::auth::{Authenticator, PrincipalResolver, ProtectedResource, endpoint_url};
use std::sync::Arc;
use std::time::Duration;

/// How the HTTP endpoint listens, whom it lets in, and its limits. `Default` is a loopback
/// server on port 8765 at `/mcp`, without authentication.
#[derive(Clone)]
pub struct HttpConfig {
    /// Bind address; port 0 picks a free port.
    pub host: String,
    /// Port to bind.
    pub port: u16,
    /// The Streamable HTTP endpoint.
    pub path: String,
    /// Serve the deprecated 2024-11-05 HTTP+SSE transport too.
    pub enable_sse: bool,
    /// The legacy transport's event stream (GET).
    pub sse_path: String,
    /// Where the legacy transport's messages are posted.
    pub message_path: String,
    /// Origin patterns (fnmatch); `None` allows the loopback origins.
    pub allowed_origins: Option<Vec<String>>,
    /// Host patterns; `None` checks Host only on a loopback bind.
    pub allowed_hosts: Option<Vec<String>>,
    /// Origins granted CORS (also allowed as origins).
    pub cors_origins: Vec<String>,
    /// Who a bearer token stands for (static tokens, OAuth access tokens, or a chain of
    /// them); `None` serves without authentication.
    pub auth: Option<Arc<dyn Authenticator>>,
    /// duet as an OAuth protected resource: its canonical URI (the audience tokens must
    /// name) and authorization servers. Serves the Protected Resource Metadata and makes
    /// 401 challenges point at it. `None`: static tokens only, challenged with
    /// `Bearer realm="duet"`.
    pub resource: Option<ProtectedResource>,
    /// Whether a trusted proxy's forwarded host (and scheme) make the canonical URI of a
    /// request, when that host is one of the names `allowed_hosts` gives (not a pattern),
    /// or without any, the bound host and port; set when binding filled in a `resource`
    /// given without one.
    pub canonical_follows_proxy: bool,
    /// Reverse proxies whose `Forwarded` / `X-Forwarded-Host` / `X-Forwarded-Proto` are
    /// believed (by the connection's peer address); from anyone else they are ignored.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Which of those headers the trusted proxies set (the other is never read: it is
    /// whatever the client sent).
    pub proxy_header: ProxyHeader,
    /// Decides who a request runs as from what it carries, after the authenticator; when
    /// there is none (or it declines): the authenticated principal, else the anonymous one.
    pub principal_resolver: Option<PrincipalResolver>,
    /// Never answer POSTs with SSE.
    pub json_response: bool,
    /// No sessions: every handshake-era request runs in a throwaway session.
    pub stateless: bool,
    /// The largest request body read; a larger one is answered 413.
    pub max_body_bytes: usize,
    /// The most bytes of a request's head (request line and headers).
    pub max_header_bytes: usize,
    /// How long a handshake-era session lives without a request.
    pub session_idle_timeout: Duration,
    /// Handshake-era sessions open at once, over the whole server.
    pub max_sessions: usize,
    /// Handshake-era sessions one principal may hold open.
    pub max_sessions_per_principal: usize,
    /// HTTP connections open at once; past it a new connection is refused.
    pub max_connections: usize,
    /// Connections one peer may hold open (an IPv4 address, or an IPv6 /64); 0 for no
    /// cap; `None` for an eighth of `max_connections` ([`HttpConfig::connections_per_peer`]).
    /// Behind a reverse proxy every connection comes from the proxy: raise it to what the
    /// proxy opens, or turn it off.
    pub max_connections_per_peer: Option<usize>,
    /// How long a client may take to send a request's head.
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body.
    pub body_timeout: Duration,
    /// How long a write to a connection may wait for the client to read before the
    /// connection is closed: an answer a client does not read is not held forever.
    pub write_timeout: Duration,
    /// How often an idle SSE stream gets a comment, so proxies keep it open.
    pub keepalive_interval: Duration,
    /// How long a client waits before it reconnects to a stream that ended early (the SSE
    /// `retry` of 2025-11-25 streams).
    pub sse_retry: Duration,
    /// Ends a 2025-11-25 POST's SSE stream that has been open this long without its answer;
    /// the client picks up the rest with a GET (SEP-1699 polling), so a long request holds
    /// no connection. `None` (the default): a stream stays open until its answer.
    pub sse_close_after: Option<Duration>,
    /// How long the events of a session's streams are kept, after the last one, for a
    /// client to resume a broken stream (each stream also keeps only its newest 512).
    pub event_retention: Duration,
    /// `None` disables the health endpoint.
    pub health_path: Option<String>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            host: "127.0.0.1".into(),
            port: 8765,
            path: "/mcp".into(),
            enable_sse: false,
            sse_path: "/sse".into(),
            message_path: "/messages/".into(),
            allowed_origins: None,
            allowed_hosts: None,
            cors_origins: Vec::new(),
            auth: None,
            resource: None,
            canonical_follows_proxy: false,
            trusted_proxies: Vec::new(),
            proxy_header: ProxyHeader::default(),
            principal_resolver: None,
            json_response: false,
            stateless: false,
            max_body_bytes: 4 * 1024 * 1024,
            max_header_bytes: 64 * 1024,
            session_idle_timeout: Duration::from_secs(3600),
            max_sessions: 1000,
            max_sessions_per_principal: 100,
            max_connections: 512,
            max_connections_per_peer: None,
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(120),
            write_timeout: Duration::from_secs(60),
            keepalive_interval: Duration::from_secs(15),
            sse_retry: Duration::from_secs(1),
            sse_close_after: None,
            event_retention: Duration::from_secs(300),
            health_path: Some("/healthz".into()),
        }
    }
}

/// The default share of `max_connections` one peer may hold: an eighth (64 of the default
/// 512), so that it takes eight peers, not two, to fill the server.
const PEER_SHARE: usize = 8;

impl HttpConfig {
    /// The connections one peer may hold open: `max_connections_per_peer`, else
    /// `max_connections / PEER_SHARE` rounded up; 0 for no cap.
    pub fn connections_per_peer(&self) -> usize {
        self.max_connections_per_peer.unwrap_or(self.max_connections.div_ceil(PEER_SHARE))
    }

    /// Fills in a protected resource without a canonical URI with the URL of the endpoint
    /// as bound (`http://host:port/path`), once the port is known.
    pub fn resolve_resource(&mut self, port: u16) {
        if let Some(resource) = self.resource.as_mut().filter(|r| r.resource.is_empty()) {
            resource.resource = endpoint_url("http", &self.host, port, &self.path);
            self.canonical_follows_proxy = true;
        }
    }
}

/// The header a trusted proxy sets for the host and scheme the client used; the other is
/// never read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProxyHeader {
    /// `X-Forwarded-Host` and `X-Forwarded-Proto` (what nginx is usually told to set).
    #[default]
    XForwarded,
    /// `Forwarded` (RFC 7239): its `host=` and `proto=`.
    Forwarded,
}

impl ProxyHeader {
    /// The names of the headers read, as a `Vary` value.
    pub fn vary(self) -> &'static str {
        match self {
            ProxyHeader::XForwarded => "Host, X-Forwarded-Host, X-Forwarded-Proto",
            ProxyHeader::Forwarded => "Host, Forwarded",
        }
    }
}
