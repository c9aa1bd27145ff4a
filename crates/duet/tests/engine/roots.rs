//! The client's roots: a handshake-era session of a server that asks for them
//! (`ServerOptions::client_roots`) sends `roots/list` once the client is initialized and
//! again when it says they changed, and a handler reads the latest answer from its
//! context, waiting while an ask is under way. What a client that does not declare roots,
//! fails to answer or answers late gets; a session whose own channel does not reach the
//! client asks through the request; a copy on another replica that is behind asks again.

use crate::client::{Client, MODERN, bounded, testkit_server_with};
use duet::protocol::{Server, ServerOptions};
use duet::wire::Version;
use duet_testing::Recorder;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const V: Version = Version::V2025_11_25;

/// The test server, asking clients for their roots (or not), each within `roots_timeout`.
fn server(client_roots: bool, roots_timeout: Duration) -> Server {
    testkit_server_with(ServerOptions { client_roots, roots_timeout, ..Default::default() }).0
}

/// `initialize` declaring `capabilities`, then (unless `initialized` is false) the
/// notification that ends the handshake.
async fn initialize(client: &Client, capabilities: Value, initialized: bool) {
    let params = json!({"protocolVersion": V.as_str(), "capabilities": capabilities,
                        "clientInfo": {"name": "roots-tests", "version": "1"}});
    client.request("initialize", params).await;
    if initialized {
        client.notify("notifications/initialized", json!({})).await;
    }
}

/// The capabilities of a client with roots.
fn roots() -> Value {
    json!({"roots": {"listChanged": true}})
}

/// What the `client_roots` tool says: the URIs, or "unstated".
async fn seen(client: &Client) -> String {
    let result = client.request("tools/call", json!({"name": "client_roots", "arguments": {}})).await;
    said(&result["structuredContent"])
}

fn said(answer: &Value) -> String {
    match answer["roots"].as_array() {
        None => "unstated".into(),
        Some(uris) => format!("listed: {}", uris.iter().map(|u| u.as_str().unwrap()).collect::<Vec<_>>().join(" ")),
    }
}

/// What the `client_roots` tool said in the response to a call sent through a stream.
fn said_in(response: Option<duet::wire::message::Message<duet::wire::jsonrpc::Response>>) -> String {
    let Some(duet::wire::message::Message::One(response)) = response else { panic!("one response expected") };
    said(&response.into_value().expect("the call succeeds")["structuredContent"])
}

/// Waits for the `roots/list` the session sends on `channel` and answers it with `uris`.
async fn answer(client: &Client, channel: &Recorder, uris: &[&str]) {
    let asked = channel.wait_for("roots/list").await;
    let request = asked.iter().find(|m| m["method"] == "roots/list").expect("roots/list was asked");
    let roots: Vec<Value> = uris.iter().map(|u| json!({"uri": u, "name": "a root"})).collect();
    let response = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": roots}});
    assert_eq!(client.send(response).await, None);
}

/// Waits for the `roots/list` on `channel` and answers it with an error.
async fn refuse(client: &Client, channel: &Recorder) {
    let asked = channel.wait_for("roots/list").await;
    let request = asked.iter().find(|m| m["method"] == "roots/list").expect("roots/list was asked");
    let error = json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "no roots here"}});
    assert_eq!(client.send(error).await, None);
}

#[tokio::test]
async fn roots_are_asked_once_initialized_and_again_when_they_change() {
    let client = Client::connect(&server(true, Duration::from_secs(10)), V);
    initialize(&client, roots(), false).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(client.sent.is_empty(), "nothing is asked before notifications/initialized");
    client.notify("notifications/initialized", json!({})).await;
    // The tool call waits for the answer to the ask under way.
    let (said, ()) = tokio::join!(seen(&client), answer(&client, &client.sent, &["file:///work/a", "file:///work/b"]));
    assert_eq!(said, "listed: file:///work/a file:///work/b");
    assert_eq!(seen(&client).await, said, "asked once");
    assert!(client.sent.is_empty());

    client.notify("notifications/roots/list_changed", json!({})).await;
    answer(&client, &client.sent, &["file:///work/c"]).await;
    assert_eq!(seen(&client).await, "listed: file:///work/c");
    client.notify("notifications/roots/list_changed", json!({})).await;
    answer(&client, &client.sent, &[]).await;
    assert_eq!(seen(&client).await, "listed: ", "an empty list is a list");
}

