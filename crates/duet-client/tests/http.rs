//! The client against duet's own Streamable HTTP server in this process: 2026-07-28
//! negotiated, handshake revisions pinned (a session, deleted on close), an SSE answer.

mod common;

use common::{PAGE_SIZE, converse, options};
use duet::fixtures::testkit;
use duet::layer::{
    Content, HandlerError, PromptMessage, PromptResult, PromptSpec, Registry, ResourceSpec, ServerInfo, ToolResult,
    ToolSpec,
};
use duet::protocol::{Server, ServerOptions};
use duet::transport::http::{HttpConfig, HttpServer};
use duet_client::types::ResourceBody;
use duet_client::{Client, HttpTransport, Negotiate, Transport, Version};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// duet's Streamable HTTP server on 127.0.0.1, any port, serving `registry`, paged small.
async fn serve(registry: Registry) -> HttpServer {
    let options = ServerOptions { page_size: PAGE_SIZE, ..ServerOptions::default() };
    let server = Server::new(Arc::new(registry), options);
    HttpServer::bind(server, HttpConfig { port: 0, ..HttpConfig::default() }).await.expect("the server binds")
}

/// [`serve`] of the test registry.
async fn http_server() -> HttpServer {
    serve(testkit::registry()).await
}

async fn connect(url: &str, negotiate: Negotiate) -> Client {
    Client::connect_with(HttpTransport::new(url).expect("a URL"), negotiate, options()).await.expect("connects")
}

#[tokio::test]
async fn auto_speaks_2026() {
    let server = http_server().await;
    let client = connect(&server.url(), Negotiate::Auto).await;
    converse(&client, Version::V2026_07_28).await;
    client.close().await;
    server.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn pinned_handshake_revisions_keep_a_session() {
    let server = http_server().await;
    for version in [Version::V2025_11_25, Version::V2025_03_26] {
        let client = connect(&server.url(), Negotiate::Pin(version)).await;
        converse(&client, version).await;
        client.close().await;
    }
    server.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn closing_deletes_the_session() {
    let server = http_server().await;
    let client = connect(&server.url(), Negotiate::Pin(Version::V2025_11_25)).await;
    let Transport::Http(http) = client.transport() else { panic!("an HTTP transport") };
    let session = http.session_id().expect("initialize set a session");
    client.ping().await.expect("ping");
    client.close().await;
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    let answer = reqwest::Client::new()
        .post(server.url())
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", &session)
        .json(&ping)
        .send()
        .await
        .expect("an answer");
    assert_eq!(answer.status(), 404, "the deleted session is gone");
    server.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn names_plain_ascii_cannot_carry_travel_in_base64() {
    let mut registry = Registry::new(ServerInfo::new("names", "1"));
    registry
        .prompt(PromptSpec::new("grüße", |_, _| async {
            Ok::<_, HandlerError>(PromptResult::new(vec![PromptMessage::user(Content::text("hallo"))]))
        }))
        .and_then(|r| r.resource(ResourceSpec::text("test://café", "café", "text/plain", "crème")))
        .expect("a valid registry");
    let server = serve(registry).await;
    let client = connect(&server.url(), Negotiate::Auto).await;
    assert_eq!(client.terms().version, Version::V2026_07_28);
    let prompt = client.get_prompt("grüße", Default::default()).await.expect("Mcp-Name in base64 matches the name");
    assert_eq!(prompt.messages.len(), 1);
    let read = client.read_resource("test://café").await.expect("Mcp-Name in base64 matches the URI");
    assert_eq!(read[0].body, ResourceBody::Text("crème".into()));
    client.close().await;
    server.shutdown(Duration::from_secs(1)).await;
}

/// Notifies when dropped: the end of a handler's call, however it ends.
struct Ends(Arc<Notify>);

impl Drop for Ends {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

#[tokio::test]
async fn a_dropped_request_is_cancelled_on_the_server() {
    for negotiate in [Negotiate::Auto, Negotiate::Pin(Version::V2025_11_25), Negotiate::Pin(Version::V2025_03_26)] {
        let cancelled = Arc::new(Notify::new());
        let seen = Arc::clone(&cancelled);
        let mut registry = Registry::new(ServerInfo::new("waiting", "1"));
        registry
            .tool(ToolSpec::new("wait", move |_, cx| {
                let seen = Arc::clone(&seen);
                async move {
                    // Told when the call ends: cancelled, or its future dropped.
                    let _ends = Ends(seen);
                    cx.cancelled().await;
                    Ok::<_, HandlerError>(ToolResult::text("cancelled"))
                }
            }))
            .expect("a valid tool");
        let server = serve(registry).await;
        let client = connect(&server.url(), negotiate).await;
        let gave_up = tokio::time::timeout(Duration::from_millis(200), client.call_tool("wait", json!({}))).await;
        assert!(gave_up.is_err(), "wait waits until cancelled");
        let told = tokio::time::timeout(Duration::from_secs(5), cancelled.notified()).await;
        assert!(told.is_ok(), "{negotiate:?}: the server cancelled the request the client dropped");
        client.close().await;
        server.shutdown(Duration::from_secs(1)).await;
    }
}
