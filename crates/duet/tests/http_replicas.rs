//! Replicas in one process over real sockets: two HTTP servers on one in-memory backplane
//! serve one handshake-era session, as replicas on Redis do (tests/interop/test_replicas.py
//! runs the real thing): the session made on one is served by the other, its GET stream on
//! the other gets the changes raised on the first (once, wherever they are raised), DELETE
//! on the first ends it there, and a broken stream of either kind is picked up on the
//! other replica with `Last-Event-ID`. A replica whose copy of the session is stale when
//! it writes never undoes what another replica wrote in between. An update raised on one
//! replica reaches a subscriber on the other only when the scope rules let it see it.

pub mod http_support;

use async_trait::async_trait;
use duet::auth::ScopeMap;
use duet::backplane::{Backplane, Keys, StoreError};
use duet::layer::Change;
use duet::protocol::ServerOptions;
use http_support::*;
use reqwest::StatusCode;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// Two replicas on one backplane, and a session the first made.
async fn two_replicas() -> (TestServer, TestServer, Client, Client) {
    let backplane = Backplane::memory();
    let a = TestServer::start_on(config(), backplane.clone()).await;
    let b = TestServer::start_on(config(), backplane).await;
    let on_a = a.session(LATEST).await;
    let on_b = on_a.via(&b);
    (a, b, on_a, on_b)
}

