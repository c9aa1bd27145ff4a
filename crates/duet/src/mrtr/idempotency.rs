//! At-most-once side effects. A sealed request state proves a retry is genuine, not that it
//! is the first: a client can replay it. A handler with a side effect (a refund, a write)
//! runs it under an idempotency key; a replay gets the first run's result instead of a
//! second effect. The in-process store suits one replica; a shared store (behind the same
//! trait) serves many.

use async_trait::async_trait;
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a store knows about a key when a handler claims it.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// Nobody ran it: the caller now owns the key and must `finish` or `release` it.
    New,
    /// Another call is running it right now.
    InProgress,
    /// It ran; this is what it returned.
    Done(Value),
}

/// Where idempotency keys live. Implement it over a shared database or cache to make
/// at-most-once hold across replicas.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Claims `key` for `ttl` unless someone holds or finished it.
    async fn claim(&self, key: &str, ttl: Duration) -> Claim;
    /// Records the result of a claimed key, kept for `ttl`.
    async fn finish(&self, key: &str, result: Value, ttl: Duration);
    /// Gives a claimed key back (the side effect failed and may be tried again).
    async fn release(&self, key: &str);
}

enum Entry {
    Running(Instant),
    Done(Value, Instant),
}

/// An in-process store whose entries expire.
#[derive(Default)]
pub struct MemoryStore {
    entries: Mutex<HashMap<String, Entry>>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl IdempotencyStore for MemoryStore {
    async fn claim(&self, key: &str, ttl: Duration) -> Claim {
        let now = Instant::now();
        let mut entries = self.lock();
        entries.retain(|_, e| match e {
            Entry::Running(until) | Entry::Done(_, until) => *until > now,
        });
        match entries.get(key) {
            Some(Entry::Running(_)) => Claim::InProgress,
            Some(Entry::Done(v, _)) => Claim::Done(v.clone()),
            None => {
                entries.insert(key.to_string(), Entry::Running(now + ttl));
                Claim::New
            }
        }
    }

    async fn finish(&self, key: &str, result: Value, ttl: Duration) {
        self.lock().insert(key.to_string(), Entry::Done(result, Instant::now() + ttl));
    }

    async fn release(&self, key: &str) {
        self.lock().remove(key);
    }
}

/// Why [`at_most_once`] did not run the effect.
#[derive(Debug, thiserror::Error)]
pub enum OnceError<E> {
    #[error("the same request is already being processed; try again shortly")]
    InProgress,
    #[error(transparent)]
    Failed(E),
}

/// Runs `effect` once per `key` within `ttl`: a repeat returns the first result. A failed
/// effect releases the key so it can be tried again.
pub async fn at_most_once<S, F, Fut, E>(store: &S, key: &str, ttl: Duration, effect: F) -> Result<Value, OnceError<E>>
where
    S: IdempotencyStore + ?Sized,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Value, E>>,
{
    match store.claim(key, ttl).await {
        Claim::Done(v) => Ok(v),
        Claim::InProgress => Err(OnceError::InProgress),
        Claim::New => match effect().await {
            Ok(v) => {
                store.finish(key, v.clone(), ttl).await;
                Ok(v)
            }
            Err(e) => {
                store.release(key).await;
                Err(OnceError::Failed(e))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn replays_get_the_first_result() {
        let store = MemoryStore::new();
        let runs = AtomicU32::new(0);
        let effect = || async {
            let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
            Ok::<_, String>(json!({"refund": n}))
        };
        let first = at_most_once(&store, "k", Duration::from_secs(60), effect).await.unwrap();
        let again = at_most_once(&store, "k", Duration::from_secs(60), effect).await.unwrap();
        assert_eq!((first.clone(), again), (json!({"refund": 1}), json!({"refund": 1})));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let other = at_most_once(&store, "k2", Duration::from_secs(60), effect).await.unwrap();
        assert_eq!(other, json!({"refund": 2}));
    }

    #[tokio::test]
    async fn failures_release_and_entries_expire() {
        let store = MemoryStore::new();
        let failed = at_most_once(&store, "k", Duration::from_secs(60), || async { Err::<Value, _>("down") }).await;
        assert!(matches!(failed, Err(OnceError::Failed("down"))));
        assert_eq!(store.claim("k", Duration::from_secs(60)).await, Claim::New);
        assert_eq!(store.claim("k", Duration::from_secs(60)).await, Claim::InProgress);
        store.finish("old", json!(1), Duration::from_millis(1)).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(store.claim("old", Duration::from_secs(1)).await, Claim::New);
    }
}
