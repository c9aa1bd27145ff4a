//! `duet serve --log-format json`: duet's own log on stderr, one JSON object a line (the
//! lines announcing where it listens and the errors that stop it included), each event
//! inside a request carrying that request's method, id, principal id and trace id; no
//! credential in the log at any level; and text logs that are not on a terminal carry no
//! colour codes.

// Shared with the stdio tests; this file uses only part of it.
#[allow(dead_code)]
mod common;

use common::{Duet, enveloped, init_params};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const EXIT: Duration = Duration::from_secs(20);
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// Every stderr line, each of which must be one JSON object.
fn json_lines(stderr: &str) -> Vec<Value> {
    stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not one JSON object ({e}): {line:?}")))
        .collect()
}

#[test]
fn json_logs_carry_the_request_they_belong_to() {
    let args = ["serve", "--fixtures", "testkit", "--log-level", "debug", "--log-format", "json"];
    let mut duet = Duet::spawn(&args, "2025-11-25");
    duet.request(json!(1), "initialize", init_params("2025-11-25"));
    duet.notify("notifications/initialized", json!({}));
    let traceparent = format!("00-{TRACE}-00f067aa0ba902b7-01");
    let params = json!({"name": "echo", "arguments": {"text": "hi"}, "_meta": {"traceparent": traceparent}});
    duet.request(json!(2), "tools/call", params);
    duet.response(&json!(2));
    let done = duet.finish(EXIT);
    done.assert_success();
    let lines = json_lines(&done.stderr);
    let answered = lines
        .iter()
        .find(|line| line["message"] == "request answered" && line["span"]["jsonrpc.request.id"] == "2")
        .unwrap_or_else(|| panic!("no log line of request 2:\n{}", done.stderr));
    assert_eq!(answered["level"], "DEBUG");
    assert_eq!(answered["target"], "duet::protocol::methods");
    let span = &answered["span"];
    assert_eq!(
        (&span["mcp.method.name"], &span["principal"], &span["trace_id"]),
        (&json!("tools/call"), &json!("local"), &json!(TRACE))
    );
}

/// Whether one of `lines` is a notice (logged at any level) at `level` that starts with `text`.
fn noticed(lines: &[Value], level: &str, text: &str) -> bool {
    lines.iter().any(|line| {
        (&line["target"], &line["level"]) == (&json!("duet_cli::notice"), &json!(level))
            && line["message"].as_str().is_some_and(|m| m.starts_with(text))
    })
}

#[test]
fn every_stderr_line_is_json_from_the_start() {
    let serve = ["serve", "--fixtures", "testkit", "--log-format", "json"];
    let http = ["--transport", "http", "--port", "0", "--metrics-addr", "127.0.0.1:0"];
    let sse = ["--transport", "sse", "--port", "0"];
    let starts: [(&[&str], &[&str]); 3] = [
        (&http, &["duet metrics on http://", "duet MCP server (http) listening on http://"]),
        (&sse, &["duet MCP server (sse) listening on http://", "duet legacy HTTP+SSE endpoint"]),
        (&["--metrics-addr", "127.0.0.1:0"], &["duet metrics on http://"]),
    ];
    for (args, notices) in starts {
        let mut duet = Duet::spawn(&[&serve[..], args].concat(), "2025-11-25");
        duet.stderr_line(notices.last().expect("a notice"));
        duet.child().kill().expect("stop duet");
        let done = duet.finish(EXIT);
        let lines = json_lines(&done.stderr);
        for notice in notices {
            assert!(noticed(&lines, "INFO", notice), "no {notice:?} among:\n{}", done.stderr);
        }
    }
    let failures: [(&[&str], &str); 4] = [
        (&["--metrics-addr", "256.0.0.1:1"], "cannot listen for metrics on 256.0.0.1:1"),
        (&["--transport", "http", "--rate-limit", "0"], "--rate-limit needs a positive number"),
        // Before the log is set up: the command line does not parse, or its OTLP export.
        (&["--no-such-flag"], "unexpected argument '--no-such-flag'"),
        (
            &["--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-sample-ratio", "2"],
            "--otlp-sample-ratio 2: a ratio from 0 to 1",
        ),
    ];
    for (args, error) in failures {
        let done = Duet::spawn(&[&serve[..], args].concat(), "2025-11-25").finish(EXIT);
        assert!(!done.status.success(), "{args:?} should fail");
        assert!(noticed(&json_lines(&done.stderr), "ERROR", error), "no {error:?} among:\n{}", done.stderr);
    }
}

#[test]
fn no_token_reaches_the_log() {
    let token = "s3cret-token-never-logged";
    let args = ["serve", "--fixtures", "testkit", "--transport", "http", "--port", "0", "--auth-token", token];
    let duet = Duet::spawn(&[&args[..], &["--log-level", "debug", "--log-format", "json"]].concat(), "2026-07-28");
    let line = duet.stderr_line("listening on http://");
    let addr = line.split("http://").nth(1).and_then(|u| u.strip_suffix("/mcp")).expect("the endpoint").to_string();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": enveloped(json!({"name": "echo", "arguments": {"text": "hi"}}))})
    .to_string();
    for authorization in [token, "wrong-token-also-secret"] {
        let mut stream = TcpStream::connect(&addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n\
             Authorization: Bearer {authorization}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        assert!(response.starts_with("HTTP/1.1 "), "{response:?}");
    }
    let mut duet = duet;
    duet_testing::process::signal(duet.child(), rustix::process::Signal::TERM);
    let done = duet.finish(EXIT);
    let lines = json_lines(&done.stderr);
    assert!(lines.iter().any(|l| l["message"] == "request answered"), "{}", done.stderr);
    assert!(lines.iter().any(|l| l["message"] == "bearer token refused"), "{}", done.stderr);
    assert!(!done.stderr.contains("s3cret") && !done.stderr.contains("wrong-token"), "{}", done.stderr);
}

#[test]
fn a_log_that_is_not_on_a_terminal_has_no_colour_codes() {
    // Warns at start that no state key is configured; stderr here is a pipe.
    let mut duet = Duet::spawn(&["serve", "--fixtures", "testkit"], "2025-11-25");
    duet.close_stdin();
    let done = duet.finish(EXIT);
    done.assert_success();
    assert!(done.stderr.contains("WARN"), "{}", done.stderr);
    assert!(!done.stderr.contains('\u{1b}'), "an escape sequence in a piped log: {:?}", done.stderr);
}
