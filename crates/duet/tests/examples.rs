//! The examples under `examples/` work: the stdio server answers, the refund tool asks
//! before a large refund in both eras, and the axum app serves MCP beside its own route.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// Where cargo put the example binaries (they are built for `cargo test`).
fn example(name: &str) -> PathBuf {
    let deps = std::env::current_exe().expect("the test binary").parent().expect("deps").to_path_buf();
    deps.parent().expect("the profile directory").join("examples").join(name)
}

/// Kills the example when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sends `requests` as JSON lines, closes stdin, and returns the answers by id.
fn stdio_exchange(name: &str, requests: &[Value]) -> Vec<Value> {
    let mut child = Running(
        Command::new(example(name)).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("the example runs"),
    );
    let mut stdin = child.0.stdin.take().unwrap();
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
    }
    drop(stdin);
    let out = BufReader::new(child.0.stdout.take().unwrap());
    out.lines().map(|l| serde_json::from_str(&l.unwrap()).unwrap()).filter(|m: &Value| m.get("id").is_some()).collect()
}

fn init(version: &str, capabilities: Value) -> [Value; 2] {
    [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

#[test]
fn stdio_server_adds_and_counts_in_its_shared_state() {
    let [i, n] = init("2025-11-25", json!({}));
    let add = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 40}}});
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let mut answers = stdio_exchange("stdio_server", &[i, n, add(1), add(2), list]);
    answers.sort_by_key(|a| a["id"].as_i64());
    let mut calls: Vec<Value> = answers[1..3].iter().map(|a| a["result"]["structuredContent"].clone()).collect();
    calls.sort_by_key(|c| c["calls"].as_u64());
    assert_eq!(calls, [json!({"sum": 42, "calls": 1}), json!({"sum": 42, "calls": 2})]);
    let schema = &answers[3]["result"]["tools"][0]["outputSchema"];
    assert_eq!(
        schema["properties"]["calls"]["type"], "integer",
        "the output schema comes from the return type: {schema}"
    );
}

#[test]
fn local_state_tallies_with_a_handler_that_is_not_send() {
    let [i, n] = init("2025-11-25", json!({}));
    let tally = |id: i64, words: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "tally", "arguments": {"words": words}}});
    let mut answers = stdio_exchange("local_state", &[i, n, tally(1, json!(["a", "b", "a"])), tally(2, json!(["c"]))]);
    answers.sort_by_key(|a| a["id"].as_i64());
    let (first, second) = (&answers[1]["result"]["structuredContent"], &answers[2]["result"]["structuredContent"]);
    assert_eq!((&first["counts"], &second["counts"]), (&json!({"a": 2, "b": 1}), &json!({"c": 1})), "{answers:?}");
    let mut calls = [first["call"].as_u64(), second["call"].as_u64()];
    calls.sort();
    assert_eq!(calls, [Some(1), Some(2)], "each call counted once");
}

#[test]
fn refund_asks_first_on_2026() {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let args = json!({"order_id": "A-1042", "amount_cents": 25000});
    let first = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "refund_order", "arguments": args, "_meta": meta}});
    let mut child = Running(
        Command::new(example("refund")).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("the example runs"),
    );
    let mut stdin = child.0.stdin.take().unwrap();
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    writeln!(stdin, "{first}").unwrap();
    let asked: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(asked["result"]["resultType"], "input_required");
    assert!(asked["result"]["inputRequests"]["confirm"]["params"]["message"].as_str().unwrap().contains("250.00"));
    let retry = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "refund_order", "arguments": args, "_meta": meta,
        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}}, "requestState": asked["result"]["requestState"]}});
    writeln!(stdin, "{retry}").unwrap();
    let done: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(done["result"]["structuredContent"], json!({"refund_id": "R-A-1042", "amount_cents": 25000}));
}

#[test]
fn refund_asks_first_on_the_handshake_era() {
    let [i, n] = init("2025-11-25", json!({"elicitation": {}}));
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "refund_order", "arguments": {"order_id": "B-7", "amount_cents": 50000}}});
    let mut child = Running(
        Command::new(example("refund")).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("the example runs"),
    );
    let mut stdin = child.0.stdin.take().unwrap();
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    for m in [i, n, call] {
        writeln!(stdin, "{m}").unwrap();
    }
    let mut next = || -> Value { serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap() };
    assert_eq!(next()["id"], 0);
    let question = next();
    assert_eq!(question["method"], "elicitation/create", "the server asks the client: {question}");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}});
    writeln!(stdin, "{answer}").unwrap();
    let done = next();
    assert_eq!(done["result"]["content"][0]["text"], "Refund cancelled by the user.");
}

#[test]
fn axum_app_serves_mcp_beside_its_routes() {
    let mut child = Running(
        Command::new(example("axum_app")).env("PORT", "0").stderr(Stdio::piped()).spawn().expect("the example runs"),
    );
    let mut line = String::new();
    BufReader::new(child.0.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("listening on ").expect("the start line").to_string();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let hello = client.get(url.replace("/mcp", "/hello")).send().await.unwrap().text().await.unwrap();
        assert_eq!(hello, "hello from the app");
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hello", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
        let response = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "hello")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["result"]["content"][0]["text"], "Hello, anonymous!");
    });
}
