//! The test client: one engine session, driven the way a transport drives it, that speaks
//! one protocol version and checks everything the engine produces for it — every result,
//! every error object, every notification — against that version's JSON Schema, so no
//! test can forget to.

use duet::fixtures::testkit;
use duet::layer::{ChangeFeed, Principal};
use duet::protocol::{Server, ServerOptions, Session};
use duet::wire::Version;
use duet::wire::jsonrpc::{RequestId, Response, RpcError, Sink};
use duet::wire::message::Message;
pub(crate) use duet_testing::Recorder;
use duet_testing::Schemas;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// The revisions negotiated with `initialize`, oldest first.
pub(crate) const HANDSHAKE: [Version; 4] =
    [Version::V2024_11_05, Version::V2025_03_26, Version::V2025_06_18, Version::V2025_11_25];
pub(crate) const MODERN: Version = Version::V2026_07_28;

/// The longest one step may take before the test fails instead of hanging.
pub(crate) const WAIT: Duration = Duration::from_secs(5);

/// The `_meta` key a listen stream tags its notifications with.
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// A server over the test registry with pages of three, and the registry's change feed.
pub(crate) fn testkit_server() -> (Server, Arc<ChangeFeed>) {
    testkit_server_with(ServerOptions { page_size: 3, ..Default::default() })
}

pub(crate) fn testkit_server_with(options: ServerOptions) -> (Server, Arc<ChangeFeed>) {
    let registry = testkit::registry();
    let feed = registry.change_feed();
    (Server::new(Arc::new(registry), options), feed)
}

/// The capabilities the test server declares (all of them; 2024-11-05 has no completions).
pub(crate) fn testkit_capabilities() -> Value {
    json!({
        "tools": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "prompts": {"listChanged": true},
        "logging": {},
        "completions": {},
    })
}

/// Who the test server says it is.
pub(crate) fn testkit_server_info() -> Value {
    json!({"name": "duet-testkit", "version": env!("CARGO_PKG_VERSION"), "title": "duet"})
}

/// Asserts an error object's code and message.
pub(crate) fn assert_error(error: &RpcError, code: i64, message: &str) {
    assert_eq!((error.code, error.message.as_str()), (code, message), "{error:?}");
}

/// Runs `future`, failing the test when it takes longer than [`WAIT`].
pub(crate) async fn bounded<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(WAIT, future).await.unwrap_or_else(|_| panic!("{what} took longer than {WAIT:?}"))
}

