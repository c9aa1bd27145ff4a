//! A complete stdio MCP server: one typed tool whose handlers share a call counter, and one
//! resource. Run it with `cargo run -p duet --example stdio_server` and paste JSON lines, or
//! point a client at it.

use duet::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
    /// How many additions this server has made.
    calls: u64,
}

async fn add(input: Add, cx: RequestCx<Arc<AtomicU64>>) -> Json<Sum> {
    let calls = cx.state().fetch_add(1, Ordering::Relaxed) + 1;
    Json(Sum { sum: input.a + input.b, calls })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let info = ServerInfo::new("calculator", "1.0.0").instructions("Adds numbers.");
    let mut registry = Registry::with_state(info, Arc::new(AtomicU64::new(0)));
    registry.tool(ToolSpec::typed("add", add).description("Adds two integers"))?.resource(ResourceSpec::text(
        "calc://about",
        "about",
        "text/plain",
        "A calculator served by duet.",
    ))?;
    duet::serve_stdio(registry).await?;
    Ok(())
}
