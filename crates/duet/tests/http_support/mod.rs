//! Shared support of the HTTP integration tests: a real `HttpServer` on 127.0.0.1 port 0
//! over the test registry, a `reqwest` client that speaks one protocol version, SSE parsing,
//! and raw sockets for the requests that have to be malformed.
//!
//! Every JSON-RPC message a test reads through this module (a JSON answer, an SSE event of
//! a request stream, a GET stream, a legacy stream or a listen stream) is checked against
//! the MCP schema of the client's version before the test sees it: results against the
//! result type of the method the client sent with that id, notifications against
//! `ServerNotification`, error objects for their shape. No test can forget to.
#![allow(dead_code)]

use duet::fixtures::testkit;
use duet::layer::ChangeFeed;
use duet::protocol::{Server, ServerOptions};
use duet::transport::http::{HttpConfig, HttpServer};
use duet_testing::Schemas;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest one step may take before the test fails instead of hanging.
pub const WAIT: Duration = Duration::from_secs(5);
pub const MODERN: &str = "2026-07-28";
pub const LATEST: &str = "2025-11-25";
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// Runs `future`, failing the test when it takes longer than [`WAIT`].
pub async fn bounded<F: Future>(what: &str, future: F) -> F::Output {
    within(WAIT, what, future).await
}

/// Runs `future`, failing the test when it takes longer than `limit`.
pub async fn within<F: Future>(limit: Duration, what: &str, future: F) -> F::Output {
    tokio::time::timeout(limit, future).await.unwrap_or_else(|_| panic!("{what} took longer than {limit:?}"))
}

/// Polls `done` every 20 ms until it holds, failing the test after [`WAIT`].
pub async fn eventually<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    bounded(what, async {
        while !done().await {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// The default configuration on a free loopback port.
pub fn config() -> HttpConfig {
    HttpConfig { port: 0, ..HttpConfig::default() }
}

/// `params` with the 2026 `_meta` envelope (keys already present are kept).
pub fn enveloped(params: Value) -> Value {
    let mut params = match params {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => panic!("params must be an object, not {other}"),
    };
    let meta = params.entry("_meta").or_insert_with(|| json!({}));
    let meta = meta.as_object_mut().expect("_meta is an object");
    meta.entry(PROTOCOL_VERSION_KEY).or_insert_with(|| json!(MODERN));
    meta.entry(CLIENT_CAPABILITIES_KEY).or_insert_with(|| json!({}));
    Value::Object(params)
}

/// A session id as duet mints them: 32 lowercase hex digits.
pub fn is_session_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A running server over the test registry. `stop` shuts it down; if a test fails
/// before that, `Drop` closes its sessions and listen streams and the test's runtime
/// ends the rest.
pub struct TestServer {
    http: Option<HttpServer>,
    /// The engine handed to `HttpServer::bind` (a clone shares its state).
    pub server: Server,
    pub feed: Arc<ChangeFeed>,
    pub addr: SocketAddr,
    /// `http://127.0.0.1:<port>`
    pub base: String,
    /// The MCP endpoint's URL.
    pub url: String,
    http_client: reqwest::Client,
}

impl TestServer {
    pub async fn start(config: HttpConfig) -> TestServer {
        let registry = testkit::registry();
        let feed = registry.change_feed();
        let server = Server::new(Arc::new(registry), ServerOptions::default());
        let http = HttpServer::bind(server.clone(), config).await.expect("the test server binds");
        let addr = http.local_addr();
        let url = http.url();
        let http_client = reqwest::Client::builder().no_proxy().build().expect("a reqwest client");
        TestServer { base: format!("http://{addr}"), url, addr, server, feed, http: Some(http), http_client }
    }

    pub fn http(&self) -> &HttpServer {
        self.http.as_ref().expect("the server is running")
    }

    /// Takes the server out (to shut it down concurrently with reading a stream).
    pub fn take_http(&mut self) -> HttpServer {
        self.http.take().expect("the server is running")
    }

    pub fn session_count(&self) -> usize {
        self.http().service().session_count()
    }

    /// Shuts the server down, within [`WAIT`].
    pub async fn stop(mut self) {
        let http = self.take_http();
        bounded("shutting the server down", http.shutdown(Duration::from_secs(2))).await;
    }

    /// A client speaking `version`, without a session.
    pub fn client(&self, version: &str) -> Client {
        Client {
            http: self.http_client.clone(),
            base: self.base.clone(),
            url: self.url.clone(),
            version: version.to_string(),
            version_header: false,
            session_id: None,
            sticky: Vec::new(),
            checker: Checker { version: version.to_string(), sent: Arc::default() },
            ids: Arc::new(AtomicI64::new(1)),
        }
    }

    /// A client with an initialized session at `version`.
    pub async fn session(&self, version: &str) -> Client {
        let mut client = self.client(version);
        client.initialize().await;
        client
    }

    /// A 2026-07-28 client: every request carries the envelope and the headers.
    pub fn modern(&self) -> Client {
        self.client(MODERN)
    }

    /// A raw TCP connection to the server.
    pub async fn connect(&self) -> TcpStream {
        bounded("connecting", TcpStream::connect(self.addr)).await.expect("connect")
    }

    /// The `Host` header value a well-behaved client sends.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(http) = self.http.take() {
            http.service().close();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(http.shutdown(Duration::ZERO));
            }
        }
    }
}

