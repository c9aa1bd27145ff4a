//! The events of one SSE response (a Streamable HTTP POST's or GET's, the legacy
//! transport's stream), read bounded: what the server sends between two events is bounded
//! like any message. A stream that breaks off (the connection dropped) is told apart from
//! one that breaks the rules (an event too large, a line that is no SSE), since only the
//! first may be resumed.

use super::MAX_MESSAGE;
use futures::{Stream, StreamExt};
use sse_stream::{Error as SseError, Sse, SseStream};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A response's events, in order.
pub(super) type Events = Pin<Box<dyn Stream<Item = Result<Sse, SseError>> + Send>>;

/// The events of `response`, each no larger than a message may be.
pub(super) fn events(response: reqwest::Response) -> Events {
    let since_event = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&since_event);
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(io::Error::other)?;
        if counted.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len() > MAX_MESSAGE {
            let why = format!("an event of the server's is larger than {MAX_MESSAGE} bytes");
            return Err(io::Error::new(io::ErrorKind::InvalidData, why));
        }
        Ok(chunk)
    });
    Box::pin(SseStream::from_bytes_stream(bytes).map(move |event| {
        since_event.store(0, Ordering::Relaxed);
        event
    }))
}

/// Whether `error` is the connection breaking off, not the server breaking the rules.
pub(super) fn dropped(error: &SseError) -> bool {
    match error {
        SseError::Body(error) => {
            error.downcast_ref::<io::Error>().is_none_or(|error| error.kind() != io::ErrorKind::InvalidData)
        }
        _ => false,
    }
}

/// The message an event carries: its data, unless it has none (a priming event, a
/// keep-alive) or is an event of another kind than `message` (the legacy `endpoint`).
pub(super) fn message(event: &Sse) -> Option<&str> {
    let kind = event.event.as_deref().unwrap_or("message");
    event.data.as_deref().filter(|data| kind == "message" && !data.is_empty())
}
