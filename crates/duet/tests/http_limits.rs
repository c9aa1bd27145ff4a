//! Caps and timeouts over real sockets: idle session expiry, the session caps (global and
//! per principal, and anonymous clients, who share one principal), the header timeout, the
//! connection caps (global and per peer address), a body refused by its declared length
//! before it is sent, the limits per principal (each request of a batch counted on its
//! own), the batch cap, the bounds of resource subscriptions, and the bound in bytes of a
//! legacy session's outbox, and the write timeout that ends a connection whose
//! client does not read its answer.
//!
//! The tests of the command-line limits run the `duet` binary: `DUET_BIN`, else
//! `target/debug/duet` (build it first with `cargo build -p duet-cli --features fixtures`).

pub mod http_support;
mod oauth_support;

use duet::transport::http::HttpConfig;
use http_support::*;
use oauth_support::cli::{Started, serve_fixtures};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::process::Child;

fn initialize_params() -> serde_json::Value {
    json!({"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}})
}

/// `duet serve --fixtures testkit --transport http --port 0` with `args`, on 127.0.0.1.
struct Duet {
    child: Child,
    url: String,
    addr: SocketAddr,
}

impl Duet {
    async fn start(args: &[&str]) -> Duet {
        Duet::start_with("testkit", args).await
    }

    /// [`start`](Self::start) serving the built-in registry `fixtures`.
    async fn start_with(fixtures: &str, args: &[&str]) -> Duet {
        let (child, url) = match serve_fixtures(fixtures, args, &[]).await {
            Started::Listening { child, url } => (child, url),
            Started::Exited { code, stderr } => panic!("duet {args:?} exited ({code:?}): {stderr}"),
        };
        let authority = url.trim_start_matches("http://").split('/').next().expect("an authority");
        let addr = authority.parse().expect("the address duet listens on");
        Duet { child, url, addr }
    }

    /// A client of `version` without a session.
    fn client(&self, version: &str) -> Client {
        let http = reqwest::Client::builder().no_proxy().build().expect("a reqwest client");
        Client::new(http, &format!("http://{}", self.addr), &self.url, version)
    }

    /// A client with an initialized session at `version`.
    async fn session(&self, version: &str) -> Client {
        let mut client = self.client(version);
        client.initialize().await;
        client
    }

    /// A raw connection to it.
    async fn connect(&self) -> TcpStream {
        bounded("connecting", TcpStream::connect(self.addr)).await.expect("connect")
    }

    /// Stops the process (by its PID).
    async fn stop(mut self) {
        self.child.kill().await.expect("duet stopped");
    }
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

/// A server whose clients present one of the bearer tokens `tokens`, each its own principal.
fn with_tokens(tokens: &[&str], config: HttpConfig) -> HttpConfig {
    let auth = duet::auth::TokenAuth::from_specs(tokens.iter().copied()).expect("token specs");
    HttpConfig { auth: Some(std::sync::Arc::new(auth)), ..config }
}

/// A client of `ts` at `version` presenting `token`, with an initialized session.
async fn session_of(ts: &TestServer, token: &str, version: &str) -> Client {
    let mut client = ts.client(version).with_token(token);
    client.initialize().await;
    client
}

#[tokio::test]
async fn the_session_cap() {
    let ts = TestServer::start(with_tokens(&["tok-a"], HttpConfig { max_sessions: 1, ..config() })).await;
    let first = session_of(&ts, "tok-a", LATEST).await;
    let refused = ts.client(LATEST).with_token("tok-a").post("initialize", initialize_params()).send().await;
    refused.expect_http_error(StatusCode::SERVICE_UNAVAILABLE, "Too many sessions");
    assert_eq!(refused.header("mcp-session-id"), None);
    first.call("tools/list", json!({})).await;
    // Ending the first session makes room.
    first.delete().send().await.expect_status(StatusCode::OK);
    session_of(&ts, "tok-a", LATEST).await;
    ts.stop().await;
}

#[tokio::test]
async fn the_per_principal_cap_evicts_the_oldest_idle_session() {
    let ts = TestServer::start(with_tokens(&["tok-a"], HttpConfig { max_sessions_per_principal: 2, ..config() })).await;
    let oldest = session_of(&ts, "tok-a", LATEST).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = session_of(&ts, "tok-a", LATEST).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let third = session_of(&ts, "tok-a", LATEST).await;
    assert_eq!(ts.session_count(), 2);
    oldest.post("tools/list", json!({})).send().await.expect_http_error(StatusCode::NOT_FOUND, "Session not found");
    second.call("tools/list", json!({})).await;
    third.call("tools/list", json!({})).await;

    // With every session of the caller streaming there is nothing to evict.
    let mut second_stream = second.get().stream().await;
    let _third_stream = third.get().stream().await;
    let refused = ts.client(LATEST).with_token("tok-a").post("initialize", initialize_params()).send().await;
    refused.expect_http_error(StatusCode::SERVICE_UNAVAILABLE, "Too many sessions for this caller");
    second.delete().send().await.expect_status(StatusCode::OK);
    second_stream.expect_end().await;
    session_of(&ts, "tok-a", LATEST).await;
    third.call("tools/list", json!({})).await;
    ts.stop().await;
}

/// Without authentication every client is the one anonymous principal: the per-principal
/// cap would let anyone end everyone else's sessions with a few `initialize`s. Only the
/// server's cap counts, and at it the least recently used idle session of all goes.
#[tokio::test]
async fn anonymous_clients_do_not_end_each_others_sessions() {
    let duet = Duet::start(&["--max-sessions", "5", "--max-sessions-per-principal", "2"]).await;
    let alice = duet.session(LATEST).await;
    // Someone else opens three sessions, more than the per-principal cap.
    let mut others = Vec::new();
    for _ in 0..3 {
        others.push(duet.session(LATEST).await);
    }
    alice.call("tools/list", json!({})).await;
    // The fifth is the server's last room; at the sixth the least recently used idle
    // session goes: the first of the others', not Alice's, used since.
    others.push(duet.session(LATEST).await);
    others.push(duet.session(LATEST).await);
    let gone = others[0].post("tools/list", json!({})).send().await;
    gone.expect_http_error(StatusCode::NOT_FOUND, "Session not found");
    alice.call("tools/list", json!({})).await;
    for other in &others[1..] {
        other.call("tools/list", json!({})).await;
    }
    // With every session streaming there is nothing to end: the server is full.
    let mut streams = vec![alice.get().stream().await];
    for other in &others[1..] {
        streams.push(other.get().stream().await);
    }
    let refused = duet.client(LATEST).post("initialize", initialize_params()).send().await;
    refused.expect_http_error(StatusCode::SERVICE_UNAVAILABLE, "Too many sessions");
    drop(streams);
    duet.stop().await;
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
    use duet::protocol::{RATE_LIMITED, RateLimits, ServerOptions};
    let auth = duet::auth::TokenAuth::from_specs(["tok-a", "tok-b"]).expect("token specs");
    let rate_limits = RateLimits {
        requests_per_second: Some(3.0),
        tool_calls_per_second: [("slow".to_string(), 0.5)].into(),
        max_in_flight: Some(1),
    };
    let config = HttpConfig { auth: Some(std::sync::Arc::new(auth)), ..config() };
    let ts = TestServer::start_with(config, ServerOptions { rate_limits, ..ServerOptions::default() }).await;
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

/// A 2025-03-26 client of a stateless `duet`: its batches run at the version its header names.
fn batching(duet: &Duet) -> Client {
    let mut client = duet.client("2025-03-26");
    client.version_header = true;
    client
}

/// A batch of `tools/call`s, ids 1, 2, ...: each a tool and its arguments.
fn calls(calls: &[(&str, Value)]) -> Value {
    let calls = calls.iter().enumerate().map(|(at, (tool, arguments))| {
        json!({"jsonrpc": "2.0", "id": at + 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
    });
    Value::Array(calls.collect())
}

/// Posts a batch, asking for its answer as one JSON array.
async fn post_batch(client: &Client, batch: Value) -> Exchange {
    client.post_json(batch).header("accept", "application/json").send().await
}

/// Each response of a batch answer, in order: its id, and the message of its error (`None`
/// for a result).
fn answered(exchange: &Exchange) -> Vec<(Value, Option<String>)> {
    exchange.expect_status(StatusCode::OK);
    let responses = exchange.json.as_ref().and_then(Value::as_array).unwrap_or_else(|| panic!("{}", exchange.body));
    let mut answered: Vec<(Value, Option<String>)> = responses
        .iter()
        .map(|r| {
            if let Some(error) = r.get("error") {
                assert_eq!(error["code"], duet::protocol::RATE_LIMITED, "{r}");
            }
            (r["id"].clone(), r["error"]["message"].as_str().map(str::to_string))
        })
        .collect();
    answered.sort_by_key(|(id, _)| id.as_i64());
    answered
}

/// Every request of a batch counts on its own against `--rate-limit`,
/// `--max-in-flight-per-principal` and `--tool-rate-limit`: the first runs, the others are
/// each answered -32029 in the batch, and a tool's bucket is emptied, never overdrawn.
#[tokio::test]
async fn each_request_of_a_batch_counts_against_every_limit() {
    let sleepy = || ("sleepy", json!({"seconds": 0}));
    let mut batch: Vec<(&str, Value)> = (0..8).map(|_| sleepy()).collect();
    batch.push(("echo", json!({"text": "not rated"})));
    for (limit, refused, echo_refused) in [
        (["--rate-limit", "1"], "1 request a second", true),
        (["--max-in-flight-per-principal", "1"], "1 request in flight", true),
        (["--tool-rate-limit", "sleepy=1"], "1 call a second of sleepy", false),
    ] {
        let duet = Duet::start(&[&["--stateless"][..], &limit[..]].concat()).await;
        let client = batching(&duet);
        let answer = answered(&post_batch(&client, calls(&batch)).await);
        let why = Some(format!("Rate limit exceeded: {refused}; retry after 1 s"));
        let mut expected: Vec<(Value, Option<String>)> = vec![(json!(1), None)];
        expected.extend((2..=8).map(|id| (json!(id), why.clone())));
        expected.push((json!(9), if echo_refused { why.clone() } else { None }));
        assert_eq!(answer, expected, "{limit:?}");
        duet.stop().await;
    }

    // The batch took the one token of sleepy's bucket and no more: a second on, it is back.
    let duet = Duet::start(&["--stateless", "--tool-rate-limit", "sleepy=1"]).await;
    let client = batching(&duet);
    let answer = answered(&post_batch(&client, calls(&[sleepy(), sleepy(), sleepy()])).await);
    assert_eq!(answer.iter().filter(|(_, error)| error.is_none()).count(), 1, "{answer:?}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let answer = answered(&post_batch(&client, calls(&[sleepy()])).await);
    assert_eq!(answer, [(json!(1), None)], "the bucket was overdrawn");
    duet.stop().await;
}

/// A batch of more messages than `--max-batch-items` is refused whole, before any of it
/// counts against a limit or runs.
#[tokio::test]
async fn a_batch_over_the_item_cap_is_refused_whole() {
    let duet = Duet::start(&["--stateless", "--max-batch-items", "5", "--rate-limit", "1"]).await;
    let client = batching(&duet);
    let echo = || ("echo", json!({"text": "hi"}));
    let refused = post_batch(&client, calls(&[echo(), echo(), echo(), echo(), echo(), echo()])).await;
    refused.expect_http_error(
        StatusCode::BAD_REQUEST,
        "Invalid Request: a batch may hold at most 5 messages; this one holds 6",
    );
    // It spent nothing: the principal's one token goes to the next batch's first call.
    let answer = answered(&post_batch(&client, calls(&[echo(), echo(), echo(), echo(), echo()])).await);
    assert_eq!(answer[0], (json!(1), None), "{answer:?}");
    assert!(answer[1..].iter().all(|(_, error)| error.is_some()), "{answer:?}");
    duet.stop().await;
}

/// `resources/subscribe` holds at most `--max-subscriptions` URIs a session, each at most
/// `--max-subscription-uri-bytes` long, and so does each listen stream's
/// `resourceSubscriptions`; what is over is refused with -32602, and the server serves on.
#[tokio::test]
async fn resource_subscriptions_are_bounded() {
    let duet = Duet::start(&["--max-subscriptions", "2", "--max-subscription-uri-bytes", "40"]).await;
    let session = duet.session(LATEST).await;
    let subscribe = |uri: String| session.post("resources/subscribe", json!({"uri": uri})).send();
    let refused = |exchange: &Exchange, message: &str| {
        let error = exchange.expect_rpc_error(StatusCode::OK, -32602, &exchange.response()["id"]);
        assert_eq!(error["message"], message, "{error}");
    };
    for uri in ["test://a", "test://b", "test://a"] {
        subscribe(uri.to_string()).await.expect_status(StatusCode::OK).result();
    }
    let full = "this session holds 2 resource subscriptions, the most it may; unsubscribe from one first";
    refused(&subscribe("test://c".into()).await, full);
    let long = format!("test://{}", "x".repeat(34));
    refused(&subscribe(long).await, "uri is 41 bytes long; a subscription's URI may be at most 40");
    session.call("resources/unsubscribe", json!({"uri": "test://b"})).await;
    session.call("resources/subscribe", json!({"uri": "test://c"})).await;

    let modern = duet.client(MODERN);
    let listen = |uris: Value| {
        let filter = json!({"notifications": {"resourcesListChanged": true, "resourceSubscriptions": uris}});
        modern.post("subscriptions/listen", filter)
    };
    let too_many = listen(json!(["test://a", "test://b", "test://c"])).send().await;
    refused(&too_many, "notifications.resourceSubscriptions lists 3 URIs; a listen stream may follow at most 2");
    let too_long = listen(json!(["test://a", format!("test://{}", "y".repeat(40))])).send().await;
    refused(
        &too_long,
        "notifications.resourceSubscriptions[1] is 47 bytes long; a subscription's URI may be at most 40",
    );
    let mut stream = listen(json!(["test://a", "test://b"])).stream().await;
    let ack = stream.next_message().await;
    assert_eq!(ack["params"]["notifications"]["resourceSubscriptions"], json!(["test://a", "test://b"]), "{ack}");
    drop(stream);
    session.call("tools/list", json!({})).await;
    duet.stop().await;
}

/// One peer address holds at most `--max-connections-per-peer` connections: one more is
/// refused (a health probe still answered) and closed, like one over `--max-connections`,
/// while the peer's others are served; 0 turns the cap off.
#[tokio::test]
async fn the_per_peer_connection_cap() {
    let duet = Duet::start(&["--max-connections-per-peer", "2"]).await;
    let health = format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", duet.addr);
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut conn = duet.connect().await;
        conn.write_all(health.as_bytes()).await.unwrap();
        let served = read_response(&mut conn).await;
        assert_eq!((served.status(), served.header("connection")), (200, None), "{served:?}");
        held.push(conn);
    }
    let mut third = duet.connect().await;
    let post = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: 2\r\n\r\n{{}}", duet.addr);
    third.write_all(post.as_bytes()).await.unwrap();
    let refused = read_response(&mut third).await;
    refused.expect_http_error(503, "Too many connections from this address");
    assert_eq!(refused.header("connection"), Some("close"));
    read_until_closed(&mut third, Duration::from_secs(3)).await;
    let mut probe = duet.connect().await;
    probe.write_all(health.as_bytes()).await.unwrap();
    let answered = read_response(&mut probe).await;
    assert_eq!((answered.status(), answered.header("connection")), (200, Some("close")), "{answered:?}");

    // The held connections still work; once one closes, a new one is served.
    held[0].write_all(health.as_bytes()).await.unwrap();
    assert_eq!(read_response(&mut held[0]).await.status(), 200);
    held.pop();
    eventually("a connection served after one closed", || {
        let (addr, health) = (duet.addr, health.clone());
        async move {
            let answer = raw_exchange(addr, health.into_bytes()).await;
            answer.status() == 200 && answer.header("connection") != Some("close")
        }
    })
    .await;
    duet.stop().await;

    let uncapped = Duet::start(&["--max-connections-per-peer", "0"]).await;
    let mut open = Vec::new();
    for _ in 0..5 {
        let mut conn = uncapped.connect().await;
        conn.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", uncapped.addr).as_bytes()).await.unwrap();
        let served = read_response(&mut conn).await;
        assert_eq!((served.status(), served.header("connection")), (200, None), "{served:?}");
        open.push(conn);
    }
    uncapped.stop().await;
}

/// A task holds its principal's slot in flight until it ends (finding 5 of the redteam
/// review: a task-augmented call was answered at once and its slot released while it ran
/// on). Under `--max-in-flight-per-principal 1` a second call, task or not, is refused
/// -32029 with 429 while the first task works; the client still reads and cancels the task
/// that holds the slot, and once it ended a call runs again.
#[tokio::test]
async fn a_running_task_holds_its_slot_in_flight() {
    let duet = Duet::start_with("conformance", &["--max-in-flight-per-principal", "1"]).await;
    let params = json!({"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    let opened = duet.client(LATEST).post("initialize", params).send().await;
    let session = opened.header("mcp-session-id").expect("a session");
    let client = duet.client(LATEST).with_session(session);
    client.notify("notifications/initialized", json!({})).send().await.expect_status(StatusCode::ACCEPTED);
    let as_task = json!({"name": "slow_compute", "arguments": {"seconds": 20}, "task": {"ttl": 60000}});
    let first = client.post("tools/call", as_task.clone()).send().await;
    assert_eq!(first.result()["task"]["status"], "working", "{:?}", first.response());
    let task_id = first.result()["task"]["taskId"].as_str().expect("a task id").to_string();
    let second = client.post("tools/call", as_task).send().await;
    assert_eq!(
        second.status,
        StatusCode::TOO_MANY_REQUESTS,
        "a second call ran while the first still works: {:?}",
        second.response()
    );
    assert_eq!(second.response()["error"]["code"], -32029, "{:?}", second.response());
    let message = second.response()["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("1 request in flight, running tasks included"), "{message}");
    let plain = json!({"name": "slow_compute", "arguments": {"seconds": 1}});
    client.post("tools/call", plain.clone()).send().await.expect_status(StatusCode::TOO_MANY_REQUESTS);

    let got = client.post("tasks/get", json!({"taskId": task_id})).send().await;
    assert_eq!(got.result()["status"], "working", "the task is read while it holds the slot: {:?}", got.response());
    client.post("tasks/cancel", json!({"taskId": task_id})).send().await.expect_status(StatusCode::OK);
    eventually("a call runs once the task ended", || {
        let (client, plain) = (&client, plain.clone());
        async move { client.post("tools/call", plain).send().await.status == StatusCode::OK }
    })
    .await;
    duet.stop().await;
}

/// The same on 2026-07-28, where a call becomes a task once it outlasts a moment: the task
/// holds the request's slot, so a second call is refused 429 while it works.
#[tokio::test]
async fn a_call_that_became_a_task_holds_its_slot_in_flight() {
    let duet = Duet::start_with("conformance", &["--max-in-flight-per-principal", "1"]).await;
    let client = duet.client(MODERN);
    let declaring =
        json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let call = json!({"name": "slow_compute", "arguments": {"seconds": 20}, "_meta": declaring});
    let first = client.post("tools/call", call.clone()).send().await;
    first.expect_status(StatusCode::OK);
    assert_eq!(first.result()["resultType"], "task", "{:?}", first.response());
    let second = client.post("tools/call", call).send().await;
    assert_eq!(second.status, StatusCode::TOO_MANY_REQUESTS, "{:?}", second.response());
    assert_eq!(second.response()["error"]["code"], -32029, "{:?}", second.response());
    duet.stop().await;
}

/// A raw connection to `duet` from the loopback address `source`, that has sent part of a
/// request head (so it is held until the header timeout).
async fn half_open_from(duet: &Duet, source: std::net::IpAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.bind(SocketAddr::new(source, 0)).expect("bind a loopback source address");
    let mut conn = bounded("connecting", socket.connect(duet.addr)).await.expect("connect");
    conn.write_all(b"POST /mcp HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    conn
}

/// Two peers do not hold every connection (finding 6 of the redteam review: the default
/// per-peer cap was half the server's, 256 of 512, so two addresses filled it). By default
/// a peer holds an eighth of `--max-connections`: two loopback addresses each trying 256
/// get 64, and a third client is served.
#[tokio::test]
async fn two_addresses_do_not_hold_every_connection() {
    let duet = Duet::start(&[]).await;
    let mut held = Vec::new();
    for source in ["127.0.0.2", "127.0.0.3"] {
        for _ in 0..256 {
            held.push(half_open_from(&duet, source.parse().unwrap()).await);
        }
    }
    let mut third = duet.connect().await;
    let post = format!("POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Length: 2\r\n\r\n{{}}", duet.addr);
    third.write_all(post.as_bytes()).await.unwrap();
    let answered = read_response(&mut third).await;
    assert!(!answered.status_line.starts_with("HTTP/1.1 503"), "a third client was refused: {answered:?}");
    drop(held);
    duet.stop().await;
}

/// This process's resident memory (VmRSS), in MiB.
fn own_rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS in /proc/self/status");
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() / 1024
}

/// A legacy (2024-11-05) session's POSTs are answered 202 before they run, their answers
/// wait in the session's outbox for its `/sse` stream. A red-team finding: the outbox was
/// capped at 512 answers whatever their size, so a client that never read its stream and
/// posted calls with large answers made the server keep them all (150 echoes of 2.5 MB
/// grew this process by 386 MiB; 520 `read_multiple_files` calls took duet to 2.1 GiB).
/// Now the outbox is bounded in bytes too: once full, a request is refused 429 saying the
/// stream is not being read, and reading the stream makes room again.
#[tokio::test]
async fn a_legacy_stream_nobody_reads_holds_bounded_bytes() {
    let ts = TestServer::start(HttpConfig { enable_sse: true, ..config() }).await;
    let mut session = LegacySession::open(&ts, &ts.client("2024-11-05")).await;
    let before = own_rss_mib();
    let text = "x".repeat(500 * 1024);
    let (mut accepted, mut refused) = (0, None);
    for _ in 0..150 {
        let call = json!({"name": "echo", "arguments": {"text": text, "times": 5}});
        let answered = session.messages.post("tools/call", call).send().await;
        if answered.status != StatusCode::ACCEPTED {
            refused = Some(answered);
            break;
        }
        accepted += 1;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let grown = own_rss_mib().saturating_sub(before);
    assert!(grown < 200, "the unread legacy stream's answers took {grown} MiB");
    let refused = refused.expect("a request refused once the outbox is full");
    refused.expect_status(StatusCode::TOO_MANY_REQUESTS);
    let error = &refused.json.as_ref().expect("a JSON-RPC error")["error"];
    assert_eq!(error["code"], -32029);
    let said = error["message"].as_str().unwrap();
    assert!(said.starts_with("the session's stream is not being read: "), "{said}");
    assert!(accepted < 150, "{accepted} accepted");
    // Each accepted call is answered on the stream (its result, or an error saying it did
    // not fit); once read, the session takes requests again.
    for _ in 0..accepted {
        let answer = session.stream.next_message().await;
        let fits = answer["result"]["content"].is_array();
        assert!(fits || answer["error"]["code"] == -32029, "{answer:.200}");
    }
    session.messages.post("ping", json!({})).send().await.expect_status(StatusCode::ACCEPTED);
    assert_eq!(session.stream.next_message().await["result"], json!({}));
    drop(session);
    ts.stop().await;
}

/// A red-team finding: an answer its client does not read was held for as long as the
/// connection lasted (three unread POSTs of batches held 2.8 GiB). Now a write that waits
/// longer than `write_timeout` for the client to read ends the connection, and with it
/// the answer.
#[tokio::test]
async fn an_answer_nobody_reads_is_let_go_after_the_write_timeout() {
    let ts = TestServer::start(HttpConfig { write_timeout: Duration::from_secs(1), ..config() }).await;
    let client = ts.session("2025-06-18").await;
    let session = client.session_id.clone().expect("a session");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "x".repeat(3 << 20), "times": 5}}});
    let body = serde_json::to_vec(&call).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n\r\n",
        ts.host(),
        body.len()
    );
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(ts.addr).await.unwrap();
    stream.write_all(&[head.into_bytes(), body].concat()).await.unwrap();
    // The answer, over 30 MB, waits for a client that does not read: from its first byte
    // (making it may take seconds on a loaded machine), longer than the write timeout.
    within(Duration::from_secs(60), "the answer's first byte", stream.peek(&mut [0u8; 1])).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let read = read_until_closed(&mut stream, Duration::from_secs(20)).await;
    assert!(read.starts_with(b"HTTP/1.1 200"), "{:?}", String::from_utf8_lossy(&read[..read.len().min(200)]));
    assert!(read.len() < 30 << 20, "the whole answer was kept for a client that did not read: {} bytes", read.len());
    ts.stop().await;
}
