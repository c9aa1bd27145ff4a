//! 2026-07-28 over real sockets: sessionless requests, the envelope and header ladder,
//! HTTP statuses of 2026 errors, and `subscriptions/listen` streams (changes, client
//! disconnect, server shutdown).

pub mod http_support;

use duet::layer::Change;
use duet::transport::http::HttpConfig;
use http_support::*;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

fn assert_stamped(result: &Value) {
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["_meta"][SERVER_INFO]["name"], "duet-testkit", "{result}");
}

#[tokio::test]
async fn requests_are_sessionless() {
    let ts = TestServer::start(config()).await;
    let m = ts.modern();

    let list = m.post("tools/list", json!({})).send().await;
    list.expect_status(StatusCode::OK);
    assert!(list.content_type().starts_with("application/json"));
    assert_stamped(list.result());
    assert_eq!(list.result()["tools"][0]["name"], "echo");
    assert_eq!(list.header("mcp-session-id"), None, "2026 never mints a session");

    let echo = m.post("tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})).send().await;
    echo.expect_status(StatusCode::OK);
    assert_stamped(echo.result());
    assert_eq!(echo.result()["structuredContent"], json!({"text": "hi"}));
    assert_eq!(echo.header("mcp-session-id"), None);

    let slow = json!({"name": "slow", "arguments": {"steps": 3}, "_meta": {"progressToken": "p"}});
    let streamed = m.post("tools/call", slow).send().await;
    streamed.expect_status(StatusCode::OK);
    assert!(streamed.is_sse());
    assert_eq!(streamed.header("x-accel-buffering"), Some("no"));
    assert_eq!(streamed.notifications("notifications/progress").len(), 3);
    assert!(streamed.notifications("notifications/message").is_empty(), "no logs without a requested level");
    assert_eq!(streamed.result()["structuredContent"], json!({"done": 3}));

    let read = m.post("resources/read", json!({"uri": "test://info"})).send().await;
    read.expect_status(StatusCode::OK);
    assert_eq!(read.result()["contents"][0]["text"], r#"{"hello":"world"}"#);
    let discover = m.call("server/discover", json!({})).await;
    assert!(discover["supportedVersions"].as_array().unwrap().contains(&json!(MODERN)));
    assert_stamped(&discover);

    // A session id sent along is ignored, never echoed.
    let with_id = m.clone().with_session("deadbeef").post("tools/list", json!({})).send().await;
    with_id.expect_status(StatusCode::OK);
    assert_eq!(with_id.header("mcp-session-id"), None);
    assert_eq!(ts.session_count(), 0);
    ts.stop().await;
}

#[tokio::test]
async fn the_header_ladder() {
    let ts = TestServer::start(config()).await;
    let m = ts.modern();
    let mismatch = |req: Req, what: &str| {
        let id = req.id.clone().unwrap();
        let what = what.to_string();
        async move {
            let answer = req.send().await;
            let error = answer.expect_rpc_error(StatusCode::BAD_REQUEST, -32020, &id);
            assert!(error["message"].as_str().unwrap().contains("does not match"), "{what}: {error}");
            error.clone()
        }
    };
    let list = || m.post("tools/list", json!({}));

    mismatch(list().without("mcp-protocol-version").without("mcp-method"), "no headers").await;
    mismatch(list().without("mcp-method"), "only MCP-Protocol-Version").await;
    mismatch(list().without("mcp-protocol-version"), "only Mcp-Method").await;
    let e = mismatch(list().header("mcp-protocol-version", "2025-11-25"), "wrong version").await;
    assert!(e["message"].as_str().unwrap().starts_with("MCP-Protocol-Version header"), "{e}");
    let e = mismatch(list().header("mcp-method", "TOOLS/LIST"), "wrong method").await;
    assert!(e["message"].as_str().unwrap().starts_with("Mcp-Method header"), "{e}");
    mismatch(list().header("mcp-method", "tools/call"), "another method").await;

    let echo = || m.post("tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
    let e = mismatch(echo().without("mcp-name"), "no Mcp-Name").await;
    assert_eq!(e["message"], "Mcp-Name header does not match the request body's 'name' parameter");
    mismatch(echo().header("mcp-name", "stats"), "wrong Mcp-Name").await;
    mismatch(echo().header("mcp-name", "=?base64?***?="), "bad base64").await;
    let encoded = echo().header("mcp-name", "=?base64?ZWNobw==?=").send().await;
    encoded.expect_status(StatusCode::OK);
    assert_eq!(encoded.result()["structuredContent"], json!({"text": "x"}));
    let read = m.post("resources/read", json!({"uri": "test://info"})).header("mcp-name", "test://other");
    let e = mismatch(read, "wrong uri").await;
    assert_eq!(e["message"], "Mcp-Name header does not match the request body's 'uri' parameter");

    let no_caps = m.post_bare("tools/list", json!({"_meta": {PROTOCOL_VERSION_KEY: MODERN}}));
    let id = no_caps.id.clone().unwrap();
    let answer = no_caps.send().await;
    let error = answer.expect_rpc_error(StatusCode::BAD_REQUEST, -32602, &id);
    assert!(error["message"].as_str().unwrap().contains(CLIENT_CAPABILITIES_KEY), "{error}");

    let future = json!({"_meta": {PROTOCOL_VERSION_KEY: "2099-01-01", CLIENT_CAPABILITIES_KEY: {}}});
    let req = m.post_bare("tools/list", future).header("mcp-protocol-version", "2099-01-01");
    let id = req.id.clone().unwrap();
    let answer = req.send().await;
    let error = answer.expect_rpc_error(StatusCode::BAD_REQUEST, -32022, &id);
    assert_eq!(error["data"]["supported"], json!([MODERN]), "{error}");
    assert_eq!(error["data"]["requested"], "2099-01-01");
    ts.stop().await;
}

/// Arguments mirrored in `Mcp-Param-*` headers (SEP-2243): the testkit's `route` mirrors
/// `region` (a string), `priority` (an integer) and `dry_run` (a boolean). Each way of
/// getting a header wrong is refused with 400 and -32020 naming the header; a right one, plain
/// or base64, runs the tool.
#[tokio::test]
async fn mirrored_arguments_must_match_their_headers() {
    let ts = TestServer::start(config()).await;
    let m = ts.modern();
    let listed = m.call("tools/list", json!({})).await;
    let route = listed["tools"].as_array().unwrap().iter().find(|t| t["name"] == "route").unwrap().clone();
    assert_eq!(route["inputSchema"]["properties"]["region"]["x-mcp-header"], "Region", "{route}");
    let call = |args: Value| m.post("tools/call", json!({"name": "route", "arguments": args}));
    let refused = |req: Req, header: &str, why: &str| {
        let id = req.id.clone().unwrap();
        let (header, why) = (header.to_string(), why.to_string());
        async move {
            let error = req.send().await.expect_rpc_error(StatusCode::BAD_REQUEST, -32020, &id).clone();
            let message = error["message"].as_str().unwrap();
            assert!(message.starts_with(&format!("{header} header")), "{why}: {message}");
            assert!(message.contains(&why), "{why}: {message}");
        }
    };
    let eu = json!({"region": "eu-west1"});
    refused(call(eu.clone()), "Mcp-Param-Region", "is missing").await;
    refused(call(eu.clone()).header("mcp-param-region", "us-east1"), "Mcp-Param-Region", "does not match").await;
    refused(call(eu.clone()).header("mcp-param-region", "EU-WEST1"), "Mcp-Param-Region", "does not match").await;
    let bad_base64 = call(json!({"region": "Hello"})).header("mcp-param-region", "=?base64?SGVs!!!bG8=?=");
    refused(bad_base64, "Mcp-Param-Region", "not valid base64").await;
    let bad_padding = call(json!({"region": "Hello"})).header("mcp-param-region", "=?base64?SGVsbG8?=");
    refused(bad_padding, "Mcp-Param-Region", "not valid base64").await;
    let no_value = call(json!({"region": "eu"})).header("mcp-param-region", "eu").header("mcp-param-priority", "1");
    refused(no_value, "Mcp-Param-Priority", "has no value").await;
    let numbers = call(json!({"region": "eu", "priority": 7})).header("mcp-param-region", "eu");
    refused(numbers.header("mcp-param-priority", "8"), "Mcp-Param-Priority", "does not match").await;
    let flag = call(json!({"region": "eu", "dry_run": true})).header("mcp-param-region", "eu");
    refused(flag.header("mcp-param-dry-run", "True"), "Mcp-Param-Dry-Run", "does not match").await;
    // The wrong era: a handshake-era MCP-Protocol-Version on a 2026 request, whose
    // mirrored headers a proxy would have trusted.
    let old = call(eu.clone()).header("mcp-param-region", "eu-west1").header("mcp-protocol-version", "2025-11-25");
    refused(old, "MCP-Protocol-Version", "does not match").await;

    let ran = |req: Req, text: &str| {
        let text = text.to_string();
        async move {
            let answer = req.send().await;
            answer.expect_status(StatusCode::OK);
            assert_eq!(answer.result()["content"][0]["text"], text.as_str(), "{}", answer.result());
        }
    };
    ran(call(eu.clone()).header("mcp-param-region", "eu-west1"), "eu-west1 at priority 0").await;
    ran(call(eu.clone()).header("mcp-param-region", "  eu-west1 "), "eu-west1 at priority 0").await;
    let unicode = call(json!({"region": "Zürich 1 "})).header("mcp-param-region", "=?base64?WsO8cmljaCAxIA==?=");
    ran(unicode, "Zürich 1  at priority 0").await;
    let literal = call(json!({"region": "=?base64?SGVsbG8="})).header("mcp-param-region", "=?base64?SGVsbG8=");
    ran(literal, "=?base64?SGVsbG8= at priority 0").await;
    let all = call(json!({"region": "eu", "priority": 42, "dry_run": true}))
        .header("mcp-param-region", "eu")
        .header("mcp-param-priority", "42.0")
        .header("mcp-param-dry-run", "true");
    ran(all, "eu at priority 42 (dry run)").await;
    ts.stop().await;
}

/// What a header value may not hold is refused for that, over a raw connection (HTTP
/// clients will not send such bytes); a repeated header is refused too.
#[tokio::test]
async fn mirrored_headers_with_bad_bytes_or_twice_are_refused() {
    let ts = TestServer::start(config()).await;
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": enveloped(json!({"name": "route", "arguments": {"region": "eu"}}))})
    .to_string();
    let request = |extra: &[u8]| {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, \
             text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\nMcp-Name: route\r\n\
             Content-Length: {}\r\nConnection: close\r\n",
            ts.host(),
            body.len()
        )
        .into_bytes();
        head.extend_from_slice(extra);
        head.extend_from_slice(b"\r\n");
        head.extend_from_slice(body.as_bytes());
        head
    };
    let answer = raw_exchange(ts.addr, request(b"Mcp-Param-Region: e\xe9\r\n")).await;
    let error = answer.expect_rpc_error(400, -32020, &json!(5));
    assert_eq!(error["message"], "Mcp-Param-Region header holds characters a header value may not carry");
    let answer = raw_exchange(ts.addr, request(b"Mcp-Param-Region: eu\r\nmcp-param-region: eu\r\n")).await;
    let error = answer.expect_rpc_error(400, -32020, &json!(5));
    assert_eq!(error["message"], "Mcp-Param-Region header is sent more than once");
    let answer = raw_exchange(ts.addr, request(b"Mcp-Param-Region: eu\r\n")).await;
    assert_eq!(answer.status(), 200, "{}", answer.json());
    ts.stop().await;
}

/// The handshake era has no mirrored headers: a session's call runs whatever `Mcp-Param-*`
/// headers say.
#[tokio::test]
async fn handshake_era_calls_ignore_mirrored_headers() {
    let ts = TestServer::start(config()).await;
    let session = ts.session("2025-11-25").await;
    let call = session.post("tools/call", json!({"name": "route", "arguments": {"region": "eu"}}));
    let answer = call.header("mcp-param-region", "us").send().await;
    answer.expect_status(StatusCode::OK);
    assert_eq!(answer.result()["content"][0]["text"], "eu at priority 0");
    ts.stop().await;
}

/// The era of a message is decided by one rule on every transport: `_meta` holding only the
/// client's capabilities makes a 2026 request (an invalid one), over HTTP as over stdio (the
/// engine's `the_envelope_is_checked`, duet-cli's stdio tests), header or no header.
#[tokio::test]
async fn an_envelope_key_alone_makes_a_2026_request() {
    let ts = TestServer::start(config()).await;
    let m = ts.modern();
    let only_caps = json!({"_meta": {CLIENT_CAPABILITIES_KEY: {}}});
    for req in [
        m.post_bare("tools/list", only_caps.clone()),
        m.post_bare("tools/list", only_caps).without("mcp-protocol-version"),
    ] {
        let id = req.id.clone().unwrap();
        let error = req.send().await.expect_rpc_error(StatusCode::BAD_REQUEST, -32602, &id).clone();
        assert_eq!(
            error["message"],
            format!("params._meta is missing the required envelope key(s): {PROTOCOL_VERSION_KEY}")
        );
    }
    ts.stop().await;
}

#[tokio::test]
async fn statuses_of_2026_errors() {
    let ts = TestServer::start(config()).await;
    let m = ts.modern();
    for method in ["no/such/method", "ping", "resources/subscribe"] {
        let req = m.post(method, json!({}));
        let id = req.id.clone().unwrap();
        let answer = req.send().await;
        answer.expect_rpc_error(StatusCode::NOT_FOUND, -32601, &id);
        assert!(answer.content_type().starts_with("application/json"), "{method}");
    }

    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": enveloped(json!({}))});
    let batch = m.post_json(json!([request])).header("mcp-protocol-version", MODERN).header("mcp-method", "tools/list");
    batch.send().await.expect_http_error(
        StatusCode::BAD_REQUEST,
        "JSON-RPC batches are not supported by protocol version 2026-07-28",
    );
    // The envelope alone makes a batch 2026.
    m.post_json(json!([request])).send().await.expect_status(StatusCode::BAD_REQUEST);

    // A message that breaks the framing rules is answered with its -32600, as a 400.
    let as_2026 = |body: Value| m.post_json(body).header("mcp-protocol-version", MODERN);
    let wrong_jsonrpc = json!({"jsonrpc": "1.0", "id": 7, "method": "tools/list", "params": enveloped(json!({}))});
    as_2026(wrong_jsonrpc).send().await.expect_rpc_error(StatusCode::BAD_REQUEST, -32600, &json!(7));
    let null_id = json!({"jsonrpc": "2.0", "id": null, "method": "tools/list", "params": enveloped(json!({}))});
    as_2026(null_id).send().await.expect_http_error(StatusCode::BAD_REQUEST, "Invalid Request: bad id");
    // A notification, even one whose params are not an object, is accepted and dropped.
    let odd_notification = json!({"jsonrpc": "2.0", "method": "notifications/x", "params": 3});
    as_2026(odd_notification).send().await.expect_status(StatusCode::ACCEPTED);

    let listen = m.post("subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
    listen
        .header("accept", "application/json")
        .send()
        .await
        .expect_http_error(StatusCode::NOT_ACCEPTABLE, "subscriptions/listen requires Accept: text/event-stream");
    assert_eq!(ts.server.listen_count(), 0);
    ts.stop().await;
}

#[tokio::test]
async fn listen_stream_delivers_changes_until_the_client_leaves() {
    let ts = TestServer::start(config()).await;
    let m = ts.modern();
    let filter =
        json!({"toolsListChanged": true, "promptsListChanged": false, "resourceSubscriptions": ["test://info"]});
    let req = m.post("subscriptions/listen", json!({"notifications": filter}));
    let id = req.id.clone().unwrap();
    let mut listen = req.stream().await;
    assert_eq!(listen.header("x-accel-buffering"), Some("no"));
    assert_eq!(listen.header("mcp-session-id"), None);

    let ack = listen.next_message().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], id);
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["test://info"]})
    );
    assert_eq!(ts.server.listen_count(), 1);

    let touch = m.post("tools/call", json!({"name": "touch", "arguments": {}})).send().await;
    touch.expect_status(StatusCode::OK);
    assert!(
        touch.messages.iter().all(|m| m.get("method").is_none()),
        "changes go to the listen stream: {}",
        touch.body
    );
    let seen = listen.until_notified(&["notifications/resources/updated", "notifications/tools/list_changed"]).await;
    for message in &seen {
        assert_eq!(message["params"]["_meta"][SUBSCRIPTION_ID], id, "{message}");
    }
    let updated = seen.iter().find(|m| m["method"] == "notifications/resources/updated").unwrap();
    assert_eq!(updated["params"]["uri"], "test://info");

    // The filter holds: prompt changes are not wanted, tool changes are.
    ts.feed.notify(Change::PromptsChanged);
    ts.feed.notify(Change::ToolsChanged);
    let next = listen.next_message().await;
    assert_eq!(next["method"], "notifications/tools/list_changed");
    assert_eq!(next["params"]["_meta"][SUBSCRIPTION_ID], id);

    // The client goes away: the listen is cancelled and removed.
    drop(listen);
    no_listen_left(&ts, "the listen stream removed after the client left").await;
    ts.stop().await;
}

