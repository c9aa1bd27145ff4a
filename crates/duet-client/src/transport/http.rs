//! A Streamable HTTP endpoint: one POST per message. An answer comes as JSON or as an SSE
//! stream (notifications, then the response). A handshake-era session's `Mcp-Session-Id`,
//! set on the answer to `initialize`, goes on every later message, and closing deletes the
//! session. A 2026 request carries the headers that mirror its body: `Mcp-Method`, and
//! `Mcp-Name` for a method that names a primitive (spelled as `=?base64?…?=` when plain
//! ASCII cannot carry it). Every body is read bounded. A handshake-era request the caller
//! drops is cancelled with `notifications/cancelled`; a 2026 one by its stream closing.
//! With an [`Authorizer`], every message carries its token (and DPoP proof), and a 401 or 403 is
//! handed to it: when it has a (new) token, the message is sent again.

use super::inbound::{self, Inbound, Notices};
use super::{MAX_MESSAGE, Outgoing, sse};
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
use std::sync::{Arc, Mutex};

/// How much of a failure's body an error quotes.
const QUOTED: usize = 200;

/// How many times one message is sent again after its authorizer answered a challenge.
const MAX_CHALLENGES: usize = 3;

/// A Streamable HTTP endpoint the client posts to.
#[derive(Debug)]
pub struct HttpTransport {
    http: reqwest::Client,
    url: reqwest::Url,
    session: Mutex<Option<HeaderValue>>,
    notices: Notices,
    authorizer: Option<Arc<Authorizer>>,
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
        Ok(HttpTransport { http, url, session: Mutex::new(None), notices: Notices::new(), authorizer: None })
    }

    /// The endpoint, protected: `authorizer` gets the tokens its requests carry.
    pub fn with_authorizer(mut self, authorizer: Arc<Authorizer>) -> HttpTransport {
        self.authorizer = Some(authorizer);
        self
    }

    /// The handshake-era session the server set, if any.
    pub fn session_id(&self) -> Option<String> {
        self.session().and_then(|value| value.to_str().ok().map(str::to_owned))
    }

    fn session(&self) -> Option<HeaderValue> {
        self.session.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    pub(super) fn notices(&self) -> &Notices {
        &self.notices
    }

    pub(super) async fn request(&self, id: &RequestId, out: &Outgoing) -> Result<Value, Error> {
        let cancel = CancelOnDrop::new(self, id, out.version);
        let answer = self.exchange(id, out).await;
        cancel.disarm();
        answer
    }

    /// POSTs request `id` and reads its answer.
    async fn exchange(&self, id: &RequestId, out: &Outgoing) -> Result<Value, Error> {
        let response = self.post(out, Some(id)).await?;
        if out.method == Method::Initialize
            && let Some(session) = response.headers().get(headers::SESSION_ID)
        {
            *self.session.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(session.clone());
        }
        let streamed = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|kind| kind.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        if streamed {
            return sse::answer(response, id, &self.notices).await;
        }
        let body = bounded_body(response).await?;
        match inbound::decode(&body) {
            Inbound::Answer { id: Some(answered), outcome } if answered == *id => outcome.map_err(Error::Rpc),
            _ => Err(Error::Protocol(format!("the answer to {} is not its JSON-RPC response", out.method))),
        }
    }

    pub(super) async fn notify(&self, out: &Outgoing) -> Result<(), Error> {
        self.post(out, None).await.map(drop)
    }

    /// Deletes the handshake-era session, if there is one; a server that does not allow it
    /// (405) or no longer knows it is left be.
    pub(super) async fn close(self) {
        if let Some(session) = self.session() {
            let mut delete = self.http.delete(self.url.clone()).header(headers::SESSION_ID, session);
            for (name, value) in self.credentials("DELETE") {
                delete = delete.header(name, value);
            }
            let _ = delete.send().await;
        }
    }

    /// POSTs one message; a failure status is an error. A 401 or 403 the authorizer
    /// answers with a token sends it again.
    async fn post(&self, out: &Outgoing, id: Option<&RequestId>) -> Result<reqwest::Response, Error> {
        let mut challenges = 0;
        loop {
            let sent = self.bearer();
            let response = self.builder(out, id).send().await.map_err(Error::transport)?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let challenged = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
            match &self.authorizer {
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

    /// The authorizer's token for this endpoint, if it has one.
    fn bearer(&self) -> Option<String> {
        self.authorizer.as_ref().and_then(|authorizer| authorizer.bearer(&self.url))
    }

    /// The headers that present the authorizer's token with a `method` request.
    fn credentials(&self, method: &str) -> Vec<(&'static str, String)> {
        self.authorizer.as_ref().map(|authorizer| authorizer.headers(&self.url, method)).unwrap_or_default()
    }

    /// The POST of one message, with the headers it needs.
    fn builder(&self, out: &Outgoing, id: Option<&RequestId>) -> reqwest::RequestBuilder {
        let mut post = self
            .http
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(out.text(id));
        if let Some(version) = out.version {
            post = post.header(headers::PROTOCOL_VERSION, version.as_str());
            if version.is_modern() {
                post = post.header(headers::METHOD, out.method.as_str());
                if let Some(name) = out.name() {
                    post = post.header(headers::NAME, headers::encode(name).as_ref());
                }
            }
        }
        if let Some(session) = self.session() {
            post = post.header(headers::SESSION_ID, session);
        }
        for (name, value) in self.credentials("POST") {
            post = post.header(name, value);
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
    fn new(transport: &HttpTransport, id: &RequestId, version: Option<Version>) -> CancelOnDrop {
        let handshake = version.filter(|version| !version.is_modern());
        CancelOnDrop {
            notice: handshake.map(|version| transport.builder(&Outgoing::cancelled(id, Some(version)), None)),
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
async fn failure(response: reqwest::Response) -> Error {
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
    while let Some(chunk) = response.chunk().await.map_err(Error::transport)? {
        if body.len() + chunk.len() > MAX_MESSAGE {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}
