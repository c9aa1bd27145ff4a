//! The stdio loop over in-memory pipes: the era rule, the line limit and the bounds.

use super::*;
use crate::layer::{Registry, ServerInfo, ToolResult, ToolSpec};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};

/// A writer whose bytes the test reads back.
#[derive(Clone, Default)]
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Serves `input` to its end with an empty registry; the answers by id.
async fn answers(input: String) -> BTreeMap<i64, Value> {
    answers_with(input, StdioOptions::default()).await
}

/// A server whose one tool, `wait`, runs until it is cancelled.
fn server() -> Server {
    let mut registry = Registry::new(ServerInfo::new("t", "1"));
    let wait = ToolSpec::new("wait", |_, cx| async move {
        cx.cancelled().await;
        ToolResult::text("cancelled")
    });
    registry.tool(wait).expect("registered");
    Server::new(Arc::new(registry), Default::default())
}

/// The answers to `input`, by id (`-1` for the null id).
fn by_id(written: &[u8]) -> BTreeMap<i64, Value> {
    let text = std::str::from_utf8(written).expect("UTF-8");
    let parsed = text.lines().map(|l| serde_json::from_str::<Value>(l).expect("JSON"));
    parsed.map(|v| (v["id"].as_i64().unwrap_or(-1), v)).collect()
}

async fn answers_with(input: String, options: StdioOptions) -> BTreeMap<i64, Value> {
    let out = Shared::default();
    serve(server(), io::Cursor::new(input), out.clone(), options).await.expect("served");
    by_id(&out.0.lock().unwrap())
}

fn request(id: i64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string() + "\n"
}

fn initialize() -> String {
    let params =
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    request(0, "initialize", params) + "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
}

#[tokio::test]
async fn a_line_over_the_limit_is_refused_and_the_session_goes_on() {
    let options = StdioOptions { max_message_bytes: 1000, ..StdioOptions::default() };
    let huge = request(1, "tools/list", json!({"pad": "x".repeat(10_000)}));
    let input = initialize() + &huge + &request(2, "tools/list", json!({}));
    let got = answers_with(input, options).await;
    let refused = &got[&-1];
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Message too large: 10") && message.ends_with("the limit is 1000"), "{message}");
    assert_eq!(got[&2]["result"]["tools"][0]["name"], "wait", "the session goes on");
}

/// Output that holds every write until opened, like a client that does not read.
#[derive(Clone, Default)]
struct Gate(Arc<GateState>);

#[derive(Default)]
struct GateState {
    /// Whether writes go through, and what they wrote.
    written: Mutex<(bool, Vec<u8>)>,
    opened: Condvar,
}

impl Gate {
    fn open(&self) {
        self.0.written.lock().unwrap().0 = true;
        self.0.opened.notify_all();
    }
}

impl Write for Gate {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let state = self.0.written.lock().unwrap();
        let mut state = self.0.opened.wait_while(state, |(open, _)| !*open).unwrap();
        state.1.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Input that counts the bytes taken from it.
struct Counted(io::Cursor<Vec<u8>>, Arc<std::sync::atomic::AtomicUsize>);

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.0.read(buf)?;
        self.1.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_read_stops_the_reading_and_loses_nothing() {
    let requests = 20_000;
    let mut input = initialize();
    for id in 1..=requests {
        input += &request(id, "ping", json!({}));
    }
    let total = input.len();
    let taken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (gate, source) = (Gate::default(), Counted(io::Cursor::new(input.into_bytes()), taken.clone()));
    let serving = tokio::spawn(serve(server(), source, gate.clone(), StdioOptions::default()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let read = taken.load(std::sync::atomic::Ordering::Relaxed);
    assert!(read < total / 10, "read {read} of {total} bytes while nothing was read back");
    gate.open();
    serving.await.expect("joined").expect("served");
    let got = by_id(&gate.0.written.lock().unwrap().1);
    assert_eq!(got.len() as i64, requests + 1, "every request answered once the client reads");
}

#[tokio::test]
async fn a_cancel_behind_a_full_house_still_frees_a_slot() {
    let options = StdioOptions { max_in_flight: 1, ..StdioOptions::default() };
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let input = initialize()
        + &request(1, "tools/call", json!({"name": "wait"}))
        + &request(2, "tools/list", json!({}))
        + &(cancel.to_string() + "\n");
    let got = tokio::time::timeout(Duration::from_secs(10), answers_with(input, options)).await.expect("no deadlock");
    assert!(!got.contains_key(&1), "a cancelled request is not answered: {got:?}");
    assert_eq!(got[&2]["result"]["tools"][0]["name"], "wait");
}

#[tokio::test]
async fn the_first_request_to_arrive_decides_the_era() {
    use duet_wire::key;
    let meta = serde_json::json!({
        key::PROTOCOL_VERSION: "2026-07-28",
        key::CLIENT_INFO: {"name": "t", "version": "1"},
        key::CLIENT_CAPABILITIES: {},
    });
    let line = |id: i64, method: &str, params: Value| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string() + "\n"
    };
    let initialize = serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    let input = line(1, "server/discover", serde_json::json!({"_meta": meta}))
        + &line(2, "tools/list", serde_json::json!({"_meta": meta}))
        + &line(3, "initialize", initialize);
    // The requests race on their tasks; arrival order must win every time.
    for _ in 0..20 {
        let got = answers(input.clone()).await;
        assert!(got[&1]["result"]["supportedVersions"].is_array(), "{:?}", got[&1]);
        assert!(got[&2]["result"]["tools"].is_array(), "{:?}", got[&2]);
        assert_eq!(got[&3]["error"]["code"], duet_wire::jsonrpc::code::UNSUPPORTED_PROTOCOL_VERSION, "{:?}", got[&3]);
    }
}
