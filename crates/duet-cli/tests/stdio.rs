//! The stdio transport end to end: the real `duet serve --fixtures testkit` over pipes, one
//! process per test. Every stdout line is checked by the helper as it is read: one complete
//! JSON-RPC object, valid under the MCP schema of the version the session speaks.

mod common;

use common::{Duet, SUBSCRIPTION_KEY, enveloped, init_params, is_notification, lines};
use serde_json::{Value, json};
use std::time::Duration;

/// Bound on how long a process may take to exit once stdin is closed.
const EXIT: Duration = Duration::from_secs(20);

/// The era of a message is decided by one rule on every transport: `_meta` holding only the
/// client's capabilities makes a 2026 request, which lacks its protocol version, as over HTTP.
#[test]
fn an_envelope_key_alone_makes_a_2026_request() {
    let mut duet = Duet::testkit("2026-07-28");
    duet.request(json!(1), "tools/list", json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}));
    let done = duet.finish(EXIT);
    done.assert_success();
    let error = &done.response(&json!(1))["error"];
    assert_eq!(error["code"], -32602, "{error}");
    assert_eq!(
        error["message"],
        "params._meta is missing the required envelope key(s): io.modelcontextprotocol/protocolVersion"
    );
}

#[test]
fn raw_session_keeps_stdout_pure() {
    let mut duet = Duet::testkit("2025-06-18");
    duet.request(json!(1), "initialize", init_params("2025-06-18"));
    duet.notify("notifications/initialized", json!({}));
    duet.send_raw(b"this is not json\n");
    duet.request(json!(2), "tools/call", json!({"name": "noisy", "arguments": {}}));
    duet.request(
        json!(3),
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 2}, "_meta": {"progressToken": 7}}),
    );
    duet.request(json!(4), "ping", json!({}));
    let done = duet.finish(EXIT);
    done.assert_success();

    let init = &done.response(&json!(1))["result"];
    assert_eq!(init["protocolVersion"], "2025-06-18");
    assert_eq!(
        init["capabilities"],
        json!({"tools": {"listChanged": true}, "resources": {"subscribe": true, "listChanged": true},
               "prompts": {"listChanged": true}, "logging": {}, "completions": {}})
    );

    assert!(done.stderr.contains("NOISE from print()"), "{}", done.stderr);
    assert!(done.stderr.contains("NOISE from fd 1"), "{}", done.stderr);
    assert!(!lines(&done.messages).contains("NOISE"));
    let noisy = &done.response(&json!(2))["result"];
    assert_eq!(noisy["content"][0]["text"], "noisy done");
    assert_ne!(noisy["isError"], true);

    let parse_errors: Vec<_> = done.messages.iter().filter(|m| m["error"]["code"] == -32700).collect();
    assert_eq!(parse_errors.len(), 1, "{}", lines(&done.messages));
    assert_eq!(parse_errors[0]["id"], Value::Null);
    assert!(parse_errors[0].get("id").is_some(), "the id member must be present (null)");
    assert_eq!(parse_errors[0]["error"]["message"], "Parse error");

    let progress: Vec<_> = done
        .notifications("notifications/progress")
        .iter()
        .map(|n| {
            assert_eq!(n["params"]["progressToken"], 7);
            assert_eq!(n["params"]["total"], 2);
            n["params"]["progress"].clone()
        })
        .collect();
    assert_eq!(progress, [json!(1), json!(2)]);
    assert_eq!(done.response(&json!(3))["result"]["structuredContent"], json!({"done": 2}));
    assert_eq!(done.response(&json!(4))["result"], json!({}));
}

#[test]
fn cancelled_request_gets_no_response_and_eof_is_quick() {
    let mut duet = Duet::testkit("2025-06-18");
    duet.initialize("2025-06-18");
    duet.request(json!("long"), "tools/call", json!({"name": "sleepy", "arguments": {}}));
    // Let the call start before cancelling it: a cancel for an id not yet in flight is
    // (rightly) ignored.
    std::thread::sleep(Duration::from_millis(300));
    duet.notify("notifications/cancelled", json!({"requestId": "long", "reason": "test"}));
    duet.request(json!(5), "ping", json!({}));
    assert_eq!(duet.response(&json!(5))["result"], json!({}));
    let done = duet.finish(EXIT);
    done.assert_success();
    assert!(
        done.responses_to(&json!("long")).is_empty(),
        "a cancelled request was answered:\n{}",
        lines(&done.messages)
    );
    assert!(done.elapsed < Duration::from_secs(10), "{:?}", done.elapsed);
    // Nothing is in flight at EOF, so the shutdown grace (5 s) must not be spent.
    assert!(done.after_eof < Duration::from_secs(4), "{:?}", done.after_eof);
}

