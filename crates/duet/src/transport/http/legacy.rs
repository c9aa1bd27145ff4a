//! The deprecated 2024-11-05 HTTP+SSE transport (opt-in): `GET /sse` (accepting an event
//! stream) opens a session whose stream starts with an `endpoint` event; JSON POSTs to that
//! endpoint answer 202 and their replies arrive on the stream. The session ends with its
//! stream.

use super::body::{self, Body};
use super::post::{parse_message, read_body, unless_json};
use super::respond::sse_response;
use super::service::{Gated, HttpShared, http_error};
use super::sessions::{HttpSession, Kind};
use super::stream::{StreamOpen, outbox_stream, unless_events_accepted};
use crate::layer::Principal;
use crate::message::Message;
use http::{Response, StatusCode};
use std::sync::Arc;
use tracing::Instrument;

/// Removes the session from the table when its stream ends.
struct EndsSession {
    shared: Arc<HttpShared>,
    id: String,
}

impl Drop for EndsSession {
    fn drop(&mut self) {
        self.shared.sessions.remove(&self.id);
    }
}

pub(super) fn open<B>(shared: &Arc<HttpShared>, req: Gated<B>) -> Response<Body> {
    if let Some(refused) = unless_events_accepted(&req.parts.headers) {
        return refused;
    }
    let session = match shared.sessions.create(&shared.server, &req.principal, Kind::LegacySse) {
        Ok(s) => s,
        Err(full) => return http_error(StatusCode::SERVICE_UNAVAILABLE, full.0),
    };
    session.open_stream();
    let endpoint = format!("{}?session_id={}", shared.config.message_path, session.id);
    let guard = (StreamOpen(session.clone()), EndsSession { shared: shared.clone(), id: session.id.clone() });
    sse_response(outbox_stream(shared, &session, Some(body::event("endpoint", &endpoint)), guard))
}

fn session_id(query: Option<&str>) -> Option<String> {
    let query = query?;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == "session_id" && !v.is_empty())
            .then(|| percent_encoding::percent_decode_str(v).decode_utf8_lossy().into_owned())
    })
}

pub(super) async fn post<B>(shared: &HttpShared, req: Gated<B>) -> Response<Body>
where
    B: http_body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let Gated { parts, principal, body } = req;
    if let Some(refused) = unless_json(&parts.headers) {
        return refused;
    }
    let Some(id) = session_id(parts.uri.query()) else {
        return http_error(StatusCode::BAD_REQUEST, "session_id query parameter is required");
    };
    let Some(session) = shared.sessions.get(&id, &principal).filter(|s| s.kind == Kind::LegacySse) else {
        return http_error(StatusCode::NOT_FOUND, "Session not found");
    };
    let message = match read_body(shared, &parts.headers, body).await.and_then(|b| parse_message(&b)) {
        Ok(m) => m,
        Err(refused) => return *refused,
    };
    let in_flight = match shared.limiter.admit(&principal.id, &message) {
        Ok(in_flight) => in_flight,
        Err(refusal) => return refusal.response(&message),
    };
    let span = crate::trace::request_span(&message, &principal.id, || crate::trace::from_headers(&parts.headers));
    span.record("mcp.session.id", id.as_str());
    let inline = message.runs_inline();
    // Handed to the session here, in arrival order, whether it then runs inline or not;
    // counted in flight until answered.
    let delivery = deliver(session, message, principal);
    let delivery = async move {
        delivery.await;
        drop(in_flight);
    };
    if inline {
        delivery.instrument(span).await;
    } else {
        tokio::spawn(delivery.instrument(span));
    }
    let mut response = Response::new(body::full("Accepted"));
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// Hands `message` to the session now; the future pushes its answer onto the stream.
fn deliver(session: Arc<HttpSession>, message: Message, principal: Arc<Principal>) -> impl Future<Output = ()> {
    let answering = session.session.handle(message, None, Some(principal));
    async move {
        if let Some(answer) = answering.await {
            session.outbox.push(answer.to_line());
        }
    }
}
