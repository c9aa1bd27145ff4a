//! GET and DELETE on the MCP endpoint (handshake era). A GET opens the session's standalone
//! SSE stream: list changes, resource updates and the server's messages that belong to no
//! POST, read from the log of the session's events (`resume.rs`), so that what came while
//! no stream was open arrives too. With a `Last-Event-ID` a GET picks up a broken stream,
//! the GET stream or a POST's, after that event. DELETE ends the session on every replica.
//! Either may name a session another replica made.

use super::answers::sse_response;
use super::answers::{http_error, method_not_allowed, unavailable};
use super::body::{self, Body};
use super::headers::{SESSION_HEADER, header};
use super::respond::Accept;
use super::resume::{self, StreamName, Tail};
use super::shared::{Gated, HttpShared};
use crate::protocol::Version;
use crate::protocol::session::table::{Hosted, Kind};
use http::{HeaderMap, HeaderName, Response, StatusCode};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

static LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// Marks the session's stream closed when the stream's body is dropped.
pub(super) struct StreamOpen(pub Arc<Hosted>);

impl Drop for StreamOpen {
    fn drop(&mut self) {
        self.0.close_stream();
    }
}

/// The GET stream's mark: closed here, and the replicas told, when its body is dropped.
struct GetStreamOpen {
    shared: Arc<HttpShared>,
    session: Arc<Hosted>,
    closed: CancellationToken,
}

impl Drop for GetStreamOpen {
    fn drop(&mut self) {
        self.closed.cancel();
        self.session.close_stream();
        let (shared, session) = (self.shared.clone(), self.session.clone());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { shared.sessions.streaming(&session, false).await });
        }
    }
}

/// 406 unless the request accepts an event stream (a GET of either transport).
pub(super) fn unless_events_accepted(headers: &HeaderMap) -> Option<Response<Body>> {
    let refusal = || http_error(StatusCode::NOT_ACCEPTABLE, "Not Acceptable: GET requires Accept: text/event-stream");
    (!Accept::parse(headers).sse).then(refusal)
}

pub(super) async fn get<B>(shared: &Arc<HttpShared>, req: Gated<B>) -> Response<Body> {
    if shared.config.stateless {
        return method_not_allowed("POST");
    }
    if let Some(refused) = unless_events_accepted(&req.parts.headers) {
        return refused;
    }
    let Some(id) = header(&req.parts.headers, &SESSION_HEADER) else {
        return method_not_allowed("POST, DELETE");
    };
    let session = match shared.sessions.find(&id, &req.principal).await {
        Ok(Some(found)) if found.kind == Kind::Replicated => found,
        Ok(_) => return http_error(StatusCode::NOT_FOUND, "Session not found"),
        Err(why) => return unavailable(&why),
    };
    // An id duet did not make is no place to resume from: a fresh stream.
    let last = header(&req.parts.headers, &LAST_EVENT_ID)
        .and_then(|value| StreamName::of_event(&value).map(|stream| (stream, value.into_owned())));
    match last {
        Some((post @ StreamName::Post(_), after)) => resume_post(shared, &session, post, after),
        last => get_stream(shared, session, last.map(|(_, after)| after)).await,
    }
}

/// The first event of a stream of `session` that goes on after `after`: the priming event
/// of a 2025-11-25 stream.
fn priming(shared: &HttpShared, session: &Hosted, stream: &StreamName, after: Option<&str>) -> Option<bytes::Bytes> {
    let primes = session.session.protocol_version().is_some_and(Version::primes_streams);
    primes.then(|| body::priming(&stream.priming_id(after), shared.config.sse_retry))
}

/// The session's GET stream, from the event after `after` (else after the last one a GET
/// stream of the session sent), then as events come. One at a time per replica.
async fn get_stream(shared: &Arc<HttpShared>, session: Arc<Hosted>, after: Option<String>) -> Response<Body> {
    if !session.open_stream() {
        return http_error(StatusCode::CONFLICT, "Conflict: a GET stream is already open for this session");
    }
    let closed = CancellationToken::new();
    let guard = GetStreamOpen { shared: shared.clone(), session: session.clone(), closed: closed.clone() };
    shared.sessions.streaming(&session, true).await;
    let (renewing, streaming) = (shared.clone(), session.clone());
    tokio::spawn(async move { renewing.sessions.renew_while_streaming(&streaming, closed).await });
    let cursor_key = resume::cursor_key(&session.id);
    let after = match after {
        Some(after) => Some(after),
        None => match shared.server.options().backplane.keys.get(&cursor_key).await {
            Ok(cursor) => cursor.map(|c| String::from_utf8_lossy(&c).into_owned()),
            Err(e) => {
                tracing::debug!(session = %session.id, "cannot read where the last GET stream stopped: {e}");
                None
            }
        },
    };
    let stream = StreamName::Get;
    let first = priming(shared, &session, &stream, after.as_deref());
    let tail = Tail {
        log: stream.log(&session.id),
        after,
        post: false,
        stop: session.stop.clone(),
        cursor_key: Some(cursor_key),
    };
    let events = futures::StreamExt::chain(futures::stream::iter(first), resume::tail(shared.streams.clone(), tail));
    sse_response(body::sse(events, shared.config.keepalive_interval, guard))
}

/// A POST's stream picked up after `after`: its events since, then the rest as they come,
/// ending with its answer.
fn resume_post(shared: &Arc<HttpShared>, session: &Hosted, stream: StreamName, after: String) -> Response<Body> {
    let first = priming(shared, session, &stream, Some(&after));
    let tail = Tail {
        log: stream.log(&session.id),
        after: Some(after),
        post: true,
        stop: session.stop.clone(),
        cursor_key: None,
    };
    let events = futures::StreamExt::chain(futures::stream::iter(first), resume::tail(shared.streams.clone(), tail));
    sse_response(body::sse(events, shared.config.keepalive_interval, ()))
}

pub(super) async fn delete<B>(shared: &Arc<HttpShared>, req: Gated<B>) -> Response<Body> {
    if shared.config.stateless {
        return method_not_allowed("POST");
    }
    let Some(id) = header(&req.parts.headers, &SESSION_HEADER) else {
        return http_error(StatusCode::BAD_REQUEST, "Bad Request: Mcp-Session-Id header is required");
    };
    // A legacy HTTP+SSE session is no Streamable HTTP session: it ends with its stream.
    match shared.sessions.find(&id, &req.principal).await {
        Ok(Some(found)) if found.kind == Kind::Replicated => {}
        Ok(_) => return http_error(StatusCode::NOT_FOUND, "Session not found"),
        Err(why) => return unavailable(&why),
    }
    shared.sessions.end(&id, &req.principal.id).await;
    Response::new(body::empty())
}
