//! The task methods. On 2026-07-28, the tasks extension's `tasks/get` (the task, with its
//! result, error or outstanding input requests inlined), `tasks/update` (the client's
//! answers) and `tasks/cancel` (an empty acknowledgement, whatever the task's state), for a
//! client that declared the extension (else -32021). On 2025-11-25, the experimental
//! `tasks/get`, `tasks/result` (waits for the end, asking the client on the way),
//! `tasks/list` and `tasks/cancel`. A task is found only by the principal that started it;
//! for anyone else it does not exist, and neither does one named by an id of another form
//! than task ids have (the store is not asked).

use super::Call;
use crate::protocol::cursor;
use crate::protocol::render::{Empty, Page};
use crate::protocol::tasks::{self, Status, TaskRecord};
use duet_wire::jsonrpc::{Rendered, RpcError, code};
use duet_wire::params::{ListParams, TaskParams, UpdateTaskParams, decode};
use serde_json::{Map, Value, json};

/// The `_meta` key that ties a 2025-11-25 message to its task.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Refuses a task method to a request that may not use it: a 2026 client that did not
/// declare the extension, and handshake-era versions before 2025-11-25.
fn allowed(call: &Call<'_>) -> Result<(), RpcError> {
    if call.modern() {
        if !tasks::declared(&call.terms.client_capabilities) {
            return Err(tasks::extension_required(&format!("{} is a method of the tasks extension", call.method)));
        }
    } else if !call.version().has_core_tasks() {
        return Err(RpcError::method_not_found(call.method.as_str()));
    }
    Ok(())
}

/// The task `id` names, if the caller may see it.
async fn named(call: &Call<'_>, id: &str) -> Result<TaskRecord, RpcError> {
    let found = call.shared.tasks.read(id, &call.principal).await?;
    // The same answer for an id of no task and for one no task can have: which it is says
    // nothing about what the store holds.
    found.ok_or_else(|| RpcError::invalid_params("Failed to retrieve task: no task has this taskId"))
}

/// The id of the task a request names, once the request may use task methods.
fn task_id(call: &Call<'_>, params: Map<String, Value>) -> Result<String, RpcError> {
    allowed(call)?;
    let TaskParams { task_id } = decode(params)?;
    Ok(task_id)
}

pub(super) async fn get(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let record = named(call, &task_id(call, params)?).await?;
    if call.modern() { call.complete(record.detailed(), None) } else { call.complete(record.legacy(), None) }
}

pub(super) async fn update(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    allowed(call)?;
    let UpdateTaskParams { task_id, input_responses } = decode(params)?;
    let record = named(call, &task_id).await?;
    answer(call, &record.id, &input_responses).await?;
    call.complete(Empty {}, None)
}

/// Hands the client's answers to the task: each one to a request it still waits for (others
/// are ignored). Once none is left outstanding the task works again.
async fn answer(call: &Call<'_>, id: &str, responses: &Map<String, Value>) -> Result<(), RpcError> {
    let answered = call.shared.tasks.update(id, |record| {
        if record.status != Status::InputRequired {
            return None;
        }
        let given: Vec<(&String, &Value)> =
            responses.iter().filter(|(key, _)| record.input_requests.contains_key(*key)).collect();
        if given.is_empty() {
            return None;
        }
        for (key, response) in given {
            record.input_requests.remove(key);
            record.input_responses.insert(key.clone(), response.clone());
        }
        if record.input_requests.is_empty() {
            record.set(Status::Working, None);
        } else {
            record.updated_ms = tasks::now_ms();
        }
        Some(())
    });
    answered.await.map(drop)
}

pub(super) async fn cancel(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let record = named(call, &task_id(call, params)?).await?;
    let why = "Cancelled at the client's request".to_string();
    let cancel = |r: &mut TaskRecord| (!r.status.is_terminal()).then(|| r.set(Status::Cancelled, Some(why.clone())));
    let cancelled = call.shared.tasks.update(&record.id, cancel).await?;
    if call.modern() {
        // The same acknowledgement whatever the task's state: cancelling is idempotent.
        return call.complete(Empty {}, None);
    }
    match cancelled {
        Some((record, ())) => call.complete(record.legacy(), None),
        None => Err(RpcError::invalid_params(format!("Task {} has already ended and cannot be cancelled", record.id))),
    }
}

