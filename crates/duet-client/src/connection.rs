//! One request or notification sent and its answer read, whatever the era: ids handed
//! out, the message handed to the transport, and 2026's multi round-trip loop: a result
//! that is `input_required` has its `inputRequests` answered by the caller's handlers and
//! the request sent again, under a new id, with the answers (`inputResponses`) and the
//! server's `requestState` exactly as it came (none when it sent none), a bounded number of
//! rounds. A result that is a task (`resultType: "task"`, the tasks extension) is handed
//! back as it came; whether the request allowed one is the caller's to check, as is what
//! else goes into params (the envelope, a progress token).

use crate::error::Error;
use crate::handlers::Handlers;
use crate::transport::{Outgoing, Transport};
use duet_wire::jsonrpc::RequestId;
use duet_wire::method::Method;
use duet_wire::version::Version;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicI64, Ordering};

/// The most input requests one `input_required` result may carry.
const MAX_INPUT_REQUESTS: usize = 64;

/// A transport, the ids of the requests sent on it, and the caller's handlers.
#[derive(Debug)]
pub(crate) struct Connection {
    pub(crate) transport: Transport,
    next_id: AtomicI64,
    handlers: Handlers,
    max_rounds: usize,
}

/// What an `input_required` result asks.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InputRequired {
    #[serde(default)]
    input_requests: Map<String, Value>,
    request_state: Option<String>,
}

/// One of its requests: a method and its params.
#[derive(Deserialize)]
struct InputRequest {
    method: String,
    #[serde(default)]
    params: Map<String, Value>,
}

impl Connection {
    /// A connection through `transport` whose server's questions `handlers` answer, taking
    /// at most `max_rounds` rounds of input for one request.
    pub(crate) fn new(transport: Transport, handlers: Handlers, max_rounds: usize) -> Connection {
        transport.inbox().answering.answer_with(handlers.clone());
        Connection { transport, next_id: AtomicI64::new(1), handlers, max_rounds }
    }

    /// The id of the next request: never one in use.
    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Int(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends request `id` and returns its complete result (or the task it became), answering
    /// the rounds of input the server asks for on the way.
    pub(crate) async fn request(&self, id: &RequestId, mut out: Outgoing) -> Result<Value, Error> {
        let mut id = id.clone();
        let mut round = 0;
        loop {
            let result = self.transport.request(&id, &out).await?;
            let method = &out.method;
            match result.get("resultType").map(|kind| kind.as_str()) {
                None | Some(Some("complete" | "task")) => return Ok(result),
                Some(Some("input_required")) if round < self.max_rounds => {
                    let asked: InputRequired = decode(method.clone(), result)?;
                    let answers = self.answer(method, asked.input_requests).await?;
                    out.params.insert("inputResponses".into(), Value::Object(answers));
                    match asked.request_state {
                        Some(state) => out.params.insert("requestState".into(), Value::String(state)),
                        None => out.params.remove("requestState"),
                    };
                    id = self.next_id();
                    round += 1;
                }
                Some(Some("input_required")) => {
                    return Err(Error::Protocol(format!(
                        "the server still asked for input to {method} after {} rounds",
                        self.max_rounds
                    )));
                }
                Some(kind) => {
                    return Err(Error::Protocol(format!("the result of {method} has an unknown resultType {kind:?}")));
                }
            }
        }
    }

    /// The caller's answers to what `method` asked (an `input_required` result's, or a
    /// task's `inputRequests`), by key.
    pub(crate) async fn answer(&self, method: &Method, asked: Map<String, Value>) -> Result<Map<String, Value>, Error> {
        if asked.len() > MAX_INPUT_REQUESTS {
            return Err(Error::Protocol(format!(
                "the server asked {} questions at once to {method}, more than {MAX_INPUT_REQUESTS}",
                asked.len()
            )));
        }
        let answers = asked.into_iter().map(|(key, request)| async move {
            let request: InputRequest = serde_json::from_value(request)
                .map_err(|e| Error::Protocol(format!("input request {key:?} of {method}: {e}")))?;
            let asked = Method::parse(&request.method);
            let answer = self.handlers.answer(&asked, request.params).await;
            answer.map(|answer| (key, answer)).map_err(|error| Error::Handler { method: request.method, error })
        });
        futures::future::try_join_all(answers).await.map(Map::from_iter)
    }

    /// Sends a notification.
    pub(crate) async fn notify(
        &self,
        method: Method,
        params: Map<String, Value>,
        version: Version,
    ) -> Result<(), Error> {
        self.transport.notify(&Outgoing::new(method, params, Some(version))).await
    }
}

/// A result read as `T`; one that does not decode is a protocol violation.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(method: Method, result: Value) -> Result<T, Error> {
    serde_json::from_value(result).map_err(|e| Error::Protocol(format!("the result of {method} does not decode: {e}")))
}
