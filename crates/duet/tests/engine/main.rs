//! The protocol engine in memory, driven exactly as a transport drives it: one `Server`
//! over the test registry, a `Session` per connection, decoded messages in, answers out,
//! and what the server sends unprompted recorded by a sink. Every result, error object and
//! notification is checked against the JSON Schema of the version it was produced for
//! (see `client.rs`): at 2024-11-05, 2025-03-26, 2025-06-18 and 2025-11-25 through
//! `initialize`, and at 2026-07-28 through the `_meta` envelope.

mod changes;
mod client;
mod flows;
mod framing;
mod handshake;
mod layers;
mod modern;
mod replicas;
mod roots;
mod skills;
mod tasks;
