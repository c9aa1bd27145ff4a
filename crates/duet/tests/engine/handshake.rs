//! The handshake era (2024-11-05 to 2025-11-25): `initialize` and its negotiation, the
//! everyday requests at every version, pagination, tool and parameter errors, progress and
//! logging, cancellation, and handlers that panic.

use crate::client::{
    Client, HANDSHAKE, Recorder, assert_error, bounded, eventually, methods, params_of, testkit_capabilities,
    testkit_server, testkit_server_info, texts,
};
use crate::flows::everyday_requests;
use duet::layer::{HandlerError, Principal, Registry, ServerInfo, ToolResult, ToolSpec};
use duet::protocol::{Server, ServerOptions};
use duet::wire::Version;
use serde_json::{Map, Value, json};
use std::sync::Arc;

#[tokio::test]
async fn initialize_echoes_a_handshake_version_with_every_capability() {
    let (server, _) = testkit_server();
    let client = Client::connect(&server, Version::V2025_06_18);
    let result = client.initialize("2025-06-18").await;
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["capabilities"], testkit_capabilities());
    assert_eq!(result["serverInfo"], testkit_server_info());
    let instructions = result["instructions"].as_str().expect("instructions");
    assert!(!instructions.is_empty());
}

#[tokio::test]
async fn initialize_answers_the_latest_handshake_version_to_anything_else() {
    // Unknown versions, and 2026-07-28: initialize never answers the stateless era.
    for requested in ["1999-01-01", "2026-07-28"] {
        let (server, _) = testkit_server();
        let client = Client::connect(&server, Version::V2025_11_25);
        let result = client.initialize(requested).await;
        assert_eq!(result["protocolVersion"], "2025-11-25", "{requested}");
        assert_eq!(client.session.protocol_version(), Some(Version::V2025_11_25));
        client.assert_alive().await;
    }
}

#[tokio::test]
async fn initialize_2024_11_05_has_no_completions_capability() {
    let (server, _) = testkit_server();
    let client = Client::connect(&server, Version::V2024_11_05);
    let result = client.initialize("2024-11-05").await;
    let mut expected = testkit_capabilities();
    expected.as_object_mut().unwrap().remove("completions");
    assert_eq!(result["capabilities"], expected);
}

#[tokio::test]
async fn initialize_needs_a_string_version() {
    let (server, _) = testkit_server();
    let client = Client::connect(&server, Version::V2025_06_18);
    let error = client.error("initialize", json!({"protocolVersion": 20250618})).await;
    assert_eq!(error.code, -32602);
    client.initialize("2025-06-18").await;
    client.assert_alive().await;
}

#[tokio::test]
async fn only_ping_before_initialize() {
    let (server, _) = testkit_server();
    let client = Client::connect(&server, Version::V2025_06_18);
    let error = client.error("tools/list", json!({})).await;
    assert_error(&error, -32600, "Server not initialized: send initialize first");
    assert_eq!(client.request("ping", json!({})).await, json!({}));
    client.initialize("2025-06-18").await;
    client.assert_alive().await;
}

#[tokio::test]
async fn second_initialize_and_unknown_methods() {
    let (client, _) = Client::handshake(Version::V2025_06_18).await;
    let error = client.error("initialize", json!({"protocolVersion": "2025-06-18"})).await;
    assert_error(&error, -32600, "Session already initialized");
    assert_eq!(client.session.protocol_version(), Some(Version::V2025_06_18));

    let error = client.error("tools/frobnicate", json!({})).await;
    assert_error(&error, -32601, "Method not found");
    assert_eq!(error.data, Some(json!("tools/frobnicate")));
    client.assert_alive().await;
}

#[tokio::test]
async fn everyday_requests_at_every_handshake_version() {
    for version in HANDSHAKE {
        let (server, _) = testkit_server();
        let client = Client::connect(&server, version);
        let result = client.initialize(version.as_str()).await;
        let mut expected = testkit_capabilities();
        if version == Version::V2024_11_05 {
            expected.as_object_mut().unwrap().remove("completions");
        }
        assert_eq!(result["capabilities"], expected, "{version}");
        everyday_requests(&client).await;
    }
}

