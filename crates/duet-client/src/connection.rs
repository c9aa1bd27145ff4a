//! One request or notification sent and its answer read, whatever the era: ids handed
//! out, the message handed to the transport, and a result that does not say it is complete
//! (2026's `resultType`) refused. What goes into params (the envelope, a progress token) is
//! the caller's.

use crate::error::Error;
use crate::transport::{Outgoing, Transport};
use duet_wire::jsonrpc::RequestId;
use duet_wire::method::Method;
use duet_wire::version::Version;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicI64, Ordering};

/// A transport and the ids of the requests sent on it.
#[derive(Debug)]
pub(crate) struct Connection {
    pub(crate) transport: Transport,
    next_id: AtomicI64,
}

impl Connection {
    pub(crate) fn new(transport: Transport) -> Connection {
        Connection { transport, next_id: AtomicI64::new(1) }
    }

    /// The id of the next request: never one in use.
    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Int(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends request `id` and returns its result; in 2026 only a complete one.
    pub(crate) async fn request(
        &self,
        id: &RequestId,
        method: Method,
        params: Map<String, Value>,
        version: Option<Version>,
    ) -> Result<Value, Error> {
        let out = Outgoing { method, params, version };
        let result = self.transport.request(id, &out).await?;
        match result.get("resultType").map(|kind| kind.as_str()) {
            None | Some(Some("complete")) => Ok(result),
            Some(Some("input_required")) => Err(Error::Protocol(format!(
                "the server asked for input to {} (input_required), which this client does not answer yet",
                out.method
            ))),
            Some(kind) => {
                Err(Error::Protocol(format!("the result of {} has an unknown resultType {kind:?}", out.method)))
            }
        }
    }

    /// Sends a notification.
    pub(crate) async fn notify(
        &self,
        method: Method,
        params: Map<String, Value>,
        version: Version,
    ) -> Result<(), Error> {
        self.transport.notify(&Outgoing { method, params, version: Some(version) }).await
    }
}

/// A result read as `T`; one that does not decode is a protocol violation.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(method: Method, result: Value) -> Result<T, Error> {
    serde_json::from_value(result).map_err(|e| Error::Protocol(format!("the result of {method} does not decode: {e}")))
}
