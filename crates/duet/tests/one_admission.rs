//! One admission path for every transport: a rule the engine applies before it runs a
//! message is the same code, with the same answer, over stdio and over Streamable HTTP. The
//! rule here is the era rule for batches: 2026-07-28 has none, so a batch that holds a 2026
//! message is refused whole, on a fresh connection and on a handshake-era session whose
//! version allows batches alike.

#[path = "http_support/mod.rs"]
pub mod http_support;
mod stdio_support;

use duet::fixtures::testkit;
use duet::protocol::{Server, ServerOptions};
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
