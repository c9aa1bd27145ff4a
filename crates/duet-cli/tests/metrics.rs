//! `duet serve --metrics-addr`: the Prometheus text a scraper reads, over stdio and HTTP, from
//! the real binary. Each request's duration is labelled as the OpenTelemetry conventions for
//! MCP say; an unknown tool's name is never a label; tokens never appear.

// Shared with the stdio tests; this file uses only part of it.
#[allow(dead_code)]
mod common;

use common::{Duet, envelope, enveloped, init_params};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const EXIT: Duration = Duration::from_secs(20);
const COUNT: &str = "mcp_server_operation_duration_seconds_count";

/// The address in duet's "metrics on http://ADDR/metrics" line.
fn metrics_addr(duet: &Duet) -> String {
    let line = duet.stderr_line("metrics on http://");
    let url = line.split("metrics on http://").nth(1).expect("an address");
    url.trim_end_matches("/metrics").to_string()
}

/// One HTTP/1.1 request to `addr`; the status and the body.
fn http(addr: &str, head: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = format!("{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap_or_else(|e| panic!("no response to {head:?}: {e}; read {response:?}"));
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status line");
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

fn scrape(addr: &str) -> String {
    let (status, text) = http(addr, &format!("GET /metrics HTTP/1.1\r\nHost: {addr}"), "");
    assert_eq!(status, 200, "{text}");
    text
}

/// The samples of `name`: each one's labels and value.
fn samples(text: &str, name: &str) -> Vec<(BTreeMap<String, String>, f64)> {
    let prefix = format!("{name}{{");
    text.lines()
        .filter_map(|line| line.strip_prefix(&prefix))
        .map(|rest| {
            let (labels, value) = rest.rsplit_once("} ").expect("a sample");
            let labels = labels
                .split("\",")
                .filter_map(|pair| pair.split_once("=\""))
                .map(|(k, v)| (k.to_string(), v.trim_end_matches('"').to_string()))
                .collect();
            (labels, value.parse().expect("a number"))
        })
        .collect()
}

/// The value of the one sample of `name` whose labels are exactly `labels`.
fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    let wanted: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let found: Vec<f64> = samples(text, name).into_iter().filter(|(l, _)| *l == wanted).map(|(_, v)| v).collect();
    assert_eq!(found.len(), 1, "one {name} with {wanted:?} in:\n{text}");
    found[0]
}

#[test]
fn stdio_requests_are_timed_with_the_conventions_labels() {
    let mut duet = Duet::spawn(&["serve", "--fixtures", "testkit", "--metrics-addr", "127.0.0.1:0"], "2025-11-25");
    let addr = metrics_addr(&duet);
    duet.request(json!(1), "initialize", init_params("2025-11-25"));
    duet.response(&json!(1));
    duet.notify("notifications/initialized", json!({}));
    for (id, name) in [(2, "echo"), (3, "echo"), (4, "fail"), (5, "no-such-tool")] {
        duet.request(json!(id), "tools/call", json!({"name": name, "arguments": {"text": "hi"}}));
        duet.response(&json!(id));
    }
    duet.request(json!(6), "prompts/get", json!({"name": "greet", "arguments": {"name": "Zed"}}));
    duet.response(&json!(6));
    let text = scrape(&addr);
    let call =
        [("mcp_method_name", "tools/call"), ("mcp_protocol_version", "2025-11-25"), ("network_transport", "pipe")];
    let with = |extra: &[(&'static str, &'static str)]| [&call[..], extra].concat();
    assert_eq!(value(&text, COUNT, &with(&[("gen_ai_tool_name", "echo")])), 2.0);
    assert_eq!(value(&text, COUNT, &with(&[("gen_ai_tool_name", "fail"), ("error_type", "tool_error")])), 1.0);
    assert_eq!(value(&text, COUNT, &with(&[("error_type", "-32602")])), 1.0, "an unknown tool is no label");
    assert!(!text.contains("no-such-tool"), "{text}");
    let prompt = [
        ("mcp_method_name", "prompts/get"),
        ("mcp_protocol_version", "2025-11-25"),
        ("network_transport", "pipe"),
        ("gen_ai_prompt_name", "greet"),
    ];
    assert_eq!(value(&text, COUNT, &prompt), 1.0);
    assert!(text.contains("\nduet_sessions_active 1\n"), "{text}");
    assert!(text.contains("# TYPE mcp_server_operation_duration_seconds histogram"), "{text}");
    duet.finish(EXIT).assert_success();
}

#[test]
fn http_requests_and_refusals_are_counted_without_tokens() {
    let token = "s3cret-token-never-shown";
    let args = ["serve", "--fixtures", "testkit", "--transport", "http", "--port", "0", "--auth-token", token];
    let duet = Duet::spawn(&[&args[..], &["--metrics-addr", "127.0.0.1:0"]].concat(), "2026-07-28");
    let metrics = metrics_addr(&duet);
    let line = duet.stderr_line("listening on http://");
    let mcp = line.split("http://").nth(1).and_then(|u| u.strip_suffix("/mcp")).expect("the endpoint").to_string();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": enveloped(json!({"name": "echo", "arguments": {"text": "hi"}}))})
    .to_string();
    let post = |authorization: &str| {
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {mcp}\r\nContent-Type: application/json\r\nAccept: application/json\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo{authorization}"
        );
        http(&mcp, &head, &call).0
    };
    assert_eq!(post(&format!("\r\nAuthorization: Bearer {token}")), 200);
    assert_eq!(post("\r\nAuthorization: Bearer wrong-token-also-secret"), 401);
    assert_eq!(post(""), 401);
    let text = scrape(&metrics);
    let ok = [
        ("mcp_method_name", "tools/call"),
        ("mcp_protocol_version", "2026-07-28"),
        ("network_transport", "tcp"),
        ("gen_ai_tool_name", "echo"),
    ];
    assert_eq!(value(&text, COUNT, &ok), 1.0);
    assert_eq!(value(&text, "duet_auth_failures_total", &[("reason", "invalid")]), 1.0);
    assert_eq!(value(&text, "duet_auth_failures_total", &[("reason", "missing")]), 1.0);
    assert_eq!(value(&text, "duet_http_rejections_total", &[("status", "401"), ("reason", "auth")]), 2.0);
    assert!(!text.contains("s3cret") && !text.contains("wrong-token"), "{text}");
}

