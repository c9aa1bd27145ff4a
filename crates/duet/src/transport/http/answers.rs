//! The plain responses every part of the endpoint answers with: a JSON body with a status,
//! a JSON-RPC error with a status (an HTTP-level failure is one with id null and code
//! -32600), the status of how the engine says an answer stands, what the engine's gate
//! refused (400, or 429 with `Retry-After`), a session the engine's table cannot make or
//! find (503), 405 with the methods allowed, 202, and the head of an SSE stream.

use super::body::{self, Body};
use crate::protocol::entry::Standing;
use crate::protocol::gate::Refused;
use crate::protocol::session::table::Unavailable;
use duet_wire::jsonrpc::{RequestId, Response as RpcResponse, RpcError};
use duet_wire::message::Message;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};

/// The status of an answer that stands as `standing`.
pub(crate) fn status_of(standing: Standing) -> StatusCode {
    match standing {
        Standing::Answered => StatusCode::OK,
        Standing::Invalid => StatusCode::BAD_REQUEST,
        Standing::NotFound => StatusCode::NOT_FOUND,
        Standing::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
    }
}

/// A JSON body with a status.
pub(crate) fn json(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(body::full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// An HTTP-level failure: a JSON-RPC error with id null and code -32600.
pub(crate) fn http_error(status: StatusCode, message: &str) -> Response<Body> {
    rpc_error(status, None, RpcError::invalid_request(message))
}

/// A JSON-RPC error answered with an HTTP status.
pub(crate) fn rpc_error(status: StatusCode, id: Option<RequestId>, error: RpcError) -> Response<Body> {
    json(status, RpcResponse::error(id, error).to_line())
}

/// What the gate refused `message` for: 400 for a batch over the cap, 429 with
/// `Retry-After` for a message over a limit; the JSON-RPC error in the body either way.
pub(crate) fn refused(refused: &Refused, message: &Message) -> Response<Body> {
    let answer = refused.answer(message).to_line();
    match refused {
        Refused::OverCap(_) => json(StatusCode::BAD_REQUEST, answer),
        Refused::Limited(limit) => {
            let mut response = json(StatusCode::TOO_MANY_REQUESTS, answer);
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(limit.seconds()));
            response
        }
    }
}

/// 503: a session could not be made or found (a cap, or a backplane that cannot say).
pub(crate) fn unavailable(why: &Unavailable) -> Response<Body> {
    http_error(StatusCode::SERVICE_UNAVAILABLE, &why.0)
}

pub(crate) fn method_not_allowed(allow: &'static str) -> Response<Body> {
    let mut response = http_error(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// 202: a message that holds no request, taken.
pub(crate) fn accepted() -> Response<Body> {
    let mut response = Response::new(body::empty());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// An SSE stream's response: its head, and `body` as its events.
pub(crate) fn sse_response(body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, no-transform"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
