//! Change notifications on the handshake era: list changes once a session is initialized,
//! resource updates for the URIs it subscribed to, from any thread, and only to sessions.

use crate::client::{Client, Recorder, testkit_server};
use duet::layer::{Change, Principal};
use duet::wire::Version;
use duet::wire::message::Message;
use serde_json::{Value, json};
use std::sync::Arc;

fn notification(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method})
}

fn updated(uri: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
}

#[tokio::test]
async fn subscribed_updates_and_list_changes_reach_the_session() {
    for version in [Version::V2024_11_05, Version::V2025_11_25] {
        let (client, feed) = Client::handshake(version).await;
        let subscribed = client.request("resources/subscribe", json!({"uri": "test://info"})).await;
        assert_eq!(subscribed, json!({}));
        for change in [
            Change::ResourceUpdated("test://info".into()),
            Change::ResourceUpdated("other://x".into()),
            Change::ToolsChanged,
            Change::PromptsChanged,
            Change::ResourcesChanged,
        ] {
            feed.notify(change);
        }
        // List changes carry no params key at all.
        assert_eq!(
            client.sent.take_at_least(4).await,
            [
                updated("test://info"),
                notification("notifications/tools/list_changed"),
                notification("notifications/prompts/list_changed"),
                notification("notifications/resources/list_changed"),
            ],
            "{version}"
        );

        let unsubscribed = client.request("resources/unsubscribe", json!({"uri": "test://info"})).await;
        assert_eq!(unsubscribed, json!({}));
        feed.notify(Change::ResourceUpdated("test://info".into()));
        feed.notify(Change::ToolsChanged);
        // The list change shows the update, delivered in order before it, was not sent.
        assert_eq!(client.sent.take_at_least(1).await, [notification("notifications/tools/list_changed")], "{version}");
    }
}

#[tokio::test]
async fn changes_raised_on_another_thread_arrive() {
    let (client, _) = Client::handshake(Version::V2025_06_18).await;
    client.request("resources/subscribe", json!({"uri": "test://info"})).await;
    let touched = client.request("tools/call", json!({"name": "touch", "arguments": {}})).await;
    assert_eq!(touched["content"][0]["text"], "touched test://info");
    assert_eq!(
        client.sent.take_at_least(2).await,
        [updated("test://info"), notification("notifications/tools/list_changed")]
    );
}

#[tokio::test]
async fn no_list_changes_before_initialized() {
    let (server, feed) = testkit_server();
    let client = Client::connect(&server, Version::V2025_06_18);
    feed.notify(Change::ToolsChanged);
    client.initialize_only("2025-06-18").await;
    feed.notify(Change::PromptsChanged);
    assert!(client.sent.is_empty(), "{:?}", client.sent.take());

    client.notify("notifications/initialized", json!({})).await;
    feed.notify(Change::ToolsChanged);
    assert_eq!(client.sent.take_at_least(1).await, [notification("notifications/tools/list_changed")]);
}

#[tokio::test]
async fn a_request_answered_without_a_session_gets_no_changes() {
    let (server, feed) = testkit_server();
    // Answered on its own, as a stateless HTTP server answers: its subscription is accepted,
    // and nothing is kept that a change could be delivered to.
    let sink = Recorder::new(Version::V2025_06_18.as_str());
    let subscribe =
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "test://info"}});
    let principal = Arc::new(Principal::local());
    let answer = server.answer(subscribe, Some(Version::V2025_06_18), principal, Some(sink.sink())).await;
    let Some(Message::One(response)) = answer else { panic!("one response, got {answer:?}") };
    assert_eq!(response.into_value(), Ok(json!({})));
    // A session of the same server shows when the changes have been fanned out.
    let witness = Client::connect(&server, Version::V2025_06_18);
    witness.initialize("2025-06-18").await;

    feed.notify(Change::ResourceUpdated("test://info".into()));
    feed.notify(Change::ToolsChanged);
    assert_eq!(witness.sent.take_at_least(1).await, [notification("notifications/tools/list_changed")]);
    assert!(sink.is_empty(), "{:?}", sink.take());
}
