//! Shared support of the HTTP integration tests: a real `HttpServer` on 127.0.0.1 port 0
//! over the test registry ([`TestServer`]), a `reqwest` client that speaks one protocol
//! version ([`Client`]), SSE parsing ([`EventStream`]), a legacy HTTP+SSE session
//! ([`LegacySession`]), and raw sockets for the requests that have to be malformed
//! ([`raw_exchange`]). This file holds the constants and the small helpers every part
//! shares.
//!
//! Every JSON-RPC message a test reads through this module (a JSON answer, an SSE event of
//! a request stream, a GET stream, a legacy stream or a listen stream) is checked against
//! the MCP schema of the client's version before the test sees it (see [`Checker`]). No
//! test can forget to.
//!
//! Each test binary declares it `pub mod http_support;` rather than allowing dead code: a
//! binary uses only part of what is public here, and being reachable from the binary's root
//! keeps the rest from counting as dead, while a private helper nothing calls is still
//! reported.

mod checker;
mod client;
mod exchange;
mod legacy;
mod raw;
mod server;
mod sse;

use checker::Checker;
pub use client::{Client, Req, mcp_name};
pub use exchange::Exchange;
pub use legacy::LegacySession;
pub use raw::{RawResponse, raw_answer, raw_exchange, read_response, read_until_closed};
pub use server::TestServer;
pub use sse::{EventStream, SseEvent};

use duet::transport::http::HttpConfig;
pub use duet::wire::key::{
    CLIENT_CAPABILITIES as CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION as PROTOCOL_VERSION_KEY, SUBSCRIPTION_ID,
};
use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};
use std::future::Future;
use std::time::Duration;

/// The longest one step may take before the test fails instead of hanging.
pub const WAIT: Duration = Duration::from_secs(5);
/// The stateless revision.
pub const MODERN: &str = "2026-07-28";
/// The newest handshake-era revision.
pub const LATEST: &str = "2025-11-25";
/// An `Accept` for a POST: JSON or an event stream.
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// Runs `future`, failing the test when it takes longer than [`WAIT`].
pub async fn bounded<F: Future>(what: &str, future: F) -> F::Output {
    within(WAIT, what, future).await
}

/// Runs `future`, failing the test when it takes longer than `limit`.
pub async fn within<F: Future>(limit: Duration, what: &str, future: F) -> F::Output {
    tokio::time::timeout(limit, future).await.unwrap_or_else(|_| panic!("{what} took longer than {limit:?}"))
}

/// Polls `done` every 20 ms until it holds, failing the test after [`WAIT`].
pub async fn eventually<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    bounded(what, async {
        while !done().await {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// The default configuration on a free loopback port.
pub fn config() -> HttpConfig {
    HttpConfig { port: 0, ..HttpConfig::default() }
}

/// `params` with the 2026 `_meta` envelope (keys already present are kept).
pub fn enveloped(params: Value) -> Value {
    let mut params = match params {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => panic!("params must be an object, not {other}"),
    };
    let meta = params.entry("_meta").or_insert_with(|| json!({}));
    let meta = meta.as_object_mut().expect("_meta is an object");
    meta.entry(PROTOCOL_VERSION_KEY).or_insert_with(|| json!(MODERN));
    meta.entry(CLIENT_CAPABILITIES_KEY).or_insert_with(|| json!({}));
    Value::Object(params)
}

/// A session id as duet mints them: 32 lowercase hex digits.
pub fn is_session_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn header_of<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}
