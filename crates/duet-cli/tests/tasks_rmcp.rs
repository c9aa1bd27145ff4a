//! Tasks driven end to end by a real client of the tasks extension (SEP-2663): the official
//! Rust SDK's client (rmcp 3.11), speaking 2026-07-28 over Streamable HTTP to
//! `duet serve --fixtures conformance`, with the extension declared. It calls a tool that
//! becomes a task and asks the user to confirm, answers the task's input request through
//! `tasks/update` once polling shows it, and reads the inlined result; it asks a name within
//! the call first (a multi round-trip request) before a tool becomes a task; and it cancels
//! a long task.

// Shared with the stdio tests; this file uses only part of it.
#[allow(dead_code)]
mod common;

use common::Duet;
use rmcp::ClientServiceExt;
use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig, GetTaskParams,
    GetTaskResult, Implementation, ProtocolVersion, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Map, Value, json};
use std::time::Duration;

type Client = RunningService<RoleClient, ClientConfig>;

/// A client of duet at `url` that declares the tasks extension and elicitation.
async fn connect(url: &str) -> Client {
    let declared = json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let capabilities: ClientCapabilities = serde_json::from_value(declared).expect("client capabilities");
    let info = ClientConfig::new(capabilities, Implementation::new("duet-tasks-test", "0"));
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    info.serve_with_lifecycle(StreamableHttpClientTransport::from_uri(url.to_string()), lifecycle)
        .await
        .expect("the client connects with server/discover")
}

fn arguments(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("arguments are an object")
}

/// Calls `tool`, which must become a task; its id.
async fn start(client: &Client, tool: &str, args: Value) -> String {
    let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments(args));
    match client.call_tool_once(params).await.expect("tools/call") {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("{tool} should become a task, got {other:?}"),
    }
}

/// Polls the task (as the SDK does, at the interval the server suggests) until `done` says so.
async fn poll(client: &Client, id: &str, done: impl Fn(&GetTaskResult) -> bool) -> GetTaskResult {
    for _ in 0..100 {
        let task = client.get_task(GetTaskParams::new(id)).await.expect("tasks/get");
        if done(&task) {
            return task;
        }
        let interval = task.task.task.poll_interval_ms.unwrap_or(100);
        tokio::time::sleep(Duration::from_millis(interval.min(200))).await;
    }
    panic!("task {id} did not get there in time")
}

fn text_of(result: &Map<String, Value>) -> &str {
    result["content"][0]["text"].as_str().expect("a text block")
}

#[tokio::test]
async fn rmcp_drives_tasks_with_input_and_cancellation() {
    let duet = Duet::spawn(
        &["serve", "--fixtures", "conformance", "--transport", "http", "--host", "127.0.0.1", "--port", "0"],
        "2026-07-28",
    );
    let line = duet.stderr_line("listening on http://");
    let url = line.split("listening on ").nth(1).expect("the endpoint").trim().to_string();
    let client = connect(&url).await;
    let discovered = client.peer_info().expect("the server's discover result");
    assert!(discovered.capabilities.supports_tasks(), "duet declares the tasks extension: {discovered:?}");

    // A task that asks: the client sees input_required on tasks/get and answers it.
    let id = start(&client, "confirm_delete", json!({"filename": "draft.txt"})).await;
    let asking = poll(&client, &id, |t| t.task.status() != TaskStatus::Working).await;
    let TaskPayload::InputRequired { input_requests } = &asking.task.payload else {
        panic!("the task asks for input: {asking:?}")
    };
    let (key, request) = input_requests.iter().next().expect("one input request");
    assert!(serde_json::to_value(request).unwrap().to_string().contains("Delete draft.txt?"), "{request:?}");
    let answer = json!({"action": "accept", "content": {"confirm": true}});
    let responses = [(key.clone(), answer)].into_iter().collect();
    client.update_task(UpdateTaskParams::new(id.clone(), responses)).await.expect("tasks/update");
    let done = poll(&client, &id, |t| t.task.status().is_terminal()).await;
    let TaskPayload::Completed { result } = &done.task.payload else { panic!("completed: {done:?}") };
    assert_eq!(text_of(result), "Deleted draft.txt");

    // Asked within the call first (a multi round-trip request), then a task.
    let params = CallToolRequestParams::new("test_tool_with_task".to_string());
    let CallToolResponse::InputRequired(asked) = client.call_tool_once(params.clone()).await.expect("round 1") else {
        panic!("the tool asks a name before it becomes a task")
    };
    let questions = asked.input_requests.as_ref().expect("input requests");
    let name_key = questions.keys().next().expect("a question").clone();
    let answered = params
        .with_input_responses(
            [(name_key, json!({"action": "accept", "content": {"name": "Ada"}}))].into_iter().collect(),
        )
        .with_request_state(asked.request_state.clone().expect("sealed state"));
    let CallToolResponse::Task(created) = client.call_tool_once(answered).await.expect("round 2") else {
        panic!("the answered call becomes a task")
    };
    let done = poll(&client, &created.task.task_id, |t| t.task.status().is_terminal()).await;
    let TaskPayload::Completed { result } = &done.task.payload else { panic!("completed: {done:?}") };
    assert!(text_of(result).contains("Hello, Ada!"), "{result:?}");

    // A long task, cancelled: the acknowledgement, then the task is cancelled.
    let id = start(&client, "slow_compute", json!({"seconds": 60, "label": "long"})).await;
    client.cancel_task(CancelTaskParams::new(id.clone())).await.expect("tasks/cancel");
    let cancelled = client.get_task(GetTaskParams::new(id.clone())).await.expect("tasks/get");
    assert_eq!(cancelled.task.status(), TaskStatus::Cancelled);
    client.cancel_task(CancelTaskParams::new(id)).await.expect("cancelling again is acknowledged too");
    client.cancel().await.expect("the client closes");
}
