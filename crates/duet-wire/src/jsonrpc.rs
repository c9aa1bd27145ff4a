//! JSON-RPC 2.0 as MCP uses it: request ids, error objects and codes, and responses with
//! their compact single-line encoding. A result is JSON text from the start ([`Rendered`]):
//! the engine serializes each result from its type once, and a transport writes that text
//! out as it is. Decoding what a client sends is [`crate::message`]'s.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

/// Where messages the server sends unprompted go (a stdout writer, an SSE stream, an outbox).
/// Called from any thread; must not block.
pub type Sink = Arc<dyn Fn(Value) + Send + Sync>;

/// JSON-RPC and MCP error codes.
pub mod code {
    /// The message is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The message is JSON but not a valid request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method (or not in this era).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params are not what the method takes.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Resource not found, handshake era only.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// An HTTP header does not match the body (2026).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability it did not declare (2026).
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// The requested protocol version is not supported (2026).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// A request past one of the server's limits (a rate, requests in flight, the bytes
    /// of a batch's answer); implementation-defined server errors are -32000 to -32099.
    pub const OVER_LIMIT: i64 = -32029;
}

/// A request id: a string or an integer, never null, a boolean or a float.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Int(i64),
    /// A string id.
    Str(String),
}

impl RequestId {
    /// Reads a valid id out of a JSON value; `None` for anything else.
    pub fn from_value(value: &Value) -> Option<RequestId> {
        match value {
            Value::String(s) => Some(RequestId::Str(s.clone())),
            Value::Number(n) => n.as_i64().map(RequestId::Int),
            _ => None,
        }
    }

    /// The id as JSON.
    pub fn to_value(&self) -> Value {
        match self {
            RequestId::Int(i) => Value::from(*i),
            RequestId::Str(s) => Value::from(s.as_str()),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Int(i) => write!(f, "{i}"),
            RequestId::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RpcError {
    /// The error code (see [`code`]).
    pub code: i64,
    /// What went wrong, in a sentence.
    pub message: String,
    /// More about it, for a program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error of `code` saying `message`, with no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None }
    }

    /// The error with `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700: the message is not JSON.
    pub fn parse_error() -> Self {
        Self::new(code::PARSE_ERROR, "Parse error")
    }

    /// -32600, saying `message`.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_REQUEST, message)
    }

    /// -32601, with the method as its data.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(code::METHOD_NOT_FOUND, "Method not found").with_data(Value::from(method))
    }

    /// -32602, saying `message`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }

    /// -32603, saying no more.
    pub fn internal() -> Self {
        Self::new(code::INTERNAL_ERROR, "Internal error")
    }
}

/// Compact JSON text, rendered once and cheap to clone: a result as the engine serialized it
/// from its type, or a list page shared by every response that sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered(Bytes);

impl Rendered {
    /// Renders `value`; fails only for data JSON cannot hold (a map with non-string keys).
    pub fn new(value: &impl Serialize) -> Result<Self, serde_json::Error> {
        // Room for a typical result, so that most are written without growing the buffer.
        let mut text = Vec::with_capacity(512);
        serde_json::to_writer(&mut text, value)?;
        Ok(Rendered(text.into()))
    }

    /// The JSON text.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The text parsed back into a value (for tests and in-process callers).
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.0).unwrap_or(Value::Null)
    }
}

/// One response: the id it answers (null when the request could not be read) and its result.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request it answers; `None` (null) when that could not be read.
    pub id: Option<RequestId>,
    /// The result, or the error.
    pub result: Result<Rendered, RpcError>,
}

impl Response {
    /// An error response.
    pub fn error(id: Option<RequestId>, error: RpcError) -> Self {
        Response { id, result: Err(error) }
    }

    /// The result as a JSON value, or the error.
    pub fn into_value(self) -> Result<Value, RpcError> {
        self.result.map(|text| text.to_value())
    }

    /// The error's code, when it is an error.
    pub fn error_code(&self) -> Option<i64> {
        self.result.as_ref().err().map(|e| e.code)
    }

    /// Room for the line: enough for a result and an id of up to 15 characters (no
    /// growing), a guess for an error. Also what the response counts for where the bytes
    /// of answers held are bounded.
    pub fn line_capacity(&self) -> usize {
        const FRAME: usize = 48;
        match &self.result {
            Ok(text) => FRAME + text.as_bytes().len(),
            Err(_) => 160,
        }
    }

    /// Appends the compact single-line JSON of this response to `out`.
    pub(super) fn write_line(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        // Serializing ids and error objects cannot fail: keys are strings and numbers finite.
        let _ = serde_json::to_writer(&mut *out, &self.id);
        match &self.result {
            Ok(text) => {
                out.extend_from_slice(b",\"result\":");
                out.extend_from_slice(text.as_bytes());
            }
            Err(error) => {
                out.extend_from_slice(b",\"error\":");
                let _ = serde_json::to_writer(&mut *out, error);
            }
        }
        out.push(b'}');
    }

    /// Compact single-line JSON.
    pub fn to_line(&self) -> String {
        let mut out = Vec::with_capacity(self.line_capacity());
        self.write_line(&mut out);
        // serde_json writes UTF-8 only, and the rest is ASCII.
        String::from_utf8(out).unwrap_or_default()
    }
}

/// A notification the server sends.
pub fn notification(method: &str, params: Option<Value>) -> Value {
    let mut m = Map::with_capacity(3);
    m.insert("jsonrpc".into(), Value::from("2.0"));
    m.insert("method".into(), Value::from(method));
    if let Some(params) = params {
        m.insert("params".into(), params);
    }
    Value::Object(m)
}

/// Compact single-line JSON; non-ASCII characters are kept as they are.
pub fn encode(value: &Value) -> String {
    // Serializing a `Value` cannot fail: its keys are strings and its numbers finite.
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use serde_json::json;

    #[test]
    fn ids_are_strings_or_integers_only() {
        assert_eq!(RequestId::from_value(&json!(1)), Some(RequestId::Int(1)));
        assert_eq!(RequestId::from_value(&json!("a")), Some(RequestId::Str("a".into())));
        for bad in [json!(null), json!(true), json!(1.5), json!({}), json!([])] {
            assert_eq!(RequestId::from_value(&bad), None, "{bad}");
        }
    }

    #[test]
    fn lines_are_compact_and_keep_non_ascii() {
        let result = Rendered::new(&json!({"text": "héllo\nworld"})).unwrap();
        let r = Response { id: Some(RequestId::Int(1)), result: Ok(result) };
        let line = r.to_line();
        assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"héllo\\nworld\"}}");
        assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["result"]["text"], "héllo\nworld");
        let e = Response::error(None, RpcError::parse_error());
        assert_eq!(
            e.to_line(),
            "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}"
        );
        let batch = Message::Batch(vec![r, e]).to_line();
        assert!(batch.starts_with("[{\"jsonrpc\"") && batch.ends_with("\"Parse error\"}}]"), "{batch}");
    }
}