/// Polls `done` every few milliseconds until it holds, failing the test after [`WAIT`].
pub(crate) async fn eventually(what: &str, done: impl Fn() -> bool) {
    bounded(what, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

/// `params` with the 2026 `_meta` envelope merged into its `_meta`.
pub(crate) fn enveloped(params: Value) -> Value {
    let mut params = match params {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => panic!("params must be an object, not {other}"),
    };
    let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    let meta = meta.as_object_mut().expect("_meta is an object");
    meta.entry("io.modelcontextprotocol/protocolVersion").or_insert_with(|| json!(MODERN.as_str()));
    meta.entry("io.modelcontextprotocol/clientCapabilities").or_insert_with(|| json!({}));
    Value::Object(params)
}

/// The methods of some notifications, in order.
pub(crate) fn methods(notifications: &[Value]) -> Vec<&str> {
    notifications.iter().map(|n| n["method"].as_str().expect("a notification has a method")).collect()
}

/// The `params` of the notifications with this method, in order.
pub(crate) fn params_of(notifications: &[Value], method: &str) -> Vec<Value> {
    notifications.iter().filter(|n| n["method"] == method).map(|n| n["params"].clone()).collect()
}

/// The `name` of each listed item.
pub(crate) fn names(items: &[Value]) -> Vec<String> {
    items.iter().map(|i| i["name"].as_str().expect("a listed item has a name").into()).collect()
}

/// The text of every text block of a tool result.
pub(crate) fn texts(result: &Value) -> Vec<String> {
    let content = result["content"].as_array().expect("content is an array");
    content
        .iter()
        .filter(|c| c["type"] == "text")
        .map(|c| c["text"].as_str().expect("text is a string").into())
        .collect()
}

/// The method of each request in a message (or batch), by the JSON text of its id.
fn methods_by_id(message: &Value) -> HashMap<String, String> {
    let items = match message {
        Value::Array(items) => items.as_slice(),
        single => std::slice::from_ref(single),
    };
    items.iter().filter_map(|m| Some((m.get("id")?.to_string(), m["method"].as_str()?.to_string()))).collect()
}

/// One session of a server, the version it speaks, and what the session sent unprompted.
pub(crate) struct Client {
    pub server: Server,
    pub session: Session,
    /// The version this client expects to speak; everything is checked against it.
    pub version: Version,
    /// The session's `send`: change notifications, and request notifications without a sink.
    pub sent: Recorder,
    ids: AtomicI64,
}

impl Client {
    /// A session of `server` for the local user, as stdio or an HTTP session opens one;
    /// not yet initialized.
    pub(crate) fn connect(server: &Server, version: Version) -> Client {
        let sent = Recorder::new(version.as_str());
        let session = server.connect(sent.sink(), Principal::local());
        Client { server: server.clone(), session, version, sent, ids: AtomicI64::new(1) }
    }

    /// A handshake-era client of the test registry, initialized at `version`.
    pub(crate) async fn handshake(version: Version) -> (Client, Arc<ChangeFeed>) {
        let (server, feed) = testkit_server();
        let client = Client::connect(&server, version);
        client.initialize(version.as_str()).await;
        (client, feed)
    }

    /// A 2026-07-28 client of the test registry: every request it makes is enveloped.
    pub(crate) fn modern() -> (Client, Arc<ChangeFeed>) {
        let (server, feed) = testkit_server();
        (Client::connect(&server, MODERN), feed)
    }

    /// `initialize` asking for `requested` (the answer must be this client's version),
    /// then `notifications/initialized`.
    pub(crate) async fn initialize(&self, requested: &str) -> Value {
        let result = self.initialize_only(requested).await;
        self.notify("notifications/initialized", json!({})).await;
        result
    }

    /// `initialize` without the `notifications/initialized` that should follow it.
    pub(crate) async fn initialize_only(&self, requested: &str) -> Value {
        let params = json!({
            "protocolVersion": requested,
            "capabilities": {},
            "clientInfo": {"name": "engine-tests", "version": "1"},
        });
        let result = self.request("initialize", params).await;
        assert_eq!(result["protocolVersion"], self.version.as_str(), "initialize asking for {requested}");
        result
    }

    /// A request with the next numeric id (enveloped on 2026-07-28).
    pub(crate) fn message(&self, method: &str, params: Value) -> Value {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        self.message_with_id(json!(id), method, params)
    }

    pub(crate) fn message_with_id(&self, id: Value, method: &str, params: Value) -> Value {
        let params = if self.version.is_modern() { enveloped(params) } else { params };
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    /// Hands one decoded message (or batch) to the session, as a transport does; its
    /// notifications go to the session's `send`.
    pub(crate) async fn send(&self, message: Value) -> Option<Message<Response>> {
        self.send_via(message, None).await
    }

    /// Like [`Client::send`], with the request's notifications going to `sink` (an SSE
    /// stream of one POST).
    pub(crate) async fn send_via(&self, message: Value, sink: Option<Sink>) -> Option<Message<Response>> {
        let methods = methods_by_id(&message);
        let answer =
            bounded(&format!("the answer to {message}"), self.session.handle(message.clone(), sink, None)).await;
        for response in answer.iter().flat_map(Message::responses) {
            self.check(response, &methods);
        }
        answer
    }

    fn check(&self, response: &Response, methods: &HashMap<String, String>) {
        match &response.result {
            Ok(result) => {
                let id = response.id.as_ref().expect("a result answers an id");
                let method = methods
                    .get(&id.to_value().to_string())
                    .unwrap_or_else(|| panic!("a result for id {id}, which asked nothing"));
                Schemas::get().assert_result(self.version.as_str(), method, &result.to_value());
            }
            Err(error) => {
                let error = serde_json::to_value(error).expect("an error serializes");
                Schemas::get().assert_error(&error);
            }
        }
    }

    /// The single response to a single message.
    pub(crate) async fn answer(&self, message: Value) -> Response {
        match self.send(message.clone()).await {
            Some(Message::One(response)) => response,
            other => panic!("{message} should get one response, got {other:?}"),
        }
    }

    /// The result of a request that must succeed.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Value {
        self.request_via(method, params, None).await
    }

    /// The result of a request that must succeed, its notifications going to `sink`.
    pub(crate) async fn request_via(&self, method: &str, params: Value, sink: Option<&Recorder>) -> Value {
        let message = self.message(method, params);
        let id = message["id"].clone();
        let response = match self.send_via(message, sink.map(Recorder::sink)).await {
            Some(Message::One(response)) => response,
            other => panic!("{method} should get one response, got {other:?}"),
        };
        assert_eq!(response.id.as_ref().map(RequestId::to_value), Some(id));
        response.into_value().unwrap_or_else(|e| panic!("{method} failed at {}: {e:?}", self.version))
    }

    /// The error of a request that must fail.
    pub(crate) async fn error(&self, method: &str, params: Value) -> RpcError {
        let message = self.message(method, params);
        let id = message["id"].clone();
        let response = self.answer(message).await;
        assert_eq!(response.id.map(|i| i.to_value()), Some(id));
        match response.result {
            Err(e) => e,
            Ok(result) => panic!("{method} should fail at {}, got {result:?}", self.version),
        }
    }

    /// Sends a notification, which is never answered.
    pub(crate) async fn notify(&self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        assert_eq!(self.send(message).await, None, "{method} was answered");
    }

    /// Every item of a list method, walking its pages; each full page but the last.
    pub(crate) async fn list_all(&self, method: &str, key: &str) -> Vec<Value> {
        let page_size = self.server.options().page_size;
        let mut items = Vec::new();
        let mut params = json!({});
        for _ in 0..100 {
            let page = self.request(method, params).await;
            let batch = page[key].as_array().unwrap_or_else(|| panic!("{method} has no {key}: {page}"));
            assert!(batch.len() <= page_size, "{method}: page too long: {page}");
            items.extend(batch.iter().cloned());
            match page.get("nextCursor") {
                None => return items,
                Some(Value::String(cursor)) => {
                    assert_eq!(batch.len(), page_size, "{method}: short page before the end");
                    params = json!({"cursor": cursor});
                }
                Some(other) => panic!("{method}: nextCursor {other} is not a string"),
            }
        }
        panic!("{method} never reached its last page")
    }

    /// The session keeps answering: `ping` on the handshake era (also before initialize),
    /// and the first page of `tools/list` once it may be asked.
    pub(crate) async fn assert_alive(&self) {
        let modern = self.version.is_modern();
        if !modern {
            assert_eq!(self.request("ping", json!({})).await, json!({}));
        }
        if modern || self.session.protocol_version().is_some() {
            let page = self.request("tools/list", json!({})).await;
            assert_eq!(names(page["tools"].as_array().unwrap()), ["echo", "stats", "slow"]);
        }
    }
}
