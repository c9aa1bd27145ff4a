//! A folder and a program's own tool served as one: the workspace (read-only) beside a
//! `Registry` with one typed tool, joined by `Layers`. Run it with
//! `cargo run -p duet-workspace --example folder_and_tools -- DIR`.

use duet::layer::{Layers, Registry, ServerInfo, ToolResult, ToolSpec};
use duet::protocol::{Server, ServerOptions};
use duet::transport::stdio::{StdioOptions, serve_stdio};
use duet_workspace::{Access, Workspace};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Shout {
    /// What to say louder.
    text: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let folder = std::env::args_os().nth(1).map_or_else(|| PathBuf::from("."), PathBuf::from);
    let workspace = Workspace::open([folder], Access::ReadOnly)?;
    workspace.watch()?;
    let mut tools = Registry::new(ServerInfo::new("tools", "1"));
    tools.tool(ToolSpec::typed("shout", |s: Shout, _| async move { ToolResult::text(s.text.to_uppercase()) }))?;
    // The workspace comes first: its info is the server's, and it wins a name both serve.
    let served = Layers::new(workspace).with(Arc::new(tools));
    serve_stdio(Server::new(Arc::new(served), ServerOptions::default()), StdioOptions::default()).await?;
    Ok(())
}
