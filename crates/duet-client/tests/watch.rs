//! Watching changes, one API in both eras: against duet's test registry, whose `touch` tool
//! marks a resource updated and the tool list changed, over HTTP in process (2026's
//! `subscriptions/listen`; the handshake era's GET stream and `resources/subscribe`) and over
//! stdio.

mod common;

use common::{duet_bin, options, sees_touch};
use duet::fixtures::testkit;
use duet::protocol::{Server, ServerOptions};
use duet::transport::http::{HttpConfig, HttpServer};
use duet_client::{Change, Client, HttpTransport, Interest, Negotiate, StdioTransport, Transport, Version};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Connects in `version` and sees the changes `touch` makes ([`sees_touch`]).
async fn watch_in(transport: impl Into<Transport>, version: Version) {
    let client = Client::connect_with(transport, Negotiate::Pin(version), options()).await.expect("connects");
    sees_touch(&client).await;
    client.close().await;
}

#[tokio::test]
async fn changes_arrive_over_http_in_both_eras() {
    let server = Server::new(Arc::new(testkit::registry()), ServerOptions::default());
    let server = HttpServer::bind(server, HttpConfig { port: 0, ..HttpConfig::default() }).await.expect("binds");
    for version in [Version::V2026_07_28, Version::V2025_11_25] {
        watch_in(HttpTransport::new(&server.url()).expect("a URL"), version).await;
    }
    server.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn changes_arrive_over_stdio_in_both_eras() {
    for version in [Version::V2026_07_28, Version::V2025_11_25] {
        let mut command = tokio::process::Command::new(duet_bin());
        command.args(["serve", "--fixtures", "testkit"]);
        watch_in(StdioTransport::spawn(command).expect("duet spawns"), version).await;
    }
}

#[tokio::test]
async fn a_watch_ends_with_its_listen_and_only_its_interest_arrives() {
    let server = Server::new(Arc::new(testkit::registry()), ServerOptions::default());
    let server = HttpServer::bind(server, HttpConfig { port: 0, ..HttpConfig::default() }).await.expect("binds");
    let transport = HttpTransport::new(&server.url()).expect("a URL");
    let client = Client::connect_with(transport, Negotiate::Auto, options()).await.expect("connects");
    let mut prompts = client.watch(Interest { prompts: true, ..Interest::default() }).await.expect("watching");
    let mut tools = client.watch(Interest { tools: true, ..Interest::default() }).await.expect("watching");
    client.call_tool("touch", json!({})).await.expect("touch");
    let change = tokio::time::timeout(Duration::from_secs(5), tools.next()).await.expect("in time");
    assert_eq!(change, Some(Change::Tools));
    let nothing = tokio::time::timeout(Duration::from_millis(300), prompts.next()).await;
    assert!(nothing.is_err(), "a prompts watcher sees no tool or resource change: {nothing:?}");
    drop(prompts);
    // The server ends its listen streams when it shuts down: the watch ends.
    server.shutdown(Duration::from_secs(1)).await;
    let ended = tokio::time::timeout(Duration::from_secs(5), tools.next()).await.expect("ends in time");
    assert_eq!(ended, None);
    drop(tools);
    client.close().await;
}
