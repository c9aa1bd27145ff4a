//! A handshake-era SSE stream (a POST's answer, the session's GET stream) read message by
//! message across breaks: when it breaks off or ends early, the client waits the server's
//! `retry` (the last one the stream sent, else a second) and GETs the rest with
//! `Last-Event-ID`, the last event id it saw. A POST's stream can only be picked up after
//! an event with an id; the session's GET stream is opened afresh without one. Attempts
//! are bounded: a stream resumed too many times in a row without bringing a message is
//! given up. A 2026 stream is never resumed: closing it cancels its request.

use super::http::{Endpoint, failure};
use super::sse::{self, Events};
use crate::error::Error;
use duet_wire::version::Version;
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;

/// How long the client waits before it resumes a stream whose server named no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The longest `retry` the client waits, whatever the server asks.
const MAX_RETRY: Duration = Duration::from_secs(60);
/// How many times in a row a stream is resumed (or tried) without bringing a message
/// before the client gives it up.
const MAX_FRUITLESS: usize = 5;

/// Which streams may be picked up again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resume {
    /// Only after an event with an id (a POST's stream: a fresh GET would not carry its
    /// answer).
    AfterAnEvent,
    /// Always, from the last event seen if any (the session's GET stream).
    Always,
}

/// A stream of the server's messages that resumes itself.
pub(super) struct Resuming {
    endpoint: Arc<Endpoint>,
    version: Option<Version>,
    resume: Resume,
    /// The events of the response being read; `None` once it ended.
    events: Option<Events>,
    last_event_id: Option<String>,
    retry: Duration,
    /// Resumptions since the last message.
    fruitless: usize,
}

impl Resuming {
    /// Reads `response`, a stream of `endpoint`'s in `version`.
    pub(super) fn new(
        endpoint: Arc<Endpoint>,
        version: Option<Version>,
        response: reqwest::Response,
        resume: Resume,
    ) -> Resuming {
        Resuming {
            endpoint,
            version,
            resume,
            events: Some(sse::events(response)),
            last_event_id: None,
            retry: DEFAULT_RETRY,
            fruitless: 0,
        }
    }

    /// The next message's text; `None` once the stream ended and cannot be resumed. A
    /// server that breaks the rules of SSE, or refuses the GET that resumes, is an error.
    pub(super) async fn next(&mut self) -> Result<Option<String>, Error> {
        loop {
            let Some(events) = self.events.as_mut() else {
                if self.reopen().await? {
                    continue;
                }
                return Ok(None);
            };
            match events.next().await {
                Some(Ok(event)) => {
                    if let Some(id) = &event.id {
                        // An empty id forgets the last one (the SSE rule).
                        self.last_event_id = Some(id.clone()).filter(|id| !id.is_empty());
                    }
                    if let Some(retry) = event.retry {
                        self.retry = Duration::from_millis(retry).min(MAX_RETRY);
                    }
                    if let Some(message) = sse::message(&event) {
                        self.fruitless = 0;
                        return Ok(Some(message.to_owned()));
                    }
                }
                Some(Err(error)) if !sse::dropped(&error) || self.resumable().is_none() => {
                    return Err(Error::Protocol(format!("the server's event stream: {error}")));
                }
                Some(Err(_)) | None => self.events = None,
            }
        }
    }

    /// The revision to resume in, when the stream may be resumed at all.
    fn resumable(&self) -> Option<Version> {
        let picks_up = self.resume == Resume::Always || self.last_event_id.is_some();
        self.version.filter(|version| !version.is_modern() && picks_up)
    }

    /// Waits and GETs the rest of the stream: `false` when it may not be resumed, or was
    /// tried too often.
    async fn reopen(&mut self) -> Result<bool, Error> {
        while let Some(version) = self.resumable()
            && self.fruitless < MAX_FRUITLESS
        {
            self.fruitless += 1;
            tokio::time::sleep(self.retry).await;
            match self.endpoint.get(version, self.last_event_id.as_deref()).send().await {
                Ok(response) if response.status().is_success() => {
                    self.events = Some(sse::events(response));
                    return Ok(true);
                }
                Ok(refused) => return Err(failure(refused).await),
                // The server cannot be reached for now: another attempt, while they last.
                Err(_) => {}
            }
        }
        Ok(false)
    }
}
