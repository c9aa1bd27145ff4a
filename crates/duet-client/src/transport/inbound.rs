//! What a server sends the client, read by duet-wire's message rules: an answer to one of
//! the client's requests, a notification, or a request of the server's (which this client
//! answers only for `ping`); and the channel notifications travel on to the caller.

use duet_wire::jsonrpc::{RequestId, Response, RpcError};
use duet_wire::message::{Incoming, Notification, Request};
use duet_wire::method::Method;
use serde_json::{Value, json};
use std::sync::Mutex;
use tokio::sync::mpsc;

/// How many notifications wait for the caller to read them; more are dropped.
const NOTIFICATION_CAPACITY: usize = 1024;

/// One message from the server, as the client sees it.
pub(crate) enum Inbound {
    /// The answer to a request of the client's (`id` is `None` in an error about no request).
    Answer { id: Option<RequestId>, outcome: Result<Value, RpcError> },
    /// A notification.
    Notification(Notification),
    /// A request of the server's, to be answered (its id, method and params).
    Request(Request),
    /// Something that is none of these: not JSON, not JSON-RPC, a batch.
    Unusable,
}

/// Reads one JSON text from the server.
pub(crate) fn decode(text: &[u8]) -> Inbound {
    match serde_json::from_slice::<Incoming>(text) {
        Ok(Incoming::Response { id, outcome }) => Inbound::Answer { id, outcome },
        Ok(Incoming::Notification(notification)) => Inbound::Notification(notification),
        Ok(Incoming::Request(request)) => Inbound::Request(request),
        Ok(Incoming::Dropped | Incoming::Invalid(_)) | Err(_) => Inbound::Unusable,
    }
}

/// What the client answers a request of the server's: `ping` with an empty result, anything
/// else as a method it does not serve.
pub(crate) fn answer(id: RequestId, method: &Method) -> String {
    match method {
        Method::Ping => duet_wire::jsonrpc::encode(&json!({"jsonrpc": "2.0", "id": id.to_value(), "result": {}})),
        other => Response::error(Some(id), RpcError::method_not_found(other.as_str())).to_line(),
    }
}

/// The server's notifications on their way to the caller: bounded, and dropped when the
/// caller does not read them (or never took the receiver).
#[derive(Debug)]
pub(crate) struct Notices {
    sender: mpsc::Sender<Notification>,
    receiver: Mutex<Option<mpsc::Receiver<Notification>>>,
}

impl Notices {
    pub(crate) fn new() -> Notices {
        let (sender, receiver) = mpsc::channel(NOTIFICATION_CAPACITY);
        Notices { sender, receiver: Mutex::new(Some(receiver)) }
    }

    /// Hands a notification on, unless the caller's channel is full or gone.
    pub(crate) fn deliver(&self, notification: Notification) {
        let _ = self.sender.try_send(notification);
    }

    /// The receiver, the first time.
    pub(crate) fn take(&self) -> Option<mpsc::Receiver<Notification>> {
        self.receiver.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
    }
}
