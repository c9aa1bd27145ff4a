//! duet: one MCP server for both protocol eras.
pub mod auth;
#[cfg(feature = "fixtures")]
pub mod fixtures;
pub mod jsonrpc;
pub mod layer;
pub mod mrtr;
pub mod protocol;
pub mod transport;
