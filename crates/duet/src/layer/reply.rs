//! A handler's answer: complete, or "ask the client first" (a multi round-trip request).
//! Both eras share this one shape, so a handler is written once.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Complete, or input required from the client before the request can finish.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply<T> {
    Complete(T),
    InputRequired(InputRequired),
}

impl<T> From<T> for Reply<T> {
    fn from(value: T) -> Self {
        Reply::Complete(value)
    }
}

/// What the handler needs from the client, each request under a key of its choosing,
/// plus the handler's own state to carry into the retry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputRequired {
    pub requests: Map<String, Value>,
    pub state: Option<Value>,
}

/// One request to the client, as it travels inside `inputRequests`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    pub method: String,
    pub params: Value,
}
