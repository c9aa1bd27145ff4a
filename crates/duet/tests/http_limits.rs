//! Caps and timeouts over real sockets: idle session expiry, the session caps (global and
//! per principal), the header timeout, the connection cap, and a body refused by its
//! declared length before it is sent.

pub mod http_support;

use duet::transport::http::HttpConfig;
use http_support::*;
use reqwest::StatusCode;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

fn initialize_params() -> serde_json::Value {
    json!({"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}})
}

#[tokio::test]
async fn idle_sessions_expire_unless_streaming() {
    let ts = TestServer::start(HttpConfig { session_idle_timeout: Duration::from_secs(1), ..config() }).await;
    let started = Instant::now();
    let idle = ts.session(LATEST).await;
    let streaming = ts.session(LATEST).await;
    let mut stream = streaming.get().stream().await;
    assert_eq!(ts.session_count(), 2);

    // The reaper runs every max(timeout / 2, 1 s): the idle session goes within ~2 s.
    let counter = ts.http().service().clone();
    eventually("the idle session reaped", || {
        let count = counter.session_count();
        async move { count == 1 }
    })
    .await;
    assert!(started.elapsed() >= Duration::from_secs(1), "reaped before it was idle for 1 s");
    idle.post("tools/list", json!({})).send().await.expect_http_error(StatusCode::NOT_FOUND, "Session not found");
    // A session with an open GET stream is never idle.
    streaming.call("tools/list", json!({})).await;
    streaming.delete().send().await.expect_status(StatusCode::OK);
    stream.expect_end().await;
    ts.stop().await;
}

#[tokio::test]
async fn the_session_cap() {
    let ts = TestServer::start(HttpConfig { max_sessions: 1, ..config() }).await;
    let first = ts.session(LATEST).await;
    let refused = ts.client(LATEST).post("initialize", initialize_params()).send().await;
    refused.expect_http_error(StatusCode::SERVICE_UNAVAILABLE, "Too many sessions");
    assert_eq!(refused.header("mcp-session-id"), None);
    first.call("tools/list", json!({})).await;
    // Ending the first session makes room.
    first.delete().send().await.expect_status(StatusCode::OK);
    ts.session(LATEST).await;
    ts.stop().await;
}

#[tokio::test]
async fn the_per_principal_cap_evicts_the_oldest_idle_session() {
    let ts = TestServer::start(HttpConfig { max_sessions_per_principal: 2, ..config() }).await;
    let oldest = ts.session(LATEST).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = ts.session(LATEST).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let third = ts.session(LATEST).await;
    assert_eq!(ts.session_count(), 2);
    oldest.post("tools/list", json!({})).send().await.expect_http_error(StatusCode::NOT_FOUND, "Session not found");
    second.call("tools/list", json!({})).await;
    third.call("tools/list", json!({})).await;

    // With every session of the caller streaming there is nothing to evict.
    let mut second_stream = second.get().stream().await;
    let _third_stream = third.get().stream().await;
    let refused = ts.client(LATEST).post("initialize", initialize_params()).send().await;
    refused.expect_http_error(StatusCode::SERVICE_UNAVAILABLE, "Too many sessions for this caller");
    second.delete().send().await.expect_status(StatusCode::OK);
    second_stream.expect_end().await;
    ts.session(LATEST).await;
    third.call("tools/list", json!({})).await;
    ts.stop().await;
}

#[tokio::test]
async fn a_half_sent_head_times_out() {
    let ts = TestServer::start(HttpConfig { header_timeout: Duration::from_millis(300), ..config() }).await;
    let mut conn = ts.connect().await;
    let started = Instant::now();
    conn.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Ty", ts.host()).as_bytes()).await.unwrap();
    let answer = read_until_closed(&mut conn, Duration::from_secs(2)).await;
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(250), "closed after {elapsed:?}, before the timeout");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    // The server still serves others.
    let health =
        raw_exchange(ts.addr, format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", ts.host()).into_bytes()).await;
    assert_eq!(health.status(), 200);
    ts.stop().await;
}

#[tokio::test]
async fn the_connection_cap() {
    // A long header timeout: a refusal must not wait for it.
    let ts =
        TestServer::start(HttpConfig { max_connections: 1, header_timeout: Duration::from_secs(30), ..config() }).await;
    let health = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", ts.host());

    // The first connection is served and kept open.
    let mut held = ts.connect().await;
    held.write_all(health.as_bytes()).await.unwrap();
    assert_eq!(read_response(&mut held).await.status(), 200);

    // Over the cap, a health probe is still answered, and the connection closed.
    let mut probe = ts.connect().await;
    probe.write_all(health.as_bytes()).await.unwrap();
    let answered = read_response(&mut probe).await;
    assert_eq!((answered.status(), answered.body.as_str()), (200, r#"{"status":"ok"}"#));
    assert_eq!(answered.header("connection"), Some("close"));
    read_until_closed(&mut probe, Duration::from_secs(3)).await;

    // Anything else is refused with 503 and closed.
    let mut second = ts.connect().await;
    let post = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: 2\r\n\r\n{{}}", ts.host());
    second.write_all(post.as_bytes()).await.unwrap();
    let refused = read_response(&mut second).await;
    assert!(refused.status_line.starts_with("HTTP/1.1 503"), "{refused:?}");
    refused.expect_http_error(503, "Too many connections");
    assert_eq!(refused.header("connection"), Some("close"));
    read_until_closed(&mut second, Duration::from_secs(3)).await;

    // A connection over the cap that sends nothing is refused within seconds, not parked
    // until the header timeout.
    let started = Instant::now();
    let mut silent = ts.connect().await;
    let refused = read_response(&mut silent).await;
    refused.expect_http_error(503, "Too many connections");
    assert!(started.elapsed() < Duration::from_secs(10), "refused after {:?}", started.elapsed());

    // The held connection still works; once it closes, a new one is served.
    held.write_all(health.as_bytes()).await.unwrap();
    assert_eq!(read_response(&mut held).await.status(), 200);
    drop(held);
    eventually("a connection served after the first closed", || {
        let (addr, health) = (ts.addr, health.clone());
        // Served, not refused: a refusal's health answer closes the connection.
        async move {
            let answer = raw_exchange(addr, health.into_bytes()).await;
            answer.status() == 200 && answer.header("connection") != Some("close")
        }
    })
    .await;
    ts.stop().await;
}

#[tokio::test]
async fn a_declared_length_over_the_limit_is_refused_before_the_body() {
    let ts = TestServer::start(HttpConfig { max_body_bytes: 100, ..config() }).await;
    let mut conn = ts.connect().await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\n\
         Content-Length: 1000000\r\n\r\n",
        ts.host()
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    let answer = read_response(&mut conn).await;
    answer.expect_http_error(413, "Payload Too Large");
    assert_eq!(answer.header("server"), Some("duet"));
    ts.stop().await;
}

/// Limits per principal over real sockets: two token holders, one greedy.
#[tokio::test]
async fn rate_limits_per_principal_and_tool() {
    use duet::transport::http::{RATE_LIMITED, RateLimits};
    let auth = duet::auth::TokenAuth::from_specs(["tok-a", "tok-b"]).expect("token specs");
    let rate_limits = RateLimits {
        requests_per_second: Some(3.0),
        tool_calls_per_second: [("slow".to_string(), 0.5)].into(),
        max_in_flight: Some(1),
    };
    let config = HttpConfig { auth: Some(std::sync::Arc::new(auth)), rate_limits, ..config() };
    let ts = TestServer::start(config).await;
    let alice = ts.client(MODERN).with_header("authorization", "Bearer tok-a");
    let bob = ts.client(MODERN).with_header("authorization", "Bearer tok-b");
    let echo = json!({"name": "echo", "arguments": {"text": "hi"}});
    let slow = json!({"name": "slow", "arguments": {"steps": 25}});

    // Alice's slow call runs; while it does, her next request is one too many in flight.
    let running = {
        let alice = alice.clone();
        tokio::spawn(async move { alice.post("tools/call", slow).send().await })
    };
    eventually("alice's call running", || {
        let alice = alice.clone();
        let echo = echo.clone();
        async move { alice.post("tools/call", echo).send().await.status == StatusCode::TOO_MANY_REQUESTS }
    })
    .await;
    let refused = alice.post("tools/call", echo.clone()).send().await;
    let error = refused.expect_rpc_error(StatusCode::TOO_MANY_REQUESTS, RATE_LIMITED, &refused.response()["id"]);
    assert!(error["message"].as_str().unwrap().contains("1 request in flight"), "{error}");
    assert_eq!(refused.header("retry-after"), Some("1"));
    // Bob is not held up by Alice.
    bob.call("tools/call", echo.clone()).await;
    running.await.expect("joined").expect_status(StatusCode::OK);

    // Slow has its own rate: one call every two seconds.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let again = alice.post("tools/call", json!({"name": "slow", "arguments": {"steps": 1}})).send().await;
    let error = again.expect_rpc_error(StatusCode::TOO_MANY_REQUESTS, RATE_LIMITED, &again.response()["id"]);
    assert!(error["message"].as_str().unwrap().contains("calls a second of slow"), "{error}");
    let wait: u64 = again.header("retry-after").expect("Retry-After").parse().expect("seconds");
    assert!((1..=2).contains(&wait), "{wait}");
    assert_eq!(error["data"]["retryAfter"], wait);

    // Three requests a second each: Bob's burst runs out, Alice's bucket is her own.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(bob.post("tools/call", echo.clone()).send().await.status);
    }
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::TOO_MANY_REQUESTS).count(), 1, "{statuses:?}");
    alice.call("tools/call", echo).await;
    ts.stop().await;
}