/// Validates what the server sends to one client against that client's version.
#[derive(Clone)]
pub struct Checker {
    version: String,
    /// The method of every request sent, by its id (as JSON text).
    sent: Arc<Mutex<HashMap<String, String>>>,
}

impl Checker {
    fn record(&self, body: &Value) {
        let items: Vec<&Value> = match body {
            Value::Array(items) => items.iter().collect(),
            single => vec![single],
        };
        let mut sent = self.sent.lock().unwrap();
        for item in items {
            if let (Some(method), Some(id)) = (item.get("method").and_then(Value::as_str), item.get("id")) {
                sent.insert(id.to_string(), method.to_string());
            }
        }
    }

    /// Panics unless `message` is a valid JSON-RPC message of this client's version.
    pub fn check(&self, message: &Value) {
        assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC 2.0: {message}");
        let schemas = Schemas::get();
        if let Some(error) = message.get("error") {
            assert!(message.get("result").is_none(), "both result and error: {message}");
            schemas.assert_error(error);
            let id = &message["id"];
            assert!(
                id.is_null() || self.sent.lock().unwrap().contains_key(&id.to_string()),
                "an error for an id never sent: {message}"
            );
        } else if let Some(result) = message.get("result") {
            let method = self.sent.lock().unwrap().get(&message["id"].to_string()).cloned();
            let method = method.unwrap_or_else(|| panic!("a response to an id never sent: {message}"));
            schemas.assert_result(&self.version, &method, result);
        } else if message.get("method").is_some() {
            assert!(message.get("id").is_none(), "the server sent a request: {message}");
            schemas.assert_notification(&self.version, message);
        } else {
            panic!("not a JSON-RPC message: {message}");
        }
    }
}

/// A client of one protocol version (and at most one session).
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    pub base: String,
    /// Where `post`, `get` and `delete` go.
    pub url: String,
    pub version: String,
    /// Send `MCP-Protocol-Version: <version>` on handshake-era requests.
    pub version_header: bool,
    pub session_id: Option<String>,
    /// Headers sent on every request (e.g. `Authorization`, `Origin`).
    sticky: Vec<(String, String)>,
    checker: Checker,
    ids: Arc<AtomicI64>,
}

impl Client {
    pub fn is_modern(&self) -> bool {
        self.version == MODERN
    }

    /// This client with a header on every request.
    pub fn with_header(mut self, name: &str, value: &str) -> Client {
        self.sticky.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.sticky.push((name.to_ascii_lowercase(), value.to_string()));
        self
    }

    pub fn with_token(self, token: &str) -> Client {
        self.with_header("authorization", &format!("Bearer {token}"))
    }

    pub fn with_session(mut self, id: &str) -> Client {
        self.session_id = Some(id.to_string());
        self
    }

    pub fn without_session(mut self) -> Client {
        self.session_id = None;
        self
    }

    /// This client posting to `path` on the same server (a legacy message endpoint).
    pub fn at(&self, path: &str) -> Client {
        Client { url: format!("{}{path}", self.base), ..self.clone() }
    }

