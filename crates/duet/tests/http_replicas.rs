//! Replicas in one process over real sockets: two HTTP servers on one in-memory backplane
//! serve one handshake-era session, as replicas on Redis do (tests/interop/test_replicas.py
//! runs the real thing): the session made on one is served by the other, its GET stream on
//! the other gets the changes raised on the first (once, wherever they are raised), DELETE
//! on the first ends it there, and a broken stream of either kind is picked up on the
//! other replica with `Last-Event-ID`.

pub mod http_support;

use duet::backplane::Backplane;
use duet::layer::Change;
use http_support::*;
use reqwest::StatusCode;
use serde_json::json;
use std::time::Duration;

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
