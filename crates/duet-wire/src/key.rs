//! The keys of the 2026 `_meta` envelope, for decoding and for a program that builds
//! requests itself.

/// The protocol revision the request speaks.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The client's name and version (duet reads past it).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// What the client can do, for this request.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The lowest level of log messages the client wants for this request.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The server's name and version, in `server/discover`'s result.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The `subscriptions/listen` stream a notification belongs to.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
