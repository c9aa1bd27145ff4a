//! A `tools/call` that may run on as a task. On 2026-07-28 the client allows it by
//! declaring the tasks extension, and the server decides: the handler starts within the
//! request, and the call becomes a task when the handler asks (`RequestCx::become_task`)
//! or outlasts `TaskOptions::immediate`; done sooner, it is answered as usual, and input it
//! asks for first is asked within the request (`input_required`). On 2025-11-25 the client
//! asks for a task (`params.task`) and gets one at once. Either way the client is answered
//! with the task only once it is recorded, and the same handler runs on, unchanged.

use super::input::{self, Echoed, Resumed};
use super::{Call, tool_failure};
use crate::layer::{Reply, RequestCx, TaskLink, TaskSupport};
use crate::protocol::render::{self, Stamp};
use crate::protocol::tasks::{self, Finished, Job, LegacyTask, Run};
use duet_wire::jsonrpc::{Rendered, RpcError, code};
use duet_wire::params::TaskMetadata;
use futures::FutureExt;
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How a call runs as a task.
pub(super) struct Way {
    /// A task from the start (the client asked for one), else once the handler asks or
    /// outlasts the moment.
    at_once: bool,
    ttl: Duration,
}

/// Whether (and how) this call of tool `name`, whose task support is `support`, may run as
/// a task (on 2025-11-25 the client asks with `task`); refused when the client cannot take
/// the task the tool needs, or asked for one the tool does not run as.
pub(super) fn way(
    call: &Call<'_>,
    name: &str,
    support: TaskSupport,
    task: Option<&TaskMetadata>,
) -> Result<Option<Way>, RpcError> {
    let options = &call.shared.tasks.options;
    if call.modern() {
        return match (support, tasks::declared(&call.terms.client_capabilities)) {
            (TaskSupport::Forbidden, _) | (TaskSupport::Optional, false) => Ok(None),
            (_, true) => Ok(Some(Way { at_once: false, ttl: options.ttl })),
            (TaskSupport::Required, false) => {
                Err(tasks::extension_required(&format!("tool {name} runs only as a task")))
            }
        };
    }
    if !call.version().has_core_tasks() {
        return Ok(None);
    }
    let not_found = |why: String| RpcError::new(code::METHOD_NOT_FOUND, why);
    match (support, task) {
        (_, None) if support != TaskSupport::Required => Ok(None),
        (_, None) => Err(not_found(format!("Tool {name} runs only as a task: call it with params.task"))),
        (TaskSupport::Forbidden, Some(_)) => Err(not_found(format!("Tool {name} does not run as a task"))),
        (_, Some(task)) => {
            let asked = task.ttl.map(Duration::from_millis);
            let ttl = asked.map_or(options.ttl, |ttl| ttl.clamp(Duration::from_secs(1), options.ttl));
            Ok(Some(Way { at_once: true, ttl }))
        }
    }
}

/// The 2025-11-25 `CreateTaskResult`.
#[derive(Serialize)]
struct LegacyCreated<'a> {
    task: LegacyTask<'a>,
}

/// Runs the call; on 2026-07-28 a retry that answers sealed state runs once per state
/// (`input::once_per_state`), a task it became included.
pub(super) async fn run(
    call: &Call<'_>,
    name: &str,
    arguments: &Value,
    echoed: Echoed,
    way: Way,
) -> Result<Rendered, RpcError> {
    let resumed = if call.modern() { input::opened(call, name, arguments, echoed)? } else { Resumed::default() };
    let Resumed { responses, state, spends } = resumed;
    input::once_per_state(call, spends, start(call, name, arguments, way, responses, state)).await
}

/// Starts the handler with the client's `responses` and the handler's `state`, and answers
/// with its result or, once it is one, the task.
async fn start(
    call: &Call<'_>,
    name: &str,
    arguments: &Value,
    way: Way,
    responses: Map<String, Value>,
    state: Option<Value>,
) -> Result<Rendered, RpcError> {
    let link = TaskLink::new(call.notify.clone());
    let work = CancellationToken::new();
    // Until it is a task, the call's work stops with its request.
    let stop_with_request = work.clone().drop_guard();
    let job = Job { invoke: invoker(call, name, arguments), cx: call.task_cx(link.clone(), work) };
    let mut first = (job.invoke)(job.cx.build(responses, state));
    if !way.at_once {
        let immediate = call.shared.tasks.options.immediate;
        let done = tokio::select! {
            biased;
            reply = &mut first => Some(reply),
            () = link.asked() => None,
            () = tokio::time::sleep(immediate) => None,
        };
        match done {
            // The handler asked to become a task and replied at once: the task's first reply.
            Some(reply) if link.was_asked() => first = futures::future::ready(reply).boxed(),
            Some(reply) => {
                return match reply? {
                    Reply::Complete(done) => {
                        call.found.ran(done.tool_error);
                        Ok(done.result)
                    }
                    Reply::InputRequired(input) => input::asking(call, name, arguments, input),
                };
            }
            None => {}
        }
    }
    let (record, slot) = call.shared.tasks.create(&call.principal, call.version(), way.ttl).await?;
    // A 2025-11-25 task's progress keeps its token and goes to the session; a 2026 task
    // sends none (the extension has nowhere to send them).
    let after = call.session.filter(|_| !call.modern()).map(|session| session.sink());
    link.became(after);
    stop_with_request.disarm();
    call.found.ran(false);
    let created = if call.modern() {
        call.task_created(record.created())
    } else {
        call.complete(LegacyCreated { task: record.legacy() }, None)
    };
    tasks::spawn(call.shared.clone(), record, job, first, slot);
    created
}

/// Runs tool `name` with `arguments` in a given context, its complete result rendered for
/// the call's version: what a task runs, within the request and after it.
fn invoker(call: &Call<'_>, name: &str, arguments: &Value) -> Box<dyn Fn(RequestCx) -> Run + Send + Sync> {
    let shared = call.shared.clone();
    let name: Arc<str> = name.into();
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    let version = call.version();
    Box::new(move |cx| {
        let (shared, name, arguments) = (shared.clone(), name.clone(), arguments.clone());
        async move {
            let result = match shared.layer.call_tool(&name, arguments, cx).await {
                Ok(Reply::Complete(result)) => result,
                Ok(Reply::InputRequired(input)) => return Ok(Reply::InputRequired(input)),
                Err(e) => return Err(tool_failure(&name, e)),
            };
            let stamp = version.is_modern().then(|| Stamp {
                result_type: "complete",
                cache: None,
                server_info: &shared.info_rendered,
            });
            let rendered = render::render(render::tool_result(&result, version), result.meta.as_ref(), stamp)?;
            Ok(Reply::Complete(Finished { result: rendered, tool_error: result.is_error }))
        }
        .boxed()
    })
}
