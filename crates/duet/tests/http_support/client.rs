//! [`Client`]: a client of one protocol version (and at most one session), and [`Req`], one
//! request it builds and sends (the 2026 envelope and headers added for a 2026 client).

use super::{ACCEPT_BOTH, Checker, EventStream, Exchange, MODERN, bounded, enveloped, is_session_id};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// A client of one protocol version (and at most one session).
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    /// The server's origin: `http://127.0.0.1:PORT`.
    pub base: String,
    /// Where `post`, `get` and `delete` go.
    pub url: String,
    /// The protocol version it speaks.
    pub version: String,
    /// Send `MCP-Protocol-Version: <version>` on handshake-era requests.
    pub version_header: bool,
    /// The `Mcp-Session-Id` it sends, once it has one.
    pub session_id: Option<String>,
    /// Headers sent on every request (e.g. `Authorization`, `Origin`).
    sticky: Vec<(String, String)>,
    checker: Checker,
    ids: Arc<AtomicI64>,
}

impl Client {
    /// A client of `version` posting to `url` on the server at `base`, without a session.
    pub fn new(http: reqwest::Client, base: &str, url: &str, version: &str) -> Client {
        Client {
            http,
            base: base.to_string(),
            url: url.to_string(),
            version: version.to_string(),
            version_header: false,
            session_id: None,
            sticky: Vec::new(),
            checker: Checker::new(version),
            ids: Arc::new(AtomicI64::new(1)),
        }
    }

    /// Whether it speaks 2026-07-28.
    pub fn is_modern(&self) -> bool {
        self.version == MODERN
    }

    /// This client with a header on every request.
    pub fn with_header(mut self, name: &str, value: &str) -> Client {
        self.sticky.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.sticky.push((name.to_ascii_lowercase(), value.to_string()));
        self
    }

    /// This client with a bearer token on every request.
    pub fn with_token(self, token: &str) -> Client {
        self.with_header("authorization", &format!("Bearer {token}"))
    }

    /// This client in session `id`.
    pub fn with_session(mut self, id: &str) -> Client {
        self.session_id = Some(id.to_string());
        self
    }

    /// This client without a session.
    pub fn without_session(mut self) -> Client {
        self.session_id = None;
        self
    }

    /// The same client (its session, ids and checks) talking to another server: a replica.
    pub fn via(&self, server: &super::TestServer) -> Client {
        Client { base: server.base.clone(), url: server.url.clone(), ..self.clone() }
    }

    /// This client posting to `path` on the same server (a legacy message endpoint).
    pub fn at(&self, path: &str) -> Client {
        Client { url: format!("{}{path}", self.base), ..self.clone() }
    }

    /// A request id this client has not used.
    pub fn next_id(&self) -> Value {
        json!(self.ids.fetch_add(1, Ordering::Relaxed))
    }

    /// A request of any method to any path, with the sticky headers.
    pub fn request(&self, method: Method, path: &str) -> Req {
        let url = format!("{}{path}", self.base);
        let mut req = Req { client: self.clone(), method, url, headers: Vec::new(), body: None, id: None };
        for (name, value) in &self.sticky {
            req = req.header(name, value);
        }
        req
    }

    fn to_endpoint(&self, method: Method) -> Req {
        let mut req = self.request(method, "");
        req.url = self.url.clone();
        if let Some(id) = &self.session_id {
            req = req.header("mcp-session-id", id);
        }
        req
    }

    /// A POST of `body` as is (its request ids are remembered for validation).
    pub fn post_json(&self, body: Value) -> Req {
        self.checker.record(&body);
        let mut req = self.post_bytes(body.to_string());
        if self.version_header && !self.is_modern() {
            req = req.header("mcp-protocol-version", &self.version);
        }
        req
    }

    /// A POST of raw bytes with the JSON content type and both Accept types.
    pub fn post_bytes(&self, body: impl Into<Vec<u8>>) -> Req {
        let mut req = self.to_endpoint(Method::POST).header("content-type", "application/json");
        req = req.header("accept", ACCEPT_BOTH);
        req.body = Some(body.into());
        req
    }

    /// A request with a fresh id. A 2026 client wraps `params` in the envelope and sends
    /// `MCP-Protocol-Version`, `Mcp-Method` and (for named methods) `Mcp-Name`.
    pub fn post(&self, method: &str, params: Value) -> Req {
        let params = if self.is_modern() { enveloped(params) } else { params };
        self.post_bare(method, params)
    }

    /// Like `post`, but `params` go out exactly as given (the 2026 headers still follow).
    pub fn post_bare(&self, method: &str, params: Value) -> Req {
        let id = self.next_id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut req = self.post_json(body.clone());
        req.id = Some(id);
        if self.is_modern() {
            req = req.header("mcp-protocol-version", MODERN).header("mcp-method", method);
            if let Some(name) = mcp_name(method, &body["params"]) {
                req = req.header("mcp-name", name);
            }
        }
        req
    }

