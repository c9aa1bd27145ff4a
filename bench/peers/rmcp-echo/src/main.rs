//! Peer for duet's benchmark: an `echo(text, times)` tool served by rmcp, written the way
//! rmcp's documentation and tests do it (`#[tool_router]`, `StreamableHttpService` nested in
//! an axum router and served by `axum::serve`, `serve(stdio())`).
//!
//! Usage: `rmcp-echo MODE [--port N] [--tools N]` where MODE is
//! - `http-json`: stateless with JSON replies (`legacy_session_mode = false`,
//!   `json_response = true`);
//! - `http-default`: rmcp's default config (2025-era requests get sessions and SSE replies;
//!   2026-07-28 requests are served statelessly, as SSE);
//! - `stdio`: `serve(rmcp::transport::stdio())`;
//! - `stdio-pipes`: `serve(rmcp::transport::io::stdio_pipes())`, rmcp's non-blocking pipes.
//!
//! `--tools N` adds N numbered tools `tool_000…` (for the tools/list case).
//! HTTP modes print `listening on http://127.0.0.1:PORT/mcp` on stderr.

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig, Tool};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use std::sync::Arc;

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// The text to repeat
    pub text: String,
    /// How many times (1 to 5)
    pub times: Option<u32>,
}

#[derive(Clone)]
pub struct Echo {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Echo {
    #[tool(description = "Returns `text` repeated `times` times.")]
    fn echo(&self, Parameters(EchoArgs { text, times }): Parameters<EchoArgs>) -> String {
        text.repeat(times.unwrap_or(1).clamp(1, 5) as usize)
    }
}

// The router is kept in a field (built once, `router = self.tool_router`) rather than
// rebuilt per call by the macro's default `Self::tool_router()`: the faster of the two
// documented forms, so the peer is measured at its best.
#[tool_handler(router = self.tool_router)]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

impl Echo {
    fn new(extra_tools: usize) -> Self {
        let mut router = Self::tool_router();
        for i in 0..extra_tools {
            let schema: serde_json::Map<String, serde_json::Value> = serde_json::from_value(serde_json::json!({
                "type": "object",
                "properties": {"n": {"type": "integer", "description": "Any number"}}
            }))
            .unwrap();
            let tool = Tool::new(
                format!("tool_{i:03}"),
                format!("Numbered tool {i}: answers its own name."),
                Arc::new(schema),
            );
            let name = format!("tool_{i:03}");
            router = router.with_route(ToolRoute::new_dyn(tool, move |_cx| {
                let name = name.clone();
                Box::pin(async move { Ok(CallToolResult::success(vec![ContentBlock::text(name)]).into()) })
            }));
        }
        Self { tool_router: router }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "http-json".into());
    let (mut port, mut tools) = (0u16, 0usize);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => port = args.next().and_then(|v| v.parse().ok()).expect("--port N"),
            "--tools" => tools = args.next().and_then(|v| v.parse().ok()).expect("--tools N"),
            other => panic!("unknown argument {other}"),
        }
    }
    let server = Echo::new(tools);
    let config = match mode.as_str() {
        "stdio" => {
            server.serve(rmcp::transport::stdio()).await?.waiting().await?;
            return Ok(());
        }
        "stdio-pipes" => {
            server.serve(rmcp::transport::io::stdio_pipes()).await?.waiting().await?;
            return Ok(());
        }
        "http-json" => StreamableHttpServerConfig::default().with_legacy_session_mode(false).with_json_response(true),
        "http-default" => StreamableHttpServerConfig::default(),
        other => panic!("unknown mode {other}"),
    };
    let service: StreamableHttpService<Echo, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
