//! A manifest tool that runs as a task (`task = "optional"`): a long command answered with
//! a task the client polls for the command's output, or cancels, which kills the command's
//! whole process group. Driven through the engine, as a 2026 client that declared the tasks
//! extension drives it.

use super::registry_in;
use duet::layer::{Layer, Principal, TaskSupport};
use duet::protocol::{Server, ServerOptions};
use duet::wire::message::Message;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The result of `method` from `server` for a 2026 client that declared the tasks extension.
async fn ask(server: &Server, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    match server.answer(message, None, Arc::new(Principal::local()), None).await {
        Some(Message::One(response)) => response.into_value().unwrap_or_else(|e| panic!("{method}: {e:?}")),
        other => panic!("{method} should get one response, got {other:?}"),
    }
}

/// Polls task `id` until it ends.
async fn ended(server: &Server, id: &str) -> Value {
    for _ in 0..200 {
        let task = ask(server, "tasks/get", json!({"taskId": id})).await;
        if ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap_or_default()) {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("task {id} did not end within 5 s")
}

#[tokio::test]
async fn a_long_command_runs_as_a_task_that_cancelling_kills() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_in(
        dir.path(),
        r#"
[[tool]]
name = "build"
description = "a build that takes a while"
command = ["sh", "-c", "sleep 0.5; echo built"]
task = "optional"

[[tool]]
name = "soak"
description = "a test run that leaves a grandchild behind"
command = ["sh", "-c", "sleep 30 & echo $! > grandchild.pid; wait"]
cwd = "."
timeout = 600
task = "required"
"#,
    );
    let tools = registry.tools(&Principal::local());
    let support: Vec<_> = tools.iter().map(|t| (t.name.as_str(), t.task_support())).collect();
    assert_eq!(support, [("build", TaskSupport::Optional), ("soak", TaskSupport::Required)]);
    let server = Server::new(Arc::new(registry), ServerOptions::default());

    let built = ask(&server, "tools/call", json!({"name": "build"})).await;
    assert_eq!(built["resultType"], "task", "{built}");
    let done = ended(&server, built["taskId"].as_str().unwrap()).await;
    assert_eq!((&done["status"], &done["result"]["content"][0]["text"]), (&json!("completed"), &json!("built\n")));

    let soak = ask(&server, "tools/call", json!({"name": "soak"})).await;
    let id = soak["taskId"].as_str().expect("a task").to_string();
    let pid_file = dir.path().join("grandchild.pid");
    for _ in 0..200 {
        if pid_file.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let pid = std::fs::read_to_string(&pid_file).expect("the command started its grandchild");
    assert_eq!(ask(&server, "tasks/cancel", json!({"taskId": id})).await["resultType"], "complete");
    assert_eq!(ended(&server, &id).await["status"], "cancelled");
    assert!(super::tools::gone(pid.trim()).await, "the grandchild {} survived the cancellation", pid.trim());
}
