//! The client's roots over Streamable HTTP, on real sockets: a session asks `roots/list`
//! on its GET stream once one is open (on any replica), and otherwise on the stream of the
//! request that needs the roots; a change the client announces is asked about again; a
//! copy of the session on another replica asks for itself, and learns of a change
//! announced elsewhere. The in-memory engine tests (`engine/roots.rs`) cover the rules in detail.

pub mod http_support;

use duet::backplane::Backplane;
use duet::protocol::ServerOptions;
use http_support::*;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A server that asks clients for their roots, on `backplane`.
async fn server_on(backplane: Backplane) -> TestServer {
    TestServer::start_with(config(), ServerOptions { client_roots: true, backplane, ..ServerOptions::default() }).await
}

/// A session of a client that declares roots.
async fn session(ts: &TestServer) -> Client {
    let mut client = ts.client(LATEST);
    client.initialize_with(json!({"roots": {"listChanged": true}})).await;
    client
}

/// Reads messages from `stream` up to the `roots/list` request and answers it with `uris`.
async fn answer(client: &Client, stream: &mut EventStream, uris: &[&str]) {
    let asked = stream.next_message().await;
    assert_eq!(asked["method"], "roots/list", "{asked}");
    let roots: Vec<Value> = uris.iter().map(|u| json!({"uri": u})).collect();
    let response = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": roots}});
    client.post_json(response).send().await.expect_status(StatusCode::ACCEPTED);
}

/// The roots the `client_roots` tool sees.
async fn seen(client: &Client) -> Value {
    client.call("tools/call", json!({"name": "client_roots", "arguments": {}})).await["structuredContent"]["roots"]
        .clone()
}

#[tokio::test]
async fn roots_are_asked_on_the_get_stream_and_again_when_they_change() {
    let ts = server_on(Backplane::memory()).await;
    let client = session(&ts).await;
    let mut get = client.get().stream().await;
    answer(&client, &mut get, &["file:///work/a"]).await;
    assert_eq!(seen(&client).await, json!(["file:///work/a"]));
    client.notify("notifications/roots/list_changed", json!({})).send().await.expect_status(StatusCode::ACCEPTED);
    answer(&client, &mut get, &["file:///work/b", "file:///work/c"]).await;
    assert_eq!(seen(&client).await, json!(["file:///work/b", "file:///work/c"]));
    ts.stop().await;
}

#[tokio::test]
async fn without_a_get_stream_the_request_that_needs_the_roots_asks() {
    let ts = server_on(Backplane::memory()).await;
    let client = session(&ts).await;
    let mut call = client.post("tools/call", json!({"name": "client_roots", "arguments": {}})).stream().await;
    answer(&client, &mut call, &["file:///work/a"]).await;
    let result = call.next_message().await;
    assert_eq!(result["result"]["structuredContent"]["roots"], json!(["file:///work/a"]), "{result}");
    call.expect_end().await;
    assert_eq!(seen(&client).await, json!(["file:///work/a"]), "asked once");
    ts.stop().await;
}

#[tokio::test]
async fn a_copy_on_another_replica_asks_for_itself_and_hears_of_changes() {
    let backplane = Backplane::memory();
    let (a, b) = (server_on(backplane.clone()).await, server_on(backplane).await);
    let on_a = session(&a).await;
    let id = on_a.session_id.clone().expect("a session");
    let mut on_b = b.client(LATEST).with_session(&id);
    on_b.version_header = true;
    // b's copy has not asked: the call asks on its own stream; the answer lands on a and
    // is routed to b.
    let mut call = on_b.post("tools/call", json!({"name": "client_roots", "arguments": {}})).stream().await;
    answer(&on_a, &mut call, &["file:///work/a"]).await;
    assert_eq!(call.next_message().await["result"]["structuredContent"]["roots"], json!(["file:///work/a"]));

    // With the GET stream open (on a), what either replica asks reaches the client there.
    // a's session asks once the stream opens; a change announced on b makes both ask again,
    // each for itself (the roots are not in the session's record).
    let mut get = on_a.get().stream().await;
    answer(&on_a, &mut get, &["file:///work/a"]).await;
    on_b.notify("notifications/roots/list_changed", json!({})).send().await.expect_status(StatusCode::ACCEPTED);
    let mut askers = Vec::new();
    for _ in 0..2 {
        let asked = get.next_message().await;
        assert_eq!(asked["method"], "roots/list", "{asked}");
        // Ids are duet-{replica}-{n}: one ask from each replica.
        askers.push(asked["id"].as_str().unwrap().rsplit_once('-').unwrap().0.to_string());
        let response = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": "file:///work/z"}]}});
        on_a.post_json(response).send().await.expect_status(StatusCode::ACCEPTED);
    }
    askers.dedup();
    assert_eq!(askers.len(), 2, "both replicas asked: {askers:?}");
    assert_eq!(seen(&on_a).await, json!(["file:///work/z"]));
    assert_eq!(seen(&on_b).await, json!(["file:///work/z"]));
    a.stop().await;
    b.stop().await;
}
