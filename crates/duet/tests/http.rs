//! Streamable HTTP over real sockets, handshake era: the session lifecycle, session errors,
//! request validation, the DNS-rebinding guard, CORS, and stateless JSON mode.

pub mod http_support;

use duet::transport::http::HttpConfig;
use http_support::*;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn tool_names(list: &Value) -> Vec<&str> {
    list["tools"].as_array().expect("tools is an array").iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn session_lifecycle() {
    let ts = TestServer::start(config()).await;
    let mut client = ts.client(LATEST);
    let init = client.initialize().await;
    assert!(init.content_type().starts_with("application/json"));
    assert_eq!(init.header("server"), Some("duet"));
    assert_eq!(ts.session_count(), 1);

    let tools = client.post("tools/list", json!({})).send().await;
    tools.expect_status(StatusCode::OK);
    assert!(tools.content_type().starts_with("application/json"), "tools/list is answered as JSON");
    assert_eq!(tool_names(tools.result())[..2], ["echo", "stats"]);

    // A streaming method with both Accept types: progress on an SSE stream, then the answer.
    let slow = json!({"name": "slow", "arguments": {"steps": 3}, "_meta": {"progressToken": "p-1"}});
    let streamed = client.post("tools/call", slow.clone()).send().await;
    streamed.expect_status(StatusCode::OK);
    assert!(streamed.is_sse(), "{:?}", streamed.headers);
    assert_eq!(streamed.header("x-accel-buffering"), Some("no"));
    assert_eq!(streamed.header("cache-control"), Some("no-cache, no-transform"));
    let progress = streamed.notifications("notifications/progress");
    let values: Vec<&Value> = progress.iter().map(|p| &p["params"]["progress"]).collect();
    assert_eq!(values, [&json!(1), &json!(2), &json!(3)]);
    assert!(progress.iter().all(|p| p["params"]["progressToken"] == "p-1" && p["params"]["total"] == 3));
    let last = streamed.messages.last().unwrap();
    assert!(last.get("result").is_some(), "the response comes last: {}", streamed.body);
    assert_eq!(last["result"]["structuredContent"], json!({"done": 3}));

    // The same with only JSON acceptable: one JSON document.
    let plain = client.post("tools/call", slow).header("accept", "application/json").send().await;
    plain.expect_status(StatusCode::OK);
    assert!(plain.content_type().starts_with("application/json"));
    assert_eq!(plain.messages.len(), 1, "no notifications in a JSON answer: {}", plain.body);
    assert_eq!(plain.result()["structuredContent"], json!({"done": 3}));

    let deleted = client.delete().send().await;
    deleted.expect_status(StatusCode::OK);
    assert!(deleted.body.is_empty());
    assert_eq!(ts.session_count(), 0);
    client.post("tools/list", json!({})).send().await.expect_http_error(StatusCode::NOT_FOUND, "Session not found");
    client.delete().send().await.expect_http_error(StatusCode::NOT_FOUND, "Session not found");
    ts.stop().await;
}

#[tokio::test]
async fn session_errors() {
    let ts = TestServer::start(config()).await;
    let client = ts.session(LATEST).await;
    let list = |c: &Client| c.post("tools/list", json!({}));

    list(&client.clone().without_session())
        .send()
        .await
        .expect_http_error(StatusCode::BAD_REQUEST, "Bad Request: Mcp-Session-Id header is required");
    list(&client.clone().with_session("deadbeef"))
        .send()
        .await
        .expect_http_error(StatusCode::NOT_FOUND, "Session not found");
    list(&client).header("mcp-protocol-version", "2025-06-18").send().await.expect_http_error(
        StatusCode::BAD_REQUEST,
        "MCP-Protocol-Version 2025-06-18 does not match the negotiated version 2025-11-25",
    );
    list(&client)
        .header("mcp-protocol-version", "1999-01-01")
        .send()
        .await
        .expect_http_error(StatusCode::BAD_REQUEST, "Unsupported MCP-Protocol-Version: 1999-01-01");
    let unversioned = list(&client).without("mcp-protocol-version").send().await;
    unversioned.expect_status(StatusCode::OK);
    let served =
        duet::layer::Layer::tools(&duet::fixtures::testkit::registry(), &duet::layer::Principal::anonymous()).len();
    assert_eq!(tool_names(unversioned.result()).len(), served);
    // DELETE needs the id too.
    client
        .clone()
        .without_session()
        .delete()
        .send()
        .await
        .expect_http_error(StatusCode::BAD_REQUEST, "Bad Request: Mcp-Session-Id header is required");
    ts.stop().await;
}

#[tokio::test]
async fn request_validation() {
    let ts = TestServer::start(config()).await;
    let client = ts.session(LATEST).await;
    let list = || client.post("tools/list", json!({}));

    list()
        .header("content-type", "text/plain")
        .send()
        .await
        .expect_http_error(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json");
    // Parameters of the media type are ignored.
    list().header("content-type", "application/json; charset=utf-8").send().await.expect_status(StatusCode::OK);
    list()
        .header("accept", "text/html")
        .send()
        .await
        .expect_http_error(StatusCode::NOT_ACCEPTABLE, "Not Acceptable: accept application/json or text/event-stream");
    let garbled = client.post_bytes("{not json").send().await;
    let error = garbled.expect_rpc_error(StatusCode::BAD_REQUEST, -32700, &Value::Null);
    assert_eq!(error["message"], "Parse error");

    let put = client.request(Method::PUT, "/mcp").send().await;
    put.expect_http_error(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    assert_eq!(put.header("allow"), Some("GET, POST, DELETE"));
    client.request(Method::POST, "/elsewhere").send().await.expect_http_error(StatusCode::NOT_FOUND, "Not Found");
    client.request(Method::GET, "/elsewhere").send().await.expect_http_error(StatusCode::NOT_FOUND, "Not Found");

    let health = client.request(Method::GET, "/healthz").send().await;
    health.expect_status(StatusCode::OK);
    assert!(health.content_type().starts_with("application/json"));
    assert_eq!(health.json, Some(json!({"status": "ok"})));
    assert_eq!(health.header("server"), Some("duet"));
    ts.stop().await;
}

/// A request head over `max_header_bytes` (64 KiB by default) is refused with 431 by the
/// HTTP layer, before any routing.
#[tokio::test]
async fn oversized_headers() {
    let ts = TestServer::start(config()).await;
    let head = |kib: usize| {
        let big = "x".repeat(kib * 1024);
        format!("GET /healthz HTTP/1.1\r\nHost: {}\r\nX-Big: {big}\r\n\r\n", ts.host()).into_bytes()
    };
    let huge = raw_exchange(ts.addr, head(1024)).await;
    assert_eq!(huge.status(), 431, "a 1 MiB head: {:?}", huge.status_line);
    let over = raw_exchange(ts.addr, head(70)).await;
    assert_eq!(over.status(), 431, "a 70 KiB head (limit 64 KiB): {:?}", over.status_line);
    // A head under the limit is served.
    let under = raw_exchange(ts.addr, head(60)).await;
    assert_eq!(under.status(), 200, "a 60 KiB head: {:?}", under.status_line);
    ts.stop().await;
}

#[tokio::test]
async fn body_limit() {
    let ts = TestServer::start(HttpConfig { max_body_bytes: 2048, ..config() }).await;
    let client = ts.session(LATEST).await;
    let padded = |size: usize| {
        let mut body = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {"pad": ""}});
        let pad = size - body.to_string().len();
        body["params"]["pad"] = json!("x".repeat(pad));
        assert_eq!(body.to_string().len(), size);
        body
    };
    client.post_json(padded(5000)).send().await.expect_http_error(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large");
    // Under the limit the same request is served.
    client.post_json(padded(2000)).send().await.expect_status(StatusCode::OK);
    ts.stop().await;
}

#[tokio::test]
async fn dns_rebinding_guard() {
    let ts = TestServer::start(config()).await;
    let client = ts.client(LATEST);
    let initialize =
        json!({"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});

    let evil = client.post("initialize", initialize.clone()).header("origin", "https://evil.example").send().await;
    evil.expect_http_error(StatusCode::FORBIDDEN, "Forbidden: invalid Origin");
    assert_eq!(evil.header("mcp-session-id"), None);
    // The guard comes before the health endpoint too.
    let health = client.request(Method::GET, "/healthz").header("origin", "https://evil.example").send().await;
    health.expect_http_error(StatusCode::FORBIDDEN, "Forbidden: invalid Origin");

    let body = initialize.to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: evil.example:80\r\nContent-Type: application/json\r\n\
         Accept: {ACCEPT_BOTH}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let rebound = raw_exchange(ts.addr, request.into_bytes()).await;
    rebound.expect_http_error(421, "Invalid Host header");
    assert_eq!(rebound.header("connection"), Some("close"));
    assert_eq!(ts.session_count(), 0);

    let local = client.post("initialize", initialize).header("origin", "http://localhost:3000").send().await;
    local.expect_status(StatusCode::OK);
    assert!(local.header("mcp-session-id").is_some_and(is_session_id));
    // Not a CORS origin: no CORS headers.
    assert_eq!(local.header("access-control-allow-origin"), None);
    ts.stop().await;
}

/// Host and Origin are read strictly over the wire: malformed or repeated, they are refused
/// with the guard's status, the connection closes, and the server goes on serving.
#[tokio::test]
async fn host_and_origin_are_read_strictly() {
    let ts = TestServer::start(config()).await;
    let port = ts.addr.port();
    let refused = |headers: String, status: u16, message: &'static str| {
        let request = format!("GET /healthz HTTP/1.1\r\n{headers}\r\n");
        (request.into_bytes(), status, message)
    };
    let cases = [
        refused(format!("Host: 127.0.0.1:{port}@evil.example\r\n"), 400, "Bad Request: malformed Host header"),
        refused(format!("Host: localhost:{port}.evil.example\r\n"), 400, "Bad Request: malformed Host header"),
        refused(
            format!("Host: localhost:{port}\r\nHost: evil.example\r\n"),
            400,
            "Bad Request: more than one Host header",
        ),
        refused(
            format!("Host: localhost:{port}\r\nOrigin: http://localhost:1@evil.example\r\n"),
            403,
            "Forbidden: malformed Origin",
        ),
        refused(
            format!("Host: localhost:{port}\r\nOrigin: http://localhost:1\r\nOrigin: https://evil.example\r\n"),
            403,
            "Forbidden: more than one Origin header",
        ),
    ];
    for (request, status, message) in cases {
        let answer = raw_exchange(ts.addr, request.clone()).await;
        answer.expect_http_error(status, message);
        assert_eq!(answer.header("connection"), Some("close"), "{}", String::from_utf8_lossy(&request));
    }
    // An Origin that is not ASCII is not taken as absent.
    let mut not_ascii = format!("GET /healthz HTTP/1.1\r\nHost: localhost:{port}\r\nOrigin: http://l").into_bytes();
    not_ascii.extend_from_slice(b"\xf6calhost\r\n\r\n");
    raw_exchange(ts.addr, not_ascii).await.expect_http_error(403, "Forbidden: malformed Origin");
    // Well-formed, the same request is served.
    let fine = format!("GET /healthz HTTP/1.1\r\nHost: localhost:{port}\r\nOrigin: http://localhost:1\r\n\r\n");
    assert_eq!(raw_exchange(ts.addr, fine.into_bytes()).await.status(), 200);
    ts.stop().await;
}

#[tokio::test]
async fn cors() {
    let ts = TestServer::start(HttpConfig { cors_origins: vec!["http://app.example".into()], ..config() }).await;
    let app = ts.client(LATEST).with_header("origin", "http://app.example");

    let preflight = app
        .request(Method::OPTIONS, "/mcp")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type, mcp-session-id")
        .send()
        .await;
    preflight.expect_status(StatusCode::NO_CONTENT);
    assert_eq!(preflight.header("access-control-allow-origin"), Some("http://app.example"));
    let allowed = preflight.header("access-control-allow-headers").unwrap_or_default().to_ascii_lowercase();
    for name in ["mcp-session-id", "mcp-protocol-version", "content-type", "authorization", "mcp-method", "mcp-name"] {
        assert!(allowed.split(',').any(|h| h.trim() == name), "{name} missing from {allowed}");
    }
    let methods = preflight.header("access-control-allow-methods").unwrap_or_default();
    assert!(methods.contains("POST") && methods.contains("DELETE"), "{methods}");
    assert_eq!(preflight.header("access-control-max-age"), Some("600"));

    let mut session = app.clone();
    let init = session.initialize().await;
    assert_eq!(init.header("access-control-allow-origin"), Some("http://app.example"));
    let exposed = init.header("access-control-expose-headers").unwrap_or_default().to_ascii_lowercase();
    assert!(exposed.split(',').any(|h| h.trim() == "mcp-session-id"), "{exposed}");

    // A preflight from an allowed origin that is not a CORS origin is not answered.
    let local = ts.client(LATEST).with_header("origin", "http://localhost:3000");
    local
        .request(Method::OPTIONS, "/mcp")
        .send()
        .await
        .expect_http_error(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    ts.stop().await;

    let plain = TestServer::start(config()).await;
    for origin in [None, Some("http://localhost:3000")] {
        let mut client = plain.client(LATEST);
        if let Some(origin) = origin {
            client = client.with_header("origin", origin);
        }
        let options = client.request(Method::OPTIONS, "/mcp").send().await;
        options.expect_http_error(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        assert_eq!(options.header("allow"), Some("GET, POST, DELETE"));
        assert_eq!(options.header("access-control-allow-origin"), None);
    }
    plain.stop().await;
}

#[tokio::test]
async fn stateless_json_mode() {
    let ts = TestServer::start(HttpConfig { stateless: true, json_response: true, ..config() }).await;
    let client = ts.client("2025-06-18").with_header("mcp-protocol-version", "2025-06-18");

    let slow = json!({"name": "slow", "arguments": {"steps": 2}, "_meta": {"progressToken": 7}});
    let call = client.post("tools/call", slow).send().await;
    call.expect_status(StatusCode::OK);
    assert!(call.content_type().starts_with("application/json"), "json_response never streams");
    assert_eq!(call.messages.len(), 1, "{}", call.body);
    assert_eq!(call.result()["structuredContent"], json!({"done": 2}));
    assert_eq!(call.header("mcp-session-id"), None);

    let fresh = ts.client("2025-06-18");
    let params =
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    let init = fresh.post("initialize", params).send().await;
    init.expect_status(StatusCode::OK);
    assert_eq!(init.result()["protocolVersion"], "2025-06-18");
    assert_eq!(init.header("mcp-session-id"), None, "no sessions in stateless mode");
    assert_eq!(ts.session_count(), 0);

    for method in [Method::GET, Method::DELETE] {
        let answer = client.request(method.clone(), "/mcp").header("accept", "text/event-stream").send().await;
        answer.expect_http_error(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
        assert_eq!(answer.header("allow"), Some("POST"), "{method}");
    }
    ts.stop().await;
}
