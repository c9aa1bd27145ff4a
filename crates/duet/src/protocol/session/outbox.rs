//! A pinned session's outbox (a legacy 2024-11-05 SSE session's): its answers and what it
//! sends unprompted, waiting for its stream (`/sse`) to carry them. A legacy POST is answered 202 before it
//! runs, so a client that never reads its stream would make the server hold every answer;
//! the outbox is therefore bounded in messages ([`OUTBOX_CAPACITY`]) and in bytes
//! ([`OUTBOX_BYTES`]), and one rule keeps it there: a request takes room for its answer
//! when it is accepted ([`Outbox::reserve`]), and is refused while the outbox is full; an
//! answer that would pass the byte bound is replaced by a short error saying so; what the
//! session sends unprompted while the outbox is full is dropped. The outbox is full when
//! it holds that many messages or bytes, or when a message found no room since the stream
//! last took one and something still waits.

use duet_wire::jsonrpc::{Response, RpcError, code};
use duet_wire::message::Message;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// Messages waiting in one outbox, and answers owed to it, at most.
pub(super) const OUTBOX_CAPACITY: usize = 512;
/// Bytes waiting in one outbox at most (one message larger than that is still queued in
/// an empty outbox).
pub(super) const OUTBOX_BYTES: usize = 16 << 20;

/// What waits: compact JSON lines, their bytes, answers still owed (room reserved), and
/// whether a message found no room since the stream last took one.
#[derive(Default)]
struct Queue {
    lines: VecDeque<String>,
    bytes: usize,
    owed: usize,
    overflowed: bool,
}

impl Queue {
    fn is_full(&self) -> bool {
        let backlog = self.overflowed && !self.lines.is_empty();
        backlog || self.lines.len() + self.owed >= OUTBOX_CAPACITY || self.bytes >= OUTBOX_BYTES
    }

    fn fits(&self, line: &str) -> bool {
        self.lines.is_empty() || self.bytes + line.len() <= OUTBOX_BYTES
    }

    fn push(&mut self, line: String) {
        self.bytes += line.len();
        self.lines.push_back(line);
    }
}

/// A request refused because its session's outbox is full: its stream is not being read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Full {
    pub waiting: usize,
    pub bytes: usize,
}

impl Full {
    pub(crate) fn message(&self) -> String {
        let Full { waiting, bytes } = self;
        format!(
            "the session's stream is not being read: {waiting} messages ({bytes} bytes) wait for it; \
             read the SSE stream before sending more requests"
        )
    }
}

#[derive(Default)]
pub(crate) struct Outbox {
    queue: Mutex<Queue>,
    ready: Notify,
    closed: AtomicBool,
}

impl Outbox {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Room for the answer of one accepted request, held until it is answered or dropped;
    /// refused while the outbox is full.
    pub(crate) fn reserve(self: &Arc<Self>) -> Result<Reserved, Full> {
        let mut queue = self.queue();
        if queue.is_full() {
            return Err(Full { waiting: queue.lines.len() + queue.owed, bytes: queue.bytes });
        }
        queue.owed += 1;
        Ok(Reserved(self.clone()))
    }

    /// Queues a message the session sends unprompted; dropped while the outbox is full.
    pub(crate) fn push(&self, line: String) {
        {
            let mut queue = self.queue();
            if queue.is_full() || !queue.fits(&line) {
                queue.overflowed = true;
                tracing::warn!(
                    bytes = line.len(),
                    "a legacy SSE stream is not being read; a message to it was dropped"
                );
                return;
            }
            queue.push(line);
        }
        self.ready.notify_one();
    }

    /// The next message; `None` once the outbox is closed and drained.
    pub(crate) async fn next(&self) -> Option<String> {
        loop {
            let notified = self.ready.notified();
            {
                let mut queue = self.queue();
                if let Some(line) = queue.lines.pop_front() {
                    queue.bytes -= line.len();
                    queue.overflowed = false;
                    return Some(line);
                }
            }
            if self.closed.load(Ordering::Acquire) {
                return None;
            }
            notified.await;
        }
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.ready.notify_waiters();
        self.ready.notify_one();
    }
}

