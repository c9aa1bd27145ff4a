//! The transport-independent engine: the era rules, the `_meta` envelope, method routing,
//! pagination, results on the wire per version, listen streams and change fan-out.

pub(crate) mod admission;
pub(crate) mod batch;
mod call;
pub(crate) mod cursor;
mod directories;
#[cfg(feature = "http")]
pub(crate) mod entry;
pub(crate) mod envelope;
pub(crate) mod gate;
mod limits;
mod listen;
mod methods;
mod mirrored;
mod options;
pub(crate) mod owed;
mod pages;
pub(crate) mod render;
pub(crate) mod server;
pub(crate) mod session;
mod shared;
mod subscribed;
pub(crate) mod tasks;

pub(crate) use duet_wire::{Era, Version};
pub use limits::{RATE_LIMITED, RateLimits};
pub use options::ServerOptions;
pub use render::CacheHints;
pub(crate) use session::AskError;
pub use session::Session;
pub use session::SessionSnapshot;
pub use shared::Server;
pub use tasks::{EXTENSION as TASKS_EXTENSION, TaskOptions};
