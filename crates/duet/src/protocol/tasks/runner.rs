//! A task at work, on the replica that started it: its handler runs on after the request
//! that started it was answered, asks the client through the task's record when it needs
//! input (and runs again with the answers), and ends the task as completed or failed. The
//! runner renews its lease while it works, and looks at the record again whenever it
//! changes (the bus wakes it) or a while passes without a change: a task that another
//! replica cancelled is stopped here. Work that outlives the task's time to live is
//! stopped and the task fails.

use super::record::{Status, TaskRecord};
use super::{Finished, Job, Run, Slot, Tasks};
use crate::layer::Reply;
use crate::mrtr::{missing_capabilities, missing_capability_error};
use crate::protocol::owed::panic_text;
use crate::protocol::shared::Shared;
use duet_wire::jsonrpc::{RpcError, code};
use futures::FutureExt;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

/// A task may ask the client for input this many times.
const MAX_ROUNDS: usize = 16;
/// How long a handler told to stop may take to return before it is dropped.
const GRACE: Duration = Duration::from_secs(5);

/// How a task's work ended.
enum Ending {
    Completed(Finished),
    Failed(RpcError),
    /// Its time to live ran out.
    Expired,
    /// Someone else ended it (a cancellation), or its record is gone.
    Stopped,
}

/// Runs task `record` on this replica until it ends: `first` is its handler's run under
/// way, `job` how to run it again.
pub(crate) fn spawn(shared: Arc<Shared>, record: TaskRecord, job: Job, first: Run, slot: Slot) {
    let span = tracing::info_span!("task", task.id = %record.id);
    tokio::spawn(tracing::Instrument::instrument(run(shared, record, job, first, slot), span));
}

async fn run(shared: Arc<Shared>, record: TaskRecord, job: Job, first: Run, slot: Slot) {
    let tasks = &shared.tasks;
    let runner = Runner {
        tasks,
        id: &record.id,
        wake: tasks.watch(&record.id),
        deadline: Instant::now()
            + Duration::from_millis((record.created_ms + record.ttl_ms).saturating_sub(super::now_ms())),
        work: job.cx.work.clone(),
    };
    let ending = runner.drive(&record, &job, first).await;
    let how = match &ending {
        Ending::Completed(done) if done.tool_error => "completed with a tool error",
        Ending::Completed(_) => "completed",
        Ending::Failed(_) => "failed",
        Ending::Expired => "failed: out of time, its handler stopped",
        Ending::Stopped => "ended elsewhere (cancelled), its handler stopped",
    };
    tracing::info!("task {} {how}", record.id);
    let ended = match ending {
        Ending::Completed(done) => {
            let result = RawValue::from_string(String::from_utf8_lossy(done.result.as_bytes()).into_owned());
            match result {
                Ok(result) => {
                    let result = Some(result);
                    tasks
                        .update(&record.id, |r| {
                            (!r.status.is_terminal()).then(|| {
                                r.result = result.clone();
                                r.tool_error = done.tool_error;
                                r.set(Status::Completed, None);
                            })
                        })
                        .await
                }
                Err(e) => {
                    runner.fail(RpcError::new(code::INTERNAL_ERROR, format!("the result is not JSON: {e}"))).await
                }
            }
        }
        Ending::Failed(error) => runner.fail(error).await,
        Ending::Expired => {
            let ttl = record.ttl_ms / 1000;
            let error = RpcError::new(
                code::INTERNAL_ERROR,
                format!("the task did not finish within its time to live ({ttl} s)"),
            );
            runner.fail(error).await
        }
        Ending::Stopped => Ok(None),
    };
    if let Err(e) = ended {
        tracing::warn!(
            "the task ended, but its end could not be stored (it fails once its lease expires): {}",
            e.message
        );
    }
    // Nothing runs it any more: what reads it now sees its record alone.
    drop(slot);
    if let Err(e) = tasks.store.release(&record.id).await {
        tracing::debug!("the task's lease stays until it expires: {e}");
    }
}

struct Runner<'a> {
    tasks: &'a Tasks,
    id: &'a str,
    wake: Arc<Notify>,
    deadline: Instant,
    work: CancellationToken,
}