    pub fn checker(&self) -> &Checker {
        &self.checker
    }

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
            let named = match method {
                "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
                "resources/read" => body["params"]["uri"].as_str(),
                _ => None,
            };
            if let Some(name) = named {
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
        let params = json!({
            "protocolVersion": self.version,
            "capabilities": {},
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

fn header_of<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A whole HTTP answer.
#[derive(Debug)]
pub struct Exchange {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
    /// The body as JSON, when it is JSON.
    pub json: Option<Value>,
    /// The SSE events, when it is an event stream.
    pub events: Vec<SseEvent>,
    /// The JSON-RPC messages (of a JSON body or of the SSE `message` events), all checked.
    pub messages: Vec<Value>,
}

impl Exchange {
    async fn read(response: reqwest::Response, checker: &Checker) -> Exchange {
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = bounded("the response body", response.bytes()).await.expect("reading the body fails");
        let body = String::from_utf8(bytes.to_vec()).expect("the body is UTF-8");
        let content_type = header_of(&headers, "content-type").unwrap_or_default().to_string();
        let mut exchange = Exchange { status, headers, body, json: None, events: Vec::new(), messages: Vec::new() };
        if content_type.starts_with("text/event-stream") {
            let text = exchange.body.replace("\r\n", "\n");
            assert!(text.is_empty() || text.ends_with("\n\n"), "a truncated event stream: {text:?}");
            exchange.events = text.split("\n\n").filter_map(parse_event).collect();
            for event in &exchange.events {
                assert_eq!(event.event.as_deref(), Some("message"), "an unexpected event: {event:?}");
                exchange.messages.push(event.json());
            }
        } else if content_type.starts_with("application/json") {
            let value: Value = serde_json::from_str(&exchange.body)
                .unwrap_or_else(|e| panic!("a JSON answer that is not JSON ({e}): {}", exchange.body));
            match &value {
                Value::Array(items) => exchange.messages = items.clone(),
                Value::Object(o) if o.contains_key("jsonrpc") => exchange.messages = vec![value.clone()],
                _ => {}
            }
            exchange.json = Some(value);
        }
        for message in &exchange.messages {
            checker.check(message);
        }
        exchange
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        header_of(&self.headers, name)
    }

    pub fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or_default()
    }

    pub fn is_sse(&self) -> bool {
        self.content_type().starts_with("text/event-stream")
    }

    pub fn expect_status(&self, status: StatusCode) -> &Exchange {
        assert_eq!(self.status, status, "unexpected status; body: {}", self.body);
        self
    }

    /// The one response (a message with a result or an error) of the answer.
    pub fn response(&self) -> &Value {
        let responses: Vec<&Value> =
            self.messages.iter().filter(|m| m.get("result").is_some() || m.get("error").is_some()).collect();
        assert_eq!(responses.len(), 1, "expected one response in: {}", self.body);
        responses[0]
    }

    pub fn result(&self) -> &Value {
        let response = self.response();
        response.get("result").unwrap_or_else(|| panic!("an error, not a result: {response}"))
    }

    pub fn error(&self) -> &Value {
        let response = self.response();
        response.get("error").unwrap_or_else(|| panic!("a result, not an error: {response}"))
    }

    /// The notifications with `method`, in order.
    pub fn notifications(&self, method: &str) -> Vec<&Value> {
        self.messages.iter().filter(|m| m.get("id").is_none() && m["method"] == method).collect()
    }

    /// An HTTP-level failure: `status`, a JSON-RPC error with id null, code -32600 and
    /// `message`.
    pub fn expect_http_error(&self, status: StatusCode, message: &str) {
        self.expect_status(status);
        assert!(self.content_type().starts_with("application/json"), "{:?}", self.headers);
        let response = self.response();
        assert_eq!(response["id"], Value::Null, "{response}");
        assert_eq!(response["error"]["code"], -32600, "{response}");
        assert_eq!(response["error"]["message"], message, "{response}");
    }

    /// A JSON-RPC error answered with `status`: its code and the request id it names.
    pub fn expect_rpc_error(&self, status: StatusCode, code: i64, id: &Value) -> &Value {
        self.expect_status(status);
        let response = self.response();
        assert_eq!(response["error"]["code"], code, "{response}");
        assert_eq!(&response["id"], id, "{response}");
        &response["error"]
    }
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

impl SseEvent {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("event data is not JSON ({e}): {:?}", self.data))
    }
}

/// An event from its block of lines; `None` for a block of comments only.
fn parse_event(block: &str) -> Option<SseEvent> {
    let mut event = None;
    let mut data: Option<String> = None;
    for line in block.lines() {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = Some(value.to_string()),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_string()),
            },
            "id" | "retry" => panic!("duet sends no {field}: lines: {block:?}"),
            other => panic!("an unknown SSE field {other:?} in {block:?}"),
        }
    }
    if event.is_none() && data.is_none() {
        return None;
    }
    Some(SseEvent { event, data: data.unwrap_or_default() })
}

/// An open event stream read event by event (a GET stream, a legacy stream, a listen
/// stream, or a request stream). Dropping it closes the connection.
pub struct EventStream {
    pub status: StatusCode,
    pub headers: HeaderMap,
    response: reqwest::Response,
    buf: Vec<u8>,
    checker: Checker,
    /// Comments (keep-alives) seen so far.
    pub comments: usize,
}

