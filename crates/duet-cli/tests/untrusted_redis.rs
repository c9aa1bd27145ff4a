//! Replicas do not trust their Redis (issue 33, defect 6): real `duet` replicas on a real
//! redis-server believe nothing there that lacks the MAC of their shared state key. A
//! routed message published by hand with an admin principal runs nothing and is counted;
//! an edited session, task or idempotency record, or a valid one copied to another
//! session's or task's key, is refused as if it were not there; deployments with different
//! state keys sharing one Redis get different key prefixes. A genuine routed message
//! captured from the bus and published again runs nothing a second time and is counted.

// Shared with the stdio tests; this file uses only part of it.
#[allow(dead_code)]
mod common;

use common::redis_server::RedisServer;
use common::{CAPABILITIES_KEY, Duet, VERSION_KEY};
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const ALICE: &str = "alice-secret-token";
const BOB: &str = "bob-secret-token";
const WAIT: Duration = Duration::from_secs(10);

/// A tool only `admin` may call, which leaves a file behind when it runs, a tool that
/// always runs as a task, and one that appends a line to `ran.log` each time it runs.
const MANIFEST: &str = r#"
[server]
name = "untrusted-redis"
version = "1"

[[tool]]
name = "wipe"
description = "admins only"
command = ["touch", "wiped"]
cwd = "."
roles = ["admin"]

[[tool]]
name = "slow"
description = "a task"
command = ["sleep", "30"]
cwd = "."
task = "required"

[[tool]]
name = "append"
description = "a side effect"
command = ["sh", "-c", "echo ran >> ran.log"]
cwd = "."
"#;

fn state_key() -> String {
    rand::random::<[u8; 32]>().iter().map(|b| format!("{b:02x}")).collect()
}

/// One `duet serve --transport sse` replica serving `layer` (`--manifest FILE` or
/// `--fixtures NAME`) on `redis`, with Alice's and Bob's tokens (neither an admin) and a
/// metrics endpoint.
struct Replica {
    duet: Duet,
    url: String,
    base: String,
}

impl Replica {
    fn start(redis: &RedisServer, key: &str, layer: &[&str]) -> Replica {
        let (alice, bob, store) = (format!("{ALICE}:mcp:alice"), format!("{BOB}:mcp:bob"), redis.url());
        let http = ["--transport", "sse", "--host", "127.0.0.1", "--port", "0", "--metrics-addr", "127.0.0.1:0"];
        let shared = ["--store", &store, "--auth-token", &alice, "--auth-token", &bob];
        let args = [&["serve"], layer, &http[..], &shared[..]].concat();
        let duet = Duet::spawn_with_env(&args, &[("DUET_STATE_KEY", key)], "2025-11-25");
        let line = duet.stderr_line("listening on http://");
        let url = line.split("listening on ").nth(1).expect("the endpoint").trim().to_string();
        let base = url.trim_end_matches("/mcp").to_string();
        Replica { duet, url, base }
    }

    /// `duet_backplane_rejected_total{kind="KIND"}` as its metrics endpoint says now.
    fn rejected(&self, kind: &str) -> f64 {
        let line = self.duet.stderr_line("metrics on http://");
        let url = line.split("metrics on ").nth(1).expect("an address").trim();
        let text = Client::new().get(url).send().and_then(Response::text).expect("a scrape");
        let sample = format!("duet_backplane_rejected_total{{kind=\"{kind}\"}} ");
        text.lines().find_map(|l| l.strip_prefix(&sample)).map_or(0.0, |v| v.parse().expect("a number"))
    }
}

/// A redis-server and two replicas of one deployment (one state key) on it, serving `layer`.
fn two_replicas(layer: &[&str]) -> (RedisServer, Replica, Replica) {
    let (redis, key) = (RedisServer::start(), state_key());
    let (a, b) = (Replica::start(&redis, &key, layer), Replica::start(&redis, &key, layer));
    (redis, a, b)
}

/// A folder holding [`MANIFEST`], and the manifest's path.
fn manifest_dir() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let manifest = dir.path().join("duet.toml");
    std::fs::write(&manifest, MANIFEST).expect("write the manifest");
    let manifest = manifest.to_str().expect("a UTF-8 path").to_string();
    (dir, manifest)
}

