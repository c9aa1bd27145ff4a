//! The fuzz targets' way in (`fuzz/` at the repository root): the crate-private parsers and
//! checks they exercise, re-exported or wrapped as thinly as possible. Compiled only with
//! the `fuzzing` feature (off by default) and hidden from the docs, so the public API does
//! not grow.

use crate::mrtr::seal::{self, Sealer};
use crate::protocol::admission::Hints;
use crate::state_key::StateKeys;
use crate::transport::http::headers::HeaderHints;
use crate::transport::http::{post, respond};
use duet_wire::headers;
use duet_wire::message::Message;
use duet_wire::method::Method;
use http::HeaderMap;
use serde_json::Value;
use std::time::Duration;

pub use crate::protocol::cursor::{encode as encode_cursor, paginate};
pub use crate::protocol::envelope::{EnvelopeError, Terms, era_of, read as read_envelope};
pub use crate::transport::http::guard::{OriginHostGuard, Rejection, is_loopback};

/// A POST body as the HTTP endpoints decode it: the message, or the status it is refused with.
pub fn post_body(bytes: &[u8]) -> Result<Message, u16> {
    post::parse_message(bytes).map_err(|refused| refused.status().as_u16())
}

/// The `Mcp-Name` header as the 2026 header ladder reads it.
pub fn mcp_name(headers: &HeaderMap) -> Option<String> {
    HeaderHints { headers, version: None }.name().and_then(|name| headers::decode(&name).map(|name| name.into_owned()))
}

/// What a request's `Accept` headers accept: (JSON, SSE).
pub fn accepts(headers: &HeaderMap) -> (bool, bool) {
    let accept = respond::Accept::parse(headers);
    (accept.json, accept.sse)
}

/// Whether a POST's `Content-Type` is let in as JSON.
pub fn content_is_json(headers: &HeaderMap) -> bool {
    respond::is_json(headers)
}

/// What a sealed state is bound to: principal, method, target and arguments.
pub struct Binding(seal::Binding);

impl Binding {
    pub fn new(principal: &str, method: &str, target: &str, arguments: &Value) -> Self {
        Binding(seal::Binding::new(principal, &Method::parse(method), target, arguments))
    }
}

/// Seals and opens `requestState` as the engine does.
pub struct Seal(Sealer);

impl Seal {
    pub fn new(keys: StateKeys, ttl: Duration) -> Self {
        Seal(Sealer::new(keys, ttl))
    }

    pub fn seal(&self, binding: &Binding, asked: Vec<String>, state: Option<Value>) -> String {
        self.0.seal(&binding.0, asked, state)
    }

    /// The keys the sealed round asked for and the handler's state, or why it was refused.
    pub fn open(&self, token: &str, binding: &Binding) -> Result<(Vec<String>, Option<Value>), String> {
        self.0.open(token, &binding.0).map(|opened| (opened.asked, opened.state)).map_err(|e| e.to_string())
    }
}
