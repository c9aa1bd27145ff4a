//! The stdio transport end to end: the real `duet serve --fixtures testkit` over pipes, one
//! process per test. Every stdout line is checked by the helper as it is read: one complete
//! JSON-RPC object, valid under the MCP schema of the version the session speaks.

mod common;

use common::{CAPABILITIES_KEY, Duet, SUBSCRIPTION_KEY, VERSION_KEY, enveloped, init_params, is_notification, lines};
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

/// A client that declares roots is asked for them once initialized and again when it says
/// they changed, over the real stdio transport; its requests see the latest answer.
#[test]
fn client_roots_are_asked_and_asked_again() {
    let mut duet = Duet::testkit("2025-11-25");
    let mut params = init_params("2025-11-25");
    params["capabilities"] = json!({"roots": {"listChanged": true}});
    duet.request(json!(1), "initialize", params);
    duet.response(&json!(1));
    duet.notify("notifications/initialized", json!({}));
    let mut asked = Vec::new();
    for (n, uri) in [(2, "file:///work/a"), (3, "file:///work/b")] {
        let ask = duet.wait_for("roots/list", |m| m["method"] == "roots/list" && !asked.contains(&m["id"]));
        asked.push(ask["id"].clone());
        duet.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": uri}]}}));
        duet.request(json!(n), "tools/call", json!({"name": "client_roots", "arguments": {}}));
        assert_eq!(duet.response(&json!(n))["result"]["structuredContent"], json!({"roots": [uri]}));
        duet.notify("notifications/roots/list_changed", json!({}));
    }
    let done = duet.finish(EXIT);
    done.assert_success();
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

/// The longest line the bad-input sessions read (`--max-message-bytes`).
const LIMIT: usize = 512;

/// A response a bad line must draw.
#[derive(Debug, Clone)]
enum Draw {
    /// An error: its code, the id it names, its message.
    Error(i64, Value, String),
    /// A batch of responses: each one's id and error code (`None` for a result).
    Batch(Vec<(Value, Option<i64>)>),
}

impl Draw {
    fn matches(&self, message: &Value) -> bool {
        match self {
            Draw::Error(code, id, text) => {
                message.get("id") == Some(id)
                    && message["error"]["code"] == *code
                    && message["error"]["message"] == *text
            }
            Draw::Batch(expected) => message.as_array().is_some_and(|batch| {
                let got: Vec<(Value, Option<i64>)> =
                    batch.iter().map(|r| (r["id"].clone(), r["error"]["code"].as_i64())).collect();
                got == *expected
            }),
        }
    }
}

/// A bad line (newline included) and what it must draw: nothing, or these responses.
type BadLine = (&'static str, Vec<u8>, Vec<Draw>);

fn error(code: i64, id: Value, text: &str) -> Vec<Draw> {
    vec![Draw::Error(code, id, text.to_string())]
}

fn line(text: &str) -> Vec<u8> {
    format!("{text}\n").into_bytes()
}

/// A stray response (answered with nothing) exactly `size` bytes long, newline excluded.
fn stray_response(size: usize) -> Vec<u8> {
    let empty = r#"{"jsonrpc":"2.0","id":"","result":{}}"#;
    line(&empty.replace(r#""id":"""#, &format!(r#""id":"{}""#, "x".repeat(size - empty.len()))))
}

/// What every era answers alike.
fn bad_lines() -> Vec<BadLine> {
    let parse = || error(-32700, Value::Null, "Parse error");
    let invalid = |id: &str| error(-32600, json!(id), "Invalid Request");
    let bad_id = || error(-32600, Value::Null, "Invalid Request: bad id");
    let not_an_object = |id: &str| error(-32602, json!(id), "params must be an object");
    let too_large =
        |size: usize| error(-32600, Value::Null, &format!("Message too large: {size} bytes; the limit is {LIMIT}"));
    vec![
        ("not JSON", line("this is not json"), parse()),
        ("invalid UTF-8", b"\xff\xfe\n".to_vec(), parse()),
        (
            "invalid UTF-8 inside a string",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}\n".to_vec(),
            parse(),
        ),
        ("an unterminated object", line(r#"{"jsonrpc":"2.0","id":"t","method":"ping""#), parse()),
        (
            "a message broken over two lines",
            line("{\"jsonrpc\":\"2.0\",\n\"id\":\"split\",\"method\":\"ping\"}"),
            [parse(), parse()].concat(),
        ),
        (
            "a NUL byte after the message",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"n\",\"method\":\"ping\"}\x00\n".to_vec(),
            parse(),
        ),
        ("text after the message", line(r#"{"jsonrpc":"2.0","id":"a","method":"ping"} and more"#), parse()),
        (
            "params nested past the parser's depth",
            line(&format!(
                r#"{{"jsonrpc":"2.0","id":"d","method":"ping","params":{{"x":{}{}}}}}"#,
                "[".repeat(200),
                "]".repeat(200)
            )),
            parse(),
        ),
        ("a line one byte over the limit", stray_response(LIMIT + 1), too_large(LIMIT + 1)),
        ("a line of 1 MiB", line(&"x".repeat(1 << 20)), too_large(1 << 20)),
        ("a line at the limit", stray_response(LIMIT), vec![]),
        ("a blank line", line(""), vec![]),
        ("whitespace", line(" \t\r"), vec![]),
        ("a number", line("5"), error(-32600, Value::Null, "Invalid Request")),
        ("a string", line(r#""ping""#), error(-32600, Value::Null, "Invalid Request")),
        ("null", line("null"), error(-32600, Value::Null, "Invalid Request")),
        ("an empty object", line("{}"), error(-32600, Value::Null, "Invalid Request")),
        ("an empty batch", line("[]"), error(-32600, Value::Null, "Invalid Request: empty batch")),
        ("jsonrpc 1.0", line(r#"{"jsonrpc":"1.0","id":"v1","method":"ping"}"#), invalid("v1")),
        ("no jsonrpc member", line(r#"{"id":"v2","method":"ping"}"#), invalid("v2")),
        ("jsonrpc as a number", line(r#"{"jsonrpc":2.0,"id":"v3","method":"ping"}"#), invalid("v3")),
        ("jsonrpc 2.00", line(r#"{"jsonrpc":"2.00","id":"v4","method":"ping"}"#), invalid("v4")),
        ("id null", line(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#), bad_id()),
        ("id 1.5", line(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#), bad_id()),
        ("id true", line(r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#), bad_id()),
        ("id an array", line(r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#), bad_id()),
        ("id an object", line(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#), bad_id()),
        ("id past u64", line(r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}"#), bad_id()),
        (
            "method a number",
            line(r#"{"jsonrpc":"2.0","id":"m1","method":5}"#),
            error(-32600, json!("m1"), "Invalid Request: method must be a string"),
        ),
        ("no method", line(r#"{"jsonrpc":"2.0","id":"m2"}"#), invalid("m2")),
        (
            "params an array",
            line(r#"{"jsonrpc":"2.0","id":"p1","method":"tools/list","params":[1]}"#),
            not_an_object("p1"),
        ),
        (
            "params a string",
            line(r#"{"jsonrpc":"2.0","id":"p2","method":"tools/list","params":"x"}"#),
            not_an_object("p2"),
        ),
        (
            "params a number",
            line(r#"{"jsonrpc":"2.0","id":"p3","method":"tools/call","params":3}"#),
            not_an_object("p3"),
        ),
        ("a response to nothing", line(r#"{"jsonrpc":"2.0","id":999,"result":{}}"#), vec![]),
        ("an error to nothing", line(r#"{"jsonrpc":"2.0","id":998,"error":{"code":1,"message":"x"}}"#), vec![]),
        ("a response without an id", line(r#"{"jsonrpc":"2.0","result":{}}"#), vec![]),
        ("a malformed error to nothing", line(r#"{"jsonrpc":"2.0","id":997,"error":"x"}"#), vec![]),
        (
            "a cancel of nothing",
            line(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345}}"#),
            vec![],
        ),
        (
            "a notification whose params are a string",
            line(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}"#),
            vec![],
        ),
        ("an unknown notification", line(r#"{"jsonrpc":"2.0","method":"notifications/nope"}"#), vec![]),
        ("a line ending in CRLF", line("{\"jsonrpc\":\"2.0\",\"id\":996,\"result\":{}}\r"), vec![]),
    ]
}

/// Sends each bad line to `duet` (its session started), then `request(id)`, which must be
/// answered with a result, and waits for what the line must draw; at the end nothing else
/// was written.
fn keeps_answering(mut duet: Duet, cases: Vec<BadLine>, request: impl Fn(Value) -> Value) {
    let started = duet.seen.len();
    for (i, (what, bad, draws)) in cases.iter().enumerate() {
        let before = duet.seen.len();
        duet.send_raw(bad);
        let id = json!(format!("after-{i}"));
        duet.send(&request(id.clone()));
        let answer = duet.response(&id);
        assert!(answer.get("result").is_some(), "the request after {what}: {answer}");
        for draw in draws {
            while !duet.seen[before..].iter().any(|m| draw.matches(m)) {
                assert!(
                    duet.next_message(common::ANSWER).is_some(),
                    "no {draw:?} for {what}; stdout:\n{}",
                    lines(&duet.seen[before..])
                );
            }
        }
    }
    let done = duet.finish(EXIT);
    done.assert_success();
    let expected = started + cases.iter().map(|(_, _, draws)| 1 + draws.len()).sum::<usize>();
    assert_eq!(done.messages.len(), expected, "{}", lines(&done.messages));
}

fn bad_input_session(version: &str) -> Duet {
    Duet::spawn(&["serve", "--fixtures", "testkit", "--max-message-bytes", &LIMIT.to_string()], version)
}

fn ping(id: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

#[test]
fn bad_input_keeps_a_2025_06_18_session_answering() {
    let mut duet = bad_input_session("2025-06-18");
    duet.initialize("2025-06-18");
    let era = vec![
        (
            "a batch",
            line(r#"[{"jsonrpc":"2.0","id":"b1","method":"ping"}]"#),
            error(-32600, Value::Null, "JSON-RPC batches are not supported by protocol version 2025-06-18"),
        ),
        (
            "an unknown method",
            line(r#"{"jsonrpc":"2.0","id":"u1","method":"no/such"}"#),
            error(-32601, json!("u1"), "Method not found"),
        ),
        (
            "a tool name that is a number",
            line(r#"{"jsonrpc":"2.0","id":"t1","method":"tools/call","params":{"name":5}}"#),
            error(-32602, json!("t1"), "Missing or invalid parameter: name"),
        ),
        (
            "tools/call arguments that are an array",
            line(r#"{"jsonrpc":"2.0","id":"t2","method":"tools/call","params":{"name":"echo","arguments":[]}}"#),
            error(-32602, json!("t2"), "arguments must be an object"),
        ),
        (
            "initialize again",
            line(
                &json!({"jsonrpc": "2.0", "id": "i2", "method": "initialize", "params": init_params("2025-06-18")})
                    .to_string(),
            ),
            error(-32600, json!("i2"), "Session already initialized"),
        ),
        (
            "the 2026 envelope",
            line(
                &json!({"jsonrpc": "2.0", "id": "e1", "method": "tools/list", "params": enveloped(json!({}))})
                    .to_string(),
            ),
            error(
                -32600,
                json!("e1"),
                "this session negotiated its protocol version with initialize; requests must not carry the 2026-07-28 _meta envelope",
            ),
        ),
    ];
    keeps_answering(duet, [bad_lines(), era].concat(), ping);
}

#[test]
fn bad_input_keeps_a_2025_03_26_session_answering() {
    let limit = LIMIT.to_string();
    let args = ["serve", "--fixtures", "testkit", "--max-message-bytes", &limit, "--max-batch-items", "3"];
    let mut duet = Duet::spawn(&args, "2025-03-26");
    duet.initialize("2025-03-26");
    let pings = |n: usize| {
        let pings: Vec<Value> = (0..n).map(|i| ping(json!(format!("p{i}")))).collect();
        line(&Value::Array(pings).to_string())
    };
    let era = vec![
        (
            "a batch of as many messages as --max-batch-items",
            pings(3),
            vec![Draw::Batch((0..3).map(|i| (json!(format!("p{i}")), None)).collect())],
        ),
        (
            "a batch of more",
            pings(4),
            error(-32600, Value::Null, "Invalid Request: a batch may hold at most 3 messages; this one holds 4"),
        ),
        (
            "a batch of a ping and a number",
            line(r#"[{"jsonrpc":"2.0","id":"b1","method":"ping"},1]"#),
            vec![Draw::Batch(vec![(json!("b1"), None), (Value::Null, Some(-32600))])],
        ),
        ("a batch of a number", line("[1]"), vec![Draw::Batch(vec![(Value::Null, Some(-32600))])]),
        (
            "a batch with an unknown method",
            line(r#"[{"jsonrpc":"2.0","id":"b2","method":"ping"},{"jsonrpc":"2.0","id":"b3","method":"no/such"}]"#),
            vec![Draw::Batch(vec![(json!("b2"), None), (json!("b3"), Some(-32601))])],
        ),
        (
            "a batch with a bad id",
            line(r#"[{"jsonrpc":"2.0","id":null,"method":"ping"}]"#),
            vec![Draw::Batch(vec![(Value::Null, Some(-32600))])],
        ),
        ("a batch of notifications", line(r#"[{"jsonrpc":"2.0","method":"notifications/nope"}]"#), vec![]),
        ("a batch of responses", line(r#"[{"jsonrpc":"2.0","id":995,"result":{}}]"#), vec![]),
    ];
    keeps_answering(duet, [bad_lines(), era].concat(), ping);
}

#[test]
fn bad_input_keeps_a_2026_07_28_session_answering() {
    let mut duet = bad_input_session("2026-07-28");
    duet.request(json!("discover"), "server/discover", enveloped(json!({})));
    duet.response(&json!("discover"));
    let request = |id: &str, method: &str, params: Value| {
        line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string())
    };
    let missing = format!("params._meta is missing the required envelope key(s): {VERSION_KEY}, {CAPABILITIES_KEY}");
    let era = vec![
        (
            "a batch",
            line(&format!(
                "[{}]",
                json!({"jsonrpc": "2.0", "id": "b1", "method": "tools/list", "params": enveloped(json!({}))})
            )),
            error(-32600, Value::Null, "JSON-RPC batches are not supported by protocol version 2026-07-28"),
        ),
        (
            "an unknown method",
            request("u1", "no/such", enveloped(json!({}))),
            error(-32601, json!("u1"), "Method not found"),
        ),
        (
            "a handshake-era method",
            request("u2", "ping", enveloped(json!({}))),
            error(-32601, json!("u2"), "Method not found"),
        ),
        ("no envelope", request("e1", "tools/list", json!({})), error(-32602, json!("e1"), &missing)),
        (
            "an unsupported version",
            request("e2", "tools/list", json!({"_meta": {VERSION_KEY: "2099-01-01", CAPABILITIES_KEY: {}}})),
            error(-32022, json!("e2"), "Unsupported protocol version: 2099-01-01"),
        ),
        (
            "capabilities that are not an object",
            request("e3", "tools/list", json!({"_meta": {VERSION_KEY: "2026-07-28", CAPABILITIES_KEY: []}})),
            error(-32602, json!("e3"), &format!("{CAPABILITIES_KEY} must be an object")),
        ),
        (
            "initialize",
            request("i1", "initialize", init_params("2025-06-18")),
            error(-32022, json!("i1"), "connection is serving the 2026-07-28 protocol; initialize is not accepted"),
        ),
        (
            "a tool name that is a number",
            request("t1", "tools/call", enveloped(json!({"name": 5}))),
            error(-32602, json!("t1"), "Missing or invalid parameter: name"),
        ),
        (
            "an unknown tool",
            request("t2", "tools/call", enveloped(json!({"name": "nope"}))),
            error(-32602, json!("t2"), "Unknown tool: nope"),
        ),
    ];
    let echo = |id: Value| {
        let params = enveloped(json!({"name": "echo", "arguments": {"text": "still here"}}));
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    keeps_answering(duet, [bad_lines(), era].concat(), echo);
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
        (
            &["serve", "--fixtures", "testkit", "--transport", "http", "--auth-token", "tok:mcp:tools:alice"][..],
            "Invalid value for --auth-token: Auth token spec has more than three ':'-separated fields: the form is TOKEN[:ROLES[:ID]]",
        ),
        (
            &["serve", "--fixtures", "testkit", "--transport", "http", "--trusted-proxy", "10.0.0.0/33"][..],
            "--trusted-proxy takes an address or CIDR such as 10.0.0.0/8, not \"10.0.0.0/33\"",
        ),
        (&["serve", "--fixtures", "testkit", "--trusted-proxy", "10.0.0.5"][..], "--trusted-proxy applies to the HTTP"),
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
    duet_testing::process::signal(duet.child(), rustix::process::Signal::TERM);
    let answer = duet.response(&json!(7));
    assert_eq!(answer["result"]["structuredContent"]["done"], 50, "{answer}");
    let exited = duet_testing::process::exit_within(duet.child(), Duration::from_secs(10));
    let status = exited.expect("exited with stdin still open");
    assert_eq!(status.code(), Some(0));
}