#[test]
fn eof_waits_out_the_grace_then_cancels() {
    let mut duet = Duet::testkit("2025-06-18");
    duet.initialize("2025-06-18");
    duet.request(json!("forever"), "tools/call", json!({"name": "sleepy", "arguments": {"seconds": 60}}));
    duet.request(json!("short"), "tools/call", json!({"name": "sleepy", "arguments": {"seconds": 1}}));
    let done = duet.finish(EXIT);
    done.assert_success();
    assert!(done.after_eof < Duration::from_secs(12), "{:?}", done.after_eof);
    assert!(
        done.after_eof >= Duration::from_millis(4500),
        "exited {:?} after EOF, before the 5 s grace ran out with a call in flight",
        done.after_eof
    );
    assert!(done.responses_to(&json!("forever")).is_empty(), "{}", lines(&done.messages));
    // A call that ends within the grace is still answered.
    let short = &done.response(&json!("short"))["result"];
    assert_eq!(short["content"][0]["text"], "slept");
}

#[test]
fn concurrent_answers_never_interleave() {
    let mut duet = Duet::testkit("2025-06-18");
    duet.initialize("2025-06-18");
    let text = |i: u64| format!("{i:03}:{}", "x".repeat(400));
    for i in 1..=50u64 {
        duet.request(json!(i), "tools/call", json!({"name": "echo", "arguments": {"text": text(i), "times": 3}}));
        duet.request(
            json!(1000 + i),
            "tools/call",
            json!({"name": "slow", "arguments": {"steps": 1}, "_meta": {"progressToken": format!("p{i}")}}),
        );
    }
    let done = duet.finish(EXIT);
    done.assert_success();
    for i in 1..=50u64 {
        let echo = &done.response(&json!(i))["result"];
        assert_eq!(echo["structuredContent"]["text"], text(i).repeat(3));
        let slow = &done.response(&json!(1000 + i))["result"];
        assert_eq!(slow["structuredContent"], json!({"done": 1}));
    }
    let mut tokens: Vec<String> = done
        .notifications("notifications/progress")
        .iter()
        .map(|n| n["params"]["progressToken"].as_str().unwrap().to_string())
        .collect();
    tokens.sort();
    let mut expected: Vec<String> = (1..=50).map(|i| format!("p{i}")).collect();
    expected.sort();
    assert_eq!(tokens, expected);
    assert_eq!(done.notifications("notifications/message").len(), 50);
    // initialize + 100 answers + 50 progress + 50 log messages, nothing else.
    assert_eq!(done.messages.len(), 201, "{}", lines(&done.messages));
}

#[test]
fn modern_era_discover_call_and_listen() {
    let mut duet = Duet::testkit("2026-07-28");
    duet.request(json!("d"), "server/discover", enveloped(json!({})));
    let discover = duet.response(&json!("d"))["result"].clone();
    assert_eq!(discover["resultType"], "complete");
    let versions = discover["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-06-18")));
    assert!(discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string());

    duet.request(json!("e"), "tools/call", enveloped(json!({"name": "echo", "arguments": {"text": "hi", "times": 2}})));
    let echo = duet.response(&json!("e"))["result"].clone();
    assert_eq!(echo["structuredContent"], json!({"text": "hihi"}));
    assert_eq!(echo["resultType"], "complete");

    duet.request(json!("L1"), "subscriptions/listen", enveloped(json!({"notifications": {"toolsListChanged": true}})));
    let ack =
        duet.wait_for("listen acknowledgement", |m| is_notification(m, "notifications/subscriptions/acknowledged"));
    assert_eq!(ack["params"], json!({"notifications": {"toolsListChanged": true}, "_meta": {SUBSCRIPTION_KEY: "L1"}}));

    duet.request(json!("t"), "tools/call", enveloped(json!({"name": "touch", "arguments": {}})));
    let touched = duet.response(&json!("t"))["result"].clone();
    assert_eq!(touched["content"][0]["text"], "touched test://info");
    let changed = duet.wait_for("tools list change", |m| is_notification(m, "notifications/tools/list_changed"));
    assert_eq!(changed["params"]["_meta"][SUBSCRIPTION_KEY], "L1");

    let done = duet.finish(EXIT);
    done.assert_success();
    let position = |wanted: &dyn Fn(&Value) -> bool| {
        done.messages
            .iter()
            .position(wanted)
            .unwrap_or_else(|| panic!("missing message in:\n{}", lines(&done.messages)))
    };
    let ack_at = position(&|m| is_notification(m, "notifications/subscriptions/acknowledged"));
    let change_at = position(&|m| is_notification(m, "notifications/tools/list_changed"));
    let end_at = position(&|m| common::is_response_to(m, &json!("L1")));
    assert!(ack_at < change_at && change_at < end_at);
    let end = done.response(&json!("L1"));
    assert_eq!(end["result"]["_meta"][SUBSCRIPTION_KEY], "L1");
    assert_eq!(end["result"]["resultType"], "complete");
    // Only what the listen asked for, and only on the listen stream.
    let notifications: Vec<_> = done.messages.iter().filter(|m| m.get("method").is_some()).collect();
    assert_eq!(notifications.len(), 2, "{}", lines(&done.messages));
    assert!(notifications.iter().all(|n| n["params"]["_meta"][SUBSCRIPTION_KEY] == "L1"));
}

