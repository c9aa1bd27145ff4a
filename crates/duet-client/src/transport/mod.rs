//! How the client reaches a server: the [`Transport`] a [`Client`](crate::Client) is given,
//! and what the client hands it for each message ([`Outgoing`]). Each transport routes what
//! the server sends: an answer to the request waiting for it, a notification to the
//! client's channel.

mod http;
mod inbound;
mod legacy;
mod listen;
mod pending;
mod resume;
mod routing;
mod sse;
mod stdio;

pub use http::HttpTransport;
pub use legacy::LegacySseTransport;
pub use stdio::StdioTransport;

use crate::error::Error;
use duet_wire::jsonrpc::RequestId;
use duet_wire::method::{Method, Primitive};
use duet_wire::version::Version;
use serde_json::{Map, Value, json};

/// The most bytes one message from the server may take: a stdio line, a JSON body, one SSE
/// event. A larger one is a protocol violation.
pub(crate) const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// How the client reaches its server.
#[derive(Debug)]
pub enum Transport {
    /// A command the client spawned, over its stdin and stdout.
    Stdio(StdioTransport),
    /// A Streamable HTTP endpoint.
    Http(HttpTransport),
    /// The deprecated HTTP+SSE transport (2024-11-05): an event stream, and an endpoint
    /// to post to.
    LegacySse(LegacySseTransport),
}

impl From<StdioTransport> for Transport {
    fn from(stdio: StdioTransport) -> Self {
        Transport::Stdio(stdio)
    }
}

impl From<HttpTransport> for Transport {
    fn from(http: HttpTransport) -> Self {
        Transport::Http(http)
    }
}

impl From<LegacySseTransport> for Transport {
    fn from(legacy: LegacySseTransport) -> Self {
        Transport::LegacySse(legacy)
    }
}

/// One message on its way to the server: its method, its params (with `_meta`), the
/// revision it is sent in, once known (HTTP sends it as `MCP-Protocol-Version`), and the
/// arguments a 2026 tool call mirrors in headers (`Mcp-Param-*`, names and plain values).
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) method: Method,
    pub(crate) params: Map<String, Value>,
    pub(crate) version: Option<Version>,
    pub(crate) mirrored: Vec<(String, String)>,
}

impl Outgoing {
    /// A message that mirrors nothing in headers.
    pub(crate) fn new(method: Method, params: Map<String, Value>, version: Option<Version>) -> Outgoing {
        Outgoing { method, params, version, mirrored: Vec::new() }
    }

    /// A `notifications/cancelled` for request `id`, which the caller gave up on.
    pub(crate) fn cancelled(id: &RequestId, version: Option<Version>) -> Outgoing {
        let mut params = Map::new();
        params.insert("requestId".into(), id.to_value());
        params.insert("reason".into(), "the client gave up on the request".into());
        Outgoing::new(Method::Cancelled, params, version)
    }

    /// The JSON-RPC text: a request with `id`, a notification without.
    pub(crate) fn text(&self, id: Option<&RequestId>) -> String {
        let mut message = json!({"jsonrpc": "2.0", "method": self.method.as_str(), "params": self.params});
        if let Some(id) = id {
            message["id"] = id.to_value();
        }
        duet_wire::jsonrpc::encode(&message)
    }

    /// The primitive the message names, by the parameter the method table says (what a
    /// 2026 request mirrors in `Mcp-Name`).
    pub(crate) fn name(&self) -> Option<&str> {
        let param = self.method.traits().target.map(Primitive::param)?;
        self.params.get(param).and_then(Value::as_str)
    }
}

impl Transport {
    /// Sends a request and waits for its answer: the result, or the server's error.
    pub(crate) async fn request(&self, id: &RequestId, out: &Outgoing) -> Result<Value, Error> {
        match self {
            Transport::Stdio(stdio) => stdio.request(id, out).await,
            Transport::Http(http) => http.request(id, out).await,
            Transport::LegacySse(legacy) => legacy.request(id, out).await,
        }
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, out: &Outgoing) -> Result<(), Error> {
        match self {
            Transport::Stdio(stdio) => stdio.notify(out),
            Transport::Http(http) => http.notify(out).await,
            Transport::LegacySse(legacy) => legacy.notify(out).await,
        }
    }

    /// Where what the server sends unasked goes: the caller's notifications, its watchers
    /// and its handlers.
    pub(crate) fn inbox(&self) -> &inbound::Inbox {
        match self {
            Transport::Stdio(stdio) => stdio.inbox(),
            Transport::Http(http) => http.inbox(),
            Transport::LegacySse(legacy) => legacy.inbox(),
        }
    }

    /// Ends the connection: the HTTP session deleted (the legacy one's stream ended), the
    /// process stopped and reaped.
    pub(crate) async fn close(self) {
        match self {
            Transport::Stdio(stdio) => stdio.close().await,
            Transport::Http(http) => http.close().await,
            Transport::LegacySse(legacy) => legacy.close().await,
        }
    }
}
