//! duet: one MCP server for both protocol eras.
pub mod jsonrpc;
pub mod layer;
