//! A sink that records what the server sends unprompted (a session's notifications and
//! requests, one request's progress and logs, a listen stream's events), for tests that
//! drive the engine in memory. Whatever a test takes out is checked against the MCP schema
//! of the version the client speaks, and so is whatever is still inside when it is dropped.

use crate::Schemas;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The longest a test waits for a message before it fails instead of hanging.
const WAIT: Duration = Duration::from_secs(5);

/// Messages a sink received, for a client that speaks `version`.
#[derive(Clone)]
pub struct Recorder {
    version: String,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl Recorder {
    /// An empty recorder for a client that speaks `version`.
    pub fn new(version: &str) -> Self {
        Recorder { version: version.to_string(), seen: Arc::default() }
    }

    /// The sink to hand the engine (the same type as `duet::wire::jsonrpc::Sink`).
    pub fn sink(&self) -> Arc<dyn Fn(Value) + Send + Sync> {
        let seen = self.seen.clone();
        Arc::new(move |message| seen.lock().unwrap().push(message))
    }

    /// How many messages it holds.
    pub fn len(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Everything received so far, checked; the record starts over. A request to the client
    /// is checked as one; the tasks extension's `notifications/tasks` is defined by the
    /// extension, not by the revision, and only its framing is checked.
    pub fn take(&self) -> Vec<Value> {
        let taken = std::mem::take(&mut *self.seen.lock().unwrap());
        for message in &taken {
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            if message.get("id").is_some() {
                Schemas::get().assert_request(&self.version, message);
            } else if message["method"] != "notifications/tasks" {
                Schemas::get().assert_notification(&self.version, message);
            }
        }
        taken
    }

    /// Waits (at most five seconds) until at least `n` messages are recorded, then takes
    /// them all.
    pub async fn take_at_least(&self, n: usize) -> Vec<Value> {
        let arrived = tokio::time::timeout(WAIT, async {
            while self.len() < n {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        arrived.await.unwrap_or_else(|_| panic!("{n} message(s) did not arrive within {WAIT:?}"));
        self.take()
    }

    /// Waits (at most five seconds) for a message with this method; returns it and
    /// everything received before it.
    pub async fn wait_for(&self, method: &str) -> Vec<Value> {
        let mut taken = Vec::new();
        let arrived = tokio::time::timeout(WAIT, async {
            loop {
                taken.extend(self.take());
                if taken.iter().any(|m| m["method"] == method) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        arrived.await.unwrap_or_else(|_| panic!("no {method} message within {WAIT:?}"));
        taken
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // The last clone checks what was never taken (unless a test is failing already).
        if Arc::strong_count(&self.seen) == 1 && !std::thread::panicking() {
            self.take();
        }
    }
}
