//! Several layers served as one (`Layers`) through the engine, on both eras: the test
//! registry and a second registry are listed together (the first part's `echo` wins over
//! the second's), each call and read reaches the part that serves it, and the second
//! part's changes reach the session.

use crate::client::{Client, MODERN, names, texts};
use duet::fixtures::testkit;
use duet::layer::{Change, ChangeFeed, Layers, Registry, ResourceSpec, ServerInfo, ToolResult, ToolSpec};
use duet::protocol::{Server, ServerOptions};
use duet::wire::Version;
use serde_json::json;
use std::sync::Arc;

/// The test registry, then a registry with its own `echo`, a `time` tool and a note; the
/// second registry's change feed.
fn layers_server() -> (Server, Arc<ChangeFeed>) {
    let mut second = Registry::new(ServerInfo::new("second", "1"));
    second.tool(ToolSpec::new("echo", |_, _| async { ToolResult::text("the second echo") })).unwrap();
    second.tool(ToolSpec::new("time", |_, _| async { ToolResult::text("noon") })).unwrap();
    second.resource(ResourceSpec::text("second://note", "note", "text/plain", "from the second part")).unwrap();
    let feed = second.change_feed();
    let layers = Layers::new(Arc::new(testkit::registry())).with(Arc::new(second));
    (Server::new(Arc::new(layers), ServerOptions { page_size: 3, ..ServerOptions::default() }), feed)
}

#[tokio::test]
async fn two_registries_are_served_as_one_in_both_eras() {
    for version in [Version::V2025_11_25, MODERN] {
        let (server, feed) = layers_server();
        let client = Client::connect(&server, version);
        if !version.is_modern() {
            let result = client.initialize(version.as_str()).await;
            assert_eq!(result["serverInfo"]["name"], "duet-testkit", "the first part's info");
        }
        let tools = names(&client.list_all("tools/list", "tools").await);
        assert_eq!(tools.iter().filter(|name| *name == "echo").count(), 1, "{tools:?}");
        assert_eq!(tools.last().map(String::as_str), Some("time"), "{tools:?}");

        let echo = client.request("tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})).await;
        assert_eq!(echo["structuredContent"], json!({"text": "hi"}), "the first part's echo: {echo}");
        let time = client.request("tools/call", json!({"name": "time", "arguments": {}})).await;
        assert_eq!(texts(&time), ["noon"]);
        let note = client.request("resources/read", json!({"uri": "second://note"})).await;
        assert_eq!(note["contents"][0]["text"], "from the second part");

        if !version.is_modern() {
            feed.notify(Change::ToolsChanged);
            let changed = client.sent.take_at_least(1).await;
            assert_eq!(changed, [json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})]);
        }
    }
}
