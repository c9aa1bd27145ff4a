//! Streamable HTTP (both eras on one endpoint), the legacy HTTP+SSE transport, and their
//! gates. [`McpService`] is a `tower::Service` a program can mount in its own app;
//! [`HttpServer`] runs it standalone.

mod answers;
mod body;
mod config;
mod descriptors;
mod forwarded;
pub(crate) mod guard;
pub(crate) mod headers;
mod legacy;
mod listener;
mod peers;
pub(crate) mod post;
pub(crate) mod respond;
mod resume;
mod scrape;
mod service;
mod shared;
mod stream;

pub use body::Body;
pub use config::{HttpConfig, ProxyHeader};
pub use descriptors::raise_open_files_limit;
pub use forwarded::PeerAddr;
pub use listener::HttpServer;
pub use scrape::MetricsEndpoint;
pub use service::McpService;
