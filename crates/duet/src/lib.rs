//! duet: one MCP server for both protocol eras.
pub mod jsonrpc;
pub mod layer;
pub mod protocol;
pub mod transport;
#[cfg(feature = "fixtures")]
pub mod fixtures;
