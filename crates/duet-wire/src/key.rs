//! The keys of the 2026 `_meta` envelope, for decoding and for a program that builds
//! requests itself.

pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
