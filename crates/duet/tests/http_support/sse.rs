//! Server-Sent Events: [`SseEvent`], the parsing of an event's block of lines, and
//! [`EventStream`], an open stream read event by event.

use super::{Checker, bounded, header_of};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The event's `id`, if it has one.
    pub id: Option<String>,
    /// The `retry` interval in milliseconds.
    pub retry: Option<u64>,
    /// Its `event` type (`message` for JSON-RPC).
    pub event: Option<String>,
    /// Its `data` lines, joined.
    pub data: String,
}

impl SseEvent {
    /// The event that starts a resumable 2025-11-25 stream: an id, no data.
    pub fn is_priming(&self) -> bool {
        self.id.is_some() && self.event.is_none() && self.data.is_empty()
    }

    /// The data as JSON, which it must be.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("event data is not JSON ({e}): {:?}", self.data))
    }
}

/// An event from its block of lines; `None` for a block of comments only.
pub(super) fn parse_event(block: &str) -> Option<SseEvent> {
    let (mut id, mut retry, mut event) = (None, None, None);
    let mut data: Option<String> = None;
    for line in block.lines() {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = Some(value.to_string()),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_string()),
            },
            "id" => id = Some(value.to_string()),
            "retry" => retry = Some(value.parse().unwrap_or_else(|_| panic!("a retry that is no number: {block:?}"))),
            other => panic!("an unknown SSE field {other:?} in {block:?}"),
        }
    }
    if id.is_none() && retry.is_none() && event.is_none() && data.is_none() {
        return None;
    }
    Some(SseEvent { id, retry, event, data: data.unwrap_or_default() })
}

/// An open event stream read event by event (a GET stream, a legacy stream, a listen
/// stream, or a request stream). Dropping it closes the connection.
pub struct EventStream {
    /// The HTTP status.
    pub status: StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    response: reqwest::Response,
    buf: Vec<u8>,
    checker: Checker,
    /// Comments (keep-alives) seen so far.
    pub comments: usize,
}

impl EventStream {
    pub(super) fn new(response: reqwest::Response, checker: Checker) -> EventStream {
        EventStream {
            status: response.status(),
            headers: response.headers().clone(),
            response,
            buf: Vec::new(),
            checker,
            comments: 0,
        }
    }

    /// The (first) value of header `name`, when it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        header_of(&self.headers, name)
    }

    /// The next event, or `None` when the stream ended; within [`WAIT`].
    pub async fn next_event(&mut self) -> Option<SseEvent> {
        bounded("the next SSE event", self.read_event()).await
    }

    async fn read_event(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..end + 2).collect();
                let block = String::from_utf8(block).expect("events are UTF-8");
                match parse_event(&block) {
                    Some(event) => return Some(event),
                    None => {
                        self.comments += 1;
                        continue;
                    }
                }
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.buf.extend(chunk.iter().filter(|b| **b != b'\r')),
                Ok(None) => {
                    assert!(self.buf.is_empty(), "the stream ended inside an event: {:?}", self.buf);
                    return None;
                }
                Err(e) => panic!("reading the event stream fails: {e}"),
            }
        }
    }

    /// The next JSON-RPC message (checked), past a priming event; the stream must not end
    /// first.
    pub async fn next_message(&mut self) -> Value {
        let mut event = self.next_event().await.expect("the stream ended before the next message");
        if event.is_priming() {
            event = self.next_event().await.expect("the stream ended before the next message");
        }
        assert_eq!(event.event.as_deref(), Some("message"), "{event:?}");
        let message = event.json();
        self.checker.check(&message);
        message
    }

    /// Reads messages until a notification of each of `methods` arrived; returns all
    /// messages read.
    pub async fn until_notified(&mut self, methods: &[&str]) -> Vec<Value> {
        let mut seen = Vec::new();
        while !methods.iter().all(|m| seen.iter().any(|s: &Value| s.get("id").is_none() && s["method"] == *m)) {
            seen.push(self.next_message().await);
        }
        seen
    }

    /// The stream ends (within [`WAIT`]) with no further event but a priming one.
    pub async fn expect_end(&mut self) {
        while let Some(event) = self.next_event().await {
            assert!(event.is_priming(), "expected the end of the stream, got {event:?}");
        }
    }
}
