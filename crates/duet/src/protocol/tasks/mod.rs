//! Tasks: a `tools/call` that runs on after its request was answered, which the client
//! polls, answers and cancels by the task's id. The 2026 `io.modelcontextprotocol/tasks`
//! extension and 2025-11-25's experimental tasks share this one machinery: the record in
//! the backplane's keys ([`store`]), what each era shows of it ([`record`]), and the work
//! itself on the replica that started it ([`runner`]). Any replica reads, answers and
//! cancels a task; a change to a record is announced on the bus, which wakes the replica
//! running it and the listen streams that follow it.
//!
//! Tasks are bounded: a principal keeps at most [`TaskOptions::max_per_principal`]
//! unexpired tasks across replicas, and a replica runs at most
//! [`TaskOptions::max_running`] at once.

mod record;
mod runner;
mod running;
mod store;

pub(crate) use record::{LegacyTask, Status, TaskRecord, now_ms};
pub(crate) use runner::spawn;

use crate::backplane::{Keys, StoreError};
use crate::client_ids;
use crate::layer::{LayerError, LogLevel, Principal, Reply, RequestCx, RootsSource, TaskLink};
use crate::protocol::Version;
use crate::signals;
use crate::wakers::Wakers;
use duet_wire::jsonrpc::{Rendered, RequestId, RpcError, code};
use futures::future::BoxFuture;
use running::Running;
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use store::TaskStore;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub use duet_wire::types::task::EXTENSION;

/// How tasks run and how many there may be.
#[derive(Debug, Clone)]
pub struct TaskOptions {
    /// How long a task lives from its creation (a 2025-11-25 client may ask for less): work
    /// still running then is stopped and the task fails; its record is kept a minute more.
    pub ttl: Duration,
    /// How often clients are told to poll.
    pub poll_interval: Duration,
    /// How long a call that may become a task runs before the engine makes it one (its
    /// handler can ask sooner with `RequestCx::become_task`); a call done by then is
    /// answered as usual.
    pub immediate: Duration,
    /// Unexpired tasks one principal may keep, across replicas; one more is refused.
    pub max_per_principal: usize,
    /// Tasks one replica runs at once, for every principal together; one more is refused.
    pub max_running: usize,
    /// How long a replica's claim on a task it runs lasts unless renewed (it renews it
    /// every third of that). A task whose replica stopped fails once its lease expires.
    pub lease: Duration,
}

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions {
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(500),
            immediate: Duration::from_millis(100),
            max_per_principal: 100,
            max_running: 1000,
            lease: Duration::from_secs(10),
        }
    }
}

/// Whether client capabilities declare the tasks extension.
pub(crate) fn declared(capabilities: &Value) -> bool {
    capabilities.get("extensions").and_then(|e| e.get(EXTENSION)).is_some_and(|v| !v.is_null())
}

/// -32021 for a request that needs a client that declared the tasks extension.
pub(crate) fn extension_required(why: &str) -> RpcError {
    RpcError::new(code::MISSING_CLIENT_CAPABILITY, format!("{why}: declare the {EXTENSION} extension"))
        .with_data(json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}}))
}

/// One run of a task's handler.
pub(crate) type Run = BoxFuture<'static, Result<Reply<Finished>, RpcError>>;

/// A complete result, rendered for the version of the request that started the task.
pub(crate) struct Finished {
    pub result: Rendered,
    /// Whether it is a tool error (`isError`).
    pub tool_error: bool,
}

/// What a task needs to run its handler again once the client answered what it asked.
pub(crate) struct Job {
    pub invoke: Box<dyn Fn(RequestCx) -> Run + Send + Sync>,
    pub cx: TaskCx,
}

/// What every run of a task's handler is told: the request that started it, and the
/// task's own cancellation and notification routes.
pub(crate) struct TaskCx {
    pub principal: Arc<Principal>,
    pub capabilities: Arc<Value>,
    pub request_id: RequestId,
    pub progress_token: Option<RequestId>,
    pub log_threshold: Option<LogLevel>,
    pub link: Arc<TaskLink>,
    /// Cancelled when the work must stop: the task was cancelled or ran out of time (or,
    /// before it became a task, its request was cancelled).
    pub work: CancellationToken,
    /// Where the client's roots come from (a handshake-era session's task).
    pub roots: Option<Arc<dyn RootsSource>>,
}

impl TaskCx {
    /// The context of one run, with the client's answers and the handler's state.
    pub(crate) fn build(&self, responses: Map<String, Value>, state: Option<Value>) -> RequestCx {
        let mut cx = RequestCx::builder(self.principal.clone())
            .request_id(self.request_id.clone())
            .client_capabilities(self.capabilities.clone())
            .progress_token(self.progress_token.clone())
            .log_threshold(self.log_threshold)
            .cancel(self.work.clone())
            .input_responses(responses)
            .state(state)
            .task(self.link.clone());
        if let Some(roots) = &self.roots {
            cx = cx.roots_source(roots.clone());
        }
        cx.build()
    }
}

/// The tasks of one server: the shared store, the ones this replica runs, and who waits
/// here for a task to change.
pub(crate) struct Tasks {
    pub options: TaskOptions,
    store: TaskStore,
    replica: u64,
    running: Mutex<Running>,
    watchers: Wakers,
    /// Told of every change this replica makes to a record.
    changed: Box<dyn Fn(&str) + Send + Sync>,
}