fn post(url: &str, token: &str, headers: &[(&str, &str)], message: &Value) -> Response {
    let mut request = Client::new()
        .post(url)
        .bearer_auth(token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.json(message).send().expect("the replica answers")
}

/// The JSON-RPC answer in a response's body (JSON, or the `data:` of an event stream).
fn answer(response: Response) -> Value {
    let text = response.text().expect("a body");
    let json = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or(&text);
    serde_json::from_str(json).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A legacy HTTP+SSE session: the stream's messages as they arrive, and where to POST.
struct LegacySession {
    messages: mpsc::Receiver<Value>,
    endpoint: String,
    id: String,
}

impl LegacySession {
    fn open(replica: &Replica, token: &str) -> LegacySession {
        let client = Client::builder().timeout(None).build().expect("a client");
        let stream = client
            .get(format!("{}/sse", replica.base))
            .bearer_auth(token)
            .header("Accept", "text/event-stream")
            .send()
            .expect("GET /sse");
        assert_eq!(stream.status(), 200);
        let (endpoints, endpoint) = mpsc::channel();
        let (sender, messages) = mpsc::channel();
        std::thread::spawn(move || {
            let mut event = String::new();
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = name.to_string();
                } else if let Some(data) = line.strip_prefix("data: ") {
                    let sent = match event.as_str() {
                        "endpoint" => endpoints.send(data.to_string()).is_ok(),
                        _ => sender.send(serde_json::from_str(data).expect("a JSON message")).is_ok(),
                    };
                    if !sent {
                        return;
                    }
                }
            }
        });
        let endpoint = endpoint.recv_timeout(WAIT).expect("the endpoint event");
        let id = endpoint.split("session_id=").nth(1).expect("a session id").to_string();
        LegacySession { messages, endpoint, id }
    }

    /// POSTs `message` to this session's endpoint on `replica`.
    fn send(&self, replica: &Replica, token: &str, message: Value) {
        let status = post(&format!("{}{}", replica.base, self.endpoint), token, &[], &message).status();
        assert_eq!(status, 202, "{message}");
    }

    /// The handshake, POSTed to `replica` (which routes it to the stream's replica).
    fn initialize(&self, replica: &Replica, token: &str) {
        let init =
            json!({"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
        self.send(replica, token, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}));
        let initialized = self.next(WAIT).expect("initialize is answered through the other replica");
        assert_eq!(initialized["id"], 1, "{initialized}");
        self.send(replica, token, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// Waits until `holder` (the replica holding the stream) counts a bus message refused as
    /// `kind`, with nothing answered on the stream meanwhile; then a ping POSTed to `other`
    /// is answered, and nothing else.
    fn refused_and_goes_on(&self, holder: &Replica, kind: &str, other: &Replica) {
        let deadline = Instant::now() + WAIT;
        while holder.rejected(kind) < 1.0 {
            if let Some(ran) = self.next(Duration::from_millis(100)) {
                panic!("the call on the bus was answered: {ran}");
            }
            assert!(Instant::now() < deadline, "the message on the bus was not counted as {kind}");
        }
        self.send(other, ALICE, json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
        let pong = self.next(WAIT).expect("the session goes on");
        assert_eq!(pong["id"], 3, "only the ping is answered, not the call on the bus: {pong}");
    }

    /// The next message on the stream.
    fn next(&self, within: Duration) -> Option<Value> {
        self.messages.recv_timeout(within).ok()
    }
}

/// Two replicas serving [`MANIFEST`] on one Redis, and Alice's legacy session, initialized:
/// its stream is on A, her POSTs reach B, which routes them to A over the bus `channel`.
struct Routing {
    dir: tempfile::TempDir,
    redis: RedisServer,
    a: Replica,
    b: Replica,
    session: LegacySession,
    channel: String,
}

impl Routing {
    fn start() -> Routing {
        let (dir, manifest) = manifest_dir();
        let (redis, a, b) = two_replicas(&["--manifest", &manifest]);
        let session = LegacySession::open(&a, ALICE);
        session.initialize(&b, ALICE);
        let channel = redis.cli(&["PUBSUB", "CHANNELS", "*bus"]);
        Routing { dir, redis, a, b, session, channel }
    }
}

#[test]
fn a_forged_bus_message_runs_nothing_and_is_counted() {
    let Routing { dir, redis, a, b, session, channel } = Routing::start();

    // Anyone who can write to Redis publishes Alice's call of the admin tool, as an admin.
    assert!(channel.starts_with("duet:") && channel != "duet:bus", "a prefix of the deployment's own: {channel}");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wipe", "arguments": {}}});
    let admin = json!({"id": "token:alice", "roles": ["admin", "default", "mcp"], "attributes": {}});
    let routed = json!({"session": session.id, "principal": admin, "message": call.to_string()});
    let forged = json!({"origin": 4242, "event": {"Routed": routed}});
    assert_eq!(redis.cli(&["PUBLISH", &channel, &forged.to_string()]), "2", "both replicas listen");

    session.refused_and_goes_on(&a, "bus", &b);
    assert!(!dir.path().join("wiped").exists(), "the admin tool did not run");
}

#[test]
fn a_replayed_routed_call_runs_once_and_is_counted() {
    let Routing { dir, redis, a, b, session, channel } = Routing::start();
    let runs = || std::fs::read_to_string(dir.path().join("ran.log")).unwrap_or_default().lines().count();

    // Anyone who can SUBSCRIBE to the bus captures Alice's call as B routes it to A.
    let bus = redis.subscribe(&channel);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "append"}});
    session.send(&b, ALICE, call);
    assert_eq!(session.next(WAIT).expect("the call is answered")["id"], 2);
    let captured = bus.find(WAIT, |m| m.contains("\"Routed\"") && m.contains("append")).expect("the routed call");
    assert_eq!(runs(), 1, "the call ran once");

    // ... and publishes the genuine, sealed message again.
    assert_eq!(redis.cli(&["PUBLISH", &channel, &captured]), "3", "both replicas and the capture listen");
    session.refused_and_goes_on(&a, "bus_replay", &b);
    assert_eq!(runs(), 1, "the tool did not run a second time");
}

