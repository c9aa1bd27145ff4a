//! One admission path for every transport: a rule the engine applies before it runs a
//! message is the same code, with the same answer, over stdio and over Streamable HTTP. The
//! rule here is the era rule for batches: 2026-07-28 has none, so a batch that holds a 2026
//! message is refused whole, on a fresh connection and on a handshake-era session whose
//! version allows batches alike. The gate every message passes (here a rate limit) and the
//! scopes are the engine's too.

#[path = "http_support/mod.rs"]
pub mod http_support;
mod stdio_support;

use duet::auth::ScopeMap;
use duet::fixtures::testkit;
use duet::protocol::{RATE_LIMITED, RateLimits, Server, ServerOptions};
use duet::wire::key;
use http_support::*;
use serde_json::{Value, json};
use std::sync::Arc;

/// A batch of a handshake-era `ping` and a 2026 `tools/list`.
fn mixed_batch() -> Value {
    let envelope = json!({key::PROTOCOL_VERSION: "2026-07-28", key::CLIENT_CAPABILITIES: {}});
    json!([
        {"jsonrpc": "2.0", "id": 10, "method": "ping"},
        {"jsonrpc": "2.0", "id": 11, "method": "tools/list", "params": {"_meta": envelope}},
    ])
}

/// What every way in must answer: one error for the whole batch, naming no request.
fn refusal() -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32600, "message": "JSON-RPC batches are not supported by protocol version 2026-07-28"}
    })
}

fn server() -> Server {
    Server::new(Arc::new(testkit::registry()), ServerOptions::default())
}

#[tokio::test]
async fn a_batch_holding_a_2026_message_is_refused_alike_over_stdio_and_http() {
    // stdio, before initialize.
    let fresh = stdio_support::serve_lines(server(), &[mixed_batch()]).await;
    assert_eq!(fresh, [refusal()], "stdio, fresh");
    // stdio, on a 2025-03-26 session, whose version takes batches.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let on_session = stdio_support::serve_lines(server(), &[initialize, initialized, mixed_batch()]).await;
    assert_eq!(on_session.len(), 2, "{on_session:?}");
    assert_eq!(on_session[1], refusal(), "stdio, on a 2025-03-26 session");

    // Streamable HTTP, without a session and on a 2025-03-26 session.
    let http = TestServer::start(config()).await;
    let without = http.client("2025-03-26").post_json(mixed_batch()).send().await;
    assert_eq!((without.status.as_u16(), without.json.as_ref()), (400, Some(&refusal())), "HTTP, no session");
    let session = http.session("2025-03-26").await;
    let with = session.post_json(mixed_batch()).send().await;
    assert_eq!((with.status.as_u16(), with.json.as_ref()), (400, Some(&refusal())), "HTTP, on a session");
    // Both still serve the batch's era-consistent twin.
    let plain = json!([{"jsonrpc": "2.0", "id": 12, "method": "ping"}]);
    let served = session.post_json(plain).send().await;
    assert_eq!((served.status.as_u16(), served.json.as_ref().map(|j| j[0]["id"].clone())), (200, Some(json!(12))));
    http.stop().await;
}

/// The gate is the engine's too: a principal's rate limit, set once in the engine's options,
/// refuses the request over the limit with the same error over stdio and over HTTP (where it
/// is also a 429), and the requests before it run.
#[tokio::test]
async fn a_rate_limit_refuses_alike_over_stdio_and_http() {
    let limited = || {
        let rate_limits = RateLimits { requests_per_second: Some(1.0), ..RateLimits::default() };
        Server::new(Arc::new(testkit::registry()), ServerOptions { rate_limits, ..ServerOptions::default() })
    };
    let envelope = json!({key::PROTOCOL_VERSION: "2026-07-28", key::CLIENT_CAPABILITIES: {}});
    let list = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": envelope}});
    let over = |id: i64| {
        let message = "Rate limit exceeded: 1 request a second; retry after 1 s";
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": RATE_LIMITED, "message": message, "data": {"retryAfter": 1}}})
    };

    let mut stdio = stdio_support::serve_lines(limited(), &[list(1), list(2)]).await;
    // The refusal is written at once, maybe before the first answer.
    stdio.sort_by_key(|answer| answer["id"].as_i64());
    assert_eq!(stdio.len(), 2, "{stdio:?}");
    assert!(stdio[0]["result"]["tools"].is_array(), "the first runs: {}", stdio[0]);
    assert_eq!(stdio[1], over(2), "stdio");

    let rate_limits = limited().options().rate_limits.clone();
    let http = TestServer::start_with(config(), ServerOptions { rate_limits, ..ServerOptions::default() }).await;
    let first = http.modern().post("tools/list", json!({})).send().await;
    assert_eq!(first.status.as_u16(), 200, "{:?}", first.json);
    let second = http.modern().post("tools/list", json!({})).send().await;
    let error = second.json.as_ref().map(|answer| &answer["error"]);
    assert_eq!((second.status.as_u16(), error), (429, Some(&over(2)["error"])), "HTTP");
    http.stop().await;
}

/// Scopes are the engine's: a scope map in the options hides what the principal's grants do
/// not cover and refuses a call of it on stdio, where no HTTP check runs first.
#[tokio::test]
async fn scopes_in_the_options_guard_stdio_too() {
    let map = ScopeMap::from_toml("[tools]\necho = \"shout\"").expect("a scope map");
    let options = ServerOptions { scopes: Some(Arc::new(map)), ..ServerOptions::default() };
    let server = Server::new(Arc::new(testkit::registry()), options);
    let envelope = json!({key::PROTOCOL_VERSION: "2026-07-28", key::CLIENT_CAPABILITIES: {}});
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": envelope}});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": envelope}});
    let answers = stdio_support::serve_lines(server, &[list, call]).await;
    let listed: Vec<&Value> =
        answers[0]["result"]["tools"].as_array().expect("tools").iter().map(|t| &t["name"]).collect();
    assert!(!listed.is_empty() && !listed.contains(&&json!("echo")), "echo is hidden: {listed:?}");
    assert_eq!(answers[1]["error"]["message"], "Tool echo requires the scopes: shout", "{}", answers[1]);
}
