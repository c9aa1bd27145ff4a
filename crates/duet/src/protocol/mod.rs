//! The transport-independent engine: era rules, the `_meta` envelope, method routing,
//! pagination, per-version result shapes, listen streams and change fan-out.

pub mod cursor;
pub mod envelope;
mod listen;
mod methods;
mod pages;
mod server;
mod session;
pub mod shape;
mod version;

pub use listen::LISTEN_QUEUE;
pub use server::{Server, ServerOptions, SessionOptions};
pub use session::{Answer, Session};
pub use shape::CacheHints;
pub use version::{Era, Version};