#[tokio::test]
async fn nothing_is_asked_of_a_client_without_roots_or_by_a_server_that_does_not_ask() {
    for (asks, capabilities) in [(true, json!({})), (true, json!({"roots": null})), (false, roots())] {
        let client = Client::connect(&server(asks, Duration::from_secs(10)), V);
        initialize(&client, capabilities.clone(), true).await;
        client.notify("notifications/roots/list_changed", json!({})).await;
        assert_eq!(seen(&client).await, "unstated", "{capabilities}");
        assert!(client.sent.is_empty(), "asked {capabilities}: {:?}", client.sent.take());
    }
}

#[tokio::test]
async fn a_2026_request_on_a_session_never_asks() {
    let client = Client::connect(&server(true, Duration::from_secs(10)), MODERN);
    let meta = json!({"io.modelcontextprotocol/clientCapabilities": {"roots": {}}});
    let result = client.request("tools/call", json!({"name": "client_roots", "arguments": {}, "_meta": meta})).await;
    assert_eq!(said(&result["structuredContent"]), "unstated");
    assert!(client.sent.is_empty());
}

#[tokio::test]
async fn a_failed_or_late_answer_keeps_what_the_client_stated_before() {
    let client = Client::connect(&server(true, Duration::from_millis(300)), V);
    initialize(&client, roots(), true).await;
    refuse(&client, &client.sent).await;
    assert_eq!(seen(&client).await, "unstated", "a client that never answered stated nothing");

    client.notify("notifications/roots/list_changed", json!({})).await;
    answer(&client, &client.sent, &["file:///work/a"]).await;
    assert_eq!(seen(&client).await, "listed: file:///work/a");
    client.notify("notifications/roots/list_changed", json!({})).await;
    refuse(&client, &client.sent).await;
    assert_eq!(seen(&client).await, "listed: file:///work/a");

    // Unanswered: the call waits for the timeout, not longer, and keeps the last answer.
    client.notify("notifications/roots/list_changed", json!({})).await;
    let started = Instant::now();
    assert_eq!(seen(&client).await, "listed: file:///work/a");
    assert!(started.elapsed() >= Duration::from_millis(250), "{:?}", started.elapsed());
    client.sent.take();
}

#[tokio::test]
async fn an_unreachable_session_asks_through_the_request_that_needs_the_roots() {
    let client = Client::connect(&server(true, Duration::from_secs(10)), V);
    client.session.set_reachable(false);
    initialize(&client, roots(), true).await;
    let stream = Recorder::new(V.as_str());
    let call = client.message("tools/call", json!({"name": "client_roots", "arguments": {}}));
    let (response, ()) =
        tokio::join!(client.send_via(call, Some(stream.sink())), answer(&client, &stream, &["file:///work/a"]));
    assert_eq!(said_in(response), "listed: file:///work/a");
    assert!(client.sent.is_empty(), "nothing went the session's own way");

    // Reachable again: a change is asked about at once, the session's own way.
    client.notify("notifications/roots/list_changed", json!({})).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(client.sent.is_empty());
    client.session.set_reachable(true);
    answer(&client, &client.sent, &["file:///work/b"]).await;
    assert_eq!(seen(&client).await, "listed: file:///work/b");
}

#[tokio::test]
async fn a_copy_behind_on_changes_asks_again() {
    let home = Client::connect(&server(true, Duration::from_secs(10)), V);
    initialize(&home, roots(), true).await;
    answer(&home, &home.sent, &["file:///work/a"]).await;
    home.notify("notifications/roots/list_changed", json!({})).await;
    answer(&home, &home.sent, &["file:///work/b"]).await;
    let snapshot = home.session.snapshot().expect("an initialized session has a snapshot");
    assert_eq!(snapshot.roots_changes, 1);

    // Another replica's copy knows the count, not the roots: it asks the client itself.
    let copy = Client::connect(&server(true, Duration::from_secs(10)), V);
    copy.session.set_reachable(false);
    copy.session.restore(&snapshot).expect("the snapshot restores");
    let stream = Recorder::new(V.as_str());
    let call = copy.message("tools/call", json!({"name": "client_roots", "arguments": {}}));
    let (response, ()) =
        tokio::join!(copy.send_via(call, Some(stream.sink())), answer(&copy, &stream, &["file:///work/b"]));
    assert_eq!(said_in(response), "listed: file:///work/b");

    // A change said on the copy reaches the home session through the record.
    copy.notify("notifications/roots/list_changed", json!({})).await;
    let record = copy.session.snapshot().expect("the copy's snapshot");
    assert_eq!(record.roots_changes, 2);
    home.session.restore(&record).expect("the record restores");
    answer(&home, &home.sent, &["file:///work/c"]).await;
    assert_eq!(bounded("the home session's tool call", seen(&home)).await, "listed: file:///work/c");
}