#[test]
fn the_scrape_endpoint_answers_only_get_metrics_for_its_own_host() {
    let duet = Duet::spawn(&["serve", "--fixtures", "testkit", "--metrics-addr", "127.0.0.1:0"], "2025-11-25");
    let addr = metrics_addr(&duet);
    assert_eq!(http(&addr, "GET /metrics HTTP/1.1\r\nHost: evil.example", "").0, 421, "a rebound name");
    assert_eq!(http(&addr, &format!("POST /metrics HTTP/1.1\r\nHost: {addr}"), "").0, 405);
    assert_eq!(http(&addr, &format!("GET /mcp HTTP/1.1\r\nHost: {addr}"), "").0, 404);
    assert_eq!(http(&addr, &format!("GET /metrics HTTP/1.1\r\nHost: {addr}"), "").0, 200);
}

#[test]
fn an_address_it_cannot_listen_on_is_an_error() {
    let done =
        Duet::spawn(&["serve", "--fixtures", "testkit", "--metrics-addr", "256.0.0.1:1"], "2025-11-25").finish(EXIT);
    assert!(!done.status.success());
    assert!(done.stderr.contains("cannot listen for metrics on 256.0.0.1:1"), "{}", done.stderr);
}

/// The tasks gauge: tasks this replica runs now (working or waiting for input).
#[test]
fn running_tasks_are_a_gauge() {
    let args = ["serve", "--fixtures", "conformance", "--metrics-addr", "127.0.0.1:0"];
    let mut duet = Duet::spawn(&args, "2026-07-28");
    let addr = metrics_addr(&duet);
    let mut params = json!({"name": "slow_compute", "arguments": {"seconds": 60}});
    params["_meta"] = envelope();
    params["_meta"][common::CAPABILITIES_KEY] = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    duet.request(json!(1), "tools/call", params.clone());
    let task_id = duet.response(&json!(1))["result"]["taskId"].as_str().expect("a task").to_string();
    assert!(scrape(&addr).contains("\nduet_tasks_active 1\n"), "one task runs");
    let mut cancel = params;
    cancel.as_object_mut().unwrap().retain(|key, _| key == "_meta");
    cancel["taskId"] = json!(task_id);
    duet.request(json!(2), "tasks/cancel", cancel);
    duet.response(&json!(2));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !scrape(&addr).contains("\nduet_tasks_active 0\n") {
        assert!(std::time::Instant::now() < deadline, "the cancelled task still counts:\n{}", scrape(&addr));
        std::thread::sleep(Duration::from_millis(50));
    }
    duet.finish(EXIT).assert_success();
}
