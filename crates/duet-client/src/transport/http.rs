//! A Streamable HTTP endpoint: one POST per message. An answer comes as JSON or as an SSE
//! stream (notifications, then the response). A handshake-era session's `Mcp-Session-Id`,
//! set on the answer to `initialize`, goes on every later message, and closing deletes the
//! session. Once the handshake is done the session's GET stream is opened (`listen.rs`);
//! an SSE stream that breaks off before its answer is resumed (`resume.rs`), and the
//! server's requests on any stream are answered (`routing.rs`). A 2026 request carries the
//! headers that mirror its body: `Mcp-Method`, and `Mcp-Name` for a method that names a
//! primitive (spelled as `=?base64?…?=` when plain ASCII cannot carry it). Every body is
//! read bounded. A handshake-era request the caller drops is cancelled with
//! `notifications/cancelled`; a 2026 one by its stream closing. With an [`Authorizer`],
//! every request (POST, GET, DELETE) carries its token (and DPoP proof), and a 401 or 403
//! is handed to it: when it has a (new) token, the message is sent again.

use super::inbound::{self, Inbound, Inbox};
use super::listen::Listening;
use super::resume::{Resume, Resuming};
use super::routing::{self, Answer};
use super::{MAX_MESSAGE, Outgoing};
use crate::error::Error;
use crate::oauth::Authorizer;
use bytes::{Bytes, BytesMut};
use duet_wire::headers;
use duet_wire::jsonrpc::RequestId;
use duet_wire::method::Method;
use duet_wire::version::Version;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// The header that names the last event a client saw of a stream it resumes.
const LAST_EVENT_ID: &str = "last-event-id";
/// How much of a failure's body an error quotes.
const QUOTED: usize = 200;
/// How many times one message is sent again after its authorizer answered a challenge.
const MAX_CHALLENGES: usize = 3;

/// A Streamable HTTP endpoint the client posts to.
#[derive(Debug)]
pub struct HttpTransport {
    endpoint: Arc<Endpoint>,
    /// The session's GET stream, once opened; dropped, it is ended.
    listening: Mutex<Option<Listening>>,
}

/// What the transport's requests and the session's GET stream share: the endpoint, the
/// session, the channel to the caller, the caller's handlers.
#[derive(Debug)]
pub(super) struct Endpoint {
    http: reqwest::Client,
    url: reqwest::Url,
    session: Mutex<Option<HeaderValue>>,
    inbox: Arc<Inbox>,
    /// Where the tokens come from, for a protected server.
    authorizer: OnceLock<Arc<Authorizer>>,
}

impl HttpTransport {
    /// The endpoint at `url`, reached with a default HTTP client.
    pub fn new(url: &str) -> Result<HttpTransport, Error> {
        HttpTransport::with_client(reqwest::Client::new(), url)
    }

    /// The endpoint at `url`, reached with `http` (its proxies, timeouts, default headers
    /// such as a bearer token).
    pub fn with_client(http: reqwest::Client, url: &str) -> Result<HttpTransport, Error> {
        let url = reqwest::Url::parse(url).map_err(|e| Error::Invalid(format!("the URL {url:?}: {e}")))?;
        let endpoint =
            Endpoint { http, url, session: Mutex::new(None), inbox: Inbox::new(), authorizer: OnceLock::new() };
        Ok(HttpTransport { endpoint: Arc::new(endpoint), listening: Mutex::new(None) })
    }

    /// The endpoint, protected: `authorizer` gets the tokens its requests carry (the first
    /// one given stays).
    pub fn with_authorizer(self, authorizer: Arc<Authorizer>) -> HttpTransport {
        let _ = self.endpoint.authorizer.set(authorizer);
        self
    }

    /// The handshake-era session the server set, if any.
    pub fn session_id(&self) -> Option<String> {
        self.endpoint.session().and_then(|value| value.to_str().ok().map(str::to_owned))
    }

    pub(super) fn inbox(&self) -> &Inbox {
        &self.endpoint.inbox
    }

