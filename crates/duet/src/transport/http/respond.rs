//! How the answer to a POST travels: one JSON document, or an SSE stream scoped to the
//! request (its notifications, then its response). The method table says how each request
//! replies; what the client accepts and the server's `json_response` setting decide the
//! rest. A 2026 request is cancelled when its client goes away; handshake-era work runs to
//! completion, and its stream is resumable (`resume.rs`).

use super::answers::{accepted, http_error, json, sse_response, status_of};
use super::body::{self, Body};
use super::headers::header;
use super::resume::{Detach, PostStream};
use super::shared::HttpShared;
use crate::protocol::Version;
use crate::protocol::entry::{Shape, Standing};
use crate::protocol::owed::Owed;
use crate::protocol::session::table::Hosted;
use crate::trace::RequestTrace;
use bytes::Bytes;
use duet_wire::jsonrpc::{Response as RpcResponse, Sink, encode};
use duet_wire::message::Message;
use duet_wire::method::Replies;
use http::header as h;
use http::{HeaderMap, Response, StatusCode};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the client accepts (an absent or empty `Accept` accepts both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Accept {
    pub json: bool,
    pub sse: bool,
}

impl Accept {
    pub(crate) fn parse(headers: &HeaderMap) -> Accept {
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

/// Whether a request's `Content-Type` is `application/json` (with any parameters; a
/// repeated header is its lines joined, which is not).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    header(headers, h::CONTENT_TYPE).is_some_and(|value| media_type(&value).eq_ignore_ascii_case("application/json"))
}

/// The media type of a `Content-Type` value or of one `Accept` entry, without its parameters.
fn media_type(value: &str) -> &str {
    value.split(';').next().unwrap_or_default().trim_ascii()
}

/// The answer to a POST's message, once the engine took it: how the answer may travel
/// (the engine's [`Shape`]), and what the client accepts.
pub(crate) struct Answering {
    pub shape: Shape,
    pub accept: Accept,
}

/// Answers as JSON or SSE; `run` produces the answer, sending the requests' notifications to
/// the sink it is given.
pub(crate) async fn respond<F, Fut>(shared: &Arc<HttpShared>, answering: Answering, run: F) -> Response<Body>
where
    F: FnOnce(Option<Sink>) -> Fut,
    Fut: Future<Output = Option<Message<RpcResponse>>> + Send + 'static,
{
    let Answering { shape: Shape { replies, modern, owed, session }, accept } = answering;
    let Some(replies) = replies else {
        // Only notifications, responses or invalid messages: an error is a 400, else 202.
        return match run(None).await {
            Some(answer) => json(StatusCode::BAD_REQUEST, answer.to_line()),
            None => accepted(),
        };
    };
    if replies == Replies::Streams && !accept.sse {
        return http_error(StatusCode::NOT_ACCEPTABLE, "subscriptions/listen requires Accept: text/event-stream");
    }
    let streams = replies == Replies::Streams
        || (!shared.config.json_response && (replies == Replies::MayNotify || !accept.json));
    if accept.sse && streams {
        let resumable = session.filter(|_| !modern).map(|session| Resumable::open(shared, &session));
        return respond_sse(shared, run, modern, owed, resumable).await;
    }
    let answer = if modern {
        run(None).await
    } else {
        // Handshake-era work runs to completion even if the client goes away.
        match tokio::spawn(RequestTrace::current().instrument(run(None))).await {
            Ok(answer) => answer,
            Err(failed) => owed.lost(&failed.to_string()),
        }
    };
    match answer {
        Some(answer) => json(status_of(Standing::of(&answer, modern)), answer.to_line()),
        None => accepted(),
    }
}

/// Notifications a request's SSE stream holds for a client that is not reading.
const QUEUED_NOTIFICATIONS: usize = 1024;

/// Why an answer is owed when a stream's task ends without sending it.
const NO_ANSWER: &str = "the task answering it ended without an answer";

enum Event {
    Note(Bytes),
    /// The answer, and its event (boxed: the queue's slots are the size of an event, and a
    /// listen stream's queue lives as long as the stream).
    Done(Box<(Option<Message<RpcResponse>>, Option<Bytes>)>),
}

/// A handshake-era POST's resumable stream: its writer, its priming event (2025-11-25),
/// and when duet ends it for the client to poll.
struct Resumable {
    stream: Arc<PostStream>,
    priming: Option<Bytes>,
    close_after: Option<Duration>,
}

impl Resumable {
    fn open(shared: &Arc<HttpShared>, session: &Hosted) -> Self {
        let (stream, name) = PostStream::open(&shared.streams, &session.id);
        let primes = session.session.protocol_version().is_some_and(Version::primes_streams);
        let priming = primes.then(|| body::priming(&name.priming_id(None), shared.config.sse_retry));
        let close_after = shared.config.sse_close_after.filter(|_| primes);
        Resumable { stream, priming, close_after }
    }
}

/// How a stream's events are written: plain, or with ids and kept for a client that
/// resumes.
#[derive(Clone)]
enum Framing {
    Plain,
    Resumable(Arc<PostStream>),
}

impl Framing {
    fn frame(&self, line: &str, last: bool) -> Bytes {
        match self {
            Framing::Plain => body::message(line),
            Framing::Resumable(stream) => stream.frame(line, last),
        }
    }

    fn done(&self, answer: Option<&Message<RpcResponse>>) -> Option<Bytes> {
        answer.map(|a| self.frame(&a.to_line(), true))
    }
}

/// What the rest of a stream reads: its events, what it owes if they end without the
/// answer, and, when resumable, its writer and when it closes.
struct Rest {
    rx: mpsc::Receiver<Event>,
    owed: Owed,
    framing: Framing,
    detach: Option<Detach>,
    close_at: Option<tokio::time::Instant>,
}

/// An SSE stream scoped to the request: its notifications, then its response. The head
/// waits for the first message, so an error that has its own status (404, 400) is answered
/// as plain JSON with that status. A 2026 request is cancelled when the client goes away,
/// so it runs here until its first message: one that ends before sending a notification
/// (most do) is answered as one event without a task or a stream. Handshake-era work runs
/// on its own task, to completion even if the client goes away; its stream is resumable,
/// starts with a priming event on 2025-11-25, and may be ended early for the client to
/// poll. A task that ends without its answer leaves the stream with the answer `owed`.
async fn respond_sse<F, Fut>(
    shared: &HttpShared,
    run: F,
    modern: bool,
    owed: Owed,
    resumable: Option<Resumable>,
) -> Response<Body>
where
    F: FnOnce(Option<Sink>) -> Fut,
    Fut: Future<Output = Option<Message<RpcResponse>>> + Send + 'static,
{
    let framing = resumable.as_ref().map_or(Framing::Plain, |r| Framing::Resumable(r.stream.clone()));
    let (tx, mut rx) = mpsc::channel::<Event>(QUEUED_NOTIFICATIONS);
    let sink: Sink = {
        let (tx, framing) = (tx.clone(), framing.clone());
        Arc::new(move |note: Value| {
            // A client that stops reading stops the stream; past the queue its request's
            // notifications are dropped rather than held.
            let event = Event::Note(framing.frame(&encode(&note), false));
            if let Err(mpsc::error::TrySendError::Full(_)) = tx.try_send(event) {
                tracing::debug!("the client is not reading its stream; a notification dropped");
            }
        })
    };
    let cancel = CancellationToken::new();
    let handled = run(Some(sink));
    let run = {
        let (cancel, framing) = (cancel.clone(), framing.clone());
        RequestTrace::current().instrument(async move {
            let answer = tokio::select! {
                biased;
                _ = cancel.cancelled() => None,
                answer = handled => answer,
            };
            let bytes = framing.done(answer.as_ref());
            // The answer waits for room: it is never dropped.
            let _ = tx.send(Event::Done(Box::new((answer, bytes)))).await;
        })
    };
    let keepalive = shared.config.keepalive_interval;
    let close_after = resumable.as_ref().and_then(|r| r.close_after);
    let close_at = close_after.map(|after| tokio::time::Instant::now() + after);
    // Past the first wait the head goes out: a stream duet may close must be open first.
    let first_wait = close_after.map_or(keepalive, |after| after.min(keepalive));
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
        tokio::time::timeout(first_wait, rx.recv()).await.ok()
    };
    let priming = resumable.as_ref().and_then(|r| r.priming.clone());
    let primed = |bytes: Bytes| match &priming {
        Some(priming) => [priming.clone(), bytes].concat().into(),
        None => bytes,
    };
    let first = match first {
        Some(Some(Event::Done(done))) => {
            let (answer, bytes) = *done;
            if let Some(answer) = answer.filter(|a| Standing::of(a, modern) != Standing::Answered) {
                return json(status_of(Standing::of(&answer, modern)), answer.to_line());
            }
            return sse_response(body::full(primed(bytes.unwrap_or_default())));
        }
        Some(Some(Event::Note(bytes))) => primed(bytes),
        Some(None) => {
            let lost = framing.done(owed.lost(NO_ANSWER).as_ref());
            return sse_response(body::full(primed(lost.unwrap_or_default())));
        }
        None => priming.clone().unwrap_or_else(|| Bytes::from_static(body::KEEPALIVE)),
    };
    // From here on, the client going away (the body dropped) cancels a 2026 request, and
    // sends a handshake-era stream's events to the log for the client to pick up.
    let guard = modern.then(|| cancel.drop_guard());
    let detach = resumable.map(|r| Detach { stream: r.stream, finished: false });
    let rest = Rest { rx, owed, framing, detach, close_at };
    let rest = futures::stream::unfold(Some(rest), |rest| async move {
        let mut rest = rest?;
        let closes = async {
            match rest.close_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let event = tokio::select! {
            event = rest.rx.recv() => event,
            // Ended before its answer: the client resumes it with a GET (SEP-1699).
            _ = closes => return None,
        };
        match event {
            Some(Event::Note(bytes)) => Some((bytes, Some(rest))),
            Some(Event::Done(done)) => rest.finish(done.1),
            None => {
                let owed = std::mem::replace(&mut rest.owed, Owed::Nothing);
                let lost = rest.framing.done(owed.lost(NO_ANSWER).as_ref());
                rest.finish(lost)
            }
        }
    });
    let events = futures::StreamExt::chain(futures::stream::iter([first]), rest);
    sse_response(body::sse(events, keepalive, guard))
}

impl Rest {
    /// The stream's last event: nothing is left for a client to resume.
    fn finish(mut self, last: Option<Bytes>) -> Option<(Bytes, Option<Rest>)> {
        if let Some(detach) = &mut self.detach {
            detach.finished = true;
        }
        last.map(|bytes| (bytes, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> Accept {
        let mut h = HeaderMap::new();
        h.insert(h::ACCEPT, v.parse().unwrap());
        Accept::parse(&h)
    }

    /// The status and body of a handshake-era answer to request 7 that `run` produces.
    async fn answer_of<F, Fut>(accept: Accept, run: F) -> (StatusCode, String)
    where
        F: FnOnce(Option<Sink>) -> Fut,
        Fut: Future<Output = Option<Message<RpcResponse>>> + Send + 'static,
    {
        use crate::layer::{Registry, ServerInfo};
        use crate::protocol::Server;
        use duet_wire::jsonrpc::RequestId;
        use http_body_util::BodyExt;
        let registry = Registry::new(ServerInfo::new("t", "1"));
        let server = Server::new(Arc::new(registry), Default::default());
        let service = super::super::McpService::new(server, Default::default());
        let owed = Owed::One(RequestId::Int(7));
        let shape = Shape { replies: Some(Replies::MayNotify), modern: false, owed, session: None };
        let answering = Answering { shape, accept };
        let response = respond(&service.shared, answering, run).await;
        let status = response.status();
        let body = response.into_body().collect().await.expect("a body").to_bytes();
        (status, String::from_utf8(body.to_vec()).expect("UTF-8"))
    }

    #[tokio::test]
    async fn a_lost_task_is_answered_internal_error() {
        let lost = |_| async { panic!("an engine bug") };
        let (status, body) = answer_of(Accept { json: true, sse: false }, lost).await;
        assert_eq!(status, StatusCode::OK, "not 202: {body}");
        let answer: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!((&answer["id"], &answer["error"]["code"]), (&Value::from(7), &Value::from(-32603)));
        let (status, body) = answer_of(Accept { json: false, sse: true }, lost).await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains(r#""id":7"#) && body.contains("-32603"), "an SSE stream with the error: {body:?}");
    }

    #[tokio::test]
    async fn a_stream_holds_a_bounded_number_of_notifications() {
        let chatty = |sink: Option<Sink>| async move {
            let sink = sink.expect("a stream's sink");
            for i in 0..5 * QUEUED_NOTIFICATIONS {
                sink(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": i}}));
            }
            let done = RpcResponse::error(
                Some(duet_wire::jsonrpc::RequestId::Int(7)),
                duet_wire::jsonrpc::RpcError::internal(),
            );
            Some(Message::One(done))
        };
        let (_, body) = answer_of(Accept { json: false, sse: true }, chatty).await;
        let events: Vec<&str> = body.split("\n\n").filter(|e| e.contains("data:")).collect();
        assert!(events.len() <= QUEUED_NOTIFICATIONS + 2, "{} events held", events.len());
        assert!(events.last().is_some_and(|e| e.contains(r#""id":7"#)), "the answer is never dropped");
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
