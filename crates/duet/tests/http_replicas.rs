//! Replicas in one process over real sockets: two HTTP servers on one in-memory backplane
//! serve one handshake-era session, as replicas on Redis do (tests/interop/test_replicas.py
//! runs the real thing): the session made on one is served by the other, its GET stream on
//! the other gets the changes raised on the first, and DELETE on the first ends it there.

pub mod http_support;

use duet::backplane::Backplane;
use http_support::*;
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn a_session_made_on_one_replica_is_served_by_another() {
    let backplane = Backplane::memory();
    let a = TestServer::start_on(config(), backplane.clone()).await;
    let b = TestServer::start_on(config(), backplane).await;
    let on_a = a.session(LATEST).await;
    let id = on_a.session_id.clone().expect("a session");
    let on_b = b.client(LATEST).with_session(&id);
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
