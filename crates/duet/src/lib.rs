//! duet: one MCP server for both protocol eras.
//!
//! The handshake era (2024-11-05 … 2025-11-25: `initialize`, sessions) and the stateless
//! 2026-07-28 revision (a `_meta` envelope on every request) are served by one engine, over
//! stdio, Streamable HTTP and the legacy HTTP+SSE transport. A program describes what it
//! serves (a [`layer::Registry`] of tools, resources and prompts, or its own
//! [`layer::Layer`]); duet speaks whichever era the client speaks.
//!
//! A complete server, whose handlers share a counter through the registry's state:
//!
//! ```no_run
//! use duet::prelude::*;
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! async fn greet(input: Greet, cx: RequestCx<Arc<AtomicU64>>) -> ToolResult {
//!     let n = cx.state().fetch_add(1, Ordering::Relaxed) + 1;
//!     ToolResult::text(format!("Hello, {}! (greeting {n})", input.name))
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let mut registry = Registry::with_state(ServerInfo::new("hello", "1.0.0"), Arc::new(AtomicU64::new(0)));
//!     registry.tool(ToolSpec::typed("greet", greet).description("Greets someone by name"))?;
//!     duet::serve_stdio(registry).await?;
//!     Ok(())
//! }
//! ```
//!
//! The input schema comes from `Greet`; a handler returning [`layer::Json`] declares its
//! output schema by its type, and one that needs the user's answer asks with
//! [`layer::InputRequired::elicit`] and reads it with [`layer::RequestCx::elicited`], the
//! same code in both eras. A tool whose calls may take long declares
//! [`layer::ToolSpec::task_support`]: a client that can take a task then polls for its
//! result (or cancels it) while the same handler runs on. `docs/writing-a-server.md` and
//! `docs/architecture.md` in the repository go further.
//!
//! A handler's future must be `Send`; one that keeps an `Rc`, a `RefCell` borrow or another
//! `!Send` value across an `.await` is registered through [`layer::local`] instead.
//!
//! Over HTTP (the `http` feature, on by default), `transport::http::HttpServer` runs the
//! endpoint standalone, and `transport::http::McpService` is a `tower::Service` to mount in
//! an axum or hyper app. Without the default features the crate is a stdio server with no
//! HTTP or TLS stack.

pub mod auth;
pub mod backplane;
mod client_ids;
pub mod file_uri;
#[cfg(feature = "fixtures")]
pub mod fixtures;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod layer;
pub mod mrtr;
pub mod protocol;
pub mod signals;
pub mod state_key;
pub mod trace;
pub mod transport;
mod wakers;
/// MCP on the wire (the `duet-wire` crate): what duet's server and its clients share.
pub use duet_wire as wire;

/// What most programs need in one import.
pub mod prelude {
    pub use crate::layer::{
        Content, Elicited, HandlerError, InputRequired, Json, Layer, LayerError, PromptMessage, PromptResult,
        PromptSpec, Registry, Reply, RequestCx, ResourceContents, ResourceSpec, ServerInfo, TaskSupport, TemplateSpec,
        ToolResult, ToolSpec,
    };
    pub use crate::protocol::{Server, ServerOptions, TaskOptions};
}

/// Serves `layer` to one client over stdin and stdout with default options, until stdin
/// closes.
pub async fn serve_stdio(layer: impl layer::Layer) -> std::io::Result<()> {
    let server = protocol::Server::new(std::sync::Arc::new(layer), protocol::ServerOptions::default());
    transport::stdio::serve_stdio(server, transport::stdio::StdioOptions::default()).await
}