#[tokio::test]
async fn pages_of_three_concatenate_to_the_whole_list() {
    let (client, _) = Client::handshake(Version::V2025_11_25).await;
    let mut pages = Vec::new();
    let mut params = json!({});
    loop {
        let page = client.request("tools/list", params).await;
        let names: Vec<String> =
            page["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
        pages.push(names);
        match page.get("nextCursor") {
            Some(cursor) => params = json!({"cursor": cursor}),
            None => break,
        }
        assert!(pages.len() < 10, "tools/list never ends");
    }
    let expected: Vec<String> =
        client.server.layer().tools(&Principal::local()).iter().map(|t| t.name.clone()).collect();
    assert_eq!(pages.len(), expected.len().div_ceil(3));
    assert!(pages[..pages.len() - 1].iter().all(|p| p.len() == 3));
    assert_eq!(pages.concat(), expected);

    for cursor in [json!("not-a-cursor"), json!(7)] {
        let error = client.error("tools/list", json!({"cursor": cursor})).await;
        assert_error(&error, -32602, "Invalid cursor");
    }
    // A cursor of one list is no cursor of another.
    let first = client.request("tools/list", json!({})).await;
    let error = client.error("prompts/list", json!({"cursor": first["nextCursor"]})).await;
    assert_error(&error, -32602, "Invalid cursor");
    client.assert_alive().await;
}

#[tokio::test]
async fn tool_failures_are_results_and_bad_calls_are_errors() {
    let (client, _) = Client::handshake(Version::V2025_06_18).await;

    let out_of_range =
        client.request("tools/call", json!({"name": "echo", "arguments": {"text": "ab", "times": 9}})).await;
    assert_eq!(out_of_range["isError"], true, "{out_of_range}");
    assert!(texts(&out_of_range)[0].starts_with("Invalid arguments"));
    assert!(out_of_range.get("structuredContent").is_none());

    let failed = client.request("tools/call", json!({"name": "fail", "arguments": {}})).await;
    assert_eq!(failed["isError"], true);
    assert_eq!(texts(&failed), ["boom"]);

    let error = client.error("tools/call", json!({"name": "nope"})).await;
    assert_error(&error, -32602, "Unknown tool: nope");
    assert_eq!(error.data, Some(json!({"name": "nope"})));

    for params in [json!({}), json!({"name": ""}), json!({"name": 5})] {
        let error = client.error("tools/call", params).await;
        assert_error(&error, -32602, "Missing or invalid parameter: name");
    }
    let error = client.error("tools/call", json!({"name": "echo", "arguments": [1]})).await;
    assert_error(&error, -32602, "arguments must be an object");
    client.assert_alive().await;
}

fn slow_with_token() -> Value {
    json!({"name": "slow", "arguments": {}, "_meta": {"progressToken": "tok"}})
}

#[tokio::test]
async fn progress_needs_a_token_and_logs_follow_the_session_level() {
    let (client, _) = Client::handshake(Version::V2025_06_18).await;

    let result = client.request("tools/call", slow_with_token()).await;
    assert_eq!(result["structuredContent"], json!({"done": 3}));
    let sent = client.sent.take();
    let progress = params_of(&sent, "notifications/progress");
    let steps: Vec<&Value> = progress.iter().map(|p| &p["progress"]).collect();
    assert_eq!(steps, [&json!(1), &json!(2), &json!(3)]);
    assert!(progress.iter().all(|p| p["total"] == 3 && p["progressToken"] == "tok"));
    let logs = params_of(&sent, "notifications/message");
    let expected: Vec<Value> = (1..=3).map(|i| json!({"level": "info", "data": {"step": i}})).collect();
    assert_eq!(logs, expected);

    client.request("tools/call", json!({"name": "slow", "arguments": {}})).await;
    let sent = client.sent.take();
    assert_eq!(methods(&sent), ["notifications/message"; 3], "no token, no progress");

    let set = client.request("logging/setLevel", json!({"level": "warning"})).await;
    assert_eq!(set, json!({}));
    client.request("tools/call", slow_with_token()).await;
    assert_eq!(methods(&client.sent.take()), ["notifications/progress"; 3], "info messages are below warning");

    let error = client.error("logging/setLevel", json!({"level": "loud"})).await;
    assert_error(&error, -32602, "Invalid log level: 'loud'");
    client.request("tools/call", slow_with_token()).await;
    assert_eq!(methods(&client.sent.take()), ["notifications/progress"; 3], "a rejected level changes nothing");
    client.request("logging/setLevel", json!({"level": "debug"})).await;
    client.request("tools/call", slow_with_token()).await;
    assert_eq!(client.sent.take().len(), 6);
    client.assert_alive().await;
}

#[tokio::test]
async fn a_request_sink_gets_every_request_notification() {
    let (client, _) = Client::handshake(Version::V2025_11_25).await;
    let sink = Recorder::new(client.version.as_str());
    client.request_via("tools/call", slow_with_token(), Some(&sink)).await;
    let seen = sink.take();
    assert_eq!(params_of(&seen, "notifications/progress").len(), 3);
    assert_eq!(params_of(&seen, "notifications/message").len(), 3);
    assert_eq!(seen.len(), 6);
    assert!(client.sent.is_empty(), "nothing went to the session's send");
}

/// Starts `sleepy` with id `id` in a task and waits until the session runs it.
async fn start_sleepy(
    client: &Arc<Client>,
    id: &str,
) -> tokio::task::JoinHandle<Option<duet::wire::message::Message<duet::wire::jsonrpc::Response>>> {
    let before = client.session.inflight();
    let message =
        client.message_with_id(json!(id), "tools/call", json!({"name": "sleepy", "arguments": {"seconds": 30}}));
    let task = tokio::spawn({
        let client = client.clone();
        async move { client.send(message).await }
    });
    eventually("sleepy to start", || client.session.inflight() > before).await;
    task
}

#[tokio::test]
async fn a_cancelled_request_gets_no_answer() {
    let (client, _) = Client::handshake(Version::V2025_06_18).await;
    let client = Arc::new(client);
    let task = start_sleepy(&client, "slow-1").await;

    for unknown in [json!("slow-2"), json!(1), json!(null)] {
        client.notify("notifications/cancelled", json!({"requestId": unknown})).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(!task.is_finished(), "a cancel of another id stopped sleepy");
    assert_eq!(client.session.inflight(), 1);

    client.notify("notifications/cancelled", json!({"requestId": "slow-1", "reason": "test"})).await;
    let answer = bounded("the cancelled sleepy", task).await.unwrap();
    assert_eq!(answer, None);
    assert_eq!(client.session.inflight(), 0);
    client.assert_alive().await;
}

#[tokio::test]
async fn closing_the_session_cancels_what_runs() {
    let (client, _) = Client::handshake(Version::V2025_06_18).await;
    let client = Arc::new(client);
    let first = start_sleepy(&client, "a").await;
    let second = start_sleepy(&client, "b").await;
    assert_eq!(client.session.inflight(), 2);
    client.session.close();
    for task in [first, second] {
        assert_eq!(bounded("a closed session", task).await.unwrap(), None);
    }
    assert_eq!(client.session.inflight(), 0);
}

#[tokio::test]
async fn resources_read_and_report_missing_ones() {
    let (client, _) = Client::handshake(Version::V2025_06_18).await;
    for uri in ["test://items/zeta", "other://x"] {
        let error = client.error("resources/read", json!({"uri": uri})).await;
        assert_eq!(error.code, -32002, "{uri}: {error:?}");
        assert_eq!(error.data, Some(json!({"uri": uri})));
    }
    let error = client.error("resources/read", json!({})).await;
    assert_error(&error, -32602, "Missing or invalid parameter: uri");
    client.assert_alive().await;
}

#[tokio::test]
async fn prompts_check_their_arguments() {
    let (client, _) = Client::handshake(Version::V2025_06_18).await;
    for arguments in [json!({}), json!({"name": ""}), json!({"style": "formal"})] {
        let error = client.error("prompts/get", json!({"name": "greet", "arguments": arguments})).await;
        assert_error(&error, -32602, "Missing required prompt arguments: name");
    }
    let error = client.error("prompts/get", json!({"name": "nope"})).await;
    assert_error(&error, -32602, "Unknown prompt: nope");
    let error = client.error("prompts/get", json!({"name": "greet", "arguments": [1]})).await;
    assert_error(&error, -32602, "arguments must be an object");
    client.assert_alive().await;
}

#[tokio::test]
async fn completion_checks_its_reference_and_argument() {
    let (client, _) = Client::handshake(Version::V2025_06_18).await;
    let argument = json!({"name": "item_id", "value": "a"});
    for reference in [
        json!({"type": "ref/x", "uri": "test://items/{item_id}"}),
        json!({"type": "ref/resource"}),
        json!("ref/prompt"),
    ] {
        let error = client.error("completion/complete", json!({"ref": reference, "argument": argument})).await;
        assert_error(&error, -32602, "Invalid completion ref");
    }
    let error = client
        .error(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"value": "g"}}),
        )
        .await;
    assert_error(&error, -32602, "Invalid completion argument");
    client.assert_alive().await;
}