#[tokio::test]
async fn shutdown_ends_listen_streams_with_their_result() {
    let mut ts = TestServer::start(config()).await;
    let m = ts.modern();
    let req = m.post("subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
    let id = req.id.clone().unwrap();
    let mut listen = req.stream().await;
    assert_eq!(listen.next_message().await["method"], "notifications/subscriptions/acknowledged");

    let stopping = tokio::spawn(ts.take_http().shutdown(Duration::from_secs(2)));
    let last = listen.next_message().await;
    assert_eq!(last["id"], id, "{last}");
    assert_eq!(last["result"]["_meta"][SUBSCRIPTION_ID], id);
    assert_stamped(&last["result"]);
    listen.expect_end().await;
    bounded("the shutdown", stopping).await.expect("the shutdown task");
    assert_eq!(ts.server.listen_count(), 0);
}

#[tokio::test]
async fn a_dropped_request_stream_leaves_the_server_serving() {
    let ts = TestServer::start(HttpConfig { keepalive_interval: Duration::from_millis(100), ..config() }).await;
    let m = ts.modern();
    let mut sleepy = m.post("tools/call", json!({"name": "sleepy", "arguments": {"seconds": 30}})).response().await;
    assert_eq!(sleepy.status(), StatusCode::OK);
    assert_eq!(sleepy.headers()["content-type"], "text/event-stream");
    let first = bounded("a keep-alive", sleepy.chunk()).await.unwrap().unwrap();
    assert!(first.starts_with(b":"), "only a keep-alive comment before the answer: {first:?}");
    drop(sleepy);

    // A listen opened and dropped mid-stream is removed too, while other work goes on.
    let mut listen =
        m.post("subscriptions/listen", json!({"notifications": {"toolsListChanged": true}})).stream().await;
    listen.next_message().await;
    drop(listen);
    let echo = m.call("tools/call", json!({"name": "echo", "arguments": {"text": "still here"}})).await;
    assert_eq!(echo["structuredContent"]["text"], "still here");
    no_listen_left(&ts, "no listen left").await;
    ts.stop().await;
}

/// Waits until the server holds no listen stream.
async fn no_listen_left(ts: &TestServer, what: &str) {
    eventually(what, || async move { ts.server.listen_count() == 0 }).await;
}

/// The tasks alive on the test's runtime (the server's accept loop, its connections, and
/// the requests it runs).
fn alive_tasks() -> usize {
    tokio::runtime::Handle::current().metrics().num_alive_tasks()
}

/// A 2026 `sleepy` call (30 s unless cancelled) on a raw connection, which the test drops.
async fn start_sleepy(ts: &TestServer) -> tokio::net::TcpStream {
    let params = enveloped(json!({"name": "sleepy", "arguments": {"seconds": 30}}));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\n\
         MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\nMcp-Name: sleepy\r\n\
         Content-Length: {}\r\n\r\n{body}",
        ts.host(),
        body.len()
    );
    let mut conn = ts.connect().await;
    conn.write_all(request.as_bytes()).await.unwrap();
    conn
}

