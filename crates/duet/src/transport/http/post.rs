//! POST to the MCP endpoint: content checks, scopes (403 `insufficient_scope` before the
//! engine runs), the 2026 ladder, the session (or a one-shot one), and the answer as one
//! JSON document or as an SSE stream scoped to the request. The work runs in a span whose
//! parent is the caller's W3C trace context.

use super::body::{self, Body};
use super::modern::{self, PROTOCOL_VERSION_HEADER, header};
use super::service::{Gated, HttpShared, SESSION_HEADER, http_error, json, rpc_error};
use super::sessions::Kind;
use crate::auth::scopes;
use crate::jsonrpc::{DEFAULT_HTTP_VERSION, RpcError, Sink, code, encode};
use crate::layer::Principal;
use crate::message::{Incoming, Message};
use crate::protocol::{Answer, Session, SessionOptions, Version};
use bytes::Bytes;
use http::header::{self as h, HeaderValue};
use http::{HeaderMap, Response, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// What the client accepts (an absent or empty `Accept` accepts both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accept {
    pub json: bool,
    pub sse: bool,
}

impl Accept {
    pub fn parse(headers: &HeaderMap) -> Accept {
        let types = headers.get_all(h::ACCEPT).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(','));
        let mut accept = Accept { json: false, sse: false };
        let mut named_any = false;
        for t in types.map(media_type).filter(|t| !t.is_empty()) {
            named_any = true;
            let is_one_of = |names: [&str; 3]| names.iter().any(|n| t.eq_ignore_ascii_case(n));
            accept.json |= is_one_of(["application/json", "application/*", "*/*"]);
            accept.sse |= is_one_of(["text/event-stream", "text/*", "*/*"]);
        }
        if named_any { accept } else { Accept { json: true, sse: true } }
    }
}

/// The media type of a `Content-Type` value or of one `Accept` entry, without its parameters.
fn media_type(value: &str) -> &str {
    value.split(';').next().unwrap_or_default().trim_ascii()
}

/// A request refused before the engine saw it: the response that says why.
pub(super) type Refused = Box<Response<Body>>;

/// Reads a whole body within the size and time limits.
pub(super) async fn read_body<B>(shared: &HttpShared, headers: &HeaderMap, body: B) -> Result<Bytes, Refused>
where
    B: http_body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let limit = shared.config.max_body_bytes;
    let too_large = || Box::new(http_error(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large"));
    let declared = headers.get(h::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let collect = http_body_util::Limited::new(body, limit).collect();
    match tokio::time::timeout(shared.config.body_timeout, collect).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(e)) => Err(Box::new(http_error(StatusCode::BAD_REQUEST, &format!("Bad Request: {e}")))),
        Err(_) => Err(Box::new(http_error(StatusCode::REQUEST_TIMEOUT, "Request Timeout"))),
    }
}

/// Decodes a JSON-RPC body: an object or an array, else a 400. The body is checked to be
/// UTF-8 once, as a whole, rather than string by string.
pub(super) fn parse_message(bytes: &[u8]) -> Result<Message, Refused> {
    let parsed = std::str::from_utf8(bytes).map_err(serde::de::Error::custom).and_then(serde_json::from_str::<Message>);
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    match parsed {
        Ok(message) if matches!(first, Some(b'{' | b'[')) => Ok(message),
        Ok(_) => Err(Box::new(http_error(StatusCode::BAD_REQUEST, "Invalid Request"))),
        Err(_) => Err(Box::new(rpc_error(StatusCode::BAD_REQUEST, None, RpcError::parse_error()))),
    }
}

