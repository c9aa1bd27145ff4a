//! The wire layer: what MCP looks like on the wire, for a server and a client alike, and
//! nothing above it; duet's engine, transports and clients are built on it. JSON-RPC
//! framing, ids and errors (`jsonrpc`); a JSON text decoded into a [`message::Message`]
//! (`message`), its resource URIs made canonical on the way (`canonical_uri`); the one table of methods, both directions (`method`); each request's params as a struct, decoded once (`params`); the protocol
//! revisions and their eras (`version`); the keys of the 2026 `_meta` envelope (`key`);
//! the HTTP headers MCP defines and how their values carry what plain ASCII cannot
//! (`headers`); what a server lists and returns, which its clients read (`types`).
//! Nothing here imports the engine, a transport or a layer.

pub mod canonical_uri;
pub mod headers;
pub mod jsonrpc;
pub mod key;
pub mod message;
pub mod method;
pub mod mirrored;
pub mod params;
pub mod types;
pub mod version;

pub use version::{Era, Version};
