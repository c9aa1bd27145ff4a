//! A complete stdio MCP server with one typed tool and one resource. Run it with
//! `cargo run -p duet --example stdio_server` and paste JSON lines, or point a client at it.

use duet::prelude::*;
use serde::{Deserialize, Serialize};

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
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::new(ServerInfo::new("calculator", "1.0.0").instructions("Adds numbers."));
    registry
        .tool(
            ToolSpec::typed("add", |input: Add, _cx| async move { Json(Sum { sum: input.a + input.b }) })
                .description("Adds two integers"),
        )?
        .resource(ResourceSpec::text("calc://about", "about", "text/plain", "A calculator served by duet."))?;
    duet::serve_stdio(registry).await?;
    Ok(())
}
