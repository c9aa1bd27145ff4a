//! Tasks in the backplane's keys, so that every replica reads, answers and cancels the same
//! ones: a task's record (`task:ID`, until it expires), the lease of the replica running it
//! (`task:ID:lease`, renewed while it runs: a record still running without one lost its
//! replica), and each principal's unexpired tasks (`tasks:PRINCIPAL`, which bounds how many
//! one principal keeps, across replicas, and lists them). A record changes by
//! compare-and-swap, so answers, cancellations and the runner's own writes racing on
//! different replicas never undo each other.

use super::record::{TaskRecord, now_ms};
use crate::backplane::{Keys, SWAP_ATTEMPTS, StoreError};
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct TaskStore {
    keys: Arc<dyn Keys>,
}

/// A principal's unexpired tasks: ids and when each expires (ms since the epoch).
type Index = Vec<(String, u64)>;

fn record_key(id: &str) -> String {
    format!("task:{id}")
}

fn lease_key(id: &str) -> String {
    format!("task:{id}:lease")
}

fn index_key(owner: &str) -> String {
    format!("tasks:{owner}")
}

/// Time left until `until_ms`, at least a millisecond.
fn until(until_ms: u64) -> Duration {
    Duration::from_millis(until_ms.saturating_sub(now_ms()).max(1))
}

fn corrupt(what: &str, e: serde_json::Error) -> StoreError {
    StoreError(format!("the stored {what} is not readable: {e}"))
}

impl TaskStore {
    pub(super) fn new(keys: Arc<dyn Keys>) -> Self {
        TaskStore { keys }
    }

    /// Adds task `id` of `owner`, expiring at `expires_ms`, to the owner's index unless the
    /// owner already keeps `max` unexpired tasks: `Ok(Err(count))` then.
    pub(super) async fn admit(
        &self,
        owner: &str,
        id: &str,
        expires_ms: u64,
        max: usize,
    ) -> Result<Result<(), usize>, StoreError> {
        let key = index_key(owner);
        for _ in 0..SWAP_ATTEMPTS {
            let held = self.keys.get(&key).await?;
            let mut index: Index = match &held {
                Some(bytes) => serde_json::from_slice(bytes).map_err(|e| corrupt("task index", e))?,
                None => Vec::new(),
            };
            let now = now_ms();
            index.retain(|(_, expires)| *expires > now);
            if index.len() >= max {
                return Ok(Err(index.len()));
            }
            index.push((id.to_string(), expires_ms));
            let last = index.iter().map(|(_, expires)| *expires).max().unwrap_or(expires_ms);
            // Plain data: serializing it cannot fail.
            let value = serde_json::to_vec(&index).unwrap_or_default();
            let done = match held {
                Some(old) => self.keys.swap(&key, &old, &value, until(last)).await?,
                None => self.keys.claim(&key, &value, until(last)).await?.is_none(),
            };
            if done {
                return Ok(Ok(()));
            }
        }
        Err(StoreError(format!("too many concurrent changes to the tasks of {owner}")))
    }

    /// The ids of `owner`'s unexpired tasks, oldest first.
    pub(super) async fn ids_of(&self, owner: &str) -> Result<Vec<String>, StoreError> {
        let Some(bytes) = self.keys.get(&index_key(owner)).await? else { return Ok(Vec::new()) };
        let index: Index = serde_json::from_slice(&bytes).map_err(|e| corrupt("task index", e))?;
        let now = now_ms();
        Ok(index.into_iter().filter(|(_, expires)| *expires > now).map(|(id, _)| id).collect())
    }

    /// Stores a new task and the lease of the replica that runs it.
    pub(super) async fn insert(&self, record: &TaskRecord, lease: Duration) -> Result<(), StoreError> {
        self.renew(&record.id, record.runner, lease).await?;
        // Plain data: serializing it cannot fail.
        let value = serde_json::to_vec(record).unwrap_or_default();
        self.keys.put(&record_key(&record.id), &value, until(record.expires_ms())).await
    }

    pub(super) async fn get(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        match self.keys.get(&record_key(id)).await? {
            Some(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| corrupt("task", e)),
            None => Ok(None),
        }
    }