impl EventStream {
    fn new(response: reqwest::Response, checker: Checker) -> EventStream {
        EventStream {
            status: response.status(),
            headers: response.headers().clone(),
            response,
            buf: Vec::new(),
            checker,
            comments: 0,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        header_of(&self.headers, name)
    }

    /// The next event, or `None` when the stream ended; within [`WAIT`].
    pub async fn next_event(&mut self) -> Option<SseEvent> {
        bounded("the next SSE event", self.read_event()).await
    }

    async fn read_event(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..end + 2).collect();
                let block = String::from_utf8(block).expect("events are UTF-8");
                match parse_event(&block) {
                    Some(event) => return Some(event),
                    None => {
                        self.comments += 1;
                        continue;
                    }
                }
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.buf.extend(chunk.iter().filter(|b| **b != b'\r')),
                Ok(None) => {
                    assert!(self.buf.is_empty(), "the stream ended inside an event: {:?}", self.buf);
                    return None;
                }
                Err(e) => panic!("reading the event stream fails: {e}"),
            }
        }
    }

    /// The next JSON-RPC message (checked); the stream must not end first.
    pub async fn next_message(&mut self) -> Value {
        let event = self.next_event().await.expect("the stream ended before the next message");
        assert_eq!(event.event.as_deref(), Some("message"), "{event:?}");
        let message = event.json();
        self.checker.check(&message);
        message
    }

    /// Reads messages until a notification of each of `methods` arrived; returns all
    /// messages read.
    pub async fn until_notified(&mut self, methods: &[&str]) -> Vec<Value> {
        let mut seen = Vec::new();
        while !methods.iter().all(|m| seen.iter().any(|s: &Value| s.get("id").is_none() && s["method"] == *m)) {
            seen.push(self.next_message().await);
        }
        seen
    }

    /// The stream ends (within [`WAIT`]) with no further event.
    pub async fn expect_end(&mut self) {
        if let Some(event) = self.next_event().await {
            panic!("expected the end of the stream, got {event:?}");
        }
    }
}

/// A raw HTTP response read off a socket.
#[derive(Debug)]
pub struct RawResponse {
    pub status_line: String,
    pub head: String,
    pub body: String,
}

impl RawResponse {
    pub fn status(&self) -> u16 {
        let code = self.status_line.split(' ').nth(1).unwrap_or_default();
        code.parse().unwrap_or_else(|_| panic!("a bad status line {:?}", self.status_line))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    /// The body is an HTTP-level JSON-RPC error (id null, -32600) with `message`.
    pub fn expect_http_error(&self, status: u16, message: &str) {
        assert_eq!(self.status(), status, "{self:?}");
        let body = self.json();
        Schemas::get().assert_error(&body["error"]);
        assert_eq!(body["jsonrpc"], "2.0", "{body}");
        assert_eq!(body["id"], Value::Null, "{body}");
        assert_eq!((&body["error"]["code"], &body["error"]["message"]), (&json!(-32600), &json!(message)), "{body}");
    }
}

/// Reads one response (head, then `Content-Length` bytes of body or up to EOF) within
/// [`WAIT`].
pub async fn read_response<R: AsyncReadExt + Unpin>(reader: &mut R) -> RawResponse {
    bounded("a raw response", async {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        let head_end = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            let n = reader.read(&mut chunk).await.expect("reading the response fails");
            assert!(n > 0, "the connection closed before a response head: {:?}", String::from_utf8_lossy(&buf));
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8(buf[..head_end].to_vec()).expect("the head is UTF-8");
        let mut body = buf[head_end + 4..].to_vec();
        let mut response =
            RawResponse { status_line: head.lines().next().unwrap_or_default().to_string(), head, body: String::new() };
        match response.header("content-length").map(|n| n.parse::<usize>().expect("a numeric Content-Length")) {
            Some(length) => {
                while body.len() < length {
                    let n = reader.read(&mut chunk).await.expect("reading the body fails");
                    assert!(n > 0, "the connection closed inside the body");
                    body.extend_from_slice(&chunk[..n]);
                }
                body.truncate(length);
            }
            None if response.header("transfer-encoding").is_none() => {
                // No length: the body runs to the end of the connection.
                let _ = reader.read_to_end(&mut body).await;
            }
            None => panic!("a chunked raw response is not expected here: {}", response.head),
        }
        response.body = String::from_utf8(body).expect("the body is UTF-8");
        response
    })
    .await
}

/// Sends `request` on a new connection while reading the answer (so an early answer is
/// not lost to a reset), and returns the answer.
pub async fn raw_exchange(addr: SocketAddr, request: Vec<u8>) -> RawResponse {
    let stream = bounded("connecting", TcpStream::connect(addr)).await.expect("connect");
    let (mut reader, mut writer) = stream.into_split();
    let writing = tokio::spawn(async move {
        // The server may answer and close before it read everything.
        let _ = writer.write_all(&request).await;
        writer
    });
    let response = read_response(&mut reader).await;
    let _ = writing.await;
    response
}

/// Reads until the peer closes the connection (EOF or reset); the bytes read.
pub async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Vec<u8> {
    within(limit, "the server closing the connection", async {
        let mut out = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return out,
                Ok(n) => out.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await
}
