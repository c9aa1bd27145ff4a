//! The deprecated 2024-11-05 HTTP+SSE transport (opt-in): `GET /sse` (accepting an event
//! stream) opens a session whose stream starts with an `endpoint` event; JSON POSTs to that
//! endpoint answer 202 and their replies arrive on the stream, through the session's
//! bounded outbox: a request finding it full is refused 429 (the engine's
//! `session/outbox.rs`). The session ends with its stream.
//!
//! Behind a load balancer the POSTs may reach another replica than the stream. The replica
//! holding the stream keeps a lease on the session id in the backplane's keys (who owns it)
//! while the stream lives; a replica that gets a POST for a session it does not hold checks
//! the lease and routes the message over the bus to the holder, which handles it as its own.

use super::answers::sse_response;
use super::answers::{http_error, refused, rpc_error, unavailable};
use super::body::{self, Body};
use super::post::{parse_message, read_body, unless_json};
use super::shared::{Gated, HttpShared};
use super::stream::{StreamOpen, unless_events_accepted};
use crate::backplane::{Event, Published, Routed};
use crate::layer::Principal;
use crate::protocol::batch::over_cap;
use crate::protocol::gate::Admitted;
use crate::protocol::session::outbox::{Full, Reserved};
use crate::protocol::session::table::{Hosted, Kind};
use crate::trace;
use duet_wire::jsonrpc::{RpcError, code};
use duet_wire::message::Message;
use http::{Response, StatusCode};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long a session's lease lasts unless renewed; the holder renews it at half that.
const LEASE: Duration = Duration::from_secs(60);

fn lease_key(id: &str) -> String {
    format!("legacy-session:{id}")
}

/// Removes the session from the table, and its lease, when its stream ends.
struct EndsSession {
    shared: Arc<HttpShared>,
    id: String,
    lease: CancellationToken,
}

impl Drop for EndsSession {
    fn drop(&mut self) {
        self.shared.sessions.remove(&self.id);
        self.lease.cancel();
        let (keys, key) = (self.shared.server.options().backplane.keys.clone(), lease_key(&self.id));
        // Outside a runtime (the process is ending) the lease expires by itself.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = keys.delete(&key).await;
            });
        }
    }
}

/// Takes the lease on session `id` for `principal_id` now, then renews it until `ended`;
/// a store that refuses is logged (the session still works through this replica) and
/// tried again at the next turn.
async fn hold_lease(shared: &HttpShared, id: String, principal_id: String, ended: CancellationToken) {
    let (keys, key) = (shared.server.options().backplane.keys.clone(), lease_key(&id));
    let take = async move || {
        if let Err(e) = keys.put(&key, principal_id.as_bytes(), LEASE).await {
            tracing::warn!(session = %id, "cannot take the lease of a legacy SSE session: {e}");
        }
    };
    take().await;
    tokio::spawn(async move {
        let mut every = tokio::time::interval_at(tokio::time::Instant::now() + LEASE / 2, LEASE / 2);
        loop {
            tokio::select! {
                _ = ended.cancelled() => return,
                _ = every.tick() => take().await,
            }
        }
    });
}

pub(super) async fn open<B>(shared: &Arc<HttpShared>, req: Gated<B>) -> Response<Body> {
    if let Some(refused) = unless_events_accepted(&req.parts.headers) {
        return refused;
    }
    let session = match shared.sessions.create(&req.principal, Kind::Pinned) {
        Ok(created) => {
            if let Some(evicted) = created.evicted {
                let (shared, principal) = (shared.clone(), req.principal.id.clone());
                tokio::spawn(async move { shared.sessions.end(&evicted, &principal).await });
            }
            created.session
        }
        Err(why) => return unavailable(&why),
    };
    session.open_stream();
    let endpoint = format!("{}?session_id={}", shared.config.message_path, session.id);
    // Taken before the endpoint is sent: the client's first POST may reach another replica.
    let lease = CancellationToken::new();
    hold_lease(shared, session.id.clone(), session.principal_id.clone(), lease.clone()).await;
    let ends = EndsSession { shared: shared.clone(), id: session.id.clone(), lease };
    let guard = (StreamOpen(session.clone()), ends);
    sse_response(outbox_stream(shared, &session, body::event("endpoint", &endpoint), guard))
}

/// The session's outbox as an SSE body, after its `endpoint` event.
fn outbox_stream<G: Send + 'static>(shared: &HttpShared, session: &Hosted, first: bytes::Bytes, guard: G) -> Body {
    let outbox = session.outbox.clone();
    let messages = futures::stream::unfold(outbox, |outbox| async move {
        let line = outbox.as_ref()?.next().await?;
        Some((body::message(&line), outbox))
    });
    let events = futures::StreamExt::chain(futures::stream::iter([first]), messages);
    body::sse(events, shared.config.keepalive_interval, guard)
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
    let Gated { parts, principal, body, .. } = req;
    if let Some(refused) = unless_json(&parts.headers) {
        return refused;
    }
    let Some(id) = session_id(parts.uri.query()) else {
        return http_error(StatusCode::BAD_REQUEST, "session_id query parameter is required");
    };
    let Some(session) = shared.sessions.get(&id, &principal).filter(|s| s.kind == Kind::Pinned) else {
        return forward(shared, &parts.headers, body, id, principal).await;
    };
    let mut message = match read_body(shared, &parts.headers, body).await.and_then(|b| parse_message(&b)) {
        Ok(m) => m,
        Err(refused) => return *refused,
    };
    let room = match reserve(&session, &message) {
        Ok(room) => room,
        Err(full) => {
            let id = message.requests().next().filter(|_| matches!(message, Message::One(_))).map(|r| r.id.clone());
            return rpc_error(StatusCode::TOO_MANY_REQUESTS, id, RpcError::new(code::OVER_LIMIT, full.message()));
        }
    };
    let Admitted { trace, in_flight } =
        match shared.server.admit(&principal, &mut message, || trace::from_headers(&parts.headers)) {
            Ok(admitted) => admitted,
            Err(why) => return refused(&why, &message),
        };
    trace.session(&id);
    let inline = message.runs_inline();
    // Handed to the session here, in arrival order, whether it then runs inline or not;
    // counted in flight until answered.
    let delivery = deliver(session, message, principal, room);
    let delivery = async move {
        delivery.await;
        drop(in_flight);
    };
    if inline {
        // Boxed, as it is when spawned: a session's handling is several times the size of
        // the rest of every request's future, which hyper copies whole into its box.
        Box::pin(trace.instrument(delivery)).await;
    } else {
        tokio::spawn(trace.instrument(delivery));
    }
    accepted()
}

