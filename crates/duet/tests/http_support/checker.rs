//! [`Checker`]: validates every JSON-RPC message the server sends to one client against
//! the MCP schema of that client's version: results against the result type of the method
//! the client sent with that id, notifications against `ServerNotification`, requests to a
//! handshake-era client against `ServerRequest`, error objects for their shape.

use duet_testing::Schemas;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Validates what the server sends to one client against that client's version.
#[derive(Clone)]
pub(super) struct Checker {
    version: String,
    /// The method of every request sent, by its id (as JSON text).
    sent: Arc<Mutex<HashMap<String, String>>>,
}

impl Checker {
    /// A checker for a client of `version` that has sent nothing yet.
    pub(super) fn new(version: &str) -> Checker {
        Checker { version: version.to_string(), sent: Arc::default() }
    }

    /// Remembers the method of each request in `body` (one message or a batch) by its id.
    pub(super) fn record(&self, body: &Value) {
        let items: Vec<&Value> = match body {
            Value::Array(items) => items.iter().collect(),
            single => vec![single],
        };
        let mut sent = self.sent.lock().unwrap();
        for item in items {
            if let (Some(method), Some(id)) = (item.get("method").and_then(Value::as_str), item.get("id")) {
                sent.insert(id.to_string(), method.to_string());
            }
        }
    }

    /// Panics unless `message` is a valid JSON-RPC message of this client's version.
    pub(super) fn check(&self, message: &Value) {
        assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC 2.0: {message}");
        let schemas = Schemas::get();
        if let Some(error) = message.get("error") {
            assert!(message.get("result").is_none(), "both result and error: {message}");
            schemas.assert_error(error);
            let id = &message["id"];
            assert!(
                id.is_null() || self.sent.lock().unwrap().contains_key(&id.to_string()),
                "an error for an id never sent: {message}"
            );
        } else if let Some(result) = message.get("result") {
            let method = self.sent.lock().unwrap().get(&message["id"].to_string()).cloned();
            let method = method.unwrap_or_else(|| panic!("a response to an id never sent: {message}"));
            schemas.assert_result(&self.version, &method, result);
        } else if message.get("method").is_some() && message.get("id").is_some() {
            assert!(self.version.as_str() < "2026-07-28", "the server sent a 2026 client a request: {message}");
            schemas.assert_request(&self.version, message);
        } else if message.get("method").is_some() {
            schemas.assert_notification(&self.version, message);
        } else {
            panic!("not a JSON-RPC message: {message}");
        }
    }
}
