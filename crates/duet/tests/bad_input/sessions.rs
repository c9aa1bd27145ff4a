//! Handshake-era sessions over Streamable HTTP: `Mcp-Session-Id` missing, unknown, malformed
//! or another principal's, a session deleted (and deleted twice), GET streams that conflict
//! or cannot open, and an `initialize` that opens nothing. A session id duet cannot have
//! made, there or in a legacy `session_id`, is answered without asking the store.

use crate::*;
use async_trait::async_trait;
use duet::auth::TokenAuth;
use duet::backplane::{Backplane, Keys, MemoryKeys, StoreError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[tokio::test]
async fn sessions() {
    let auth = TokenAuth::from_specs(["tok-a", "tok-b"]).expect("token specs");
    let mut bench = Bench::start(HttpConfig { auth: Some(Arc::new(auth)), ..config() }, Some("tok-a")).await;
    let live = bench.session.clone();
    let mut other = bench.ts.client(LATEST).with_token("tok-b");
    other.initialize().await;
    let others = other.session_id.clone().expect("a session");
    let deleted = bench.new_session(LATEST).await;
    let delete = |id: &str| bench.raw("DELETE", "/mcp").header("mcp-session-id", id);
    let first = raw_exchange(bench.ts.addr, delete(&deleted).bytes()).await;
    assert_eq!((first.status(), first.body.as_str()), (200, ""), "the first DELETE ends the session");
    let streaming = bench.ts.client(LATEST).with_token("tok-a").with_session(&bench.new_session(LATEST).await);
    let _stream = streaming.get().stream().await;
    let streaming = streaming.session_id.expect("a session");

    let list = || bench.post(request("tools/list", json!({})).to_string()).header("mcp-protocol-version", LATEST);
    let on = |id: &str| list().header("mcp-session-id", id);
    let get = |id: &str| bench.raw("GET", "/mcp").header("accept", "text/event-stream").header("mcp-session-id", id);
    let unknown = "0123456789abcdef0123456789abcdef";
    let gone = || refused(404, "Session not found");
    let required = || refused(400, "Bad Request: Mcp-Session-Id header is required");
    let conflict = || refused(409, "Conflict: a GET stream is already open for this session");
    let no_version = json!({"capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    let rows: Vec<Case> = vec![
        // Missing.
        ("a request without a session", list(), required()),
        (
            "a notification without a session",
            bench.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            required(),
        ),
        ("a response without a session", bench.post(r#"{"jsonrpc":"2.0","id":5,"result":{}}"#), required()),
        ("a DELETE without a session", bench.raw("DELETE", "/mcp"), required()),
        (
            "a GET without a session",
            bench.raw("GET", "/mcp").header("accept", "text/event-stream"),
            refused(405, "Method Not Allowed").with_header("allow", "POST, DELETE"),
        ),
        (
            "jsonrpc 1.0 without a session",
            bench.post(r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#),
            error(400, -32600, json!(2), "Invalid Request"),
        ),
        (
            "a bad id without a session",
            bench.post(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            refused(400, "Invalid Request: bad id"),
        ),
        // Unknown or malformed.
        ("an unknown session", on(unknown), gone()),
        ("a session id that is no id", on("not-a-session"), gone()),
        ("an empty session id", on(""), gone()),
        ("a session id in capitals", on(&live.to_uppercase()), gone()),
        ("a session id cut short", on(&live[..31]), gone()),
        ("a session id with more after it", on(&format!("{live}0")), gone()),
        ("a session id of 4 KiB", on(&"a".repeat(4096)), gone()),
        ("a percent-encoded session id", on(&format!("%{}", &live[..2])), gone()),
        ("a GET of an unknown session", get(unknown), gone()),
        ("a DELETE of an unknown session", delete(unknown), gone()),
        (
            "params an array to an unknown session",
            on(unknown).body(r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":[]}"#),
            error(400, -32602, json!(3), "params must be an object"),
        ),
        (
            "a notification to an unknown session",
            bench.post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).header("mcp-session-id", unknown),
            gone(),
        ),
        ("the session id twice", on(&live).header("mcp-session-id", &live), gone()),
        ("the session id and an unknown one", on(&live).header("mcp-session-id", unknown), gone()),
        ("an unknown session id and the session's", on(unknown).header("mcp-session-id", &live), gone()),
        ("a non-ASCII session id", on(&live).set("mcp-session-id", b"\xe9\xe9"), gone()),
        ("a GET naming two sessions", get(&live).header("mcp-session-id", unknown), gone()),
        ("a DELETE naming two sessions", delete(&live).header("mcp-session-id", unknown), gone()),
        ("a session id with spaces around it", on(&format!(" {live} ")), served()),
        // Another principal's.
        ("another principal's session", on(&others), gone()),
        ("a GET of another principal's session", get(&others), gone()),
        ("a DELETE of another principal's session", delete(&others), gone()),
        ("the owner on its session", on(&others).set("authorization", "Bearer tok-b"), served()),
        // Deleted.
        ("a request to a deleted session", on(&deleted), gone()),
        ("a GET of a deleted session", get(&deleted), gone()),
        ("DELETE twice", delete(&deleted), gone()),
        // GET streams.
        ("a second GET stream", get(&streaming), conflict()),
        ("a third GET stream", get(&streaming), conflict()),
        (
            "a GET that accepts only JSON",
            get(&live).set("accept", "application/json"),
            refused(406, "Not Acceptable: GET requires Accept: text/event-stream"),
        ),
        (
            "a GET that accepts HTML",
            get(&live).set("accept", "text/html"),
            refused(406, "Not Acceptable: GET requires Accept: text/event-stream"),
        ),
        ("a request beside the stream", on(&streaming), served()),
        // An initialize that opens nothing.
        (
            "initialize without a protocol version",
            bench.post(request("initialize", no_version.clone()).to_string()),
            error(200, -32602, json!(ID), "Missing or invalid parameter: protocolVersion")
                .without_header("mcp-session-id"),
        ),
        (
            "initialize with params an array",
            bench.post(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":[]}"#),
            error(400, -32602, json!(ID), "params must be an object").without_header("mcp-session-id"),
        ),
        (
            "initialize as a notification",
            bench.post(r#"{"jsonrpc":"2.0","method":"initialize","params":{}}"#),
            accepted().without_header("mcp-session-id"),
        ),
    ];
    bench.run(rows).await;
    assert!(bench.ts.session_count() >= 4, "the sessions the cases used are still there");
    bench.stop().await;
}

/// Keys in memory that note every key they are asked about.
#[derive(Default)]
struct Noted {
    keys: MemoryKeys,
    asked: Mutex<Vec<String>>,
}

impl Noted {
    fn note(&self, key: &str) {
        self.asked.lock().unwrap().push(key.to_string());
    }
}

#[async_trait]
impl Keys for Noted {
    async fn claim(&self, key: &str, value: &[u8], ttl: Duration) -> Result<Option<Vec<u8>>, StoreError> {
        self.note(key);
        self.keys.claim(key, value, ttl).await
    }
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.note(key);
        self.keys.get(key).await
    }
    async fn put(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StoreError> {
        self.note(key);
        self.keys.put(key, value, ttl).await
    }
    async fn swap(&self, key: &str, old: &[u8], new: &[u8], ttl: Duration) -> Result<bool, StoreError> {
        self.note(key);
        self.keys.swap(key, old, new, ttl).await
    }
    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.note(key);
        self.keys.delete(key).await
    }
}

#[tokio::test]
async fn a_session_id_duet_cannot_have_made_never_reaches_the_store() {
    let noted = Arc::new(Noted::default());
    let mut backplane = Backplane::memory();
    backplane.keys = noted.clone();
    let ts = TestServer::start_on(HttpConfig { enable_sse: true, ..config() }, backplane).await;
    let mut client = ts.client(LATEST);
    client.initialize().await;
    let live = client.session_id.clone().expect("a session");
    let unknown = "0123456789abcdef0123456789abcdef";
    let post = |target: &str| {
        let raw = Raw::new("POST", target).header("host", ts.host()).header("content-type", "application/json");
        raw.header("accept", ACCEPT_BOTH).body(request("ping", json!({})).to_string())
    };
    let malformed = [format!("{live}:lease"), "../x".into(), live.to_uppercase(), "a".repeat(4096), format!("{live}0")];
    for id in malformed.iter().map(String::as_str).chain([unknown]) {
        let on = post("/mcp").header("mcp-session-id", id).header("mcp-protocol-version", LATEST);
        let legacy = post(&format!("/messages/?session_id={id}"));
        for raw in [on, legacy] {
            let answer = raw_exchange(ts.addr, raw.bytes()).await;
            assert_eq!(answer.status(), 404, "{id:.40}: {answer:?}");
        }
    }
    let asked = noted.asked.lock().unwrap().clone();
    for id in &malformed {
        let about: Vec<&String> = asked.iter().filter(|key| key.contains(id.as_str())).collect();
        assert!(about.is_empty(), "the store was asked about {id:.40}: {:.200}", format!("{about:?}"));
    }
    assert!(asked.iter().any(|key| key.contains(unknown)), "a well-formed id is looked up: {asked:?}");
    ts.stop().await;
}
