//! Tool calls that run on as tasks, one API for both eras: the 2026
//! `io.modelcontextprotocol/tasks` extension (SEP-2663), where the client declares the
//! extension on the call and the server decides whether it becomes a task, and 2025-11-25's
//! experimental tasks, where the client asks with `task` (when the server offers tasks for
//! tool calls). A task is polled with `tasks/get` until it ends, at the server's
//! `pollInterval` (never more often than [`TaskOptions::poll_floor`], never past
//! [`TaskOptions::max_wait`]); the input it asks for is answered with the caller's
//! [`Handlers`](crate::Handlers): in 2026 by `tasks/update` with the answers to its
//! `inputRequests` (each key answered once), in 2025-11-25 by `tasks/result`, over whose
//! answer the server puts its questions, which the handlers answer as any server request.
//! Its end is the same in both eras ([`Ended`]): a result (a tool error included), the
//! JSON-RPC error it failed with, or cancelled.
//!
//! Waiting polls. The status notifications a server may push (`notifications/tasks` on a
//! 2026 listen stream, `notifications/tasks/status` in 2025-11-25) are read with
//! [`Task::from_notification`]; a wait driven by them replaces the one seam,
//! `Client::until_next_poll`, with a wait that also ends when one arrives for the task.

use crate::client::{Client, call_params};
use crate::connection::decode;
use crate::error::Error;
use duet_wire::jsonrpc::RpcError;
use duet_wire::message::Notification;
use duet_wire::method::Method;
use duet_wire::params::{TaskMetadata, TaskParams, UpdateTaskParams};
use duet_wire::types::task::EXTENSION;
use duet_wire::types::{TaskStatus, TaskSupport, ToolResult};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::time::Duration;
use tokio::time::Instant;

/// How long the client waits between polls of a task whose server named no interval.
const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// How tool calls run as tasks are asked for and waited on.
#[derive(Debug, Clone)]
pub struct TaskOptions {
    /// 2025-11-25: how long the server should keep the task (`task.ttl`); `None` leaves it
    /// to the server. In 2026 the server alone decides.
    pub ttl: Option<Duration>,
    /// The shortest wait between two polls, whatever interval the server asks for.
    pub poll_floor: Duration,
    /// The longest [`Client::wait_task`] waits for a task to end ([`Error::TaskWait`] then).
    pub max_wait: Duration,
}

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions { ttl: None, poll_floor: Duration::from_millis(100), max_wait: Duration::from_secs(600) }
    }
}

/// A task as the server shows it: 2026's `DetailedTask` (what `tasks/get` answers and
/// `notifications/tasks` carries) or 2025-11-25's `Task` (whose `ttl` and `pollInterval`
/// are read as `ttl_ms` and `poll_interval_ms`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Its id: what `tasks/get`, `tasks/update` and `tasks/cancel` name.
    pub task_id: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// What the server says of where it stands, for people.
    #[serde(default)]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    #[serde(default)]
    pub created_at: String,
    /// When it last changed (ISO 8601).
    #[serde(default)]
    pub last_updated_at: String,
    /// How long the server keeps it from its creation, in milliseconds; `None` for
    /// unlimited.
    #[serde(default, alias = "ttl")]
    pub ttl_ms: Option<u64>,
    /// How often the server would be polled, in milliseconds.
    #[serde(default, alias = "pollInterval")]
    pub poll_interval_ms: Option<u64>,
    /// 2026, `input_required`: what it asks the client, by key (answered with
    /// [`Client::update_task`]).
    #[serde(default)]
    pub input_requests: Map<String, Value>,
    /// 2026, `completed`: the result of its request.
    #[serde(default)]
    pub result: Option<Value>,
    /// 2026, `failed`: the JSON-RPC error its request ended with.
    #[serde(default)]
    pub error: Option<RpcError>,
}

impl Task {
    /// The task a status notification carries (`notifications/tasks` in 2026,
    /// `notifications/tasks/status` in 2025-11-25); `None` for any other notification, or
    /// one whose params are no task.
    pub fn from_notification(notification: &Notification) -> Option<Task> {
        match notification.method {
            Method::TaskStatus | Method::LegacyTaskStatus => {
                serde_json::from_value(Value::Object(notification.params.clone())).ok()
            }
            _ => None,
        }
    }
}

/// What a tool call started as a task answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Started {
    /// The result at once: the server did not make the call a task (or does not run tasks).
    Done(ToolResult),
    /// The task the call became, to wait on ([`Client::wait_task`]) or cancel.
    Task(Task),
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// With its request's result, a tool error (`is_error`) included in both eras.
    Completed(ToolResult),
    /// With the JSON-RPC error its request failed with.
    Failed(RpcError),
    /// Cancelled: the task as last seen.
    Cancelled(Task),
}