/// `initialize` of a handshake-era session on `replica` as `token`: its id.
fn handshake(replica: &Replica, token: &str) -> String {
    let init =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    let response =
        post(&replica.url, token, &[], &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}));
    let id = response.headers().get("mcp-session-id").expect("a session id").to_str().expect("ASCII").to_string();
    assert_eq!(answer(response)["id"], 1);
    id
}

/// The HTTP status of a `ping` in session `id` on `replica` as `token`.
fn ping(replica: &Replica, token: &str, id: &str) -> u16 {
    let headers = [("Mcp-Session-Id", id), ("MCP-Protocol-Version", "2025-11-25")];
    post(&replica.url, token, &headers, &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).status().as_u16()
}

#[test]
fn an_edited_or_moved_session_record_is_not_a_session() {
    let (_dir, manifest) = manifest_dir();
    let (redis, a, b) = two_replicas(&["--manifest", &manifest]);
    let (alices, bobs, alices_other) = (handshake(&a, ALICE), handshake(&a, BOB), handshake(&a, ALICE));

    // Alice's record, its principal made Bob's: Bob does not get Alice's session on B.
    let record_key = redis.key(&format!("*session:{alices}"));
    let record = redis.cli(&["GET", &record_key]);
    assert!(record.contains("\"token:alice\""), "{record}");
    redis.cli(&["SET", &record_key, &record.replace("\"token:alice\"", "\"token:bob\""), "EX", "600"]);
    assert_eq!(ping(&b, BOB, &alices), 404, "an edited record is no session");

    // Alice's valid record moved under Bob's session id: no session for anyone there.
    let bobs_key = redis.key(&format!("*session:{bobs}"));
    redis.cli(&["SET", &bobs_key, &redis.cli(&["GET", &redis.key(&format!("*session:{alices_other}"))]), "EX", "600"]);
    assert_eq!(ping(&b, ALICE, &bobs), 404, "a record copied from another session's key is no session");
    assert_eq!(ping(&b, ALICE, &alices_other), 200, "the record left where it was still works");
    assert!(b.rejected("key") >= 2.0, "both refusals are counted");
}

