//! At-most-once side effects. A handler with a side effect (a refund, a write) runs it
//! under an idempotency key; a replay gets the first run's result instead of a second
//! effect. (The engine spends each sealed request state that brings answers the same way,
//! so a replayed confirmation is answered, not run again; a key of the handler's own also
//! covers a request asked and confirmed anew.) The key lives in the backplane's [`Keys`]:
//! in memory for one replica, in the shared store for many, in a namespace of its own
//! (`idem:KEY`), so no key a handler chooses is ever one of duet's own (`session:…`,
//! `task:…`).

use crate::backplane::{Keys, StoreError};
use serde_json::Value;
use std::future::Future;
use std::time::Duration;

/// What every handler's key is stored under.
const HANDLER_KEYS: &str = "idem:";

/// What a key holds while its effect runs; once it ran, `DONE` and the result follow.
const RUNNING: &[u8] = b"running";
const DONE: &[u8] = b"done:";

/// Why [`at_most_once`] did not run the effect.
#[derive(Debug, thiserror::Error)]
pub enum OnceError<E> {
    /// Another call with the same key is running the effect now.
    #[error("the same request is already being processed; try again shortly")]
    InProgress,
    /// The key could not be claimed or recorded: whether the effect ran is unknown to this
    /// call, so it was not run.
    #[error(transparent)]
    Store(StoreError),
    /// The effect ran and failed (the key is released).
    #[error(transparent)]
    Failed(E),
}

/// Runs `effect` once per `key` within `ttl`: a repeat returns the first result, a call
/// while the first runs gets [`OnceError::InProgress`]. A failed effect releases the key
/// so it can be tried again. Keys of handlers live apart from duet's own: `key` may be
/// any string.
pub async fn at_most_once<K, F, Fut, E>(keys: &K, key: &str, ttl: Duration, effect: F) -> Result<Value, OnceError<E>>
where
    K: Keys + ?Sized,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Value, E>>,
{
    once_under(keys, &format!("{HANDLER_KEYS}{key}"), ttl, effect).await
}

/// [`at_most_once`] under the store key `key` as it is, for duet's own keys, which live
/// outside the handlers' namespace.
pub(crate) async fn once_under<K, F, Fut, E>(
    keys: &K,
    key: &str,
    ttl: Duration,
    effect: F,
) -> Result<Value, OnceError<E>>
where
    K: Keys + ?Sized,
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Value, E>>,
{
    match keys.claim(key, RUNNING, ttl).await.map_err(OnceError::Store)? {
        None => {}
        Some(held) => {
            return match held.strip_prefix(DONE) {
                Some(done) => serde_json::from_slice(done)
                    .map_err(|e| OnceError::Store(StoreError(format!("idempotency key {key:?} holds no result: {e}")))),
                None => Err(OnceError::InProgress),
            };
        }
    }
    match effect().await {
        Ok(result) => {
            let mut done = DONE.to_vec();
            done.extend(result.to_string().as_bytes());
            // The effect happened: its caller gets the result even if the store lost it
            // (replays then see the key as running until it expires).
            if let Err(e) = keys.put(key, &done, ttl).await {
                tracing::warn!(key, "the result of an at-most-once effect was not recorded: {e}");
            }
            Ok(result)
        }
        Err(e) => {
            // Released or not, the caller learns the effect failed; a key left claimed
            // expires with its ttl.
            let _ = keys.delete(key).await;
            Err(OnceError::Failed(e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backplane::MemoryKeys;
    use serde_json::json;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn replays_get_the_first_result() {
        let keys = MemoryKeys::new();
        let runs = AtomicU32::new(0);
        let effect = || async {
            let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
            Ok::<_, String>(json!({"refund": n}))
        };
        let first = at_most_once(&keys, "k", Duration::from_secs(60), effect).await.unwrap();
        let again = at_most_once(&keys, "k", Duration::from_secs(60), effect).await.unwrap();
        assert_eq!((first.clone(), again), (json!({"refund": 1}), json!({"refund": 1})));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let other = at_most_once(&keys, "k2", Duration::from_secs(60), effect).await.unwrap();
        assert_eq!(other, json!({"refund": 2}));
    }

    #[tokio::test]
    async fn a_handler_key_never_touches_a_key_of_duet() {
        let keys = MemoryKeys::new();
        let ttl = Duration::from_secs(60);
        let task = br#"{"id":"X","status":"working"}"#;
        keys.put("task:X", task, ttl).await.unwrap();
        let ran = at_most_once(&keys, "task:X", ttl, || async { Ok::<_, ()>(json!("ran")) }).await;
        assert_eq!(ran.unwrap(), json!("ran"), "the handler's key task:X is not the task's");
        let again = at_most_once(&keys, "task:X", ttl, || async { Ok::<_, ()>(json!("twice")) }).await;
        assert_eq!(again.unwrap(), json!("ran"), "and is a key of its own, spent once");
        assert_eq!(keys.get("task:X").await.unwrap().as_deref(), Some(&task[..]), "the task is as it was");
    }

    #[tokio::test]
    async fn failures_release_and_a_running_key_is_busy() {
        let keys = MemoryKeys::new();
        let ttl = Duration::from_secs(60);
        let failed = at_most_once(&keys, "k", ttl, || async { Err::<Value, _>("down") }).await;
        assert!(matches!(failed, Err(OnceError::Failed("down"))));
        let busy = at_most_once(&keys, "k", ttl, || async {
            let during = at_most_once(&keys, "k", ttl, || async { Ok::<_, ()>(json!(2)) }).await;
            assert!(matches!(during, Err(OnceError::InProgress)));
            Ok::<_, ()>(json!(1))
        })
        .await;
        assert_eq!(busy.unwrap(), json!(1));
    }
}
