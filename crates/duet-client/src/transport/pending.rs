//! The requests waiting for their answers on a connection that lasts (stdio), by id: an
//! answer goes to the one waiting; a waiter dropped before its answer leaves no entry behind
//! and is reported (the connection tells the server it gave up); when the connection ends,
//! every waiter learns why, and later requests fail at once.

use crate::error::Error;
use duet_wire::jsonrpc::RequestId;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// What an answer brings: the result, or why there is none.
type Outcome = Result<Value, Error>;

/// Why the connection ended.
#[derive(Debug, Clone)]
pub(crate) enum Ended {
    /// It was closed, or the server went away.
    Closed,
    /// The server broke the protocol, as said.
    Broken(String),
}

impl Ended {
    fn error(&self) -> Error {
        match self {
            Ended::Closed => Error::Closed,
            Ended::Broken(why) => Error::Protocol(why.clone()),
        }
    }
}

/// What is told of a request whose waiter gave up before its answer.
type Abandoned = Box<dyn Fn(&RequestId) + Send + Sync>;

/// The waiting requests of one connection.
pub(crate) struct Pending {
    state: Mutex<State>,
    abandoned: Abandoned,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").field("waiting", &self.lock().waiting.len()).finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    waiting: HashMap<RequestId, oneshot::Sender<Outcome>>,
    ended: Option<Ended>,
}

impl Pending {
    /// No request waiting; `abandoned` is told of each request given up on.
    pub(crate) fn new(abandoned: Abandoned) -> Arc<Pending> {
        Arc::new(Pending { state: Mutex::default(), abandoned })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A waiter for the answer to `id`; an error once the connection has ended.
    pub(crate) fn register(self: &Arc<Self>, id: RequestId) -> Result<Waiter, Error> {
        let (sender, receiver) = oneshot::channel();
        let mut state = self.lock();
        if let Some(ended) = &state.ended {
            return Err(ended.error());
        }
        state.waiting.insert(id.clone(), sender);
        Ok(Waiter { pending: Arc::clone(self), id, receiver: Some(receiver) })
    }

    /// Hands the answer to `id` to its waiter; an answer nobody waits for is dropped.
    pub(crate) fn resolve(&self, id: &RequestId, outcome: Outcome) {
        if let Some(sender) = self.lock().waiting.remove(id) {
            let _ = sender.send(outcome);
        }
    }

    /// The connection ended: every waiter, and every later request, is told why.
    pub(crate) fn end(&self, why: Ended) {
        let mut state = self.lock();
        for (_, sender) in state.waiting.drain() {
            let _ = sender.send(Err(why.error()));
        }
        state.ended.get_or_insert(why);
    }
}

/// One request waiting for its answer. Dropped before the answer came, it takes its entry
/// out and reports the request abandoned.
pub(crate) struct Waiter {
    pending: Arc<Pending>,
    id: RequestId,
    receiver: Option<oneshot::Receiver<Outcome>>,
}

impl Waiter {
    /// The answer.
    pub(crate) async fn answer(mut self) -> Outcome {
        let Some(receiver) = self.receiver.as_mut() else { return Err(Error::Closed) };
        let outcome = receiver.await.unwrap_or(Err(Error::Closed));
        self.receiver = None;
        outcome
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if self.receiver.is_some() && self.pending.lock().waiting.remove(&self.id).is_some() {
            (self.pending.abandoned)(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn counting() -> (Arc<Pending>, Arc<AtomicUsize>) {
        let abandoned = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&abandoned);
        (
            Pending::new(Box::new(move |_| {
                count.fetch_add(1, Ordering::SeqCst);
            })),
            abandoned,
        )
    }

    #[tokio::test]
    async fn answers_reach_their_waiter_and_dropped_waiters_leave_nothing() {
        let (pending, abandoned) = counting();
        let waiter = pending.register(RequestId::Int(1)).unwrap();
        pending.resolve(&RequestId::Int(1), Ok(Value::from(7)));
        assert_eq!(waiter.answer().await.unwrap(), 7);
        assert_eq!(abandoned.load(Ordering::SeqCst), 0, "an answered request is not abandoned");

        let waiter = pending.register(RequestId::Int(2)).unwrap();
        let gave_up = tokio::time::timeout(std::time::Duration::from_millis(10), waiter.answer()).await;
        assert!(gave_up.is_err());
        assert!(pending.lock().waiting.is_empty(), "the dropped waiter's entry is gone");
        assert_eq!(abandoned.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn an_ended_connection_fails_waiters_and_later_requests() {
        let (pending, _) = counting();
        let waiter = pending.register(RequestId::Int(1)).unwrap();
        pending.end(Ended::Broken("too long".into()));
        assert!(matches!(waiter.answer().await, Err(Error::Protocol(why)) if why == "too long"));
        assert!(matches!(pending.register(RequestId::Int(2)), Err(Error::Protocol(_))));
    }
}
