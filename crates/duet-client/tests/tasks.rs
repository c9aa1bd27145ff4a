//! Tool calls run as tasks against duet's conformance fixtures over HTTP, in both eras
//! through the same calls: in 2026 the tasks extension (the server makes a call a task),
//! in 2025-11-25 the experimental tasks (the client asks for one). A task is polled to its
//! end, cancelled, and answered when it asks for input (2026: `tasks/update`; 2025-11-25:
//! the server's requests over `tasks/result`), and its end reads the same in both eras.

mod common;

use common::{conformance_server, text_of};
use duet::transport::http::HttpServer;
use duet_client::types::{TaskStatus, ToolResult};
use duet_client::{
    Client, Elicited, Ended, Error, Handlers, HttpTransport, Negotiate, Options, Started, Task, TaskOptions, Version,
};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Connects to duet's conformance fixtures, served over HTTP on 127.0.0.1, in `version`; a
/// form's `name` is answered Ada and its `confirm` true.
async fn connect(version: Version, tasks: TaskOptions) -> (HttpServer, Client) {
    let server = conformance_server().await;
    let handlers = Handlers::new().on_elicitation(|request| async move {
        let fields = request.requested_schema.as_ref().and_then(|s| s.get("properties")).and_then(Value::as_object);
        let mut content = Map::new();
        for field in fields.into_iter().flat_map(|f| f.keys()) {
            match field.as_str() {
                "name" => content.insert(field.clone(), "Ada".into()),
                "confirm" => content.insert(field.clone(), true.into()),
                _ => None,
            };
        }
        Ok(Elicited::Accept(content))
    });
    let options = Options { handlers, tasks, ..Options::default() };
    let transport = HttpTransport::new(&server.url()).expect("a URL");
    let client = Client::connect_with(transport, Negotiate::Pin(version), options).await.expect("connects");
    (server, client)
}

/// Starts tool `name` with `arguments` and expects a task of it.
async fn task_of(client: &Client, name: &str, arguments: Value) -> Task {
    match client.call_tool_as_task(name, arguments).await.expect("the call starts") {
        Started::Task(task) => task,
        Started::Done(result) => panic!("{name} answered at once: {result:?}"),
    }
}

/// Waits for a task and expects its result.
async fn completed(client: &Client, task: Task) -> ToolResult {
    match client.wait_task(task).await.expect("the task ends") {
        Ended::Completed(result) => result,
        other => panic!("the task did not complete: {other:?}"),
    }
}

/// What both eras show the same: a task polled to completion, a quick call answered at
/// once, a tool error as a completed result, a protocol error as a failure, a cancelled
/// task, and a task that asks for input answered by the handlers.
async fn tasks_run_to_their_end(version: Version) {
    let (server, client) = connect(version, TaskOptions::default()).await;

    let computing = task_of(&client, "slow_compute", json!({"seconds": 0.5, "label": "sum"})).await;
    assert!(!computing.task_id.is_empty() && computing.status == TaskStatus::Working, "{computing:?}");
    assert!(computing.poll_interval_ms.is_some(), "{computing:?}");
    let seen = client.get_task(&computing.task_id).await.expect("tasks/get");
    assert_eq!(seen.task_id, computing.task_id);
    assert_eq!(text_of(&completed(&client, computing).await), "sum: done after 0.5 s");

    // A tool that never runs as a task: 2026's server decides so; a 2025-11-25 client asks
    // for no task once the listing says so, and the server refuses one asked for.
    let greeting = client.call_tool_as_task("greet", json!({"name": "Ada"})).await;
    if version.is_modern() {
        assert!(matches!(&greeting, Ok(Started::Done(result)) if text_of(result) == "Hello, Ada!"), "{greeting:?}");
    } else {
        assert_eq!(greeting.map_err(|e| e.code()).err(), Some(Some(-32601)), "unlisted: a task asked for");
    }
    client.list_tools().await.expect("tools/list");
    match client.call_tool_as_task("greet", json!({"name": "Ada"})).await.expect("listed, greet is called") {
        Started::Done(result) => assert_eq!(text_of(&result), "Hello, Ada!"),
        other => panic!("greet: {other:?}"),
    }

    let failing = completed(&client, task_of(&client, "failing_job", json!({})).await).await;
    assert!(failing.is_error && text_of(&failing).contains("the job failed"), "{failing:?}");
    match client.wait_task(task_of(&client, "protocol_error_job", json!({})).await).await.expect("it ends") {
        Ended::Failed(error) => assert_eq!(error.code, -32603, "{error:?}"),
        other => panic!("a protocol error: {other:?}"),
    }

    let long = task_of(&client, "slow_compute", json!({"seconds": 60})).await;
    client.cancel_task(&long.task_id).await.expect("tasks/cancel");
    match client.wait_task(long).await.expect("it ends") {
        Ended::Cancelled(task) => assert_eq!(task.status, TaskStatus::Cancelled),
        other => panic!("a cancelled task: {other:?}"),
    }

    let deleting = task_of(&client, "confirm_delete", json!({"filename": "notes.txt"})).await;
    assert_eq!(text_of(&completed(&client, deleting).await), "Deleted notes.txt");
    client.close().await;
    server.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn the_2026_extensions_tasks_run_to_their_end() {
    tasks_run_to_their_end(Version::V2026_07_28).await;
}

#[tokio::test]
async fn the_2025_11_25_tasks_run_to_their_end() {
    tasks_run_to_their_end(Version::V2025_11_25).await;
}

#[tokio::test]
async fn input_asked_before_the_task_and_within_it_is_answered() {
    let (server, client) = connect(Version::V2026_07_28, TaskOptions::default()).await;
    // The name is asked within the call (input_required), then the call becomes a task.
    let greeting = task_of(&client, "test_tool_with_task", json!({})).await;
    assert_eq!(text_of(&completed(&client, greeting).await), "Hello, Ada! (from a task)");
    // Two questions at once, within the task, answered in one tasks/update.
    let both = completed(&client, task_of(&client, "multi_input", json!({})).await).await;
    assert_eq!(text_of(&both), "Received Ada (true) and Ada (true)");
    client.close().await;
    server.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_wait_is_bounded_and_the_task_left_running() {
    let bounds = TaskOptions { max_wait: Duration::from_millis(300), ..TaskOptions::default() };
    for version in [Version::V2026_07_28, Version::V2025_11_25] {
        let (server, client) = connect(version, bounds.clone()).await;
        let long = task_of(&client, "slow_compute", json!({"seconds": 60})).await;
        match client.wait_task(long.clone()).await {
            Err(Error::TaskWait { task_id, waited }) => {
                assert_eq!((task_id, waited), (long.task_id.clone(), bounds.max_wait));
            }
            other => panic!("{version}: a wait past its bound: {other:?}"),
        }
        let still = client.get_task(&long.task_id).await.expect("tasks/get");
        assert_eq!(still.status, TaskStatus::Working, "{version}");
        client.cancel_task(&long.task_id).await.expect("tasks/cancel");
        client.close().await;
        server.shutdown(Duration::from_secs(1)).await;
    }
}