    /// A notification.
    pub fn notify(&self, method: &str, params: Value) -> Req {
        self.post_json(json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// A GET on the endpoint asking for an event stream.
    pub fn get(&self) -> Req {
        self.to_endpoint(Method::GET).header("accept", "text/event-stream")
    }

    /// A DELETE on the endpoint (ends the session).
    pub fn delete(&self) -> Req {
        self.to_endpoint(Method::DELETE)
    }

    /// Posts a request and returns its result, which must come with HTTP 200.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        let exchange = self.post(method, params).send().await;
        exchange.expect_status(StatusCode::OK);
        exchange.result().clone()
    }

    /// `initialize` then `notifications/initialized`, checking the session id and the
    /// negotiated version; later requests carry the session (and, from 2025-06-18, the
    /// version header).
    pub async fn initialize(&mut self) -> Exchange {
        self.initialize_with(json!({})).await
    }

    /// [`Client::initialize`] declaring `capabilities`.
    pub async fn initialize_with(&mut self, capabilities: Value) -> Exchange {
        let params = json!({
            "protocolVersion": self.version,
            "capabilities": capabilities,
            "clientInfo": {"name": "duet-http-tests", "version": "0"}
        });
        let exchange = self.post("initialize", params).send().await;
        exchange.expect_status(StatusCode::OK);
        let result = exchange.result();
        assert_eq!(result["protocolVersion"], self.version.as_str(), "{result}");
        assert_eq!(result["serverInfo"]["name"], "duet-testkit", "{result}");
        let id = exchange.header("mcp-session-id").expect("initialize answers with Mcp-Session-Id");
        assert!(is_session_id(id), "a session id is 32 lowercase hex digits, not {id:?}");
        self.session_id = Some(id.to_string());
        self.version_header = self.version.as_str() >= "2025-06-18";
        let initialized = self.notify("notifications/initialized", json!({})).send().await;
        initialized.expect_status(StatusCode::ACCEPTED);
        assert!(initialized.body.is_empty(), "202 has no body: {:?}", initialized.body);
        exchange
    }
}

/// What a 2026 client sends as `Mcp-Name` for a request of `method` with `params`: the
/// tool's or prompt's name, or the resource's URI.
pub fn mcp_name<'a>(method: &str, params: &'a Value) -> Option<&'a str> {
    match method {
        "tools/call" | "prompts/get" => params["name"].as_str(),
        "resources/read" => params["uri"].as_str(),
        _ => None,
    }
}

/// One HTTP request being built.
pub struct Req {
    client: Client,
    method: Method,
    url: String,
    headers: Vec<(String, Option<String>)>,
    body: Option<Vec<u8>>,
    /// The JSON-RPC id of a request built by `post`.
    pub id: Option<Value>,
}

impl Req {
    /// Sets (replaces) a header.
    pub fn header(mut self, name: &str, value: &str) -> Req {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_ascii_lowercase(), Some(value.to_string())));
        self
    }

    /// Leaves a header out.
    pub fn without(mut self, name: &str) -> Req {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    /// Sends the request and returns once the head arrived.
    pub async fn response(self) -> reqwest::Response {
        let mut builder = self.client.http.request(self.method, &self.url);
        for (name, value) in &self.headers {
            if let Some(value) = value {
                builder = builder.header(name.as_str(), value.as_str());
            }
        }
        if let Some(body) = self.body {
            builder = builder.body(body);
        }
        bounded("the response head", builder.send()).await.expect("the HTTP request fails")
    }

    /// Sends the request and reads the whole answer (checking every message in it).
    pub async fn send(self) -> Exchange {
        let checker = self.client.checker.clone();
        let response = self.response().await;
        Exchange::read(response, &checker).await
    }

    /// Sends the request: a 200 event stream, read event by event, or the whole answer
    /// that refused it.
    pub async fn stream_or_refusal(self) -> Result<EventStream, Exchange> {
        let checker = self.client.checker.clone();
        let response = self.response().await;
        if response.status() != StatusCode::OK {
            return Err(Exchange::read(response, &checker).await);
        }
        Ok(EventStream::new(response, checker))
    }

    /// Sends the request and expects a 200 event stream, read event by event.
    pub async fn stream(self) -> EventStream {
        let checker = self.client.checker.clone();
        let response = self.response().await;
        let stream = EventStream::new(response, checker);
        assert_eq!(stream.status, StatusCode::OK, "expected an event stream");
        assert_eq!(stream.header("content-type"), Some("text/event-stream"));
        stream
    }
}