/// 2025-11-25 `tasks/result`: waits until the task ends and answers what its request would
/// have, asking the client for the input the task needs on the way (over this request's
/// stream).
pub(super) async fn result(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let id = named(call, &task_id(call, params)?).await?.id;
    let tasks = &call.shared.tasks;
    let wake = tasks.watch(&id);
    loop {
        let woken = wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let record = named(call, &id).await?;
        match record.status {
            Status::Completed => return ended_with(call, &record),
            Status::Failed => return Err(record.error.unwrap_or_else(RpcError::internal)),
            Status::Cancelled => return Err(RpcError::new(code::INTERNAL_ERROR, format!("Task {id} was cancelled"))),
            Status::InputRequired => {
                let answers = ask_client(call, &record).await?;
                answer(call, &id, &answers).await?;
            }
            Status::Working => {
                tokio::select! {
                    () = &mut woken => {}
                    () = tokio::time::sleep(tasks.options.poll_interval) => {}
                }
            }
        }
    }
}

/// The result a completed task's request would have had, tied to the task in `_meta`.
fn ended_with(call: &Call<'_>, record: &TaskRecord) -> Result<Rendered, RpcError> {
    let stored = record.result.as_ref().map(|raw| serde_json::from_str::<Map<String, Value>>(raw.get()));
    let Some(Ok(mut result)) = stored else {
        return Err(RpcError::new(code::INTERNAL_ERROR, "the task's result is missing"));
    };
    let mut meta = match result.remove("_meta") {
        Some(Value::Object(meta)) => meta,
        _ => Map::new(),
    };
    meta.insert(RELATED_TASK.into(), json!({"taskId": record.id}));
    call.complete(&result, Some(&meta))
}

/// Puts a 2025-11-25 task's outstanding requests to the client on this request's stream,
/// each tied to the task, and collects the answers by key.
async fn ask_client(call: &Call<'_>, record: &TaskRecord) -> Result<Map<String, Value>, RpcError> {
    let no_channel = || {
        RpcError::new(code::INTERNAL_ERROR, format!("the task needs input: {}", crate::protocol::AskError::NoChannel))
    };
    let (Some(session), Some(notify)) = (call.session, &call.notify) else { return Err(no_channel()) };
    let limit = call.shared.options.input_timeout;
    let asks = record.input_requests.iter().map(|(key, request)| async move {
        let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
        let mut params = request.get("params").cloned().unwrap_or_else(|| json!({}));
        if let Some(params) = params.as_object_mut() {
            let meta = params.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(RELATED_TASK.into(), json!({"taskId": record.id}));
            }
        }
        let answer = session.ask(notify, method, Some(params), limit).await;
        (key, method, answer)
    });
    let mut answers = Map::new();
    for (key, method, answer) in futures::future::join_all(asks).await {
        let answer = answer.map_err(|e| {
            RpcError::new(code::INTERNAL_ERROR, format!("could not get input from the client for {method}: {e}"))
        })?;
        answers.insert(key.clone(), answer);
    }
    Ok(answers)
}

/// 2025-11-25 `tasks/list`: the caller's unexpired tasks, oldest first, in pages.
pub(super) async fn list(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    allowed(call)?;
    let ListParams { cursor } = decode(params)?;
    let records = call.shared.tasks.of(&call.principal).await?;
    let page_size = call.shared.options.page_size;
    let (range, next_cursor) = cursor::paginate("tasks", records.len(), cursor.as_deref(), page_size)?;
    let shown: Vec<_> = records[range].iter().map(TaskRecord::legacy).collect();
    call.complete(Page { key: "tasks", items: &shown, next_cursor }, None)
}
