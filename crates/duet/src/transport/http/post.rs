//! POST to the MCP endpoint: content checks, scopes (403 `insufficient_scope` before the
//! engine runs), the engine's gate, then the era of the message. A 2026 request passes the header ladder and
//! is answered on its own, with no session; a handshake-era message goes to its session
//! (or, on a stateless server, is answered on its own at the version its header names).
//! The answer travels as `respond` decides. The work runs in a span whose parent is the
//! caller's W3C trace context.

use super::answers::accepted;
use super::answers::{http_error, refused, rpc_error, unavailable};
use super::body::Body;
use super::headers::{HeaderMirrors, PROTOCOL_VERSION_HEADER};
use super::headers::{SESSION_HEADER, header};
use super::respond::{Accept, Answering, is_json, replies_of, respond};
use super::shared::{Gated, HttpShared};
use crate::layer::Principal;
use crate::protocol::admission;
use crate::protocol::gate::Admitted;
use crate::protocol::owed::Owed;
use crate::protocol::session::table::Kind;
use crate::trace::{self, RequestTrace};
use bytes::Bytes;
use duet_wire::jsonrpc::RpcError;
use duet_wire::message::{Incoming, Message};
use duet_wire::method::Method;
use duet_wire::{Era, Version};
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

/// The rest of a POST, once the message is read and allowed: its era decides where it goes.
async fn route(
    shared: &Arc<HttpShared>,
    headers: &HeaderMap,
    message: Message,
    body: &[u8],
    principal: Arc<Principal>,
    accept: Accept,
) -> Response<Body> {
    let header_version = header(headers, &PROTOCOL_VERSION_HEADER);
    let declared = header_version.as_deref().and_then(Version::parse);
    match message {
        Message::Batch(items) if let Some(error) = admission::batch(&items, declared) => {
            rpc_error(StatusCode::BAD_REQUEST, None, error)
        }
        Message::One(one) if admission::era_of(&one, declared) == Era::Modern => {
            let mirrors = HeaderMirrors { headers, version: header_version.as_deref() };
            answer_modern(shared, &mirrors, one, principal, accept).await
        }
        message => match header_version {
            Some(raw) if declared.is_none() => {
                http_error(StatusCode::BAD_REQUEST, &format!("Unsupported MCP-Protocol-Version: {raw}"))
            }
            // Boxed: a session's handling makes this future almost three times the 2026
            // path's, and every request's future is as large as its largest path (hyper
            // copies it whole into its box).
            _ => Box::pin(answer_handshake(shared, headers, message, body, declared, principal, accept)).await,
        },
    }
}

/// A 2026 message: the ladder, then the server answers it on its own, keeping nothing. An
/// invalid message is answered with its error; a notification carries nothing for a
/// stateless server over HTTP.
async fn answer_modern(
    shared: &Arc<HttpShared>,
    mirrors: &HeaderMirrors<'_>,
    message: Incoming,
    principal: Arc<Principal>,
    accept: Accept,
) -> Response<Body> {
    let mut request = match message {
        Incoming::Request(request) => request,
        Incoming::Invalid(response) => return super::answers::json(StatusCode::BAD_REQUEST, response.to_line()),
        _ => return accepted(),
    };
    let checked = shared.server.admit_modern(&principal, &mut request, Some(mirrors));
    let terms = match checked {
        Ok(terms) => terms,
        Err(error) => return rpc_error(StatusCode::BAD_REQUEST, Some(request.id), error),
    };
    let replies = Some(request.method.traits().replies);
    let answering = Answering { replies, accept, modern: true, owed: Owed::One(request.id.clone()), session: None };
    let server = shared.server.clone();
    respond(shared, answering, move |sink| async move {
        Some(Message::One(server.answer_request(request, terms, principal, sink).await))
    })
    .await
}

/// A handshake-era message: `initialize` opens a session, anything else goes to the session
/// its `Mcp-Session-Id` names (held here, or adopted from another replica's record, see
/// the engine's `session/replicated.rs`); a stateless server answers it on its own, at the
/// version `declared` (or the default).
async fn answer_handshake(
    shared: &Arc<HttpShared>,
    headers: &HeaderMap,
    message: Message,
    body: &[u8],
    declared: Option<Version>,
    principal: Arc<Principal>,
    accept: Accept,
) -> Response<Body> {
    // A message that breaks the framing rules is answered with its error, as a parse error
    // is, whether or not it names a session: it is no request a session could take.
    if let Message::One(Incoming::Invalid(response)) = &message {
        return super::answers::json(StatusCode::BAD_REQUEST, response.to_line());
    }
    let mut answering =
        Answering { replies: replies_of(&message), accept, modern: false, owed: Owed::of(&message), session: None };
    if shared.config.stateless {
        let (server, at) = (shared.server.clone(), declared.unwrap_or(Version::DEFAULT_HTTP));
        return respond(shared, answering, move |sink| async move {
            server.answer(message, Some(at), principal, sink).await
        })
        .await;
    }
    if message.method() == Some(&Method::Initialize) {
        let http_session = match shared.sessions.create(&principal, Kind::Replicated) {
            Ok(created) => {
                if let Some(evicted) = created.evicted {
                    shared.sessions.end(&evicted, &principal.id).await;
                }
                created.session
            }
            Err(why) => return unavailable(&why),
        };
        if let Err(why) = shared.sessions.count(&http_session, &principal).await {
            shared.sessions.remove(&http_session.id);
            return unavailable(&why);
        }
        RequestTrace::current().session(&http_session.id);
        answering.session = Some(http_session.clone());
        let session = http_session.session.clone();
        let mut response =
            respond(shared, answering, move |sink| async move { session.handle(message, sink, Some(principal)).await })
                .await;
        if http_session.session.protocol_version().is_some() {
            if let Ok(id) = HeaderValue::from_str(&http_session.id) {
                response.headers_mut().insert(&SESSION_HEADER, id);
            }
            shared.sessions.write_new(&http_session).await;
        } else {
            shared.sessions.end(&http_session.id, &http_session.principal_id).await;
        }
        return response;
    }
    let Some(id) = header(headers, &SESSION_HEADER) else {
        return http_error(StatusCode::BAD_REQUEST, "Bad Request: Mcp-Session-Id header is required");
    };
    let http_session = match shared.sessions.find(&id, &principal).await {
        Ok(Some(found)) if found.kind == Kind::Replicated => found,
        Ok(_) => return http_error(StatusCode::NOT_FOUND, "Session not found"),
        Err(why) => return unavailable(&why),
    };
    RequestTrace::current().session(&id);
    if shared.sessions.route_elsewhere(&http_session, &message, body, &principal) {
        return accepted();
    }
    shared.sessions.keep_alive(&http_session).await;
    let session = http_session.session.clone();
    if let (Some(asked), Some(agreed)) = (declared.filter(|v| !v.is_modern()), session.protocol_version())
        && asked != agreed
    {
        return http_error(
            StatusCode::BAD_REQUEST,
            &format!("MCP-Protocol-Version {asked} does not match the negotiated version {agreed}"),
        );
    }
    answering.session = Some(http_session.clone());
    let before = message.changes_session().then(|| session.snapshot()).flatten();
    let saves = before.map(|before| (shared.clone(), http_session, before));
    respond(shared, answering, move |sink| async move {
        let answer = session.handle(message, sink, Some(principal)).await;
        if let Some((shared, http_session, before)) = saves {
            shared.sessions.save(&http_session, &before).await;
        }
        answer
    })
    .await
}
