//! An MCP client for both protocol eras, built on duet's wire crate and sharing its types
//! with duet's server: what a server lists and returns is [`duet_wire::types`] on both
//! sides.
//!
//! A [`Client`] talks to one server through a [`Transport`]: a command it spawns and speaks
//! newline-delimited JSON-RPC with ([`StdioTransport`]), a Streamable HTTP endpoint
//! ([`HttpTransport`]: in the handshake era the session's GET stream is opened, and a
//! stream that breaks off is resumed with `Last-Event-ID` after the server's `retry`), or
//! the legacy HTTP+SSE transport of 2024-11-05 ([`LegacySseTransport`]).
//! [`Client::connect`] agrees on a revision ([`Negotiate`]): the stateless 2026-07-28
//! (`server/discover`, then a `_meta` envelope on every request) or the handshake era
//! (`initialize`, `notifications/initialized`, a session). The caller's code is the same in
//! both. [`Client::close`] ends it all explicitly: the HTTP session is deleted, the spawned
//! process group is stopped and reaped.
//!
//! What the server asks of the client goes to the caller's [`Handlers`] (elicitation,
//! sampling, roots), whichever the era: in the handshake era they answer the server's
//! requests on any transport; in 2026 the client answers an `input_required` result's
//! questions with them and retries, echoing the server's `requestState` exactly, for a
//! bounded number of rounds. The capabilities the client declares are those it has
//! handlers for. A 2026 tool call mirrors the arguments its tool's schema marks
//! (`x-mcp-header`) as `Mcp-Param-*` headers; a listed tool whose marks are invalid is left
//! out. Skills (SEP-2640) are listed and loaded with each file checked against its entry
//! ([`LoadedSkill`]). [`Client::watch`] gives the changes the caller is interested in as one
//! stream in both eras: a 2026 `subscriptions/listen`, or the handshake era's list changes
//! and `resources/subscribe`.
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
//! `duet call`, `duet read` and the listings use this client on any server.
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
//! A tool call may run on as a task ([`Client::call_tool_as_task`]): the 2026 tasks
//! extension (SEP-2663) or 2025-11-25's experimental tasks, one API for both. The client
//! polls it to its end at the server's interval within bounds ([`TaskOptions`]), answers
//! what it asks with the same [`Handlers`], and cancels it ([`Client::cancel_task`]).
//!
//! A request future dropped before its answer cancels the request on the wire:
//! `notifications/cancelled` over stdio and handshake-era HTTP, the stream closed in 2026
//! over HTTP.

mod client;
mod connection;
mod era;
mod error;
mod handlers;
mod known_tools;
pub mod oauth;
mod pages;
mod skills;
mod tasks;
mod transport;
mod watch;

pub use client::{Client, Options};
pub use duet_wire::message::Notification;
pub use duet_wire::{Version, types};
pub use era::{ClientInfo, Negotiate, Terms};
pub use error::Error;
pub use handlers::{Elicitation, Elicited, Handlers, Root};
pub use pages::Page;
pub use skills::LoadedSkill;
pub use tasks::{Ended, Started, Task, TaskOptions};
pub use transport::{HttpTransport, LegacySseTransport, StdioTransport, Transport};
pub use watch::{Change, Changes, Interest};
