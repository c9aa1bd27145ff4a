//! Server-initiated messages of the handshake era over real sockets: the standalone GET
//! stream of a Streamable HTTP session, and the deprecated HTTP+SSE transport.

pub mod http_support;

use duet::layer::Change;
use duet::transport::http::HttpConfig;
use http_support::*;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

#[tokio::test]
async fn get_stream_carries_changes() {
    let ts = TestServer::start(config()).await;
    let client = ts.session(LATEST).await;
    assert_eq!(client.call("resources/subscribe", json!({"uri": "test://info"})).await, json!({}));

    let mut stream = client.get().stream().await;
    assert_eq!(stream.header("x-accel-buffering"), Some("no"));
    client
        .get()
        .send()
        .await
        .expect_http_error(StatusCode::CONFLICT, "Conflict: a GET stream is already open for this session");

    let touch = client.post("tools/call", json!({"name": "touch", "arguments": {}})).send().await;
    touch.expect_status(StatusCode::OK);
    assert_eq!(touch.result()["content"][0]["text"], "touched test://info");
    assert!(
        touch.messages.iter().all(|m| m.get("method").is_none()),
        "change notifications go to the GET stream only: {}",
        touch.body
    );
    let seen = stream.until_notified(&["notifications/resources/updated", "notifications/tools/list_changed"]).await;
    let updated: Vec<&Value> = seen.iter().filter(|m| m["method"] == "notifications/resources/updated").collect();
    assert_eq!(updated[0]["params"]["uri"], "test://info");

    // A change raised by the program directly reaches the stream too.
    ts.feed.notify(Change::PromptsChanged);
    let next = stream.next_message().await;
    assert_eq!(next["method"], "notifications/prompts/list_changed");

    // Once the stream is closed another GET may open one.
    drop(stream);
    eventually("a new GET stream after the first closed", || async {
        client.get().response().await.status() == StatusCode::OK
    })
    .await;
    ts.stop().await;
}

#[tokio::test]
async fn get_stream_errors() {
    let ts = TestServer::start(config()).await;
    let client = ts.session(LATEST).await;

    let no_session = client.clone().without_session().get().send().await;
    no_session.expect_http_error(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    assert_eq!(no_session.header("allow"), Some("POST, DELETE"));
    client
        .get()
        .header("accept", "application/json")
        .send()
        .await
        .expect_http_error(StatusCode::NOT_ACCEPTABLE, "Not Acceptable: GET requires Accept: text/event-stream");
    client
        .clone()
        .with_session("deadbeef")
        .get()
        .send()
        .await
        .expect_http_error(StatusCode::NOT_FOUND, "Session not found");
    // DELETE ends the session and its GET stream.
    let mut stream = client.get().stream().await;
    client.delete().send().await.expect_status(StatusCode::OK);
    stream.expect_end().await;
    ts.stop().await;
}

#[tokio::test]
async fn legacy_sse_is_off_by_default() {
    let ts = TestServer::start(config()).await;
    let client = ts.client("2024-11-05");
    for legacy in [
        client.request(Method::GET, "/sse").header("accept", "text/event-stream"),
        client.at("/messages/?session_id=abc").post("ping", json!({})),
    ] {
        legacy.send().await.expect_http_error(StatusCode::NOT_FOUND, "Not Found");
    }
    ts.stop().await;
}

#[tokio::test]
async fn legacy_sse_transport() {
    let ts = TestServer::start(HttpConfig { enable_sse: true, ..config() }).await;
    let client = ts.client("2024-11-05");
    let LegacySession { mut stream, messages: legacy, id: session_id, initialized } =
        LegacySession::open(&ts, &client).await;
    assert!(initialized["capabilities"].get("completions").is_none(), "no completions on 2024-11-05");

    let call = legacy.post("tools/call", json!({"name": "echo", "arguments": {"text": "ab", "times": 2}})).send().await;
    call.expect_status(StatusCode::ACCEPTED);
    let reply = stream.next_message().await;
    assert_eq!(reply["result"]["content"][0]["type"], "text");
    assert!(reply["result"]["content"][0]["text"].as_str().unwrap().contains("abab"), "{reply}");
    let list = legacy.post("tools/list", json!({})).send().await;
    list.expect_status(StatusCode::ACCEPTED);
    assert_eq!(stream.next_message().await["result"]["tools"][0]["name"], "echo");

    // Trailing slash optional.
    let bare = client.at(&format!("/messages?session_id={session_id}"));
    bare.post("tools/list", json!({})).send().await.expect_status(StatusCode::ACCEPTED);
    stream.next_message().await;

    legacy.post_bytes("{not json").send().await.expect_rpc_error(StatusCode::BAD_REQUEST, -32700, &Value::Null);
    for (elsewhere, status, message) in [
        (client.at("/messages/?session_id=deadbeef"), StatusCode::NOT_FOUND, "Session not found"),
        (client.at("/messages/"), StatusCode::BAD_REQUEST, "session_id query parameter is required"),
        // A legacy session is not a Streamable HTTP session.
        (client.clone().with_session(&session_id), StatusCode::NOT_FOUND, "Session not found"),
    ] {
        elsewhere.post("tools/list", json!({})).send().await.expect_http_error(status, message);
    }

    // Closing the stream ends the session.
    drop(stream);
    eventually("the legacy session ending with its stream", || async {
        legacy.post("tools/list", json!({})).send().await.status == StatusCode::NOT_FOUND
    })
    .await;
    assert_eq!(ts.session_count(), 0);
    ts.stop().await;
}

#[tokio::test]
async fn legacy_stream_carries_changes() {
    let ts = TestServer::start(HttpConfig { enable_sse: true, ..config() }).await;
    let LegacySession { mut stream, messages: legacy, .. } = LegacySession::open(&ts, &ts.client("2025-03-26")).await;
    legacy.post("resources/subscribe", json!({"uri": "test://info"})).send().await.expect_status(StatusCode::ACCEPTED);
    assert_eq!(stream.next_message().await["result"], json!({}));
    legacy
        .post("tools/call", json!({"name": "touch", "arguments": {}}))
        .send()
        .await
        .expect_status(StatusCode::ACCEPTED);
    let mut seen =
        stream.until_notified(&["notifications/resources/updated", "notifications/tools/list_changed"]).await;
    while !seen.iter().any(|m| m.get("result").is_some()) {
        seen.push(stream.next_message().await);
    }
    assert!(seen.iter().any(|m| m["result"]["content"][0]["text"] == "touched test://info"), "{seen:?}");
    ts.stop().await;
}
