//! JSON-RPC 2.0 as MCP uses it: the protocol constants of both eras, request ids, error
//! objects, responses and their compact single-line encoding. Decoding what a client sends
//! is [`crate::message`]'s.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

/// Where messages the server sends unprompted go (a stdout writer, an SSE stream, an outbox).
/// Called from any thread; must not block.
pub type Sink = Arc<dyn Fn(Value) + Send + Sync>;

/// Revisions negotiated with `initialize` (the handshake era), oldest first.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// Revisions carried per request in the `_meta` envelope (the stateless era).
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];
/// Every revision duet speaks, oldest first.
pub const SUPPORTED_VERSIONS: [&str; 5] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];
/// Handshake revisions that allow JSON-RPC batches.
pub const BATCH_VERSIONS: [&str; 2] = ["2024-11-05", "2025-03-26"];
/// The version assumed for an HTTP request without `MCP-Protocol-Version`.
pub const DEFAULT_HTTP_VERSION: &str = "2025-03-26";
/// The version `initialize` answers when the client asks for one duet does not speak.
pub const LATEST_HANDSHAKE_VERSION: &str = "2025-11-25";
/// Methods whose 2026 results carry `ttlMs` and `cacheScope`.
pub const CACHEABLE_METHODS: [&str; 6] =
    ["tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read", "server/discover"];

/// Keys of the 2026 `_meta` envelope.
pub mod envelope_key {
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
}

/// JSON-RPC and MCP error codes.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Resource not found, handshake era only.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// An HTTP header does not match the body (2026).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability it did not declare (2026).
    pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
    /// The requested protocol version is not supported (2026).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// The RFC 5424 levels of `notifications/message`, least severe first.
pub const LOG_LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/// A request id: a string or an integer, never null, a boolean or a float.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Int(i64),
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
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn parse_error() -> Self {
        Self::new(code::PARSE_ERROR, "Parse error")
    }

    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_REQUEST, message)
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(code::METHOD_NOT_FOUND, "Method not found").with_data(Value::from(method))
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }

    pub fn internal() -> Self {
        Self::new(code::INTERNAL_ERROR, "Internal error")
    }
}

/// A successful result: a JSON value, or JSON text rendered straight from typed data (a
/// tool result) or once for many responses (a cached list page).
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Value(Value),
    Rendered(Rendered),
}

impl Output {
    /// The result as a JSON value (rendered text is parsed back).
    pub fn into_value(self) -> Value {
        match self {
            Output::Value(value) => value,
            Output::Rendered(text) => serde_json::from_str(text.as_str()).unwrap_or(Value::Null),
        }
    }
}

impl From<Value> for Output {
    fn from(value: Value) -> Self {
        Output::Value(value)
    }
}

/// The compact JSON text of one value, cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered(Arc<str>);

impl Rendered {
    /// Renders `value`; fails only for data JSON cannot hold (a map with non-string keys).
    pub fn new(value: &impl Serialize) -> Result<Self, serde_json::Error> {
        Ok(Rendered(serde_json::to_string(value)?.into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&Value> for Rendered {
    fn from(value: &Value) -> Self {
        Rendered(encode(value).into())
    }
}

/// One response: the id it answers (null when the request could not be read) and its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub id: Option<RequestId>,
    pub outcome: Result<Output, RpcError>,
}

impl Response {
    pub fn result(id: RequestId, result: impl Into<Output>) -> Self {
        Response { id: Some(id), outcome: Ok(result.into()) }
    }

    pub fn error(id: Option<RequestId>, error: RpcError) -> Self {
        Response { id, outcome: Err(error) }
    }

    /// The outcome with the result as a JSON value.
    pub fn into_result(self) -> Result<Value, RpcError> {
        self.outcome.map(Output::into_value)
    }

    pub fn error_code(&self) -> Option<i64> {
        self.outcome.as_ref().err().map(|e| e.code)
    }

    /// Compact single-line JSON.
    pub fn to_line(&self) -> String {
        let mut out = Vec::with_capacity(self.line_capacity());
        self.write_line(&mut out);
        // serde_json writes UTF-8 only.
        String::from_utf8(out).unwrap_or_default()
    }

    /// Room for the line: enough for a rendered result and an id of up to 15 characters (no
    /// growing), a guess for the rest.
    pub(crate) fn line_capacity(&self) -> usize {
        const FRAME: usize = 48;
        match &self.outcome {
            Ok(Output::Rendered(text)) => FRAME + text.as_str().len(),
            _ => 160,
        }
    }

    /// Appends the compact single-line JSON of this response to `out`.
    pub fn write_line(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        // Serializing ids, values and error objects cannot fail: keys are strings and
        // numbers finite.
        let _ = serde_json::to_writer(&mut *out, &self.id);
        let _ = match &self.outcome {
            Ok(Output::Value(result)) => {
                out.extend_from_slice(b",\"result\":");
                serde_json::to_writer(&mut *out, result)
            }
            Ok(Output::Rendered(text)) => {
                out.extend_from_slice(b",\"result\":");
                out.extend_from_slice(text.as_str().as_bytes());
                Ok(())
            }
            Err(error) => {
                out.extend_from_slice(b",\"error\":");
                serde_json::to_writer(&mut *out, error)
            }
        };
        out.push(b'}');
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

/// The rank of a log level (0 = debug), or `None` when it is not one of [`LOG_LEVELS`].
pub fn log_level_rank(level: &str) -> Option<usize> {
    LOG_LEVELS.iter().position(|l| *l == level)
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let r = Response::result(RequestId::Int(1), json!({"text": "héllo\nworld"}));
        let line = r.to_line();
        assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"héllo\\nworld\"}}");
        assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["result"]["text"], "héllo\nworld");
        let e = Response::error(None, RpcError::parse_error());
        assert_eq!(
            e.to_line(),
            "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}"
        );
    }
}