/// A task running on this replica: counted against the bound until dropped.
pub(crate) struct Slot {
    tasks: Arc<Tasks>,
    id: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.tasks.running().remove(&self.id);
        metrics::gauge!(signals::TASKS_ACTIVE).decrement(1);
    }
}

/// The error a client gets when the store failed a task method: the detail (an
/// unreachable store, a record that does not parse) is logged here, never sent.
fn unavailable(e: StoreError) -> RpcError {
    tracing::warn!("a task method failed in the shared store: {e}");
    RpcError::new(code::INTERNAL_ERROR, "tasks cannot be read or written right now; try again later")
}

impl Tasks {
    pub(crate) fn new(
        options: TaskOptions,
        keys: Arc<dyn Keys>,
        replica: u64,
        changed: Box<dyn Fn(&str) + Send + Sync>,
    ) -> Self {
        Tasks {
            options,
            store: TaskStore::new(keys),
            replica,
            running: Mutex::default(),
            watchers: Wakers::default(),
            changed,
        }
    }

    fn running(&self) -> MutexGuard<'_, Running> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many tasks of principal `owner` run on this replica (each holds one of its
    /// slots in flight until it ends).
    pub(crate) fn running_for(&self, owner: &str) -> usize {
        self.running().of(owner)
    }

    /// Records a new task of `owner`, started by a request at `version`, living `ttl`, to
    /// run on this replica. Returns once `tasks/get` finds it, anywhere; refused when the
    /// owner or this replica has as many as it may.
    pub(crate) async fn create(
        self: &Arc<Self>,
        owner: &Principal,
        version: Version,
        ttl: Duration,
    ) -> Result<(TaskRecord, Slot), RpcError> {
        let id = client_ids::new();
        let slot = {
            let mut running = self.running();
            if running.len() >= self.options.max_running {
                let why = format!("this server runs {} tasks already; try again later", running.len());
                return Err(LayerError::RateLimited(why).to_rpc());
            }
            running.insert(id.clone(), &owner.id);
            metrics::gauge!(signals::TASKS_ACTIVE).increment(1);
            Slot { tasks: self.clone(), id: id.clone() }
        };
        let (ttl_ms, poll_ms) = (ttl.as_millis() as u64, self.options.poll_interval.as_millis() as u64);
        let record = TaskRecord::new(id, &owner.id, version, ttl_ms, poll_ms, self.replica);
        let max = self.options.max_per_principal;
        if let Err(held) =
            self.store.admit(&owner.id, &record.id, record.expires_ms(), max).await.map_err(unavailable)?
        {
            let why = format!(
                "{} keeps {held} tasks already, the most it may; a task counts until its time to live ends",
                owner.id
            );
            return Err(LayerError::RateLimited(why).to_rpc());
        }
        self.store.insert(&record, self.options.lease).await.map_err(unavailable)?;
        Ok((record, slot))
    }

    /// Task `id` as `who` sees it: `None` when there is none, it is another principal's,
    /// or `id` is not of the form task ids have (then the store is not asked). A task still
    /// running whose replica stopped (no lease) is failed first.
    pub(crate) async fn read(&self, id: &str, who: &Principal) -> Result<Option<TaskRecord>, RpcError> {
        let Some(record) = self.get(id).await.map_err(unavailable)? else { return Ok(None) };
        if record.owner != who.id {
            return Ok(None);
        }
        if record.status.is_terminal() || self.alive(&record).await.map_err(unavailable)? {
            return Ok(Some(record));
        }
        let lost = RpcError::new(
            code::INTERNAL_ERROR,
            "the server replica running this task stopped before the task finished",
        );
        let failed = self.update(id, |r| (!r.status.is_terminal()).then(|| r.fail(lost.clone()))).await?;
        match failed {
            Some((record, ())) => Ok(Some(record)),
            // It ended meanwhile: what it ended as.
            None => self.store.get(id).await.map_err(unavailable),
        }
    }

    /// Whether the replica running a task still does.
    async fn alive(&self, record: &TaskRecord) -> Result<bool, StoreError> {
        if record.runner == self.replica {
            return Ok(self.running().contains(&record.id));
        }
        self.store.leased(&record.id).await
    }

    /// Changes task `id` (see [`TaskStore::update`]) and announces the change.
    pub(crate) async fn update<T>(
        &self,
        id: &str,
        change: impl FnMut(&mut TaskRecord) -> Option<T>,
    ) -> Result<Option<(TaskRecord, T)>, RpcError> {
        let updated = self.store.update(id, change).await.map_err(unavailable)?;
        if updated.is_some() {
            (self.changed)(id);
        }
        Ok(updated)
    }

    /// Task `id` as stored, whoever's it is (for listen streams that already checked);
    /// `None` for an id that is not of the form task ids have.
    pub(crate) async fn get(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        if !client_ids::well_formed(id) {
            return Ok(None);
        }
        self.store.get(id).await
    }

    /// The unexpired tasks of `who`, oldest first.
    pub(crate) async fn of(&self, who: &Principal) -> Result<Vec<TaskRecord>, RpcError> {
        let ids = self.store.ids_of(&who.id).await.map_err(unavailable)?;
        let mut records = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(record) = self.read(&id, who).await? {
                records.push(record);
            }
        }
        Ok(records)
    }

    /// What wakes whoever waits here for task `id` to change.
    pub(crate) fn watch(&self, id: &str) -> Arc<Notify> {
        self.watchers.watch(id)
    }

    /// Wakes whoever waits here for task `id`: its record changed, here or elsewhere.
    pub(crate) fn wake(&self, id: &str) {
        self.watchers.wake(id)
    }
}