/// A 2025-11-25 `CreateTaskResult`.
#[derive(Deserialize)]
struct LegacyCreated {
    task: Task,
}

/// `capabilities` with the tasks extension declared as well.
pub(crate) fn declaring(capabilities: &Map<String, Value>) -> Map<String, Value> {
    let mut declared = capabilities.clone();
    let extensions = declared.entry("extensions").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(extensions) = extensions {
        extensions.insert(EXTENSION.into(), Value::Object(Map::new()));
    }
    declared
}

/// Whether a 2025-11-25 server offers tasks for tool calls (`tasks.requests.tools.call`).
fn offers_tool_tasks(capabilities: &Map<String, Value>) -> bool {
    let requests = capabilities.get("tasks").and_then(|tasks| tasks.get("requests"));
    requests.and_then(|r| r.get("tools")).and_then(|tools| tools.get("call")).is_some_and(|call| !call.is_null())
}

impl Client {
    /// Calls tool `name` with `arguments` (an object, or `null` for none), letting it run
    /// on as a task: in 2026 the call declares the tasks extension and the server decides;
    /// in 2025-11-25 it asks for a task when the server offers them for tool calls and the
    /// tool, if listed, does not forbid it. Either way the answer may be the result at
    /// once. A task's result is not checked against the tool's output schema.
    pub async fn call_tool_as_task(&self, name: &str, arguments: Value) -> Result<Started, Error> {
        let mut params = call_params(name, arguments)?;
        let terms = self.terms();
        let modern = terms.version.is_modern();
        let forbidden = self.known_tools.task_support(name) == Some(TaskSupport::Forbidden);
        let legacy_task = terms.version.has_core_tasks() && offers_tool_tasks(&terms.capabilities) && !forbidden;
        if legacy_task {
            let ttl = self.options().tasks.ttl.map(|ttl| ttl.as_millis() as u64);
            params.task = Some(TaskMetadata { ttl });
        }
        let result = self.send(Method::ToolsCall, params, modern).await?;
        let is_task = if modern {
            result.get("resultType").and_then(Value::as_str) == Some("task")
        } else {
            legacy_task && result.get("task").is_some()
        };
        if !is_task {
            let done: ToolResult = decode(Method::ToolsCall, result)?;
            self.known_tools.check(name, &done)?;
            return Ok(Started::Done(done));
        }
        let task = if modern {
            decode(Method::ToolsCall, result)?
        } else {
            decode::<LegacyCreated>(Method::ToolsCall, result)?.task
        };
        Ok(Started::Task(task))
    }

    /// Task `task_id` as the server shows it now (`tasks/get`).
    pub async fn get_task(&self, task_id: &str) -> Result<Task, Error> {
        let result = self.send(Method::TasksGet, TaskParams { task_id: task_id.into() }, true).await?;
        decode(Method::TasksGet, result)
    }

    /// Answers what task `task_id` asked (2026's `tasks/update`): `responses` by the keys
    /// of its `inputRequests`. [`Client::wait_task`] does this with the caller's handlers.
    pub async fn update_task(&self, task_id: &str, responses: Map<String, Value>) -> Result<(), Error> {
        let params = UpdateTaskParams { task_id: task_id.into(), input_responses: responses };
        self.send(Method::TasksUpdate, params, true).await.map(drop)
    }

    /// Asks the server to cancel task `task_id` (`tasks/cancel`). Cancelling is
    /// cooperative: the task may still end otherwise. A 2025-11-25 server refuses to cancel
    /// a task that has ended; a 2026 one acknowledges it all the same.
    pub async fn cancel_task(&self, task_id: &str) -> Result<(), Error> {
        self.send(Method::TasksCancel, TaskParams { task_id: task_id.into() }, true).await.map(drop)
    }

    /// Waits for `task` to end, polling it and answering what it asks with the caller's
    /// handlers, at most [`TaskOptions::max_wait`].
    pub async fn wait_task(&self, task: Task) -> Result<Ended, Error> {
        let waited = self.options().tasks.max_wait;
        let task_id = task.task_id.clone();
        let deadline = Instant::now() + waited;
        let wait = async {
            let mut task = task;
            let mut answered = HashSet::new();
            loop {
                if let Some(ended) = self.step(&task, &mut answered).await? {
                    return Ok(ended);
                }
                self.until_next_poll(&task).await;
                task = self.get_task(&task.task_id).await?;
            }
        };
        match tokio::time::timeout_at(deadline, wait).await {
            Ok(ended) => ended,
            Err(_) => Err(Error::TaskWait { task_id, waited }),
        }
    }

