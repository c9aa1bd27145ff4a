//! Replicas in one process: servers built on one clone of a backplane share it as replicas
//! behind a load balancer share Redis. A change raised by one replica's layer reaches the
//! listen streams and sessions of every replica, once; an at-most-once effect run on one
//! replica is not run again on another.

use crate::client::{Client, MODERN, SUBSCRIPTION_ID, bounded};
use duet::backplane::Backplane;
use duet::fixtures::testkit;
use duet::layer::{Change, ChangeFeed};
use duet::protocol::{Server, ServerOptions};
use duet::wire::Version;
use serde_json::{Value, json};
use std::sync::Arc;

/// A replica over its own test registry, sharing `backplane`.
fn replica(backplane: &Backplane) -> (Server, Arc<ChangeFeed>) {
    let registry = testkit::registry_on(backplane.keys.clone());
    let feed = registry.change_feed();
    let options = ServerOptions { backplane: backplane.clone(), ..Default::default() };
    (Server::new(Arc::new(registry), options), feed)
}

fn updated(uri: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
}

#[tokio::test]
async fn a_change_of_one_replica_reaches_every_replica_once() {
    let backplane = Backplane::memory();
    let (a, feed_a) = replica(&backplane);
    let (b, feed_b) = replica(&backplane);
    let listener = Arc::new(Client::connect(&a, MODERN));
    let filter = json!({"notifications": {"resourceSubscriptions": ["test://items/"]}});
    let listen = listener.message_with_id(json!("L"), "subscriptions/listen", filter);
    let stream = tokio::spawn({
        let listener = listener.clone();
        async move { listener.send(listen).await }
    });
    assert_eq!(listener.sent.take_at_least(1).await[0]["method"], "notifications/subscriptions/acknowledged");
    let session = Client::connect(&b, Version::V2025_11_25);
    session.initialize("2025-11-25").await;
    session.request("resources/subscribe", json!({"uri": "test://items/"})).await;

    feed_a.notify(Change::ResourceUpdated("test://items/1".into()));
    feed_b.notify(Change::ResourceUpdated("test://items/2".into()));
    // A last change from each replica: anything doubled would have arrived before it.
    feed_a.notify(Change::ResourceUpdated("test://items/3".into()));
    feed_b.notify(Change::ResourceUpdated("test://items/4".into()));
    let tagged = |uri: &str| {
        let mut n = updated(uri);
        n["params"]["_meta"] = json!({SUBSCRIPTION_ID: "L"});
        n
    };
    let uris = ["test://items/1", "test://items/2", "test://items/3", "test://items/4"];
    assert_eq!(listener.sent.take_at_least(4).await, uris.map(tagged));
    assert_eq!(session.sent.take_at_least(4).await, uris.map(updated));
    assert!(listener.sent.is_empty() && session.sent.is_empty());
    a.close_listens();
    bounded("the listen stream's end", stream).await.expect("the listen task");
}

#[tokio::test]
async fn a_refund_paid_on_one_replica_is_not_paid_again_on_another() {
    let backplane = Backplane::memory();
    let (a, _) = replica(&backplane);
    let (b, _) = replica(&backplane);
    let (on_a, on_b) = (Client::connect(&a, MODERN), Client::connect(&b, MODERN));
    assert_eq!(refund(&on_a, "X").await["refund_id"], "R-1");
    assert_eq!(refund(&on_a, "Y").await["refund_id"], "R-2");
    // B's own count is at zero: only the shared key gives it A's refund.
    assert_eq!(refund(&on_b, "Y").await["refund_id"], "R-2");
    assert_eq!(refund(&on_b, "Z").await["refund_id"], "R-1", "B pays what was not paid");
}

/// The refund of 5 USD on `order` (no confirmation asked), as the client gets it.
async fn refund(client: &Client, order: &str) -> Value {
    let params = json!({"name": "refund_order", "arguments": {"order_id": order, "amount_cents": 500}});
    let result = client.request("tools/call", params).await;
    result["structuredContent"].clone()
}
