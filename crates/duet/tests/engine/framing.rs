//! JSON-RPC framing as the engine applies it: malformed messages, params that are not an
//! object, stray responses, and batches (allowed on 2024-11-05 and 2025-03-26 only). After
//! every bad message the session keeps answering.

use crate::client::{Client, MODERN, enveloped, testkit_server};
use duet::wire::Version;
use duet::wire::jsonrpc::{RequestId, Response};
use duet::wire::message::Message;
use serde_json::{Value, json};

/// The one response to `message`: its id, code and message.
async fn refused(client: &Client, message: Value) -> (Option<Value>, i64, String) {
    let Response { id, result } = client.answer(message.clone()).await;
    let error = result.expect_err(&format!("{message} must be refused"));
    (id.map(|i| i.to_value()), error.code, error.message)
}

#[tokio::test]
async fn malformed_messages_are_invalid_requests() {
    let (client, _) = Client::handshake(Version::V2025_06_18).await;
    let cases = [
        // (message, id echoed, error message)
        (json!({"id": 1, "method": "ping"}), Some(json!(1)), "Invalid Request"),
        (json!({"jsonrpc": "1.0", "id": "two", "method": "ping"}), Some(json!("two")), "Invalid Request"),
        (json!({"jsonrpc": "2.0", "id": null, "method": "ping"}), None, "Invalid Request: bad id"),
        (json!({"jsonrpc": "2.0", "id": true, "method": "ping"}), None, "Invalid Request: bad id"),
        (json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}), None, "Invalid Request: bad id"),
        (json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}), None, "Invalid Request: bad id"),
        (json!({"jsonrpc": "2.0", "id": 3, "method": 5}), Some(json!(3)), "Invalid Request: method must be a string"),
        (json!({"jsonrpc": "2.0", "id": 4}), Some(json!(4)), "Invalid Request"),
        (json!("just a string"), None, "Invalid Request"),
        (json!(42), None, "Invalid Request"),
    ];
    for (message, id, text) in cases {
        let (got_id, code, got_text) = refused(&client, message.clone()).await;
        assert_eq!((got_id, code, got_text.as_str()), (id, -32600, text), "{message}");
        client.assert_alive().await;
    }
}

#[tokio::test]
async fn params_must_be_an_object() {
    let (client, _) = Client::handshake(Version::V2025_06_18).await;
    for params in [json!([1, 2]), json!("x"), json!(3)] {
        let message = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": params});
        let answer = refused(&client, message).await;
        assert_eq!(answer, (Some(json!(9)), -32602, "params must be an object".into()));
        client.assert_alive().await;
    }
    // `params: null` counts as `{}`.
    let message = json!({"jsonrpc": "2.0", "id": 10, "method": "ping", "params": null});
    let response = client.answer(message).await;
    assert_eq!(response.into_value(), Ok(json!({})));
}

#[tokio::test]
async fn stray_responses_and_bad_notifications_get_no_answer() {
    let (client, _) = Client::handshake(Version::V2025_06_18).await;
    for message in [
        json!({"jsonrpc": "2.0", "id": 7, "result": {}}),
        json!({"jsonrpc": "2.0", "id": 8, "error": {"code": -1, "message": "no"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [1]}),
        json!({"jsonrpc": "2.0", "method": "notifications/whatever"}),
    ] {
        assert_eq!(client.send(message.clone()).await, None, "{message}");
        client.assert_alive().await;
    }
    assert!(client.sent.is_empty());
}

#[tokio::test]
async fn batches_run_on_2025_03_26() {
    let (client, _) = Client::handshake(Version::V2025_03_26).await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]);
    let Some(Message::Batch(responses)) = client.send(batch).await else { panic!("a batch gets a batch answer") };
    let ids: Vec<Option<RequestId>> = responses.iter().map(|r| r.id.clone()).collect();
    assert_eq!(ids, [Some(RequestId::Int(1)), Some(RequestId::Int(2))]);
    assert_eq!(responses[0].clone().into_value(), Ok(json!({})));
    let tools = responses[1].clone().into_value().unwrap();
    assert_eq!(tools["tools"].as_array().unwrap().len(), 3);

    // A batch of notifications only is not answered at all.
    let quiet = json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]);
    assert_eq!(client.send(quiet).await, None);
    // A bad item is answered in its place.
    let mixed = json!([{"jsonrpc": "2.0", "id": 3, "method": "ping"}, "junk"]);
    let Some(Message::Batch(responses)) = client.send(mixed).await else { panic!("a batch gets a batch answer") };
    assert_eq!(responses.len(), 2);
    assert_eq!(responses[1].error_code(), Some(-32600));
    client.assert_alive().await;
}

async fn refused_batch(client: &Client, batch: Value, message: &str) {
    let answer = client.send(batch.clone()).await;
    let Some(Message::One(response)) = answer else {
        panic!("{batch} should be refused with one error, got {answer:?}")
    };
    assert_eq!(response.id, None, "{batch}");
    let error = response.result.expect_err("a refused batch");
    assert_eq!((error.code, error.message.as_str()), (-32600, message));
    client.assert_alive().await;
}

fn ping_batch() -> Value {
    json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
}

#[tokio::test]
async fn batches_are_refused_from_2025_06_18() {
    for version in [Version::V2025_06_18, Version::V2025_11_25] {
        let (client, _) = Client::handshake(version).await;
        let message = format!("JSON-RPC batches are not supported by protocol version {version}");
        refused_batch(&client, ping_batch(), &message).await;
    }
}

#[tokio::test]
async fn empty_batches_and_batches_before_initialize_are_refused() {
    let (client, _) = Client::handshake(Version::V2025_03_26).await;
    refused_batch(&client, json!([]), "Invalid Request: empty batch").await;

    let (server, _) = testkit_server();
    let fresh = Client::connect(&server, Version::V2025_03_26);
    refused_batch(&fresh, ping_batch(), "JSON-RPC batches are not supported before initialization").await;
    fresh.initialize("2025-03-26").await;
    fresh.assert_alive().await;
}

#[tokio::test]
async fn batches_are_refused_on_2026_07_28() {
    let (client, _) = Client::modern();
    client.assert_alive().await;
    let batch = json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": enveloped(json!({}))}]);
    refused_batch(&client, batch, &format!("JSON-RPC batches are not supported by protocol version {MODERN}")).await;
}
