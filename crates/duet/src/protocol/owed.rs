//! What a message is owed: an answer for each of its requests, even when the work that
//! answers them is lost. A handler's panic is answered where the handler runs
//! ([`Call::respond`](super::call::Call)); this covers the rest: a panic anywhere else in the
//! engine, and a task that ends without its answer (a runtime shutting down). The engine's
//! entry points run under [`Owed::guard`], and a transport that spawns the work answers
//! [`Owed::lost`] when the task fails, so a request is answered -32603 and the loss logged,
//! never dropped.

use duet_wire::jsonrpc::{RequestId, Response, RpcError};
use duet_wire::message::Message;
use futures::FutureExt;
use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

/// The ids a message's answer must cover.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Owed {
    /// Notifications, responses, invalid messages: nothing is owed beyond what the engine
    /// answers for them itself.
    Nothing,
    One(RequestId),
    Batch(Vec<RequestId>),
}

impl Owed {
    pub(crate) fn of(message: &Message) -> Owed {
        match message {
            Message::One(_) => message.requests().next().map_or(Owed::Nothing, |r| Owed::One(r.id.clone())),
            Message::Batch(_) => {
                let ids: Vec<RequestId> = message.requests().map(|r| r.id.clone()).collect();
                if ids.is_empty() { Owed::Nothing } else { Owed::Batch(ids) }
            }
        }
    }

    /// The answer when the work was lost (`why`, logged): -32603 for every request owed.
    pub(crate) fn lost(self, why: &str) -> Option<Message<Response>> {
        let internal = |id: RequestId| Response::error(Some(id), RpcError::internal());
        match self {
            Owed::Nothing => {
                tracing::error!(why, "work on a message was lost; it owed no answer");
                None
            }
            Owed::One(id) => {
                tracing::error!(why, id = %id, "work on a request was lost; answered -32603");
                Some(Message::One(internal(id)))
            }
            Owed::Batch(ids) => {
                tracing::error!(why, requests = ids.len(), "work on a batch was lost; answered -32603");
                Some(Message::Batch(ids.into_iter().map(internal).collect()))
            }
        }
    }

    /// Runs `work`; if it panics, the owed answer instead.
    pub(crate) async fn guard<F>(self, work: F) -> Option<Message<Response>>
    where
        F: Future<Output = Option<Message<Response>>>,
    {
        match AssertUnwindSafe(work).catch_unwind().await {
            Ok(answer) => answer,
            Err(panic) => self.lost(&format!("panicked: {}", panic_text(panic.as_ref()))),
        }
    }
}

/// The text a panic was raised with, when it was raised with text.
pub(crate) fn panic_text(panic: &(dyn Any + Send)) -> &str {
    panic.downcast_ref::<&str>().copied().or_else(|| panic.downcast_ref::<String>().map(String::as_str)).unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owed(message: serde_json::Value) -> Owed {
        Owed::of(&Message::from(message))
    }

    fn request(id: i64) -> serde_json::Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
    }

    #[test]
    fn what_a_message_is_owed() {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(owed(request(1)), Owed::One(RequestId::Int(1)));
        assert_eq!(owed(note.clone()), Owed::Nothing);
        assert_eq!(
            owed(json!([request(1), note.clone(), request(2)])),
            Owed::Batch(vec![RequestId::Int(1), RequestId::Int(2)])
        );
        assert_eq!(owed(json!([note])), Owed::Nothing);
    }

    #[tokio::test]
    async fn lost_work_is_answered_internal_error() {
        let panics = async { panic!("engine bug") };
        let answer = owed(json!([request(1), request(2)])).guard(panics).await.expect("an answer");
        let ids: Vec<_> = answer.items().iter().map(|r| (r.id.clone(), r.error_code())).collect();
        assert_eq!(ids, [(Some(RequestId::Int(1)), Some(-32603)), (Some(RequestId::Int(2)), Some(-32603))]);
        assert_eq!(owed(request(3)).lost("cancelled").map(|m| m.items()[0].error_code()), Some(Some(-32603)));
        let fine = owed(request(4)).guard(async { None }).await;
        assert_eq!(fine, None, "work that ends is its own answer");
    }
}
