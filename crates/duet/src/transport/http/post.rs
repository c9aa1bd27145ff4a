//! POST to the MCP endpoint: content checks, scopes (403 `insufficient_scope` before the
//! engine runs), the engine's gate (`protocol/gate.rs`), then the engine's entry
//! (`protocol/entry.rs`), which reads the message with the headers beside it: a 2026
//! request passes the header ladder and is answered on its own, with no session; a
//! handshake-era message goes to its session (or, on a stateless server, is answered on its
//! own at the version its header names). The answer travels as `respond` decides. The work
//! runs in a span whose parent is the caller's W3C trace context.

use super::answers::{accepted, http_error, json, refused, rpc_error, status_of};
use super::body::Body;
use super::headers::{HeaderHints, PROTOCOL_VERSION_HEADER};
use super::headers::{SESSION_HEADER, header};
use super::respond::{Accept, Answering, is_json, respond};
use super::shared::{Gated, HttpShared};
use crate::layer::Principal;
use crate::protocol::entry::{Arrival, Entry, Work};
use crate::protocol::gate::Admitted;
use crate::trace;
use bytes::Bytes;
use duet_wire::jsonrpc::RpcError;
use duet_wire::message::Message;
use http::header::{self as h, HeaderValue};
use http::{HeaderMap, Response, StatusCode};
use http_body_util::BodyExt;
use std::sync::Arc;

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
        Ok(Err(e)) => {
            // hyper says only that it could not read the body; the reason is its source.
            let mut why = e.to_string();
            let mut source = e.source();
            while let Some(cause) = source {
                why = format!("{why}: {cause}");
                source = cause.source();
            }
            Err(Box::new(http_error(StatusCode::BAD_REQUEST, &format!("Bad Request: {why}"))))
        }
        Err(_) => Err(Box::new(http_error(StatusCode::REQUEST_TIMEOUT, "Request Timeout"))),
    }
}

/// Decodes a JSON-RPC body: an object or an array, else a 400. The body is checked to be
/// UTF-8 once, as a whole, rather than string by string.
pub(crate) fn parse_message(bytes: &[u8]) -> Result<Message, Refused> {
    let parsed = std::str::from_utf8(bytes).map_err(serde::de::Error::custom).and_then(serde_json::from_str::<Message>);
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    match parsed {
        Ok(message) if matches!(first, Some(b'{' | b'[')) => Ok(message),
        Ok(_) => Err(Box::new(http_error(StatusCode::BAD_REQUEST, "Invalid Request"))),
        Err(_) => Err(Box::new(rpc_error(StatusCode::BAD_REQUEST, None, RpcError::parse_error()))),
    }
}

/// 415 unless the body is declared JSON (a POST of either transport).
pub(super) fn unless_json(headers: &HeaderMap) -> Option<Response<Body>> {
    (!is_json(headers)).then(|| http_error(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json"))
}

pub(super) async fn handle<B>(shared: &Arc<HttpShared>, req: Gated<B>) -> Response<Body>
where
    B: http_body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let Gated { parts, principal, body, canonical } = req;
    let headers = &parts.headers;
    if let Some(refused) = unless_json(headers) {
        return refused;
    }
    let accept = Accept::parse(headers);
    if !accept.json && !accept.sse {
        return http_error(StatusCode::NOT_ACCEPTABLE, "Not Acceptable: accept application/json or text/event-stream");
    }
    let bytes = match read_body(shared, headers, body).await {
        Ok(bytes) => bytes,
        Err(refused) => return *refused,
    };
    let mut message = match parse_message(&bytes) {
        Ok(m) => m,
        Err(refused) => return *refused,
    };
    if let Some(refused) = check_scopes(shared, &message, &principal, canonical.as_deref()) {
        return refused;
    }
    let Admitted { trace, in_flight: _in_flight } =
        match shared.server.admit(&principal, &mut message, || trace::from_headers(headers)) {
            Ok(admitted) => admitted,
            Err(why) => return refused(&why, &message),
        };
    trace.instrument(route(shared, headers, message, &bytes, principal, accept)).await
}

/// 403 `insufficient_scope` when the message asks for what the principal's scopes do not
/// cover: the challenge lists every scope the message's operations need, so a client steps
/// up once.
fn check_scopes(
    shared: &HttpShared,
    message: &Message,
    principal: &Principal,
    canonical: Option<&str>,
) -> Option<Response<Body>> {
    let lacking = shared.server.lacking_scopes(message, principal)?;
    Some(shared.insufficient_scope(&lacking.required, &lacking.what, canonical))
}

/// The rest of a POST, once the message is read and let in: the engine decides where it
/// goes, from the message and the headers beside it; `respond` sends its answer.
async fn route(
    shared: &Arc<HttpShared>,
    headers: &HeaderMap,
    message: Message,
    raw: &[u8],
    principal: Arc<Principal>,
    accept: Accept,
) -> Response<Body> {
    let version = header(headers, &PROTOCOL_VERSION_HEADER);
    let hints = HeaderHints { headers, version: version.as_deref() };
    let arrival = Arrival { message, principal, declared: version.as_deref(), hints: &hints, raw };
    let sessions = (!shared.config.stateless).then_some(&shared.sessions);
    let Work { shape, job } = match shared.server.enter(arrival, sessions).await {
        Entry::Work(work) => work,
        Entry::Taken => return accepted(),
        Entry::Refused(standing, answer) => return json(status_of(standing), answer.to_line()),
    };
    // `initialize`: the session's id goes out once it agreed a version.
    let opened = shape.session.clone().filter(|_| job.opens());
    let mut response = respond(shared, Answering { shape, accept }, move |sink| job.run(sink)).await;
    if let Some(opened) = opened.filter(|hosted| hosted.session.protocol_version().is_some())
        && let Ok(id) = HeaderValue::from_str(&opened.id)
    {
        response.headers_mut().insert(&SESSION_HEADER, id);
    }
    response
}
