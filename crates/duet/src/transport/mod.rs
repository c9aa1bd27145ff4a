//! Transports: they own connections, decode messages, feed them to a session and encode
//! what comes back. They never look inside a tool.

#[cfg(feature = "http")]
pub mod http;
pub mod stdio;
