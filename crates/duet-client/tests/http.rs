//! The client against duet's own Streamable HTTP server in this process: 2026-07-28
//! negotiated, handshake revisions pinned (a session, deleted on close), an SSE answer.

mod common;

use common::{PAGE_SIZE, converse, options};
use duet::fixtures::testkit;
use duet::layer::{Content, HandlerError, PromptMessage, PromptResult, PromptSpec, Registry, ResourceSpec, ServerInfo};
use duet::protocol::{Server, ServerOptions};
use duet::transport::http::{HttpConfig, HttpServer};
use duet_client::types::ResourceBody;
use duet_client::{Client, HttpTransport, Negotiate, Transport, Version};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// duet's Streamable HTTP server on 127.0.0.1, any port, serving the test registry.
async fn http_server() -> HttpServer {
    let options = ServerOptions { page_size: PAGE_SIZE, ..ServerOptions::default() };
    let server = Server::new(Arc::new(testkit::registry()), options);
    HttpServer::bind(server, HttpConfig { port: 0, ..HttpConfig::default() }).await.expect("the server binds")
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
    let server = Server::new(Arc::new(registry), ServerOptions::default());
    let server = HttpServer::bind(server, HttpConfig { port: 0, ..HttpConfig::default() }).await.expect("binds");
    let client = connect(&server.url(), Negotiate::Auto).await;
    assert_eq!(client.terms().version, Version::V2026_07_28);
    let prompt = client.get_prompt("grüße", Default::default()).await.expect("Mcp-Name in base64 matches the name");
    assert_eq!(prompt.messages.len(), 1);
    let read = client.read_resource("test://café").await.expect("Mcp-Name in base64 matches the URI");
    assert_eq!(read[0].body, ResourceBody::Text("crème".into()));
    client.close().await;
    server.shutdown(Duration::from_secs(1)).await;
}
