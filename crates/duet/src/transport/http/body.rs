//! Response bodies: whole JSON documents, and Server-Sent Events streams that send a
//! keep-alive comment after a quiet interval and end when their source ends.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use http_body::Frame;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use std::convert::Infallible;
use std::time::Duration;

/// The body of every response the HTTP transport sends.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

pub(super) const KEEPALIVE: &[u8] = b": keepalive\n\n";

pub(super) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

pub(super) fn empty() -> Body {
    Empty::new().boxed_unsync()
}

/// One SSE event; `data` is a single line (compact JSON or a URL).
pub(super) fn event(name: &str, data: &str) -> Bytes {
    let mut out = String::with_capacity(data.len() + name.len() + 16);
    out.push_str("event: ");
    out.push_str(name);
    out.push_str("\ndata: ");
    out.push_str(data);
    out.push_str("\n\n");
    Bytes::from(out)
}

/// A JSON-RPC message as an SSE `message` event.
pub(super) fn message(line: &str) -> Bytes {
    event("message", line)
}

/// A JSON-RPC message as an SSE `message` event with an id, so the client can resume
/// after it.
pub(super) fn message_with_id(id: &str, line: &str) -> Bytes {
    Bytes::from(format!("id: {id}\nevent: message\ndata: {line}\n\n"))
}

/// The event that starts a resumable stream (SEP-1699): an id to resume after, no data,
/// and how long the client waits before it reconnects when the stream ends early.
pub(super) fn priming(id: &str, retry: Duration) -> Bytes {
    Bytes::from(format!("id: {id}\nretry: {}\ndata: \n\n", retry.as_millis()))
}

/// An SSE body from `events`, with a keep-alive comment after `keepalive` of silence.
/// `guard` lives as long as the body: dropping the body (the client went away) drops it.
pub(super) fn sse<S, G>(events: S, keepalive: Duration, guard: G) -> Body
where
    S: Stream<Item = Bytes> + Send + 'static,
    G: Send + 'static,
{
    let state = (Box::pin(events), guard);
    let stream = futures::stream::unfold(state, move |(mut events, guard)| async move {
        match tokio::time::timeout(keepalive, events.next()).await {
            Ok(Some(bytes)) => Some((bytes, (events, guard))),
            Ok(None) => None,
            Err(_) => Some((Bytes::from_static(KEEPALIVE), (events, guard))),
        }
    });
    StreamBody::new(stream.map(|b| Ok::<_, Infallible>(Frame::data(b)))).boxed_unsync()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn keepalives_fill_silence() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
        let events = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        let mut body = sse(events, Duration::from_secs(15), ());
        tx.send(message("{}")).unwrap();
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&first[..], b"event: message\ndata: {}\n\n");
        let second = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&second[..], KEEPALIVE);
        drop(tx);
        assert!(body.frame().await.is_none());
    }
}