    pub(super) async fn request(&self, id: &RequestId, out: &Outgoing) -> Result<Value, Error> {
        let cancel = CancelOnDrop::new(&self.endpoint, id, out.version);
        let answer = self.exchange(id, out).await;
        cancel.disarm();
        answer
    }

    /// POSTs request `id` and reads its answer.
    async fn exchange(&self, id: &RequestId, out: &Outgoing) -> Result<Value, Error> {
        let endpoint = &self.endpoint;
        let response = endpoint.post(out, Some(id)).await?;
        if out.method == Method::Initialize
            && let Some(session) = response.headers().get(headers::SESSION_ID)
        {
            *lock(&endpoint.session) = Some(session.clone());
        }
        let streamed = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|kind| kind.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        if streamed {
            return endpoint.streamed_answer(response, id, out.version).await;
        }
        let body = bounded_body(response).await?;
        match inbound::decode(&body) {
            Inbound::Answer { id: Some(answered), outcome } if answered == *id => outcome.map_err(Error::Rpc),
            _ => Err(Error::Protocol(format!("the answer to {} is not its JSON-RPC response", out.method))),
        }
    }

    /// POSTs a notification; after `notifications/initialized` the session's GET stream is
    /// opened, for what the server sends outside any request.
    pub(super) async fn notify(&self, out: &Outgoing) -> Result<(), Error> {
        self.endpoint.post(out, None).await?;
        if let (Method::Initialized, Some(version)) = (&out.method, out.version) {
            let listening = Listening::open(&self.endpoint, version).await;
            *lock(&self.listening) = Some(listening);
        }
        Ok(())
    }

    /// Ends the session's GET stream and deletes the handshake-era session, if there is
    /// one; a server that does not allow it (405) or no longer knows it is left be.
    pub(super) async fn close(self) {
        drop(lock(&self.listening).take());
        let endpoint = &self.endpoint;
        if endpoint.session().is_some() {
            let _ = endpoint.base(reqwest::Method::DELETE, None).send().await;
        }
    }
}

/// The value behind `mutex`, even if a holder panicked.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Endpoint {
    fn session(&self) -> Option<HeaderValue> {
        lock(&self.session).clone()
    }

    /// Reads a request's SSE answer: the server's messages until the response to `id`,
    /// the stream resumed when it breaks off before.
    async fn streamed_answer(
        self: &Arc<Self>,
        response: reqwest::Response,
        id: &RequestId,
        version: Option<Version>,
    ) -> Result<Value, Error> {
        let mut stream = Resuming::new(Arc::clone(self), version, response, Resume::AfterAnEvent);
        while let Some(text) = stream.next().await? {
            if let Some(Answer { id: Some(answered), outcome }) = self.route(&text, version)
                && answered == *id
            {
                return outcome.map_err(Error::Rpc);
            }
        }
        Err(Error::Transport("the server's event stream ended before its answer".into()))
    }

    /// Sorts one message of the server's, sent in `version` ([`routing::route`]).
    pub(super) fn route(&self, text: &str, version: Option<Version>) -> Option<Answer> {
        routing::route(text.as_bytes(), &self.inbox, || self.base(reqwest::Method::POST, version))
    }

    /// POSTs one message; a failure status is an error. A 401 or 403 the authorizer
    /// answers with a token sends it again.
    async fn post(&self, out: &Outgoing, id: Option<&RequestId>) -> Result<reqwest::Response, Error> {
        let mut challenges = 0;
        loop {
            let authorizer = self.authorizer.get();
            let sent = authorizer.and_then(|authorizer| authorizer.bearer(&self.url));
            let response = self.builder(out, id).send().await.map_err(|e| Error::transport_with_causes(&e))?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let challenged = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
            match authorizer {
                Some(authorizer)
                    if challenged
                        && challenges < MAX_CHALLENGES
                        && authorizer.answer(&self.url, status, response.headers(), sent.as_deref()).await? =>
                {
                    challenges += 1;
                }
                _ => return Err(failure(response).await),
            }
        }
    }

    /// A GET of the session's stream, or of the rest of a broken one after
    /// `last_event_id`.
    pub(super) fn get(&self, version: Version, last_event_id: Option<&str>) -> reqwest::RequestBuilder {
        let get = self.base(reqwest::Method::GET, Some(version)).header(ACCEPT, "text/event-stream");
        match last_event_id {
            Some(last) => get.header(LAST_EVENT_ID, last),
            None => get,
        }
    }

    /// A request to the endpoint with the headers every one carries: the revision, once
    /// known, the session, and the authorizer's token for this method.
    fn base(&self, method: reqwest::Method, version: Option<Version>) -> reqwest::RequestBuilder {
        let credentials = self.authorizer.get().map(|a| a.headers(&self.url, method.as_str())).unwrap_or_default();
        let mut request = self.http.request(method, self.url.clone());
        for (name, value) in credentials {
            request = request.header(name, value);
        }
        if let Some(version) = version {
            request = request.header(headers::PROTOCOL_VERSION, version.as_str());
        }
        if let Some(session) = self.session() {
            request = request.header(headers::SESSION_ID, session);
        }
        request
    }

    /// The POST of one message, with the headers it needs.
    fn builder(&self, out: &Outgoing, id: Option<&RequestId>) -> reqwest::RequestBuilder {
        let mut post = self
            .base(reqwest::Method::POST, out.version)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(out.text(id));
        if let Some(version) = out.version
            && version.is_modern()
        {
            post = post.header(headers::METHOD, out.method.as_str());
            if let Some(name) = out.name() {
                post = post.header(headers::NAME, headers::encode(name).as_ref());
            }
            for (header, value) in &out.mirrored {
                post = post.header(header, headers::encode(value).as_ref());
            }
        }
        post
    }
}

