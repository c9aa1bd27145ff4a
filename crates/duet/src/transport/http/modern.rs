//! The 2026-07-28 checks an HTTP request passes before the engine sees it: which era a
//! POST belongs to, and the ladder of envelope and header checks (first failure wins,
//! answered with HTTP 400 and the request's id).

use crate::jsonrpc::{RpcError, code};
use crate::message::{Incoming, Meta};
use crate::protocol::{Version, envelope};
use base64::Engine as _;
use http::header::AsHeaderName;
use http::{HeaderMap, HeaderName};
use serde_json::{Map, Value};
use std::borrow::Cow;

pub static PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub static METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
pub static NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

/// A header's value, trimmed (`None` when absent or not visible ASCII).
pub fn header<K: AsHeaderName>(headers: &HeaderMap, name: K) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim_ascii)
}

/// A 2026 message: `header_version` (its `MCP-Protocol-Version` header, read) is a modern
/// revision, or its `_meta` carries an envelope key.
pub fn is_modern(message: &Incoming, header_version: Option<Version>) -> bool {
    if header_version.is_some_and(Version::is_modern) {
        return true;
    }
    match message {
        Incoming::Request { meta, .. } | Incoming::Notification { meta, .. } => meta.is_enveloped(),
        _ => false,
    }
}

/// Decodes a header value sent as `=?base64?…?=` (`None` when that base64 is invalid);
/// other values are literal.
pub fn decode_header_value(raw: &str) -> Option<Cow<'_, str>> {
    match raw.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) {
        None => Some(Cow::Borrowed(raw)),
        Some(b64) => {
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64).ok()?).ok().map(Cow::Owned)
        }
    }
}

fn mismatch(message: &str) -> RpcError {
    RpcError::new(code::HEADER_MISMATCH, message)
}

/// The ladder for one 2026 request.
pub fn check(headers: &HeaderMap, method: &str, params: &Map<String, Value>, meta: &Meta) -> Result<(), RpcError> {
    let (version, _) = envelope::required(meta)?;
    let header_version = header(headers, &PROTOCOL_VERSION_HEADER);
    if header_version.is_none() || version.as_str().is_some_and(|v| Some(v) != header_version) {
        return Err(mismatch("MCP-Protocol-Version header does not match the request envelope's protocol version"));
    }
    if header(headers, &METHOD_HEADER) != Some(method) {
        return Err(mismatch("Mcp-Method header does not match the request body's method"));
    }
    let named = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(field) = named
        && let Some(expected) = params.get(field).and_then(Value::as_str)
    {
        let sent = header(headers, &NAME_HEADER).and_then(decode_header_value);
        if sent.as_deref() != Some(expected) {
            return Err(mismatch(&format!("Mcp-Name header does not match the request body's '{field}' parameter")));
        }
    }
    envelope::parse(meta).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::envelope_key as key;
    use crate::message::Message;
    use serde_json::json;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    /// A decoded message: a request (or notification, without `id`) carrying `params`.
    fn message(params: Value, id: Option<i64>) -> Incoming {
        let mut m = json!({"jsonrpc": "2.0", "method": "tools/call", "params": params});
        if let Some(id) = id {
            m["id"] = json!(id);
        }
        let Message::One(one) = Message::from(m) else { panic!("one message") };
        one
    }

    /// The params and meta of a request with an envelope at `version`, and `extra` params.
    fn params(version: Value, extra: Value) -> (Map<String, Value>, Meta) {
        let mut p = json!({"_meta": {key::PROTOCOL_VERSION: version, key::CLIENT_CAPABILITIES: {}}});
        p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let Incoming::Request { params, meta, .. } = message(p, Some(1)) else { panic!("a request") };
        (params, meta)
    }

    fn check_of(h: &HeaderMap, method: &str, (params, meta): &(Map<String, Value>, Meta)) -> Result<(), RpcError> {
        check(h, method, params, meta)
    }

    fn code_of(h: &HeaderMap, method: &str, p: &(Map<String, Value>, Meta)) -> i64 {
        check_of(h, method, p).unwrap_err().code
    }

    #[test]
    fn the_ladder() {
        let ok = headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "echo")]);
        let p = params(json!("2026-07-28"), json!({"name": "echo"}));
        assert!(check_of(&ok, "tools/call", &p).is_ok());
        let no_caps = (Map::new(), serde_json::from_value(json!({key::PROTOCOL_VERSION: "2026-07-28"})).unwrap());
        assert_eq!(code_of(&ok, "tools/call", &no_caps), -32602);
        assert_eq!(code_of(&headers(&[("mcp-method", "tools/call"), ("mcp-name", "echo")]), "tools/call", &p), -32020);
        let wrong_version =
            headers(&[("mcp-protocol-version", "2025-11-25"), ("mcp-method", "tools/call"), ("mcp-name", "echo")]);
        assert_eq!(code_of(&wrong_version, "tools/call", &p), -32020);
        let wrong_method =
            headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "TOOLS/CALL"), ("mcp-name", "echo")]);
        assert_eq!(code_of(&wrong_method, "tools/call", &p), -32020);
        let no_name = headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call")]);
        assert_eq!(code_of(&no_name, "tools/call", &p), -32020);
        let encoded = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?ZWNobw==?="),
        ]);
        assert!(check_of(&encoded, "tools/call", &p).is_ok());
        let bad_b64 = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?***?="),
        ]);
        assert_eq!(code_of(&bad_b64, "tools/call", &p), -32020);
        let future =
            headers(&[("mcp-protocol-version", "v999.0.0"), ("mcp-method", "tools/call"), ("mcp-name", "echo")]);
        let err = check_of(&future, "tools/call", &params(json!("v999.0.0"), json!({"name": "echo"}))).unwrap_err();
        assert_eq!((err.code, err.data.unwrap()["requested"].clone()), (-32022, json!("v999.0.0")));
        let numeric = headers(&[("mcp-protocol-version", "5"), ("mcp-method", "tools/list")]);
        assert_eq!(code_of(&numeric, "tools/list", &params(json!(5), json!({}))), -32602);
    }

    #[test]
    fn era_detection() {
        let (modern, legacy) = (Version::parse("2026-07-28"), Version::parse("2025-11-25"));
        assert!(is_modern(&message(json!({}), Some(1)), modern));
        assert!(!is_modern(&message(json!({}), Some(1)), legacy));
        let enveloped = message(json!({"_meta": {key::CLIENT_CAPABILITIES: {}}}), None);
        assert!(is_modern(&enveloped, None));
        assert!(!is_modern(&message(json!({"_meta": {"progressToken": 1}}), Some(1)), None));
    }
}
