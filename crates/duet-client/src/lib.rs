//! An MCP client for both protocol eras, built on duet's wire crate and sharing its types
//! with duet's server: what a server lists and returns is [`duet_wire::types`] on both
//! sides.
//!
//! A [`Client`] talks to one server through a [`Transport`]: a command it spawns and speaks
//! newline-delimited JSON-RPC with ([`StdioTransport`]), or a Streamable HTTP endpoint
//! ([`HttpTransport`]). [`Client::connect`] agrees on a revision ([`Negotiate`]): the
//! stateless 2026-07-28 (`server/discover`, then a `_meta` envelope on every request) or the
//! handshake era (`initialize`, `notifications/initialized`, a session). The caller's code
//! is the same in both. [`Client::close`] ends it all explicitly: the HTTP session is
//! deleted, the spawned process group is stopped and reaped.
//!
//! ```no_run
//! # async fn run() -> Result<(), duet_client::Error> {
//! use duet_client::{Client, HttpTransport, Negotiate};
//! let client = Client::connect(HttpTransport::new("http://127.0.0.1:8080/mcp")?, Negotiate::Auto).await?;
//! for tool in client.list_tools().await? {
//!     println!("{}", tool.name);
//! }
//! let result = client.call_tool("echo", serde_json::json!({"text": "hi"})).await?;
//! println!("{:?}", result.structured_content);
//! client.close().await;
//! # Ok(()) }
//! ```
//!
//! Not yet: the legacy HTTP+SSE transport; GET streams and resumption (`Last-Event-ID`);
//! resource subscriptions and `subscriptions/listen`; tasks; answering the server's
//! elicitation, sampling and roots requests (over stdio a server's `ping` is answered and
//! anything else refused; over HTTP they are passed over), and the 2026 multi round-trip
//! loop (`input_required` is reported as an error); `duet call` on any server; the
//! conformance client.
//!
//! A protected server is reached with an [`oauth::Authorizer`] given to
//! [`HttpTransport::with_authorizer`]: on a 401 it discovers the authorization server (the
//! server's Protected Resource Metadata, then the authorization server's metadata, with
//! the 2025-03-26 fallbacks), registers the client (pre-registered, a Client ID Metadata
//! Document, or dynamically), gets a token (a person's authorization code with PKCE
//! through an [`oauth::UserAgent`] such as [`oauth::Loopback`], checking the redirect's
//! `iss`; client credentials with a secret or a `private_key_jwt`; or a JWT assertion, a
//! workload's or an enterprise's ID-JAG), and the request is sent again; a 403
//! `insufficient_scope` steps up the scope. Tokens are bound to a DPoP key where the
//! authorization server supports it, refreshed, and kept in memory or in a file
//! ([`oauth::TokenStore`]).
//!
//! A request future dropped before its answer cancels the request on the wire:
//! `notifications/cancelled` over stdio and handshake-era HTTP, the stream closed in 2026
//! over HTTP.

mod client;
mod connection;
mod era;
mod error;
pub mod oauth;
mod output;
mod pages;
mod transport;

pub use client::{Client, Options};
pub use duet_wire::message::Notification;
pub use duet_wire::{Version, types};
pub use era::{ClientInfo, Negotiate, Terms};
pub use error::Error;
pub use pages::Page;
pub use transport::{HttpTransport, StdioTransport, Transport};