/// A handshake-era request's `notifications/cancelled`, sent when the caller drops the
/// request before its answer (from a task of its own: a drop cannot wait). A 2026 request
/// needs none: its stream closing cancels it.
struct CancelOnDrop {
    notice: Option<reqwest::RequestBuilder>,
}

impl CancelOnDrop {
    /// Ready to cancel request `id` when it is of a handshake revision (not `initialize`,
    /// which is sent before one is agreed, and must not be cancelled).
    fn new(endpoint: &Endpoint, id: &RequestId, version: Option<Version>) -> CancelOnDrop {
        let handshake = version.filter(|version| !version.is_modern());
        CancelOnDrop {
            notice: handshake.map(|version| endpoint.builder(&Outgoing::cancelled(id, Some(version)), None)),
        }
    }

    /// The request was answered (or failed): nothing to cancel.
    fn disarm(mut self) {
        self.notice = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let (Some(notice), Ok(runtime)) = (self.notice.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(async move {
                let _ = notice.send().await;
            });
        }
    }
}

/// The error a failure status stands for: the JSON-RPC error of its body, or the status.
pub(super) async fn failure(response: reqwest::Response) -> Error {
    let status = response.status().as_u16();
    match bounded_body(response).await {
        Ok(body) => match inbound::decode(&body) {
            Inbound::Answer { outcome: Err(error), .. } => Error::Rpc(error),
            _ => {
                let text = String::from_utf8_lossy(&body);
                Error::Http { status, body: text.chars().take(QUOTED).collect() }
            }
        },
        Err(_) => Error::Http { status, body: String::new() },
    }
}

/// A whole body, no larger than one message may be.
async fn bounded_body(mut response: reqwest::Response) -> Result<Bytes, Error> {
    let too_large = || Error::Protocol(format!("the server's answer is larger than {MAX_MESSAGE} bytes"));
    if response.content_length().is_some_and(|length| length > MAX_MESSAGE as u64) {
        return Err(too_large());
    }
    let mut body = BytesMut::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| Error::transport_with_causes(&e))? {
        if body.len() + chunk.len() > MAX_MESSAGE {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}
