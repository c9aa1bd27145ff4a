//! What a server sends over HTTP (on a Streamable HTTP stream, a POST's or the session's
//! GET, or on the legacy transport's stream), sorted: a notification goes to the client's
//! channel, an answer back to the reader, and a request of the server's is answered by
//! POSTing the JSON-RPC response, from a task of its own so that the stream is read on
//! meanwhile. [`answer`] is the one place both HTTP transports answer the server.

use super::inbound::{self, Inbound, Inbox};
use duet_wire::jsonrpc::{RequestId, RpcError};
use duet_wire::message::Request;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::Value;
use std::sync::Arc;

/// The answer to one of the client's requests (`id` is `None` in an error about no
/// request).
pub(super) struct Answer {
    pub(super) id: Option<RequestId>,
    pub(super) outcome: Result<Value, RpcError>,
}

/// Sorts one message of the server's: a notification is delivered to the inbox, a request
/// answered by its handlers in a POST `reply` makes (its body still to set); an answer is
/// returned.
pub(super) fn route(
    text: &[u8],
    inbox: &Arc<Inbox>,
    reply: impl FnOnce() -> reqwest::RequestBuilder,
) -> Option<Answer> {
    match inbound::decode(text) {
        Inbound::Answer { id, outcome } => return Some(Answer { id, outcome }),
        Inbound::Notification(notification) => inbox.notices.deliver(notification),
        Inbound::Request(request) => answer(Arc::clone(inbox), reply(), request),
        Inbound::Unusable => {}
    }
    None
}

/// Answers the server's `request` in a POST of its own (`post`, its body still to set).
/// Whether the server took the answer is not waited for: nobody is there to tell.
fn answer(inbox: Arc<Inbox>, post: reqwest::RequestBuilder, request: Request) {
    tokio::spawn(async move {
        let response = inbox.answering.respond(request).await;
        // A Streamable HTTP server refuses (406) a POST that does not accept both of its answers.
        let post = post.header(CONTENT_TYPE, "application/json").header(ACCEPT, "application/json, text/event-stream");
        let _ = post.body(response).send().await;
    });
}
