//! A request of the server's, made while it answers one of the client's, is answered over
//! HTTP: duet's server in this process asks the client (a `ping`) on the call's SSE stream
//! and finishes the call with what the client answered.

use duet::layer::{HandlerError, InputRequired, Registry, Reply, ServerInfo, ToolResult, ToolSpec};
use duet::protocol::{Server, ServerOptions};
use duet::transport::http::{HttpConfig, HttpServer};
use duet_client::types::ContentKind;
use duet_client::{Client, HttpTransport, Negotiate, Version};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// A registry whose tool `ask` pings the client first and answers what the ping got.
fn asking() -> Registry {
    let mut registry = Registry::new(ServerInfo::new("asking", "1"));
    registry
        .tool(ToolSpec::new("ask", |_, cx| async move {
            Ok::<_, HandlerError>(match cx.input("pong") {
                None => Reply::InputRequired(InputRequired::new().request("pong", "ping", json!({}))),
                Some(pong) => Reply::Complete(ToolResult::text(format!("pong {pong}"))),
            })
        }))
        .expect("a valid tool");
    registry
}

#[tokio::test]
async fn the_servers_request_on_a_stream_is_answered() {
    let server = Server::new(Arc::new(asking()), ServerOptions::default());
    let server = HttpServer::bind(server, HttpConfig { port: 0, ..HttpConfig::default() }).await.expect("binds");
    for version in [Version::V2025_11_25, Version::V2025_03_26] {
        let transport = HttpTransport::new(&server.url()).expect("a URL");
        let client = Client::connect(transport, Negotiate::Pin(version)).await.expect("connects");
        let asked = tokio::time::timeout(Duration::from_secs(10), client.call_tool("ask", json!({}))).await;
        let result = asked.expect("the client answered the server's ping").expect("ask");
        assert!(
            matches!(&result.content[0].kind, ContentKind::Text { text } if text == "pong {}"),
            "{version}: {result:?}"
        );
        client.close().await;
    }
    server.shutdown(Duration::from_secs(1)).await;
}