/// Waits until only the tasks of `baseline` are left: the connection and the request it
/// ran are gone.
async fn expect_tasks_back_to(baseline: usize, what: &str) {
    eventually(what, || {
        let alive = alive_tasks();
        async move { alive <= baseline }
    })
    .await;
}

/// A client that leaves a 2026 request stream cancels the request: its work stops, and
/// nothing of it outlives the connection.
#[tokio::test]
async fn leaving_a_2026_request_stream_cancels_the_request() {
    let ts = TestServer::start(HttpConfig { keepalive_interval: Duration::from_millis(100), ..config() }).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let baseline = alive_tasks();
    let mut conn = start_sleepy(&ts).await;
    // The head comes with the first keep-alive; the request is running.
    let head = read_head_and_some(&mut conn).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head:?}");
    assert!(alive_tasks() > baseline);
    drop(conn);
    expect_tasks_back_to(baseline, "the cancelled request ending").await;
    ts.stop().await;
}

/// The same when the client leaves before the first event (no head sent yet).
#[tokio::test]
async fn leaving_a_2026_request_before_its_first_event_cancels_it() {
    let ts = TestServer::start(config()).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let baseline = alive_tasks();
    let conn = start_sleepy(&ts).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(alive_tasks() > baseline, "the request is running");
    drop(conn);
    expect_tasks_back_to(baseline, "the request cancelled by the client leaving before any event").await;
    ts.stop().await;
}

/// Reads until the response head and at least one body chunk arrived.
async fn read_head_and_some(conn: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    bounded("the head of the request stream", async {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 1024];
        loop {
            let n = conn.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed early");
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).into_owned();
            if text.contains("keepalive") {
                return text;
            }
        }
    })
    .await
}