#[test]
fn handshake_era_change_notifications_reach_stdout() {
    let mut duet = Duet::testkit("2025-11-25");
    let init = duet.initialize("2025-11-25");
    assert_eq!(init["protocolVersion"], "2025-11-25");
    duet.request(json!("s"), "resources/subscribe", json!({"uri": "test://info"}));
    assert_eq!(duet.response(&json!("s"))["result"], json!({}));
    duet.request(json!("t"), "tools/call", json!({"name": "touch", "arguments": {}}));
    duet.response(&json!("t"));
    let updated = duet.wait_for("resource update", |m| is_notification(m, "notifications/resources/updated"));
    assert_eq!(updated["params"], json!({"uri": "test://info"}));
    duet.wait_for("tools list change", |m| is_notification(m, "notifications/tools/list_changed"));
    let done = duet.finish(EXIT);
    done.assert_success();
    assert_eq!(done.notifications("notifications/resources/updated").len(), 1);
    assert_eq!(done.notifications("notifications/tools/list_changed").len(), 1);
}

/// An error response's code and id.
type Expected = (i64, Value);

#[test]
fn bad_input_keeps_the_session_alive() {
    let mut duet = Duet::testkit("2025-06-18");
    duet.initialize("2025-06-18");
    // Each bad line, and the error it must draw (code, id), if any.
    let cases: [(&str, &[u8], Option<Expected>); 7] = [
        ("non-JSON", b"this is not json\n", Some((-32700, Value::Null))),
        ("invalid UTF-8", b"\xff\xfe\n", Some((-32700, Value::Null))),
        ("blank line", b"\n", None),
        ("whitespace line", b"  \t\r\n", None),
        ("jsonrpc 1.0", b"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}\n", Some((-32600, json!(1)))),
        ("empty batch", b"[]\n", Some((-32600, Value::Null))),
        ("stray response", b"{\"jsonrpc\":\"2.0\",\"id\":77,\"result\":{}}\n", None),
    ];
    for (i, (what, line, error)) in cases.iter().enumerate() {
        let before = duet.seen.len();
        duet.send_raw(line);
        let ping = json!(format!("ping-{i}"));
        duet.request(ping.clone(), "ping", json!({}));
        let answer = duet.response(&ping);
        assert_eq!(answer["result"], json!({}), "ping after {what}");
        if let Some((code, id)) = error {
            let matches = |m: &Value| m["error"]["code"] == *code && m.get("id") == Some(id);
            while !duet.seen[before..].iter().any(matches) {
                assert!(
                    duet.next_message(common::ANSWER).is_some(),
                    "no error {code} (id {id}) for the {what}; stdout:\n{}",
                    lines(&duet.seen[before..])
                );
            }
        }
    }
    let done = duet.finish(EXIT);
    done.assert_success();
    // initialize, one ping answer per case and the four errors: no answer to blank lines or
    // to the stray response.
    assert_eq!(done.messages.len(), 1 + cases.len() + 4, "{}", lines(&done.messages));
}

#[test]
fn options_that_cannot_work_are_usage_errors() {
    for (args, says) in [
        (&["serve", "--root", "/no/such/dir"][..], "/no/such/dir"),
        (&["serve", "--fixtures", "testkit", "--stateless"][..], "--stateless applies to the HTTP transports"),
        (
            &["serve", "--fixtures", "testkit", "--transport", "sse", "--stateless"][..],
            "legacy HTTP+SSE transport needs sessions",
        ),
        (&["serve", "--fixtures", "testkit", "--transport", "http", "--auth-token", ""][..], "Empty auth token"),
    ] {
        let done = Duet::spawn(args, "2025-06-18").finish(EXIT);
        assert_eq!(done.status.code(), Some(2), "{args:?}: {}; stderr:\n{}", done.status, done.stderr);
        let error = done.stderr.lines().find(|l| l.starts_with("Error:")).unwrap_or_default();
        assert!(error.contains(says), "{args:?}: {}", done.stderr);
        assert!(done.messages.is_empty(), "{}", lines(&done.messages));
    }
}

/// SIGTERM over stdio stops reading, answers what runs, and exits 0 with stdin still open.
#[test]
fn sigterm_over_stdio_answers_what_runs_and_exits_0() {
    let mut duet = Duet::testkit("2025-11-25");
    duet.initialize("2025-11-25");
    duet.request(json!(7), "tools/call", json!({"name": "slow", "arguments": {"steps": 50}}));
    std::thread::sleep(Duration::from_millis(300));
    duet_testing::process::signal(duet.child(), libc::SIGTERM);
    let answer = duet.response(&json!(7));
    assert_eq!(answer["result"]["structuredContent"]["done"], 50, "{answer}");
    let exited = duet_testing::process::exit_within(duet.child(), Duration::from_secs(10));
    let status = exited.expect("exited with stdin still open");
    assert_eq!(status.code(), Some(0));
}
