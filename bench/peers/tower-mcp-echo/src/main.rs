//! Peer for duet's benchmark: an `echo(text, times)` tool served by tower-mcp, written the way
//! its README and docs do it (`ToolBuilder::handler`, `McpRouter`, `HttpTransport` with
//! `StatelessConfig`, `StdioTransport`).
//!
//! Usage: `tower-mcp-echo MODE [--port N] [--tools N]` where MODE is
//! - `http`: `HttpTransport::new(router).stateless(StatelessConfig::new())`: 2026-07-28
//!   requests and 2025-era requests without a session are served statelessly, and
//!   `initialize` still opens a session (JSON replies);
//! - `http-sse`: the same with `.sse_responses(true)`;
//! - `stdio`: `StdioTransport::new(router).run()`.
//!
//! `--tools N` adds N numbered tools `tool_000…` and pages lists by 100 (as duet does).
//! HTTP modes print `listening on http://127.0.0.1:PORT/mcp` on stderr.

use schemars::JsonSchema;
use serde::Deserialize;
use tower_mcp::stateless::StatelessConfig;
use tower_mcp::transport::http::HttpTransport;
use tower_mcp::{BoxError, CallToolResult, McpRouter, StdioTransport, ToolBuilder};

#[derive(Debug, Deserialize, JsonSchema)]
struct EchoInput {
    /// The text to repeat
    text: String,
    /// How many times (1 to 5)
    times: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct NumberedInput {
    /// Any number
    #[allow(dead_code)]
    n: Option<i64>,
}

fn router(extra_tools: usize) -> McpRouter {
    let echo = ToolBuilder::new("echo")
        .title("Echo")
        .description("Returns `text` repeated `times` times.")
        .read_only()
        .handler(|input: EchoInput| async move {
            Ok(CallToolResult::text(input.text.repeat(input.times.unwrap_or(1).clamp(1, 5) as usize)))
        })
        .build();
    let mut router = McpRouter::new().server_info("tower-mcp-echo", "0.0.0").tool(echo);
    if extra_tools > 0 {
        router = router.page_size(100);
    }
    for i in 0..extra_tools {
        let name = format!("tool_{i:03}");
        let answer = name.clone();
        let tool = ToolBuilder::new(name)
            .description(format!("Numbered tool {i}: answers its own name."))
            .handler(move |_: NumberedInput| {
                let answer = answer.clone();
                async move { Ok(CallToolResult::text(answer)) }
            })
            .build();
        router = router.tool(tool);
    }
    router
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "http".into());
    let (mut port, mut tools) = (0u16, 0usize);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => port = args.next().and_then(|v| v.parse().ok()).expect("--port N"),
            "--tools" => tools = args.next().and_then(|v| v.parse().ok()).expect("--tools N"),
            other => panic!("unknown argument {other}"),
        }
    }
    let router = router(tools);
    let transport = match mode.as_str() {
        "stdio" => {
            StdioTransport::new(router).run().await?;
            return Ok(());
        }
        "http" => HttpTransport::new(router).stateless(StatelessConfig::new()),
        "http-sse" => HttpTransport::new(router).stateless(StatelessConfig::new()).sse_responses(true),
        other => panic!("unknown mode {other}"),
    };
    // `HttpTransport::serve` binds a given address; bind here instead to learn a free port,
    // then serve its router with `axum::serve`, which is what `serve` does inside.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, transport.into_router_at("/mcp"))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
