//! The deprecated HTTP+SSE transport of 2024-11-05: the client GETs the server's event
//! stream, whose first event (`endpoint`) names where to POST messages, resolved against
//! the stream's URL and refused unless of the same origin. Every answer, notification and
//! request of the server's arrives on the stream, each event bounded; a request of the
//! server's is answered with a POST like any message. One task reads the stream: answers
//! go to the requests waiting for them. A request the caller drops is cancelled with
//! `notifications/cancelled`. Closing ends the stream, and with it the server's session.

use super::Outgoing;
use super::http::failure;
use super::inbound::Inbox;
use super::pending::{Ended, Pending};
use super::routing::{self, Answer};
use super::sse::{self, Events};
use crate::error::Error;
use duet_wire::jsonrpc::RequestId;
use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::Value;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// A server spoken to over the legacy HTTP+SSE transport.
#[derive(Debug)]
pub struct LegacySseTransport {
    poster: Poster,
    pending: Arc<Pending>,
    inbox: Arc<Inbox>,
    reader: JoinHandle<()>,
}

/// Where, and with which HTTP client, the client POSTs its messages.
#[derive(Debug, Clone)]
struct Poster {
    http: reqwest::Client,
    endpoint: reqwest::Url,
}

impl Poster {
    /// A POST of one JSON-RPC text (or of one still to set).
    fn post(&self) -> reqwest::RequestBuilder {
        self.http.post(self.endpoint.clone()).header(CONTENT_TYPE, "application/json")
    }

    /// POSTs `text`; a failure status is an error (the server answers on the stream).
    async fn send(&self, text: String) -> Result<(), Error> {
        let response = self.post().body(text).send().await.map_err(Error::transport)?;
        if response.status().is_success() { Ok(()) } else { Err(failure(response).await) }
    }
}

impl LegacySseTransport {
    /// Connects to the event stream at `url` with a default HTTP client, and waits for the
    /// endpoint it names. Call it within a Tokio runtime.
    pub async fn connect(url: &str) -> Result<LegacySseTransport, Error> {
        LegacySseTransport::connect_with(reqwest::Client::new(), url).await
    }

    /// Connects to the event stream at `url` with `http` (its proxies, default headers such
    /// as a bearer token), and waits for the endpoint it names.
    pub async fn connect_with(http: reqwest::Client, url: &str) -> Result<LegacySseTransport, Error> {
        let url = reqwest::Url::parse(url).map_err(|e| Error::Invalid(format!("the URL {url:?}: {e}")))?;
        let response =
            http.get(url.clone()).header(ACCEPT, "text/event-stream").send().await.map_err(Error::transport)?;
        if !response.status().is_success() {
            return Err(failure(response).await);
        }
        let mut events = sse::events(response);
        let endpoint = endpoint(&url, &mut events).await?;
        let poster = Poster { http, endpoint };
        let abandoning = poster.clone();
        let pending = Pending::new(Box::new(move |id| {
            let notice = abandoning.post().body(Outgoing::cancelled(id, None).text(None));
            // A drop cannot wait: the notice goes from a task of its own.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move { drop(notice.send().await) });
            }
        }));
        let inbox = Inbox::new();
        let reader = tokio::spawn(read(events, poster.clone(), Arc::clone(&pending), Arc::clone(&inbox)));
        Ok(LegacySseTransport { poster, pending, inbox, reader })
    }

    /// Where the client posts its messages, as the server named it.
    pub fn endpoint(&self) -> &str {
        self.poster.endpoint.as_str()
    }

    pub(super) fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    pub(super) async fn request(&self, id: &RequestId, out: &Outgoing) -> Result<Value, Error> {
        let waiter = self.pending.register(id.clone())?;
        self.poster.send(out.text(Some(id))).await?;
        waiter.answer().await
    }

    pub(super) async fn notify(&self, out: &Outgoing) -> Result<(), Error> {
        self.poster.send(out.text(None)).await
    }

    /// Ends the stream (the server ends the session with it); requests still waiting fail.
    pub(super) async fn close(mut self) {
        self.reader.abort();
        // Once the reader is gone, so is the stream's connection.
        let _ = (&mut self.reader).await;
    }
}

impl Drop for LegacySseTransport {
    fn drop(&mut self) {
        self.reader.abort();
        self.pending.end(Ended::Closed);
    }
}

/// The URL the stream's `endpoint` event names, resolved against the stream's `url`; one
/// of another origin is refused (messages go only where the stream came from).
async fn endpoint(url: &reqwest::Url, events: &mut Events) -> Result<reqwest::Url, Error> {
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| Error::Protocol(format!("the server's event stream: {e}")))?;
        if event.event.as_deref() != Some("endpoint") {
            continue;
        }
        let named = event.data.unwrap_or_default();
        let endpoint = url
            .join(named.trim())
            .map_err(|e| Error::Protocol(format!("the server's endpoint {named:?} is no URL: {e}")))?;
        if endpoint.origin() != url.origin() {
            return Err(Error::Protocol(format!("the server's endpoint {endpoint} is not of the origin of {url}")));
        }
        return Ok(endpoint);
    }
    Err(Error::Transport("the server's event stream ended before it named its endpoint".into()))
}

/// Reads the stream until it ends or breaks the rules, routing each message: answers to
/// the waiting requests, the rest to the inbox, whose answers to the server's requests are
/// POSTed through `poster`.
async fn read(mut events: Events, poster: Poster, pending: Arc<Pending>, inbox: Arc<Inbox>) {
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) if sse::dropped(&error) => break,
            Err(error) => return pending.end(Ended::Broken(format!("the server's event stream: {error}"))),
        };
        let Some(text) = sse::message(&event) else { continue };
        if let Some(Answer { id: Some(id), outcome }) = routing::route(text.as_bytes(), &inbox, || poster.post()) {
            pending.resolve(&id, outcome.map_err(Error::Rpc));
        }
    }
    pending.end(Ended::Closed);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The endpoint a stream of `body`, read from `url`, names.
    async fn named(url: &str, body: &'static str) -> Result<reqwest::Url, Error> {
        let response = reqwest::Response::from(http::Response::new(body));
        endpoint(&reqwest::Url::parse(url).unwrap(), &mut sse::events(response)).await
    }

    #[tokio::test]
    async fn the_endpoint_is_resolved_against_the_stream_and_kept_to_its_origin() {
        let stream = "http://127.0.0.1:8080/mcp/sse";
        let relative = named(stream, ": hi\n\nevent: endpoint\ndata: messages?session_id=7\n\n").await.unwrap();
        assert_eq!(relative.as_str(), "http://127.0.0.1:8080/mcp/messages?session_id=7");
        let absolute = named(stream, "event: endpoint\ndata: http://127.0.0.1:8080/m\n\n").await.unwrap();
        assert_eq!(absolute.as_str(), "http://127.0.0.1:8080/m");
        for elsewhere in ["//evil.example/m", "https://127.0.0.1:8080/m", "http://127.0.0.1:9090/m"] {
            let body: &'static str = format!("event: endpoint\ndata: {elsewhere}\n\n").leak();
            assert!(matches!(named(stream, body).await, Err(Error::Protocol(_))), "{elsewhere}");
        }
        assert!(matches!(named(stream, "data: {}\n\n").await, Err(Error::Transport(_))), "no endpoint named");
    }
}
