//! GET and DELETE on the MCP endpoint (handshake era): the session's standalone SSE stream,
//! which drains its outbox of list changes, resource updates and stray notifications, and
//! the end of a session (on every replica). Either may name a session another replica made.

use super::body::{self, Body};
use super::replicated;
use super::respond::{Accept, sse_response};
use super::service::{Gated, HttpShared, SESSION_HEADER, header, http_error, method_not_allowed};
use super::sessions::{HttpSession, Kind};
use http::{HeaderMap, Response, StatusCode};
use std::sync::Arc;

/// Marks the session's stream closed when the stream's body is dropped.
pub(super) struct StreamOpen(pub Arc<HttpSession>);

impl Drop for StreamOpen {
    fn drop(&mut self) {
        self.0.close_stream();
    }
}

/// The outbox of `session` as an SSE body, after an optional first event.
pub(super) fn outbox_stream<G: Send + 'static>(
    shared: &HttpShared,
    session: &Arc<HttpSession>,
    first: Option<bytes::Bytes>,
    guard: G,
) -> Body {
    let outbox = session.outbox.clone();
    let messages = futures::stream::unfold(outbox, |outbox| async move {
        let line = outbox.next().await?;
        Some((body::message(&line), outbox))
    });
    let events = futures::StreamExt::chain(futures::stream::iter(first), messages);
    body::sse(events, shared.config.keepalive_interval, guard)
}

/// 406 unless the request accepts an event stream (a GET of either transport).
pub(super) fn unless_events_accepted(headers: &HeaderMap) -> Option<Response<Body>> {
    let refusal = || http_error(StatusCode::NOT_ACCEPTABLE, "Not Acceptable: GET requires Accept: text/event-stream");
    (!Accept::parse(headers).sse).then(refusal)
}

pub(super) async fn get<B>(shared: &HttpShared, req: Gated<B>) -> Response<Body> {
    if shared.config.stateless {
        return method_not_allowed("POST");
    }
    if let Some(refused) = unless_events_accepted(&req.parts.headers) {
        return refused;
    }
    let Some(id) = header(&req.parts.headers, &SESSION_HEADER) else {
        return method_not_allowed("POST, DELETE");
    };
    let session = match replicated::find(shared, &id, &req.principal).await {
        Ok(Some(found)) if found.kind == Kind::Streamable => found,
        Ok(_) => return http_error(StatusCode::NOT_FOUND, "Session not found"),
        Err(unavailable) => return unavailable,
    };
    if !session.open_stream() {
        return http_error(StatusCode::CONFLICT, "Conflict: a GET stream is already open for this session");
    }
    let guard = StreamOpen(session.clone());
    sse_response(outbox_stream(shared, &session, None, guard))
}

pub(super) async fn delete<B>(shared: &HttpShared, req: Gated<B>) -> Response<Body> {
    if shared.config.stateless {
        return method_not_allowed("POST");
    }
    let Some(id) = header(&req.parts.headers, &SESSION_HEADER) else {
        return http_error(StatusCode::BAD_REQUEST, "Bad Request: Mcp-Session-Id header is required");
    };
    // A legacy HTTP+SSE session is no Streamable HTTP session: it ends with its stream.
    match replicated::find(shared, &id, &req.principal).await {
        Ok(Some(found)) if found.kind == Kind::Streamable => {}
        Ok(_) => return http_error(StatusCode::NOT_FOUND, "Session not found"),
        Err(unavailable) => return unavailable,
    }
    replicated::end(shared, &id).await;
    Response::new(body::empty())
}