#[tokio::test]
async fn a_session_made_on_one_replica_is_served_by_another() {
    let (a, b, on_a, on_b) = two_replicas().await;
    let tools = on_b.call("tools/list", json!({})).await;
    assert!(tools["tools"].as_array().is_some_and(|t| !t.is_empty()), "{tools}");
    on_b.call("resources/subscribe", json!({"uri": "test://info"})).await;
    let mut stream = on_b.get().stream().await;
    // Raised by a's layer, carried to b's copy, which streams it.
    on_a.call("tools/call", json!({"name": "touch", "arguments": {}})).await;
    let updated = stream.next_message().await;
    assert_eq!(updated["method"], "notifications/resources/updated", "{updated}");
    assert_eq!(updated["params"]["uri"], "test://info");
    assert_eq!(stream.next_message().await["method"], "notifications/tools/list_changed");
    on_a.delete().send().await.expect_status(StatusCode::OK);
    stream.expect_end().await;
    on_b.post("tools/list", json!({})).send().await.expect_http_error(StatusCode::NOT_FOUND, "Session not found");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_broken_post_stream_is_picked_up_on_another_replica() {
    let (a, b, on_a, on_b) = two_replicas().await;
    let params = json!({"name": "slow", "arguments": {"steps": 25}, "_meta": {"progressToken": "t"}});
    let mut stream = on_a.post("tools/call", params).stream().await;
    let mut last = None;
    let mut progress = Vec::new();
    while progress.len() < 3 {
        let event = stream.next_event().await.unwrap();
        last = event.id.clone();
        if !event.is_priming() && event.json()["method"] == "notifications/progress" {
            progress.push(event.json()["params"]["progress"].as_u64().unwrap());
        }
    }
    drop(stream);
    let mut resumed = on_b.get().header("last-event-id", last.as_deref().unwrap()).stream().await;
    loop {
        let message = resumed.next_message().await;
        if let Some(result) = message.get("result") {
            assert_eq!(result["structuredContent"], json!({"done": 25}));
            break;
        }
        if message["method"] == "notifications/progress" {
            progress.push(message["params"]["progress"].as_u64().unwrap());
        }
    }
    assert_eq!(progress, (1..=25).collect::<Vec<_>>(), "every event once");
    resumed.expect_end().await;
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_get_stream_moves_to_another_replica_and_changes_come_once() {
    let (a, b, on_a, on_b) = two_replicas().await;
    let mut stream = on_a.get().stream().await;
    a.feed.notify(Change::ToolsChanged);
    let mut seen = stream.next_event().await.unwrap();
    if seen.is_priming() {
        seen = stream.next_event().await.unwrap();
    }
    assert_eq!(seen.json()["method"], "notifications/tools/list_changed");
    drop(stream);
    // Raised on either replica while no stream is open: kept once.
    b.feed.notify(Change::PromptsChanged);
    a.feed.notify(Change::ResourcesChanged);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut moved = within(WAIT, "a GET stream on the other replica", async {
        loop {
            match on_b.get().header("last-event-id", seen.id.as_deref().unwrap()).stream_or_refusal().await {
                Ok(stream) => return stream,
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    })
    .await;
    let mut methods = Vec::new();
    for _ in 0..2 {
        methods.push(moved.next_message().await["method"].as_str().unwrap().to_string());
    }
    methods.sort();
    assert_eq!(methods, ["notifications/prompts/list_changed", "notifications/resources/list_changed"]);
    // The stream is on b now: a change raised on either reaches it once.
    a.feed.notify(Change::ToolsChanged);
    b.feed.notify(Change::PromptsChanged);
    let mut methods = Vec::new();
    for _ in 0..2 {
        methods.push(moved.next_message().await["method"].as_str().unwrap().to_string());
    }
    methods.sort();
    assert_eq!(methods, ["notifications/prompts/list_changed", "notifications/tools/list_changed"]);
    let extra = tokio::time::timeout(Duration::from_millis(300), moved.next_event()).await;
    assert!(extra.is_err(), "nothing twice: {extra:?}");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn the_session_caps_count_across_replicas() {
    let auth = duet::auth::TokenAuth::from_specs(["tok-a", "tok-b"]).expect("token specs");
    let caps = duet::transport::http::HttpConfig {
        max_sessions_per_principal: 2,
        max_sessions: 3,
        auth: Some(std::sync::Arc::new(auth)),
        ..config()
    };
    let backplane = Backplane::memory();
    let a = TestServer::start_on(caps.clone(), backplane.clone()).await;
    let b = TestServer::start_on(caps, backplane).await;
    let session = |server: &TestServer, token: &str| {
        let mut client = server.client(LATEST).with_token(token);
        async move {
            client.initialize().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
            client
        }
    };
    let oldest = session(&a, "tok-a").await;
    let second = session(&b, "tok-a").await;
    let third = session(&b, "tok-a").await;
    // Alice's third session, made on b, ended her oldest, made on a: gone on both.
    for on in [&a, &b] {
        let listed = oldest.via(on).post("tools/list", json!({})).send().await;
        listed.expect_http_error(StatusCode::NOT_FOUND, "Session not found");
    }
    second.via(&a).call("tools/list", json!({})).await;
    third.via(&a).call("tools/list", json!({})).await;
    // The server's cap counts the sessions of both: Bob's first fits, his second does not.
    session(&a, "tok-b").await;
    let params = json!({"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    let refused = b.client(LATEST).with_token("tok-b").post("initialize", params).send().await;
    refused.expect_http_error(StatusCode::SERVICE_UNAVAILABLE, "Too many sessions");
    a.stop().await;
    b.stop().await;
}

/// A legacy POST that reaches a replica other than the one holding the session's stream is
/// admitted by the limits where it runs: one over a limit never runs, and its -32029 error
/// arrives on the stream.
#[tokio::test]
async fn a_routed_legacy_post_counts_against_the_limits() {
    let rate_limits = duet::protocol::RateLimits {
        tool_calls_per_second: [("sleepy".to_string(), 0.1)].into(),
        ..Default::default()
    };
    let legacy = duet::transport::http::HttpConfig { enable_sse: true, ..config() };
    let backplane = Backplane::memory();
    let options =
        || ServerOptions { backplane: backplane.clone(), rate_limits: rate_limits.clone(), ..Default::default() };
    let a = TestServer::start_with(legacy.clone(), options()).await;
    let b = TestServer::start_with(legacy, options()).await;
    let mut session = LegacySession::open(&a, &a.client("2024-11-05")).await;
    let via_b = session.messages.via(&b).at(&format!("/messages/?session_id={}", session.id));
    let sleepy = json!({"name": "sleepy", "arguments": {"seconds": 0}});
    for _ in 0..2 {
        via_b.post("tools/call", sleepy.clone()).send().await.expect_status(StatusCode::ACCEPTED);
    }
    // In either order: the refusal is sent at once, the first call's answer once it ran.
    let mut answers = [session.stream.next_message().await, session.stream.next_message().await];
    answers.sort_by_key(|answer| answer["id"].as_i64());
    let [ran, refused] = &answers;
    assert_eq!(ran["result"]["content"][0]["text"], "slept", "{ran}");
    assert_eq!(refused["error"]["code"], duet::protocol::RATE_LIMITED, "{refused}");
    a.stop().await;
    b.stop().await;
}

/// A replica's view of the shared keys whose next read of a session record, once armed,
/// is held after reading until the test lets it go: that replica then acts on a record
/// another replica has since rewritten, as a slow read would make it.
struct HeldRead {
    keys: Arc<dyn Keys>,
    armed: AtomicBool,
    held: Notify,
    release: Notify,
}

impl HeldRead {
    /// `backplane` with its keys seen through a [`HeldRead`].
    fn over(backplane: &Backplane) -> (Backplane, Arc<HeldRead>) {
        let gate = Arc::new(HeldRead {
            keys: backplane.keys.clone(),
            armed: AtomicBool::new(false),
            held: Notify::new(),
            release: Notify::new(),
        });
        let mut view = backplane.clone();
        view.keys = gate.clone();
        (view, gate)
    }

    /// Holds the next read of a session record until [`HeldRead::release`]; returns once
    /// `start` is under way and that read is held.
    async fn hold_during<T: Send + 'static>(
        &self,
        start: impl Future<Output = T> + Send + 'static,
    ) -> tokio::task::JoinHandle<T> {
        self.armed.store(true, Ordering::SeqCst);
        let started = tokio::spawn(start);
        within(WAIT, "the session record's read held", self.held.notified()).await;
        started
    }

    fn release(&self) {
        self.release.notify_one();
    }
}

#[async_trait]
impl Keys for HeldRead {
    async fn claim(&self, key: &str, value: &[u8], ttl: Duration) -> Result<Option<Vec<u8>>, StoreError> {
        self.keys.claim(key, value, ttl).await
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let read = self.keys.get(key).await;
        if key.starts_with("session:") && self.armed.swap(false, Ordering::SeqCst) {
            self.held.notify_one();
            self.release.notified().await;
        }
        read
    }

    async fn put(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StoreError> {
        self.keys.put(key, value, ttl).await
    }

    async fn swap(&self, key: &str, old: &[u8], new: &[u8], ttl: Duration) -> Result<bool, StoreError> {
        self.keys.swap(key, old, new, ttl).await
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.keys.delete(key).await
    }
}

/// Two replicas on one backplane, the second's reads of session records held by the gate.
async fn replicas_with_a_held_read() -> (TestServer, TestServer, Arc<HeldRead>) {
    let backplane = Backplane::memory();
    let (view, gate) = HeldRead::over(&backplane);
    let a = TestServer::start_on(config(), backplane).await;
    let b = TestServer::start_on(config(), view).await;
    (a, b, gate)
}

/// A session made on `a` whose `notifications/initialized` is not sent yet.
async fn uninitialized_session(a: &TestServer) -> Client {
    let params = json!({"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    let made = a.client(LATEST).post("initialize", params).send().await;
    made.expect_status(StatusCode::OK);
    a.client(LATEST).with_session(made.header("mcp-session-id").expect("a session id"))
}

#[tokio::test]
async fn a_get_stream_opened_on_a_stale_copy_still_delivers_list_changes() {
    // The SDKs open the GET stream while `notifications/initialized` is still on its way:
    // the replica taking the stream may read the record from before it.
    let (a, b, gate) = replicas_with_a_held_read().await;
    let on_a = uninitialized_session(&a).await;
    let on_b = on_a.via(&b);
    let opening = gate.hold_during(on_b.get().stream()).await;
    on_a.notify("notifications/initialized", json!({})).send().await.expect_status(StatusCode::ACCEPTED);
    gate.release();
    let mut stream = bounded("the GET stream on b", opening).await.expect("the GET request ran");
    // A later change of state, on a, takes the record as the stream left it.
    on_a.call("logging/setLevel", json!({"level": "error"})).await;
    a.feed.notify(Change::ToolsChanged);
    assert_eq!(stream.next_message().await["method"], "notifications/tools/list_changed");
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn subscriptions_made_at_once_on_two_replicas_are_both_kept() {
    let (a, b, gate) = replicas_with_a_held_read().await;
    let on_a = a.session(LATEST).await;
    let on_b = on_a.via(&b);
    let subscribing = gate
        .hold_during({
            let on_b = on_b.clone();
            async move { on_b.call("resources/subscribe", json!({"uri": "test://items/alpha"})).await }
        })
        .await;
    on_a.call("resources/subscribe", json!({"uri": "test://info"})).await;
    gate.release();
    bounded("the subscription on b", subscribing).await.expect("the subscribe request ran");
    let mut stream = on_b.get().stream().await;
    for uri in ["test://info", "test://items/alpha"] {
        a.feed.notify(Change::ResourceUpdated(uri.to_string()));
        let updated = stream.next_message().await;
        assert_eq!(updated["method"], "notifications/resources/updated", "{updated}");
        assert_eq!(updated["params"]["uri"], uri);
    }
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn an_update_from_another_replica_reaches_only_who_may_see_it() {
    let backplane = Backplane::memory();
    let map = Arc::new(ScopeMap::from_toml("[resources]\n\"test://items/secret*\" = \"secrets\"").expect("map"));
    let options =
        || ServerOptions { backplane: backplane.clone(), scopes: Some(map.clone()), ..ServerOptions::default() };
    let a = TestServer::start_with(config(), options()).await;
    let b = TestServer::start_with(config(), options()).await;
    // Without auth the caller is anonymous, which holds no scope: both follow all items on b.
    let on_b = a.session(LATEST).await.via(&b);
    on_b.call("resources/subscribe", json!({"uri": "test://items"})).await;
    let mut session = on_b.get().stream().await;
    let listen = json!({"notifications": {"resourceSubscriptions": ["test://items"]}});
    let mut listening = b.modern().post("subscriptions/listen", listen).stream().await;
    assert_eq!(listening.next_message().await["method"], "notifications/subscriptions/acknowledged");

    a.feed.notify(Change::ResourceUpdated("test://items/secret".into()));
    a.feed.notify(Change::ResourceUpdated("test://items/alpha".into()));
    for stream in [&mut session, &mut listening] {
        let updated = stream.next_message().await;
        assert_eq!(updated["method"], "notifications/resources/updated", "{updated}");
        assert_eq!(updated["params"]["uri"], "test://items/alpha", "the guarded item's update is not sent");
    }
    a.stop().await;
    b.stop().await;
}