/// A registry with one tool that panics unless it is told to stay calm.
fn panicking_server() -> Server {
    let explode = ToolSpec::new("explode", |args: Map<String, Value>, _| async move {
        if args.get("calm") != Some(&Value::Bool(true)) {
            panic!("explode was not calm");
        }
        Ok::<_, HandlerError>(ToolResult::text("calm"))
    })
    .description("Panics unless calm")
    .input_schema(json!({"type": "object", "properties": {"calm": {"type": "boolean"}}}));
    let mut registry = Registry::new(ServerInfo::new("panicky", "1"));
    registry.tool(explode).expect("a valid tool");
    Server::new(Arc::new(registry), ServerOptions::default())
}

#[tokio::test]
async fn a_panicking_handler_is_an_internal_error_and_the_session_lives_on() {
    let server = panicking_server();
    for version in [Version::V2025_06_18, Version::V2026_07_28] {
        let client = Client::connect(&server, version);
        if !version.is_modern() {
            client.initialize(version.as_str()).await;
        }
        let error = client.error("tools/call", json!({"name": "explode", "arguments": {}})).await;
        assert_error(&error, -32603, "Internal error");
        let calm = client.request("tools/call", json!({"name": "explode", "arguments": {"calm": true}})).await;
        assert_eq!(texts(&calm), ["calm"], "{version}");
        if !version.is_modern() {
            assert_eq!(client.request("ping", json!({})).await, json!({}));
        }
        assert_eq!(client.session.inflight(), 0);
    }
}
