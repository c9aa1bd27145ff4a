//! The client over the legacy HTTP+SSE transport (2024-11-05) against duet's server in this
//! process, which serves it beside Streamable HTTP: the whole scenario and a watch of
//! changes, on the endpoint the stream named, and the server's session ended by closing.

mod common;

use common::{PAGE_SIZE, converse, options, sees_touch};
use duet::fixtures::testkit;
use duet::protocol::{Server, ServerOptions};
use duet::transport::http::{HttpConfig, HttpServer};
use duet_client::{Client, LegacySseTransport, Negotiate, Transport, Version};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// duet's HTTP server on 127.0.0.1, any port, serving the test registry (paged small) over
/// both transports; and the legacy stream's URL.
async fn serve() -> (HttpServer, String) {
    let options = ServerOptions { page_size: PAGE_SIZE, ..ServerOptions::default() };
    let server = Server::new(Arc::new(testkit::registry()), options);
    let config = HttpConfig { port: 0, enable_sse: true, ..HttpConfig::default() };
    let server = HttpServer::bind(server, config).await.expect("the server binds");
    let sse = format!("http://{}/sse", server.local_addr());
    (server, sse)
}

#[tokio::test]
async fn the_2024_11_05_revision_over_the_legacy_transport() {
    let (server, sse) = serve().await;
    let transport = LegacySseTransport::connect(&sse).await.expect("the stream names its endpoint");
    let endpoint = transport.endpoint().to_owned();
    assert!(endpoint.contains("/messages/?session_id="), "{endpoint}");
    let client =
        Client::connect_with(transport, Negotiate::Pin(Version::V2024_11_05), options()).await.expect("connects");
    assert!(matches!(client.transport(), Transport::LegacySse(_)));
    converse(&client, Version::V2024_11_05).await;
    sees_touch(&client).await;
    client.close().await;
    // Closing ended the stream, and the server's session with it.
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let gone = tokio::time::timeout(Duration::from_secs(5), async {
        while reqwest::Client::new().post(&endpoint).json(&ping).send().await.expect("an answer").status() != 404 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "the session ended with the stream");
    server.shutdown(Duration::from_secs(1)).await;
}