impl Runner<'_> {
    /// Runs the handler to its end, asking the client between runs.
    async fn drive(&self, record: &TaskRecord, job: &Job, first: Run) -> Ending {
        let mut run = first;
        for _ in 0..MAX_ROUNDS {
            let reply = match self.until_done(&mut run).await {
                Ok(reply) => reply,
                Err(ending) => return ending,
            };
            let input = match reply {
                Ok(Reply::Complete(done)) => return Ending::Completed(done),
                Ok(Reply::InputRequired(input)) => input,
                Err(error) => return Ending::Failed(error),
            };
            if let Some(required) = missing_capabilities(&input.requests, &job.cx.capabilities) {
                return Ending::Failed(missing_capability_error(required, record.version.is_modern()));
            }
            let answers = match self.ask(input.requests).await {
                Ok(answers) => answers,
                Err(ending) => return ending,
            };
            run = (job.invoke)(job.cx.build(answers, input.state));
        }
        let why = format!("the task kept asking the client for input after {MAX_ROUNDS} rounds");
        Ending::Failed(RpcError::new(code::INTERNAL_ERROR, why))
    }

    /// Ends the task as failed with `error`, unless it ended already.
    async fn fail(&self, error: RpcError) -> Result<Option<(TaskRecord, ())>, RpcError> {
        self.tasks.update(self.id, |r| (!r.status.is_terminal()).then(|| r.fail(error.clone()))).await
    }

    /// Every third of the lease: renews it.
    fn ticks(&self) -> Interval {
        let every = self.tasks.options.lease / 3;
        let mut ticks = tokio::time::interval_at(Instant::now() + every, every);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        ticks
    }

    async fn renew(&self) {
        let tasks = self.tasks;
        if let Err(e) = tasks.store.renew(self.id, tasks.replica, tasks.options.lease).await {
            tracing::warn!("could not renew the task's lease: {e}");
        }
    }

    /// Polls the handler's run to its reply, while watching the task: stops it when the
    /// task ended elsewhere or its time ran out. A panic is an internal error.
    async fn until_done(&self, run: &mut Run) -> Result<Result<Reply<Finished>, RpcError>, Ending> {
        let mut ticks = self.ticks();
        loop {
            // Listening before looking: a change made after the look wakes this loop, one
            // made before it (even before this runner started) is seen by the look.
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.ended().await {
                self.stop(run).await;
                return Err(Ending::Stopped);
            }
            tokio::select! {
                biased;
                reply = AssertUnwindSafe(&mut *run).catch_unwind() => {
                    return Ok(reply.unwrap_or_else(|panic| {
                        tracing::error!(panic = panic_text(panic.as_ref()), "a task's handler panicked");
                        Err(RpcError::internal())
                    }));
                }
                () = tokio::time::sleep_until(self.deadline) => {
                    self.stop(run).await;
                    return Err(Ending::Expired);
                }
                () = &mut woken => {}
                _ = ticks.tick() => self.renew().await,
            }
        }
    }

    /// Whether the task ended (or vanished) without this runner.
    async fn ended(&self) -> bool {
        match self.tasks.store.get(self.id).await {
            Ok(Some(record)) => record.status.is_terminal(),
            Ok(None) => true,
            // The store will answer again; the work goes on meanwhile.
            Err(_) => false,
        }
    }

    /// Tells the handler to stop and gives it a moment to, then drops it.
    async fn stop(&self, run: &mut Run) {
        self.work.cancel();
        let _ = tokio::time::timeout(GRACE, AssertUnwindSafe(run).catch_unwind()).await;
    }

    /// Puts `requests` to the client through the task's record and waits for every answer.
    /// Each round's keys carry the round's number, so no key is used twice in a task's life;
    /// the handler gets the answers under its own keys.
    async fn ask(&self, requests: Map<String, Value>) -> Result<Map<String, Value>, Ending> {
        let asked = self
            .tasks
            .update(self.id, |r| {
                (!r.status.is_terminal()).then(|| {
                    r.round += 1;
                    let prefix = format!("{}.", r.round);
                    r.input_requests = requests.iter().map(|(k, v)| (format!("{prefix}{k}"), v.clone())).collect();
                    r.input_responses.clear();
                    r.set(Status::InputRequired, None);
                    prefix
                })
            })
            .await;
        let prefix = match asked {
            Ok(Some((_, prefix))) => prefix,
            Ok(None) => return Err(Ending::Stopped),
            Err(error) => return Err(Ending::Failed(error)),
        };
        let mut ticks = self.ticks();
        loop {
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            match self.tasks.store.get(self.id).await {
                Ok(Some(record)) if record.status.is_terminal() => return Err(Ending::Stopped),
                Ok(None) => return Err(Ending::Stopped),
                Ok(Some(record)) if record.input_requests.is_empty() && !record.input_responses.is_empty() => {
                    if let Some(answers) = self.take_answers().await {
                        let own =
                            |(key, answer): (String, Value)| Some((key.strip_prefix(&prefix)?.to_string(), answer));
                        return Ok(answers.into_iter().filter_map(own).collect());
                    }
                }
                _ => {}
            }
            tokio::select! {
                () = &mut woken => {}
                _ = ticks.tick() => self.renew().await,
                () = tokio::time::sleep_until(self.deadline) => return Err(Ending::Expired),
            }
        }
    }

    /// Takes the answers the client gave, once every request has one. Not announced: the
    /// task is `working` already, as the answer that completed them made it.
    async fn take_answers(&self) -> Option<Map<String, Value>> {
        let taken = self.tasks.store.update(self.id, |r| {
            let complete = !r.status.is_terminal() && r.input_requests.is_empty() && !r.input_responses.is_empty();
            complete.then(|| std::mem::take(&mut r.input_responses))
        });
        match taken.await {
            Ok(taken) => taken.map(|(_, answers)| answers),
            Err(e) => {
                tracing::warn!("could not take the client's answers: {e}");
                None
            }
        }
    }
}