pub(super) async fn handle<B>(shared: &HttpShared, req: Gated<B>) -> Response<Body>
where
    B: http_body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let Gated { parts, principal, body } = req;
    let headers = &parts.headers;
    let content_type = headers.get(h::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if !media_type(content_type).eq_ignore_ascii_case("application/json") {
        return http_error(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json");
    }
    let accept = Accept::parse(headers);
    if !accept.json && !accept.sse {
        return http_error(StatusCode::NOT_ACCEPTABLE, "Not Acceptable: accept application/json or text/event-stream");
    }
    let message = match read_body(shared, headers, body).await.and_then(|b| parse_message(&b)) {
        Ok(m) => m,
        Err(refused) => return *refused,
    };
    if let Some(refused) = check_scopes(shared, &message, &principal) {
        return refused;
    }
    let span = crate::trace::request_span(&message, Some(headers));
    route(shared, headers, message, principal, accept).instrument(span).await
}

/// 403 when a request in `message` uses a primitive whose scopes the principal lacks. The
/// challenge lists every scope the message's operations need, so a client steps up once.
fn check_scopes(shared: &HttpShared, message: &Message, principal: &Principal) -> Option<Response<Body>> {
    let map = shared.config.scopes.as_ref()?;
    let mut required: Vec<String> = Vec::new();
    let mut lacking: Option<(scopes::Kind, String)> = None;
    for (method, params, _) in message.requests() {
        let Some((kind, name)) = scopes::operation(method, params) else { continue };
        for scope in map.required(kind, &name) {
            if !required.contains(scope) {
                required.push(scope.clone());
            }
        }
        if lacking.is_none() && !map.allows(kind, &name, principal) {
            lacking = Some((kind, name));
        }
    }
    let (kind, name) = lacking?;
    tracing::debug!(principal = %principal.id, %name, "refused for missing scopes");
    Some(shared.insufficient_scope(&required, &format!("{} {name}", kind.label())))
}

/// The rest of a POST, once the message is read and allowed.
async fn route(
    shared: &HttpShared,
    headers: &HeaderMap,
    message: Message,
    principal: Arc<Principal>,
    accept: Accept,
) -> Response<Body> {
    let header_version = header(headers, &PROTOCOL_VERSION_HEADER).map(|raw| (raw, Version::parse(raw)));
    let asked = header_version.and_then(|(_, v)| v);
    match &message {
        Message::Batch(items) if items.iter().any(|i| modern::is_modern(i, asked)) => {
            return http_error(
                StatusCode::BAD_REQUEST,
                "JSON-RPC batches are not supported by protocol version 2026-07-28",
            );
        }
        Message::One(one) if modern::is_modern(one, asked) => {
            return handle_modern(shared, headers, message, principal, accept).await;
        }
        _ => {}
    }
    let negotiated = match header_version {
        Some((raw, None)) => {
            return http_error(StatusCode::BAD_REQUEST, &format!("Unsupported MCP-Protocol-Version: {raw}"));
        }
        Some((_, Some(v))) => Some(v),
        None => None,
    };
    let initialize = message.method() == Some("initialize");
    if shared.config.stateless {
        let version = negotiated.or_else(|| Version::parse(DEFAULT_HTTP_VERSION)).filter(|_| !initialize);
        let session = shared.server.session(SessionOptions {
            send: None,
            // Every message of a one-shot session brings its principal (below).
            principal: None,
            stateless_version: version,
            register: false,
        });
        return respond(shared, session, message, principal, accept, false).await;
    }
    if initialize {
        let http_session = match shared.sessions.create(&shared.server, &principal, Kind::Streamable) {
            Ok(s) => s,
            Err(full) => return http_error(StatusCode::SERVICE_UNAVAILABLE, full.0),
        };
        let mut response = respond(shared, http_session.session.clone(), message, principal, accept, false).await;
        if http_session.session.protocol_version().is_some() {
            if let Ok(id) = HeaderValue::from_str(&http_session.id) {
                response.headers_mut().insert(&SESSION_HEADER, id);
            }
        } else {
            shared.sessions.remove(&http_session.id);
        }
        return response;
    }
    let Some(id) = header(headers, &SESSION_HEADER) else {
        return http_error(StatusCode::BAD_REQUEST, "Bad Request: Mcp-Session-Id header is required");
    };
    let Some(http_session) = shared.sessions.get(id, &principal).filter(|s| s.kind == Kind::Streamable) else {
        return http_error(StatusCode::NOT_FOUND, "Session not found");
    };
    let session = http_session.session.clone();
    if let (Some(asked), Some(agreed)) = (negotiated.filter(|v| !v.is_modern()), session.protocol_version())
        && asked != agreed
    {
        return http_error(
            StatusCode::BAD_REQUEST,
            &format!("MCP-Protocol-Version {asked} does not match the negotiated version {agreed}"),
        );
    }
    respond(shared, session, message, principal, accept, false).await
}

/// A 2026 message: the ladder, then a one-shot session that keeps nothing. An invalid
/// message is answered with its error.
async fn handle_modern(
    shared: &HttpShared,
    headers: &HeaderMap,
    message: Message,
    principal: Arc<Principal>,
    accept: Accept,
) -> Response<Body> {
    match &message {
        Message::One(Incoming::Request { id, method, params, meta }) => {
            if let Err(error) = modern::check(headers, method, params, meta) {
                return rpc_error(StatusCode::BAD_REQUEST, Some(id.clone()), error);
            }
        }
        Message::One(Incoming::Invalid(_)) => {}
        // Client notifications carry nothing for a stateless server over HTTP.
        _ => return accepted(),
    }
    let session = shared.server.session(SessionOptions {
        send: None,
        // Every message of a one-shot session brings its principal (below).
        principal: None,
        stateless_version: None,
        register: false,
    });
    respond(shared, session, message, principal, accept, true).await
}

fn accepted() -> Response<Body> {
    let mut response = Response::new(body::empty());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// The HTTP status of an answer: 2026 requests map "method not found" to 404 and a
/// missing client capability to 400; everything else is 200.
fn status_of(answer: &Answer, modern: bool) -> StatusCode {
    match answer {
        Answer::One(r) if modern => match r.error_code() {
            Some(code::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
            Some(code::MISSING_CLIENT_CAPABILITY) => StatusCode::BAD_REQUEST,
            _ => StatusCode::OK,
        },
        _ => StatusCode::OK,
    }
}

/// Answers the requests in `message` as JSON or SSE (the table of cloudg §3.6).
pub(super) async fn respond(
    shared: &HttpShared,
    session: Session,
    message: Message,
    principal: Arc<Principal>,
    accept: Accept,
    modern: bool,
) -> Response<Body> {
    let (mut any_request, mut listen, mut streaming) = (false, false, false);
    for (method, ..) in message.requests() {
        any_request = true;
        listen |= method == "subscriptions/listen";
        streaming |= matches!(method, "subscriptions/listen" | "tools/call" | "resources/read" | "prompts/get");
    }
    if !any_request {
        return match session.handle_message(message, None, Some(principal)).await {
            Some(answer) => json(StatusCode::BAD_REQUEST, answer.to_line()),
            None => accepted(),
        };
    }
    if listen && !accept.sse {
        return http_error(StatusCode::NOT_ACCEPTABLE, "subscriptions/listen requires Accept: text/event-stream");
    }
    let use_sse = accept.sse && (listen || (!shared.config.json_response && (streaming || !accept.json)));
    if use_sse {
        return respond_sse(shared, session, message, principal, modern).await;
    }
    let answer = if modern {
        session.handle_message(message, None, Some(principal)).await
    } else {
        // Handshake-era work runs to completion even if the client goes away.
        let run = async move { session.handle_message(message, None, Some(principal)).await };
        tokio::spawn(run.in_current_span()).await.unwrap_or(None)
    };
    match answer {
        Some(answer) => json(status_of(&answer, modern), answer.to_line()),
        None => accepted(),
    }
}

enum Event {
    Note(Bytes),
    Done(Option<Answer>),
}

fn done_bytes(answer: Option<Answer>) -> Option<Bytes> {
    answer.map(|a| body::message(&a.to_line()))
}

/// An SSE stream scoped to the request: its notifications, then its response. The head
/// waits for the first message, so an error that has its own status (404, 400) is answered
/// as plain JSON with that status. A 2026 request is cancelled when the client goes away,
/// so it runs here until its first message: one that ends before sending a notification
/// (most do) is answered as one event without a task or a stream. Handshake-era work runs
/// on its own task, to completion even if the client goes away.
async fn respond_sse(
    shared: &HttpShared,
    session: Session,
    message: Message,
    principal: Arc<Principal>,
    modern: bool,
) -> Response<Body> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
    let sink: Sink = {
        let tx = tx.clone();
        Arc::new(move |note: Value| {
            let _ = tx.send(Event::Note(body::message(&encode(&note))));
        })
    };
    let cancel = CancellationToken::new();
    let run = {
        let cancel = cancel.clone();
        async move {
            let handled = session.handle_message(message, Some(sink), Some(principal));
            let answer = tokio::select! {
                biased;
                _ = cancel.cancelled() => None,
                answer = handled => answer,
            };
            let _ = tx.send(Event::Done(answer));
        }
        .in_current_span()
    };
    let keepalive = shared.config.keepalive_interval;
    let mut run = Box::pin(run);
    // The first message, or `None` after a keep-alive interval of silence.
    let first = if modern {
        let mut pending = true;
        let first = tokio::select! {
            biased;
            _ = &mut run => {
                pending = false;
                Some(rx.recv().await)
            }
            event = rx.recv() => Some(event),
            _ = tokio::time::sleep(keepalive) => None,
        };
        if pending {
            tokio::spawn(run);
        }
        first
    } else {
        tokio::spawn(run);
        tokio::time::timeout(keepalive, rx.recv()).await.ok()
    };
    let (first, done) = match first {
        Some(Some(Event::Done(Some(answer)))) if status_of(&answer, modern) != StatusCode::OK => {
            return json(status_of(&answer, modern), answer.to_line());
        }
        Some(Some(Event::Done(answer))) => {
            return sse_response(body::full(done_bytes(answer).unwrap_or_default()));
        }
        Some(Some(Event::Note(bytes))) => (Some(bytes), false),
        Some(None) => (None, true),
        None => (Some(Bytes::from_static(body::KEEPALIVE)), false),
    };
    // From here on, the client going away (the body dropped) cancels a 2026 request.
    let guard = modern.then(|| cancel.drop_guard());
    let rest = futures::stream::unfold((!done).then_some(rx), |rx| async move {
        let mut rx = rx?;
        match rx.recv().await? {
            Event::Note(bytes) => Some((bytes, Some(rx))),
            Event::Done(answer) => done_bytes(answer).map(|b| (b, None)),
        }
    });
    let events = futures::StreamExt::chain(futures::stream::iter(first), rest);
    sse_response(body::sse(events, keepalive, guard))
}

pub(super) fn sse_response(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(h::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(h::CACHE_CONTROL, HeaderValue::from_static("no-cache, no-transform"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> Accept {
        let mut h = HeaderMap::new();
        h.insert(h::ACCEPT, v.parse().unwrap());
        Accept::parse(&h)
    }

    #[test]
    fn accept_rules() {
        assert_eq!(Accept::parse(&HeaderMap::new()), Accept { json: true, sse: true });
        assert_eq!(accept("application/json"), Accept { json: true, sse: false });
        assert_eq!(accept("text/event-stream; q=1"), Accept { json: false, sse: true });
        assert_eq!(accept("*/*"), Accept { json: true, sse: true });
        assert_eq!(accept("text/html"), Accept { json: false, sse: false });
        assert_eq!(accept("application/*, text/*"), Accept { json: true, sse: true });
    }
}
