//! Streamable HTTP's streams against duet's server in this process: the session's GET
//! stream carries what the server sends outside any request, and a POST's stream the
//! server ends before its answer is picked up with a GET after its last event.

use duet::fixtures::testkit;
use duet::protocol::{Server, ServerOptions};
use duet::transport::http::{HttpConfig, HttpServer};
use duet_client::types::ContentKind;
use duet_client::{Client, HttpTransport, Negotiate, Version};
use duet_wire::method::Method;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// duet's Streamable HTTP server on 127.0.0.1, any port, serving the test registry as
/// `config` says.
async fn serve(config: HttpConfig) -> HttpServer {
    let server = Server::new(Arc::new(testkit::registry()), ServerOptions::default());
    HttpServer::bind(server, HttpConfig { port: 0, ..config }).await.expect("the server binds")
}

async fn connect(url: &str, version: Version) -> Client {
    let transport = HttpTransport::new(url).expect("a URL");
    Client::connect(transport, Negotiate::Pin(version)).await.expect("connects")
}

#[tokio::test]
async fn the_get_stream_delivers_what_belongs_to_no_request() {
    let server = serve(HttpConfig::default()).await;
    for version in [Version::V2025_11_25, Version::V2025_03_26] {
        let client = connect(&server.url(), version).await;
        let mut notifications = client.notifications().expect("the channel");
        // touch raises a tool list change: the session's news, not the call's.
        client.call_tool("touch", json!({})).await.expect("touch");
        let changed = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(notification) = notifications.recv().await {
                if notification.method == Method::ToolsListChanged {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(changed, Ok(true), "{version}: the list change came on the GET stream");
        client.close().await;
    }
    server.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_stream_ended_before_its_answer_is_resumed() {
    // duet ends a 2025-11-25 POST's stream after 100 ms and asks for a 50 ms retry.
    let config = HttpConfig {
        sse_close_after: Some(Duration::from_millis(100)),
        sse_retry: Duration::from_millis(50),
        ..HttpConfig::default()
    };
    let server = serve(config).await;
    let client = connect(&server.url(), Version::V2025_11_25).await;
    let slept = client.call_tool("sleepy", json!({"seconds": 0.5})).await.expect("the answer, on the resumed stream");
    assert!(matches!(&slept.content[0].kind, ContentKind::Text { text } if text == "slept"), "{slept:?}");
    client.ping().await.expect("the client goes on");
    client.close().await;
    server.shutdown(Duration::from_secs(1)).await;
}
