//! duet's HTTP endpoint mounted in an existing axum app, beside the app's own routes.
//! `cargo run -p duet --example axum_app`, then POST MCP requests to
//! http://127.0.0.1:3000/mcp (either era) and GET http://127.0.0.1:3000/hello. `PORT`
//! picks another port (0: a free one).

use axum::Router;
use axum::routing::get;
use duet::prelude::*;
use duet::transport::http::{HttpConfig, McpService};
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::new(ServerInfo::new("greeter", "1.0.0"));
    registry.tool(
        ToolSpec::new("hello", |_, cx| async move { ToolResult::text(format!("Hello, {}!", cx.principal().id)) })
            .description("Says hello to the caller"),
    )?;
    let server = Server::new(Arc::new(registry), ServerOptions::default());
    let port: u16 = std::env::var("PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(3000);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    // The Host/Origin guard checks the app's bind address; the path is where the app mounts it.
    let config = HttpConfig { host: "127.0.0.1".into(), path: "/mcp".into(), ..HttpConfig::default() };
    let mcp = McpService::new(server, config);
    let app = Router::new().route("/hello", get(|| async { "hello from the app" })).route_service("/mcp", mcp);
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
