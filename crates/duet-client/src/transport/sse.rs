//! A request's answer as an SSE stream (Streamable HTTP): the server's notifications on the
//! way, then the response, read event by event. What the server sends between two events
//! is bounded like any message. Requests of the server's on the stream are passed over (not
//! yet answered over HTTP).

use super::MAX_MESSAGE;
use super::inbound::{self, Inbound, Notices};
use crate::error::Error;
use duet_wire::jsonrpc::RequestId;
use futures::StreamExt;
use serde_json::Value;
use sse_stream::SseStream;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Reads `response`'s events until the response to `id`, delivering notifications on the
/// way.
pub(super) async fn answer(response: reqwest::Response, id: &RequestId, notices: &Notices) -> Result<Value, Error> {
    let since_event = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&since_event);
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(io::Error::other)?;
        if counted.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len() > MAX_MESSAGE {
            return Err(io::Error::other(format!("an event of the server's is larger than {MAX_MESSAGE} bytes")));
        }
        Ok(chunk)
    });
    let mut events = std::pin::pin!(SseStream::from_bytes_stream(bytes));
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| Error::Protocol(format!("the server's event stream: {e}")))?;
        since_event.store(0, Ordering::Relaxed);
        // Events without data (a priming event, a keep-alive) carry no message.
        let Some(data) = event.data.filter(|data| !data.is_empty()) else { continue };
        match inbound::decode(data.as_bytes()) {
            Inbound::Answer { id: Some(answered), outcome } if answered == *id => return outcome.map_err(Error::Rpc),
            Inbound::Notification(notification) => notices.deliver(notification),
            Inbound::Answer { .. } | Inbound::Request(_) | Inbound::Unusable => {}
        }
    }
    Err(Error::Transport("the server's event stream ended before its answer".into()))
}