fn accepted() -> Response<Body> {
    let mut response = Response::new(body::full("Accepted"));
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}

/// A POST for a session this replica does not hold: routed to the replica whose lease says
/// it holds the session for this principal, else 404. A store that cannot say is 503: a
/// live session is never declared gone because Redis is away.
async fn forward<B>(
    shared: &HttpShared,
    headers: &http::HeaderMap,
    body: B,
    session: String,
    principal: Arc<Principal>,
) -> Response<Body>
where
    B: http_body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    // The body first, even when the answer is 404: a response sent before the body it
    // answers has arrived ends the connection, and a client that reuses it loses its next
    // request ("Server disconnected").
    let bytes = match read_body(shared, headers, body).await {
        Ok(bytes) => bytes,
        Err(refused) => return *refused,
    };
    // An id duet cannot have made names no session: the store is not asked.
    if !crate::client_ids::well_formed(&session) {
        return http_error(StatusCode::NOT_FOUND, "Session not found");
    }
    let backplane = &shared.server.options().backplane;
    match backplane.keys.get(&lease_key(&session)).await {
        Ok(Some(holder)) if holder == principal.id.as_bytes() => {}
        Ok(_) => return http_error(StatusCode::NOT_FOUND, "Session not found"),
        Err(e) => return http_error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
    // The cap first, as on the replica holding the session: a batch over it is refused here
    // whole, before it travels.
    match parse_message(&bytes) {
        Ok(Message::Batch(items)) => {
            if let Some(error) = over_cap(items.len(), shared.server.options().max_batch_items) {
                return rpc_error(StatusCode::BAD_REQUEST, None, error);
            }
        }
        Ok(Message::One(_)) => {}
        Err(refused) => return *refused,
    }
    // parse_message accepted it, so it is UTF-8.
    let message = String::from_utf8_lossy(&bytes).into_owned();
    let routed = Routed { session, principal: Principal::clone(&principal), message };
    backplane.bus.publish(Published { origin: shared.server.replica_id(), event: Event::Routed(routed) });
    accepted()
}

/// Handles a message another replica routed here, if this replica holds its session: a
/// legacy session's POST, admitted by the limits here, where it runs (what a limit refuses
/// is answered on the stream); or a client's answer or cancellation for a Streamable HTTP
/// session's copy here.
pub(super) fn receive(shared: &HttpShared, routed: Routed) {
    let principal = Arc::new(routed.principal);
    let Some(session) = shared.sessions.get(&routed.session, &principal) else { return };
    let Ok(mut message) = parse_message(routed.message.as_bytes()) else { return };
    if session.kind == Kind::Replicated {
        return session.receive_routed(message, principal);
    }
    let room = match reserve(&session, &message) {
        Ok(room) => room,
        Err(full) => {
            tracing::warn!(session = %routed.session, "a routed request was refused: {}", full.message());
            return;
        }
    };
    let Admitted { trace, in_flight } = match shared.server.admit(&principal, &mut message, || None) {
        Ok(admitted) => admitted,
        Err(why) => {
            if let Some(room) = room {
                room.answer(Message::One(why.answer(&message)));
            }
            return;
        }
    };
    trace.session(&routed.session);
    let delivery = deliver(session, message, principal, room);
    tokio::spawn(trace.instrument(async move {
        delivery.await;
        drop(in_flight);
    }));
}

/// Room in the session's outbox for the answer `message` is owed (`None` when it is owed
/// none); refused while the outbox is full: the session's stream is not being read.
fn reserve(session: &Hosted, message: &Message) -> Result<Option<Reserved>, Full> {
    match (&session.outbox, message.requests().next()) {
        (Some(outbox), Some(_)) => outbox.reserve().map(Some),
        _ => Ok(None),
    }
}

/// Hands `message` to the session now; the future puts its answer in the `room` reserved
/// for it on the stream, or, for a message that held no request to reserve room for (one
/// answered only with an error, such as `"jsonrpc": "1.0"`), where the session's
/// unprompted messages go.
fn deliver(
    session: Arc<Hosted>,
    message: Message,
    principal: Arc<Principal>,
    room: Option<Reserved>,
) -> impl Future<Output = ()> {
    let answering = session.session.handle(message, None, Some(principal));
    async move {
        let Some(answer) = answering.await else { return };
        match (room, &session.outbox) {
            (Some(room), _) => room.answer(answer),
            (None, Some(outbox)) => outbox.push(answer.to_line()),
            (None, None) => {}
        }
    }
}