/// Room in an outbox for one request's answer; given back when dropped.
pub(crate) struct Reserved(Arc<Outbox>);

impl Reserved {
    /// Queues `answer`, or when it would take the outbox past [`OUTBOX_BYTES`], an error
    /// for each of its requests saying so.
    pub(crate) fn answer(self, answer: Message<Response>) {
        {
            let mut queue = self.0.queue();
            let line = answer.to_line();
            let line = match queue.fits(&line) {
                true => line,
                false => {
                    queue.overflowed = true;
                    too_large(&answer, line.len(), queue.bytes).to_line()
                }
            };
            queue.push(line);
        }
        self.0.ready.notify_one();
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        let mut queue = self.0.queue();
        queue.owed = queue.owed.saturating_sub(1);
    }
}

/// The errors replacing an answer of `bytes` that does not fit beside the `waiting` bytes.
fn too_large(answer: &Message<Response>, bytes: usize, waiting: usize) -> Message<Response> {
    let why = format!(
        "the answer ({bytes} bytes) does not fit the session's stream, which is not being read \
         ({waiting} bytes wait for it; at most {OUTBOX_BYTES})"
    );
    let error = |r: &Response| Response::error(r.id.clone(), RpcError::new(code::OVER_LIMIT, why.clone()));
    match answer {
        Message::One(response) => Message::One(error(response)),
        Message::Batch(responses) => Message::Batch(responses.iter().map(error).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duet_wire::jsonrpc::{Rendered, RequestId};

    fn text(bytes: usize) -> Message<Response> {
        let result = Rendered::new(&"x".repeat(bytes)).unwrap();
        Message::One(Response { id: Some(RequestId::Int(1)), result: Ok(result) })
    }

    #[tokio::test]
    async fn requests_are_refused_while_the_outbox_is_full_of_messages() {
        let outbox = Arc::new(Outbox::default());
        let held: Vec<Reserved> = (0..OUTBOX_CAPACITY).map(|_| outbox.reserve().unwrap()).collect();
        assert_eq!(outbox.reserve().err(), Some(Full { waiting: OUTBOX_CAPACITY, bytes: 0 }));
        // Unprompted messages find no room either: the owed answers keep theirs.
        outbox.push("note".into());
        drop(held);
        outbox.push("note".into());
        assert_eq!(outbox.next().await.as_deref(), Some("note"));
        assert!(outbox.reserve().is_ok());
    }

    #[tokio::test]
    async fn an_answer_past_the_byte_bound_is_replaced_by_an_error() {
        let outbox = Arc::new(Outbox::default());
        let (first, second, third) = (outbox.reserve().unwrap(), outbox.reserve().unwrap(), outbox.reserve().unwrap());
        first.answer(text(OUTBOX_BYTES / 2));
        // Past the bound: the answer is replaced, and the outbox is full until read.
        second.answer(text(OUTBOX_BYTES / 2));
        assert!(outbox.reserve().is_err(), "an answer found no room: no more requests");
        assert!(outbox.next().await.unwrap().len() > OUTBOX_BYTES / 2);
        let replaced: serde_json::Value = serde_json::from_str(&outbox.next().await.unwrap()).unwrap();
        assert_eq!(replaced["id"], 1);
        assert_eq!(replaced["error"]["code"], code::OVER_LIMIT);
        let said = replaced["error"]["message"].as_str().unwrap();
        assert!(said.starts_with("the answer (") && said.contains("not being read"), "{said}");
        assert!(outbox.reserve().is_ok(), "read: room again");
        // One answer larger than the bound still goes to an empty outbox.
        third.answer(text(OUTBOX_BYTES + 1));
        assert!(outbox.reserve().is_err(), "full of bytes: no more requests");
        assert!(outbox.next().await.unwrap().len() > OUTBOX_BYTES);
    }
}