    /// Changes task `id` with `change`, atomically: `change` sees the stored record and
    /// returns `None` to leave it as it is, or what the caller wants back once the changed
    /// record is stored. `None` when there is no such task or nothing changed.
    pub(super) async fn update<T>(
        &self,
        id: &str,
        mut change: impl FnMut(&mut TaskRecord) -> Option<T>,
    ) -> Result<Option<(TaskRecord, T)>, StoreError> {
        let key = record_key(id);
        for _ in 0..SWAP_ATTEMPTS {
            let Some(old) = self.keys.get(&key).await? else { return Ok(None) };
            let mut record: TaskRecord = serde_json::from_slice(&old).map_err(|e| corrupt("task", e))?;
            let Some(out) = change(&mut record) else { return Ok(None) };
            // Plain data: serializing it cannot fail.
            let new = serde_json::to_vec(&record).unwrap_or_default();
            if self.keys.swap(&key, &old, &new, until(record.expires_ms())).await? {
                return Ok(Some((record, out)));
            }
        }
        Err(StoreError(format!("too many concurrent changes to task {id}")))
    }

    /// Says for `lease` more that replica `runner` still runs task `id`.
    pub(super) async fn renew(&self, id: &str, runner: u64, lease: Duration) -> Result<(), StoreError> {
        self.keys.put(&lease_key(id), runner.to_string().as_bytes(), lease).await
    }

    /// Whether the replica running task `id` renewed its lease in time.
    pub(super) async fn leased(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.keys.get(&lease_key(id)).await?.is_some())
    }

    /// Drops the lease of task `id`, which no longer runs.
    pub(super) async fn release(&self, id: &str) -> Result<(), StoreError> {
        self.keys.delete(&lease_key(id)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backplane::MemoryKeys;
    use crate::protocol::Version;

    fn record(id: &str) -> TaskRecord {
        TaskRecord::new(id.into(), "alice", Version::V2026_07_28, 60_000, 500, 1)
    }

    #[tokio::test]
    async fn a_principal_keeps_at_most_its_bound() {
        let store = TaskStore::new(Arc::new(MemoryKeys::new()));
        let soon = now_ms() + 50;
        let later = now_ms() + 60_000;
        assert_eq!(store.admit("alice", "a", soon, 2).await, Ok(Ok(())));
        assert_eq!(store.admit("alice", "b", later, 2).await, Ok(Ok(())));
        assert_eq!(store.admit("alice", "c", later, 2).await, Ok(Err(2)), "two unexpired tasks: full");
        assert_eq!(store.admit("bob", "d", later, 2).await, Ok(Ok(())), "the bound is per principal");
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(store.admit("alice", "c", later, 2).await, Ok(Ok(())), "an expired task no longer counts");
        assert_eq!(store.ids_of("alice").await.unwrap(), ["b", "c"]);
    }

    /// Keys that let other futures run between a read and the write after it, as a remote
    /// store does: concurrent updates then really race.
    struct Yielding(MemoryKeys);

    #[async_trait::async_trait]
    impl Keys for Yielding {
        async fn claim(&self, key: &str, value: &[u8], ttl: Duration) -> Result<Option<Vec<u8>>, StoreError> {
            self.0.claim(key, value, ttl).await
        }
        async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
            let value = self.0.get(key).await;
            tokio::task::yield_now().await;
            value
        }
        async fn put(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StoreError> {
            self.0.put(key, value, ttl).await
        }
        async fn swap(&self, key: &str, old: &[u8], new: &[u8], ttl: Duration) -> Result<bool, StoreError> {
            self.0.swap(key, old, new, ttl).await
        }
        async fn delete(&self, key: &str) -> Result<(), StoreError> {
            self.0.delete(key).await
        }
    }

    #[tokio::test]
    async fn racing_updates_all_apply_and_leases_expire() {
        let store = TaskStore::new(Arc::new(Yielding(MemoryKeys::new())));
        store.insert(&record("t"), Duration::from_millis(30)).await.unwrap();
        assert!(store.leased("t").await.unwrap());
        let writers = (0..8).map(|i| {
            let store = &store;
            async move {
                // Each reads the same record before any writes it.
                store
                    .update("t", |r| {
                        r.input_responses.insert(format!("k{i}"), i.into());
                        Some(())
                    })
                    .await
            }
        });
        for written in futures::future::join_all(writers).await {
            assert!(written.unwrap().is_some());
        }
        assert_eq!(store.get("t").await.unwrap().unwrap().input_responses.len(), 8, "no write undid another");
        let ids: Vec<String> = (0..8).map(|i| format!("i{i}")).collect();
        let racing_admits = ids.iter().map(|id| store.admit("alice", id, now_ms() + 60_000, 5));
        let admitted = futures::future::join_all(racing_admits).await;
        assert_eq!(admitted.iter().filter(|a| matches!(a, Ok(Ok(())))).count(), 5, "{admitted:?}");
        assert!(store.update("t", |_| None::<()>).await.unwrap().is_none(), "an unchanged record is not written");
        assert!(store.update("nope", |_| Some(())).await.unwrap().is_none());
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert!(!store.leased("t").await.unwrap(), "an unrenewed lease expires");
    }
}
