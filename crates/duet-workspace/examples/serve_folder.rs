//! A complete MCP server in a few lines: a folder (the first argument, or the working
//! directory) served over stdio, read-only, with the workspace's file tools, resources,
//! search and prompts, kept current as its files change. Run it with
//! `cargo run -p duet-workspace --example serve_folder -- DIR` and point a client at it.

use duet::protocol::{Server, ServerOptions};
use duet::transport::stdio::{StdioOptions, serve_stdio};
use duet_workspace::{Access, Workspace};
use std::path::PathBuf;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let folder = std::env::args_os().nth(1).map_or_else(|| PathBuf::from("."), PathBuf::from);
    let workspace = Workspace::open([folder], Access::ReadOnly)?;
    workspace.watch()?;
    // What is served narrows to the folders the user opened in the client (its roots).
    let options = ServerOptions { client_roots: true, ..ServerOptions::default() };
    serve_stdio(Server::new(workspace, options), StdioOptions::default()).await?;
    Ok(())
}
