//! What a server sends the client, read by duet-wire's message rules: an answer to one of
//! the client's requests, a notification, or a request of the server's; the channel
//! notifications travel on to the caller, and the caller's [`Handlers`] that answer the
//! server's requests, a bounded number at a time.

use crate::handlers::Handlers;
use crate::watch::Watchers;
use duet_wire::jsonrpc::{RequestId, Response, RpcError};
use duet_wire::message::{Incoming, Notification, Request};
use serde_json::Value;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::{Semaphore, mpsc};

/// How many notifications wait for the caller to read them; more are dropped.
const NOTIFICATION_CAPACITY: usize = 1024;

/// How many of the server's requests the caller's handlers answer at once; a request
/// beyond is refused at once, so a server cannot make the client hold unbounded work.
const ANSWERING_AT_ONCE: usize = 64;

/// One message from the server, as the client sees it.
pub(crate) enum Inbound {
    /// The answer to a request of the client's (`id` is `None` in an error about no request).
    Answer { id: Option<RequestId>, outcome: Result<Value, RpcError> },
    /// A notification.
    Notification(Notification),
    /// A request of the server's, to be answered.
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

/// What the server sends unasked, on its way: notifications to the caller (and its
/// watchers), the server's requests to the caller's handlers. One per connection, shared by
/// the tasks that read what the server sends.
#[derive(Debug)]
pub(crate) struct Inbox {
    pub(crate) notices: Notices,
    pub(crate) answering: Answering,
}

impl Inbox {
    pub(crate) fn new() -> Arc<Inbox> {
        Arc::new(Inbox { notices: Notices::new(), answering: Answering::new() })
    }
}

/// The caller's handlers, once the client has them, answering the server's requests.
#[derive(Debug)]
pub(crate) struct Answering {
    handlers: OnceLock<Handlers>,
    at_once: Arc<Semaphore>,
}

impl Answering {
    pub(crate) fn new() -> Answering {
        Answering { handlers: OnceLock::new(), at_once: Arc::new(Semaphore::new(ANSWERING_AT_ONCE)) }
    }

    /// Answers with `handlers` from now on (the first set given stays).
    pub(crate) fn answer_with(&self, handlers: Handlers) {
        let _ = self.handlers.set(handlers);
    }

    /// The response line to `request`, from the caller's handler (a client without one
    /// answers `ping` and refuses the rest).
    pub(crate) async fn respond(&self, request: Request) -> String {
        let Ok(_permit) = Arc::clone(&self.at_once).try_acquire_owned() else {
            let busy = RpcError::new(
                duet_wire::jsonrpc::code::INTERNAL_ERROR,
                format!("the client is already answering {ANSWERING_AT_ONCE} requests of the server's"),
            );
            return Response::error(Some(request.id), busy).to_line();
        };
        let handlers = self.handlers.get().cloned().unwrap_or_default();
        let outcome = handlers.answer(&request.method, request.params).await;
        let message = match outcome {
            Ok(result) => serde_json::json!({"jsonrpc": "2.0", "id": request.id.to_value(), "result": result}),
            Err(error) => return Response::error(Some(request.id), error).to_line(),
        };
        duet_wire::jsonrpc::encode(&message)
    }
}

/// The server's notifications on their way to the caller: bounded, and dropped when the
/// caller does not read them (or never took the receiver).
#[derive(Debug)]
pub(crate) struct Notices {
    sender: mpsc::Sender<Notification>,
    receiver: Mutex<Option<mpsc::Receiver<Notification>>>,
    watchers: Watchers,
}

impl Notices {
    pub(crate) fn new() -> Notices {
        let (sender, receiver) = mpsc::channel(NOTIFICATION_CAPACITY);
        Notices { sender, receiver: Mutex::new(Some(receiver)), watchers: Watchers::default() }
    }

    /// Offers a notification to the watchers, then hands it on, unless the caller's
    /// channel is full or gone.
    pub(crate) fn deliver(&self, notification: Notification) {
        self.watchers.offer(&notification);
        let _ = self.sender.try_send(notification);
    }

    /// The watchers of the changes the server announces.
    pub(crate) fn watchers(&self) -> &Watchers {
        &self.watchers
    }

    /// The receiver, the first time.
    pub(crate) fn take(&self) -> Option<mpsc::Receiver<Notification>> {
        self.receiver.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
    }
}