    /// What the client does with `task` as last seen: how it ended, once it has; its
    /// questions answered (2026) or its end awaited with `tasks/result` (2025-11-25).
    async fn step(&self, task: &Task, answered: &mut HashSet<String>) -> Result<Option<Ended>, Error> {
        let modern = self.terms().version.is_modern();
        match task.status {
            TaskStatus::Working => Ok(None),
            TaskStatus::Cancelled => Ok(Some(Ended::Cancelled(task.clone()))),
            // 2025-11-25: the result, a tool error or the error from tasks/result, which asks
            // the client for input on the way.
            _ if !modern => {
                match self.send(Method::TasksResult, TaskParams { task_id: task.task_id.clone() }, true).await {
                    Ok(result) => Ok(Some(Ended::Completed(decode(Method::TasksResult, result)?))),
                    Err(Error::Rpc(error)) => Ok(Some(Ended::Failed(error))),
                    Err(other) => Err(other),
                }
            }
            TaskStatus::InputRequired => {
                self.answer_task(task, answered).await?;
                Ok(None)
            }
            TaskStatus::Completed => {
                let result = task.result.clone().ok_or_else(|| missing(task, "result"))?;
                Ok(Some(Ended::Completed(decode(Method::TasksGet, result)?)))
            }
            TaskStatus::Failed => Ok(Some(Ended::Failed(task.error.clone().ok_or_else(|| missing(task, "error"))?))),
        }
    }

    /// Answers a 2026 task's input requests not answered yet, with the caller's handlers.
    async fn answer_task(&self, task: &Task, answered: &mut HashSet<String>) -> Result<(), Error> {
        let fresh: Map<String, Value> = task
            .input_requests
            .iter()
            .filter(|(key, _)| !answered.contains(*key))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        let answers = self.connection.answer(&Method::TasksGet, fresh).await?;
        answered.extend(answers.keys().cloned());
        self.update_task(&task.task_id, answers).await
    }

    /// The wait before `task` is polled again: the interval its server asks for (a second
    /// when it names none), never under the floor. The seam for notification-driven
    /// waiting: a wait that also ends when a status notification for the task arrives.
    async fn until_next_poll(&self, task: &Task) {
        let asked = task.poll_interval_ms.map_or(DEFAULT_POLL, Duration::from_millis);
        tokio::time::sleep(asked.max(self.options().tasks.poll_floor)).await;
    }
}

/// A task whose status says it carries `what`, yet does not.
fn missing(task: &Task, what: &str) -> Error {
    Error::Protocol(format!("task {} is {:?} without its {what}", task.task_id, task.status))
}

#[cfg(test)]
mod tests {
    use super::*;
    use duet_wire::message::Meta;
    use serde_json::json;

    #[test]
    fn both_eras_shapes_read_as_one_task() {
        let modern: Task = serde_json::from_value(json!({
            "taskId": "t1", "status": "input_required", "createdAt": "2025-12-02T00:00:00Z",
            "lastUpdatedAt": "2025-12-02T00:00:01Z", "ttlMs": 60000, "pollIntervalMs": 500,
            "inputRequests": {"1.ok": {"method": "elicitation/create"}}, "resultType": "complete"
        }))
        .unwrap();
        assert_eq!((modern.ttl_ms, modern.poll_interval_ms, modern.input_requests.len()), (Some(60000), Some(500), 1));
        let legacy: Task = serde_json::from_value(json!({
            "taskId": "t2", "status": "working", "createdAt": "2025-12-02T00:00:00Z",
            "lastUpdatedAt": "2025-12-02T00:00:00Z", "ttl": null, "pollInterval": 250
        }))
        .unwrap();
        assert_eq!((legacy.status, legacy.ttl_ms, legacy.poll_interval_ms), (TaskStatus::Working, None, Some(250)));
    }

    #[test]
    fn status_notifications_of_both_eras_carry_a_task() {
        let params = json!({"taskId": "t3", "status": "completed", "result": {"content": []}});
        let notification =
            |method| Notification { method, params: params.as_object().unwrap().clone(), meta: Meta::default() };
        for method in [Method::TaskStatus, Method::LegacyTaskStatus] {
            let task = Task::from_notification(&notification(method)).expect("a task");
            assert_eq!((task.task_id.as_str(), task.status), ("t3", TaskStatus::Completed));
        }
        assert_eq!(Task::from_notification(&notification(Method::Progress)), None);
    }

    #[test]
    fn the_extension_is_declared_beside_what_else_is() {
        let capabilities = json!({"sampling": {}, "extensions": {"io.modelcontextprotocol/skills": {}}});
        let declared = declaring(capabilities.as_object().unwrap());
        assert_eq!(
            Value::Object(declared),
            json!({"sampling": {}, "extensions": {"io.modelcontextprotocol/skills": {}, EXTENSION: {}}})
        );
        let offered = json!({"tasks": {"list": {}, "requests": {"tools": {"call": {}}}}});
        assert!(offers_tool_tasks(offered.as_object().unwrap()));
        assert!(!offers_tool_tasks(json!({"tasks": {"list": {}}}).as_object().unwrap()));
    }
}
