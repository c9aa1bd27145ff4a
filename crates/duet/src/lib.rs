//! duet: one MCP server for both protocol eras.
//!
//! The handshake era (2024-11-05 … 2025-11-25: `initialize`, sessions) and the stateless
//! 2026-07-28 revision (a `_meta` envelope on every request) are served by one engine, over
//! stdio, Streamable HTTP and the legacy HTTP+SSE transport. A program describes what it
//! serves (a [`layer::Registry`] of tools, resources and prompts, or its own
//! [`layer::Layer`]); duet speaks whichever era the client speaks.
//!
//! A complete server:
//!
//! ```no_run
//! use duet::prelude::*;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, schemars::JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let mut registry = Registry::new(ServerInfo::new("hello", "1.0.0"));
//!     registry.tool(
//!         ToolSpec::typed("greet", |input: Greet, _cx| async move { ToolResult::text(format!("Hello, {}!", input.name)) })
//!             .description("Greets someone by name"),
//!     )?;
//!     duet::serve_stdio(registry).await?;
//!     Ok(())
//! }
//! ```
//!
//! A handler's future must be `Send`; one that keeps an `Rc`, a `RefCell` borrow or another
//! `!Send` value across an `.await` is registered through [`layer::local`] instead.
//!
//! Over HTTP, [`transport::http::HttpServer`] runs the endpoint standalone, and
//! [`transport::http::McpService`] is a `tower::Service` to mount in an axum or hyper app.

pub mod auth;
#[cfg(feature = "fixtures")]
pub mod fixtures;
pub mod jsonrpc;
pub mod layer;
pub mod message;
pub mod method;
pub mod mrtr;
pub mod protocol;
mod trace;
pub mod transport;

/// What most programs need in one import.
pub mod prelude {
    pub use crate::layer::{
        Content, Elicited, HandlerError, InputRequired, Json, Layer, LayerError, PromptMessage, PromptResult,
        PromptSpec, Registry, Reply, RequestCx, ResourceContents, ResourceSpec, ServerInfo, TemplateSpec, ToolResult,
        ToolSpec,
    };
    pub use crate::protocol::{Server, ServerOptions};
}

/// Serves `layer` to one client over stdin and stdout with default options, until stdin
/// closes.
pub async fn serve_stdio(layer: impl layer::Layer) -> std::io::Result<()> {
    let server = protocol::Server::new(std::sync::Arc::new(layer), protocol::ServerOptions::default());
    transport::stdio::serve_stdio(server).await
}