/// A 2026-07-28 request of `method` as Alice, with the tasks extension declared: its answer.
fn modern(replica: &Replica, id: u64, method: &str, name: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] =
        json!({VERSION_KEY: "2026-07-28", CAPABILITIES_KEY: {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method), ("Mcp-Name", name)];
    answer(post(
        &replica.url,
        ALICE,
        &headers,
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    ))
}

fn start_task(replica: &Replica) -> String {
    let created = modern(replica, 1, "tools/call", "slow", json!({"name": "slow", "arguments": {}}));
    created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {created}")).to_string()
}

fn get_task(replica: &Replica, id: &str) -> Value {
    modern(replica, 2, "tasks/get", id, json!({"taskId": id}))
}

#[test]
fn an_edited_or_moved_task_record_is_no_task() {
    let (_dir, manifest) = manifest_dir();
    let (redis, a, b) = two_replicas(&["--manifest", &manifest]);
    let (first, second) = (start_task(&a), start_task(&a));
    assert_eq!(get_task(&b, &first)["result"]["status"], "working");

    // The first task's record, edited to say it failed.
    let first_key = redis.key(&format!("*task:{first}"));
    let record = redis.cli(&["GET", &first_key]);
    assert!(record.contains("\"working\""), "{record}");
    redis.cli(&["SET", &first_key, &record.replace("\"working\"", "\"failed\""), "EX", "600"]);
    let edited = get_task(&b, &first);
    assert!(edited["error"]["message"].as_str().is_some_and(|m| m.contains("no task")), "{edited}");

    // The second task's valid record, moved under a third task's id.
    let third = start_task(&a);
    let moved = redis.cli(&["GET", &redis.key(&format!("*task:{second}"))]);
    redis.cli(&["SET", &redis.key(&format!("*task:{third}")), &moved, "EX", "600"]);
    let copied = get_task(&b, &third);
    assert!(copied["error"]["message"].as_str().is_some_and(|m| m.contains("no task")), "{copied}");
    assert_eq!(get_task(&b, &second)["result"]["status"], "working", "the record left where it was still works");
    assert!(b.rejected("key") >= 2.0, "both refusals are counted");
}

/// Alice's refund of 50 USD on order A-1 (no confirmation needed) on `replica`: its id.
fn refund(replica: &Replica) -> Value {
    let params = json!({"name": "refund_order", "arguments": {"order_id": "A-1", "amount_cents": 5000}});
    let refunded = modern(replica, 1, "tools/call", "refund_order", params);
    refunded["result"]["structuredContent"]["refund_id"].clone()
}

#[test]
fn an_edited_idempotency_record_is_not_a_result() {
    let (redis, a, b) = two_replicas(&["--fixtures", "testkit"]);
    assert_eq!(refund(&a), "R-1");
    assert_eq!(refund(&b), "R-1", "a repeat on another replica gets the first refund back");

    // The recorded result, edited to name another refund.
    let record_key = redis.key("*token:alice:A-1:5000");
    let record = redis.cli(&["GET", &record_key]);
    assert!(record.contains("\"R-1\""), "{record}");
    redis.cli(&["SET", &record_key, &record.replace("\"R-1\"", "\"R-666\""), "KEEPTTL"]);
    assert_ne!(refund(&b), "R-666", "the edited result is not believed");
    assert!(b.rejected("key") >= 1.0, "the refusal is counted");
}

#[test]
fn deployments_with_different_keys_do_not_share_a_prefix() {
    let redis = RedisServer::start();
    let (key, other) = (state_key(), state_key());
    let testkit = ["--fixtures", "testkit"];
    let _replicas = [key.as_str(), key.as_str(), other.as_str()].map(|k| Replica::start(&redis, k, &testkit));
    let channels = redis.cli(&["PUBSUB", "CHANNELS", "*"]);
    let mut channels: Vec<&str> = channels.lines().collect();
    channels.sort();
    assert_eq!(channels.len(), 2, "one bus per deployment: {channels:?}");
    for channel in channels {
        let hash = channel.strip_prefix("duet:").and_then(|c| c.strip_suffix(":bus")).unwrap_or_default();
        assert!(hash.len() == 8 && hash.bytes().all(|b| b.is_ascii_hexdigit()), "{channel}");
    }
}
