//! Bad input over real sockets, one concept per file: HTTP framing, header fields, JSON-RPC
//! framing, the 2026-07-28 ladder, sessions, authentication and legacy HTTP+SSE. Each file is
//! a table of requests and the exact answer each must draw (status, JSON-RPC error code and
//! message, the headers that matter). Every request goes out as bytes on a new connection to
//! a real `HttpServer` on a free loopback port, so nothing normalises it; after every case
//! the server must still answer a 2026-07-28 `tools/call` and a request on a handshake-era
//! session (and, with legacy SSE on, one on a legacy session). This file is the harness:
//! [`Raw`] builds a request, [`Expect`] says what it must draw, [`Bench`] runs a table.

#[path = "../http_support/mod.rs"]
pub mod http_support;

mod auth;
mod headers;
mod http_framing;
mod jsonrpc;
mod ladder;
mod legacy;
mod sessions;

use duet::protocol::ServerOptions;
use duet::transport::http::HttpConfig;
use duet_testing::Schemas;
use http_support::*;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// The JSON-RPC id of the requests [`Bench::handshake`] and [`Bench::modern`] build.
pub const ID: i64 = 1;

/// One case: what it is, the request, and what it must draw.
pub type Case = (&'static str, Raw, Expect);

/// A request as it goes on the wire, header line by header line (a name may repeat).
#[derive(Debug, Clone)]
pub struct Raw {
    /// The request line; or, verbatim, the whole request.
    head: Vec<u8>,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    /// Whether `Content-Length` is added for the body.
    length: bool,
    verbatim: bool,
}

impl Raw {
    /// `METHOD target HTTP/1.1`, no header yet.
    pub fn new(method: &str, target: &str) -> Raw {
        let head = format!("{method} {target} HTTP/1.1").into_bytes();
        Raw { head, headers: Vec::new(), body: Vec::new(), length: false, verbatim: false }
    }

    /// `bytes` sent as they are, `{host}` replaced by the server's address.
    pub fn verbatim(bytes: &[u8], host: &str) -> Raw {
        let mut out = Vec::with_capacity(bytes.len());
        let mut rest = bytes;
        while let Some(at) = rest.windows(6).position(|w| w == b"{host}") {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(host.as_bytes());
            rest = &rest[at + 6..];
        }
        out.extend_from_slice(rest);
        Raw { head: out, headers: Vec::new(), body: Vec::new(), length: false, verbatim: true }
    }

    /// One more header line (a name already present is repeated).
    pub fn header(mut self, name: &str, value: impl AsRef<[u8]>) -> Raw {
        self.headers.push((name.to_string(), value.as_ref().to_vec()));
        self
    }

    /// The header `name` with this one value.
    pub fn set(self, name: &str, value: impl AsRef<[u8]>) -> Raw {
        self.without(name).header(name, value)
    }

    /// No header `name`.
    pub fn without(mut self, name: &str) -> Raw {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    /// The body, sent with its `Content-Length`.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Raw {
        self.body = body.into();
        self.length = true;
        self
    }

    /// The body as it is, framed only by the headers the case sets.
    pub fn framed(mut self, body: impl Into<Vec<u8>>) -> Raw {
        self.body = body.into();
        self.length = false;
        self
    }

    /// The request as sent: its head, headers, `Content-Length` (for a body sent with one)
    /// and body; a verbatim one as given.
    pub fn bytes(&self) -> Vec<u8> {
        if self.verbatim {
            return self.head.clone();
        }
        let mut out = self.head.clone();
        out.extend_from_slice(b"\r\n");
        for (name, value) in &self.headers {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        if self.length {
            out.extend_from_slice(format!("content-length: {}\r\n", self.body.len()).as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }
}

/// A request object of `method` with `params`, id [`ID`].
pub fn request(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": ID, "method": method, "params": params})
}

/// What a case must draw.
#[derive(Debug, Clone)]
pub struct Expect {
    /// `None`: the server closes the connection without answering.
    status: Option<u16>,
    body: Body,
    /// Headers the answer must carry with these values (`None`: must not carry).
    headers: Vec<(&'static str, Option<String>)>,
}

#[derive(Debug, Clone)]
enum Body {
    /// A JSON-RPC error for `id`.
    Error { code: i64, id: Value, message: String },
    /// A batch of responses: each one's id, and its error code (`None` for a result).
    Batch(Vec<(Value, Option<i64>)>),
    /// A response with a result.
    Result,
    /// No body: a 202, or a refusal of the HTTP layer, before duet sees the request.
    Empty,
    /// `Accepted` from the legacy message endpoint, and this error (code, id, message) on
    /// the session's stream, or nothing.
    Posted(Option<(i64, Value, String)>),
}

/// An HTTP-level refusal: `status` and a JSON-RPC error with id null, -32600 and `message`.
pub fn refused(status: u16, message: impl Into<String>) -> Expect {
    error(status, -32600, Value::Null, message)
}

/// A JSON-RPC error answered with `status`: its code, the id it names, its message.
pub fn error(status: u16, code: i64, id: Value, message: impl Into<String>) -> Expect {
    expect(Some(status), Body::Error { code, id, message: message.into() })
}

/// A batch answered with `status`: each response's id and error code (`None`: a result).
pub fn batch(status: u16, responses: &[(Value, Option<i64>)]) -> Expect {
    expect(Some(status), Body::Batch(responses.to_vec()))
}

/// 200 with a result: the well-formed request a table holds beside its broken variants.
pub fn served() -> Expect {
    expect(Some(200), Body::Result)
}

/// `status` with no body, the connection closed: the HTTP layer refusing what it cannot
/// parse before duet sees it.
pub fn bare(status: u16) -> Expect {
    expect(Some(status), Body::Empty).with_header("connection", "close")
}

/// 202 with no body.
pub fn accepted() -> Expect {
    expect(Some(202), Body::Empty)
}

/// The connection closes without an answer.
pub fn closed() -> Expect {
    expect(None, Body::Empty)
}

/// 202 `Accepted` from the legacy message endpoint, then this error on the session's stream.
pub fn streamed(code: i64, id: Value, message: impl Into<String>) -> Expect {
    expect(Some(202), Body::Posted(Some((code, id, message.into()))))
}

/// 202 `Accepted` from the legacy message endpoint, and nothing on the session's stream.
pub fn posted() -> Expect {
    expect(Some(202), Body::Posted(None))
}

fn expect(status: Option<u16>, body: Body) -> Expect {
    Expect { status, body, headers: Vec::new() }
}

impl Expect {
    /// The answer also carries header `name` with `value`.
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Expect {
        self.headers.push((name, Some(value.into())));
        self
    }

    /// The answer carries no header `name`.
    pub fn without_header(mut self, name: &'static str) -> Expect {
        self.headers.push((name, None));
        self
    }

    /// Panics unless `answer` is what this expects.
    fn check(&self, answer: Option<&RawResponse>) {
        let Some(status) = self.status else {
            assert!(answer.is_none(), "expected the connection closed unanswered, got {answer:?}");
            return;
        };
        let answer = answer.expect("the server closed the connection without answering");
        match &self.body {
            Body::Error { code, id, message } => {
                let error = answer.expect_rpc_error(status, *code, id);
                assert_eq!(error["message"], message.as_str(), "{answer:?}");
            }
            Body::Batch(expected) => {
                assert_eq!(answer.status(), status, "{answer:?}");
                let got = answer.json();
                let got = got.as_array().unwrap_or_else(|| panic!("not a batch: {got}"));
                let summary: Vec<(Value, Option<i64>)> = got
                    .iter()
                    .map(|r| {
                        if let Some(error) = r.get("error") {
                            Schemas::get().assert_error(error);
                        }
                        (r["id"].clone(), r["error"]["code"].as_i64())
                    })
                    .collect();
                assert_eq!(&summary, expected, "{answer:?}");
            }
            Body::Result => {
                assert_eq!(answer.status(), status, "{answer:?}");
                assert!(answer.message().get("result").is_some(), "{answer:?}");
            }
            Body::Empty => assert_eq!((answer.status(), answer.body.as_str()), (status, ""), "{answer:?}"),
            Body::Posted(_) => assert_eq!((answer.status(), answer.body.as_str()), (status, "Accepted")),
        }
        for (name, value) in &self.headers {
            assert_eq!(answer.header(name), value.as_deref(), "header {name}: {answer:?}");
        }
    }
}

/// A real server and the clients that check it still serves.
pub struct Bench {
    /// The server the cases are sent to.
    pub ts: TestServer,
    /// A handshake-era session (2025-11-25) the cases send to.
    pub session: String,
    token: Option<&'static str>,
    /// The checks after every case: a 2026 client, a client on a session of its own, and
    /// a legacy session when the server serves legacy SSE.
    modern: Client,
    handshake: Client,
    legacy: Option<LegacySession>,
}

impl Bench {
    /// A server with `config`, whose clients present the bearer `token`, if any.
    pub async fn start(config: HttpConfig, token: Option<&'static str>) -> Bench {
        Bench::start_with(config, ServerOptions::default(), token).await
    }

    /// [`Bench::start`] with the engine's `options`.
    pub async fn start_with(config: HttpConfig, options: ServerOptions, token: Option<&'static str>) -> Bench {
        let ts = TestServer::start_with(config, options).await;
        let authorized = |client: Client| match token {
            Some(token) => client.with_token(token),
            None => client,
        };
        let legacy = match ts.http().service().config().enable_sse {
            true => Some(LegacySession::open(&ts, &authorized(ts.client("2024-11-05"))).await),
            false => None,
        };
        let mut handshake = authorized(ts.client(LATEST));
        handshake.initialize().await;
        let mut cases = authorized(ts.client(LATEST));
        cases.initialize().await;
        let session = cases.session_id.expect("a session");
        Bench { modern: authorized(ts.modern()), ts, session, token, handshake, legacy }
    }

    /// The id of the legacy session the checks use (with legacy SSE on).
    pub fn legacy_session(&self) -> &str {
        &self.legacy.as_ref().expect("legacy SSE is served").id
    }

    /// A session of the bench's principal at `version` (its id).
    pub async fn new_session(&self, version: &str) -> String {
        let mut client = self.ts.client(version);
        if let Some(token) = self.token {
            client = client.with_token(token);
        }
        client.initialize().await;
        client.session_id.expect("a session")
    }

    /// `METHOD target` with `Host` (and the bench's bearer token).
    pub fn raw(&self, method: &str, target: &str) -> Raw {
        let raw = Raw::new(method, target).header("host", self.ts.host());
        match self.token {
            Some(token) => raw.header("authorization", format!("Bearer {token}")),
            None => raw,
        }
    }

    /// A POST of `body` to the MCP endpoint as clients send it: JSON, accepting both answers.
    pub fn post(&self, body: impl Into<Vec<u8>>) -> Raw {
        let raw = self.raw("POST", "/mcp").header("content-type", "application/json");
        raw.header("accept", ACCEPT_BOTH).body(body)
    }

    /// `body` posted on the bench's session, with its `MCP-Protocol-Version`.
    pub fn in_session(&self, body: impl Into<Vec<u8>>) -> Raw {
        self.post(body).header("mcp-session-id", &self.session).header("mcp-protocol-version", LATEST)
    }

    /// A handshake-era request on the bench's session.
    pub fn handshake(&self, method: &str, params: Value) -> Raw {
        self.in_session(request(method, params).to_string())
    }

    /// A 2026-07-28 request: `params` in the envelope (keys given are kept), and the headers.
    pub fn modern(&self, method: &str, params: Value) -> Raw {
        self.modern_bare(method, enveloped(params))
    }

    /// A 2026-07-28 request whose params go out exactly as given, with the headers
    /// (`MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for a method that names one).
    pub fn modern_bare(&self, method: &str, params: Value) -> Raw {
        let raw = self.post(request(method, params.clone()).to_string());
        let raw = raw.header("mcp-protocol-version", MODERN).header("mcp-method", method);
        match mcp_name(method, &params) {
            Some(name) => raw.header("mcp-name", name),
            None => raw,
        }
    }

    /// Sends every case, checks its answer and that the server still serves both eras;
    /// fails with every case whose answer was wrong.
    pub async fn run(&mut self, cases: impl IntoIterator<Item = Case>) {
        let mut failures = Vec::new();
        for (what, raw, expected) in cases {
            let answer = raw_answer(self.ts.addr, raw.bytes()).await;
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| expected.check(answer.as_ref()))) {
                failures.push(format!("{what}: {}", panic_text(&*panic)));
            }
            if let Body::Posted(Some((code, id, message))) = &expected.body
                && let Some(failure) = self.streamed(*code, id, message).await
            {
                failures.push(format!("{what}: {failure}"));
            }
            self.still_serving(what).await;
        }
        assert!(failures.is_empty(), "{} cases drew the wrong answer:\n{}", failures.len(), failures.join("\n"));
    }

    /// Why the next event of the legacy stream is not the error expected, if it is not.
    async fn streamed(&mut self, code: i64, id: &Value, message: &str) -> Option<String> {
        let legacy = self.legacy.as_mut().expect("legacy SSE is served");
        let event = legacy.stream.next_event().await.expect("the legacy stream goes on");
        let got = event.json();
        Schemas::get().assert_error(&got["error"]);
        let expected = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        let shape = json!({"jsonrpc": got["jsonrpc"], "id": got["id"], "error": {
            "code": got["error"]["code"], "message": got["error"]["message"]
        }});
        (shape != expected).then(|| format!("on the legacy stream {got}, not {expected}"))
    }

    /// Both eras are still answered (and the legacy session, if any), each on a new
    /// connection: the server still accepts, and no check depends on an idle connection the
    /// server may just have closed.
    async fn still_serving(&mut self, after: &str) {
        let echo = json!({"name": "echo", "arguments": {"text": "still here"}});
        for client in [&self.modern, &self.handshake] {
            let answer = client.post("tools/call", echo.clone()).header("connection", "close").send().await;
            let response = answer.response();
            assert_eq!(answer.status, StatusCode::OK, "{} after {after:?}: {response}", client.version);
            assert_eq!(response["result"]["structuredContent"]["text"], "still here", "after {after:?}: {response}");
        }
        if let Some(legacy) = &mut self.legacy {
            let posted = legacy.messages.post("tools/call", echo).header("connection", "close").send().await;
            posted.expect_status(StatusCode::ACCEPTED);
            let reply = legacy.stream.next_message().await;
            assert!(
                reply["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("still here")),
                "{reply}"
            );
        }
    }

    /// Shuts the server down.
    pub async fn stop(self) {
        self.ts.stop().await;
    }
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic.downcast_ref::<String>().map(String::as_str);
    text.or_else(|| panic.downcast_ref::<&str>().copied()).unwrap_or("(no message)").to_string()
}
