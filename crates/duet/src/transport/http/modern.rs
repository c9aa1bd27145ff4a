//! The 2026-07-28 checks an HTTP request passes before the engine sees it: which era a
//! POST's message belongs to, and the ladder of envelope and header checks (first failure
//! wins, answered with HTTP 400 and the request's id), which reads the request's envelope
//! into the terms it runs under, then the `Mcp-Param-*` headers that mirror a tool's
//! arguments.

use super::service::header;
use crate::layer::mirrored::MirroredArg;
use crate::protocol::envelope::{self, EnvelopeError, Terms};
use crate::protocol::{Era, Version};
use crate::wire::canonical_uri::canonicalize;
use crate::wire::jsonrpc::{RpcError, code};
use crate::wire::message::{Incoming, Notification, Request};
use crate::wire::method::Primitive;
use base64::Engine as _;
use http::{HeaderMap, HeaderName};
use serde_json::Value;
use std::borrow::Cow;

pub(crate) static PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(crate) static METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
pub(crate) static NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

/// Whether one message of a POST is a 2026 message: the engine's one rule
/// ([`envelope::era_of`]) with the revision the `MCP-Protocol-Version` header declares.
pub(crate) fn is_modern(message: &Incoming, declared: Option<Version>) -> bool {
    match message {
        Incoming::Request(Request { meta, .. }) | Incoming::Notification(Notification { meta, .. }) => {
            envelope::era_of(meta, declared) == Era::Modern
        }
        _ => declared.is_some_and(Version::is_modern),
    }
}

/// The `Mcp-Name` header as the client meant it: decoded when it was sent as `=?base64?…?=`
/// (`None` when absent or that base64 is invalid; a repeated header is its lines joined, so
/// it names nothing the body does).
pub(crate) fn sent_name(headers: &HeaderMap) -> Option<Cow<'_, str>> {
    match header(headers, &NAME_HEADER)? {
        Cow::Borrowed(raw) => decode_header_value(raw),
        Cow::Owned(raw) => decode_header_value(&raw).map(|name| Cow::Owned(name.into_owned())),
    }
}

/// Decodes a header value sent as `=?base64?…?=` (`None` when that base64 is invalid);
/// other values are literal.
fn decode_header_value(raw: &str) -> Option<Cow<'_, str>> {
    match raw.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) {
        None => Some(Cow::Borrowed(raw)),
        Some(b64) => {
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64).ok()?).ok().map(Cow::Owned)
        }
    }
}

/// Whether the `Mcp-Name` header names what the body does: a resource URI (which decoding
/// made canonical in the body) in any spelling of it, anything else exactly.
fn names_the_same(kind: Primitive, sent: Option<&str>, expected: &str) -> bool {
    match sent {
        Some(sent) if kind == Primitive::Resource => canonicalize(sent).is_ok_and(|sent| sent == expected),
        sent => sent == Some(expected),
    }
}

fn mismatch(message: &str) -> RpcError {
    RpcError::new(code::HEADER_MISMATCH, message)
}

/// The ladder for one 2026 request: the envelope's required keys, `MCP-Protocol-Version`
/// (`header_version`, as the POST read it), `Mcp-Method`, `Mcp-Name` (for a method whose
/// table row names a primitive), then the rest of the envelope. Returns the terms the
/// envelope carries.
pub(crate) fn check(
    headers: &HeaderMap,
    header_version: Option<&str>,
    request: &mut Request,
) -> Result<Terms, RpcError> {
    let terms = envelope::read(&mut request.meta);
    if let Err(EnvelopeError::Missing(error)) = terms {
        return Err(error);
    }
    let body_version = request.meta.protocol_version.as_ref().and_then(Value::as_str);
    if header_version.is_none() || body_version.is_some_and(|v| Some(v) != header_version) {
        return Err(mismatch("MCP-Protocol-Version header does not match the request envelope's protocol version"));
    }
    if header(headers, &METHOD_HEADER).as_deref() != Some(request.method.as_str()) {
        return Err(mismatch("Mcp-Method header does not match the request body's method"));
    }
    let named = request.method.traits().target.filter(|_| request.method.served_in(true));
    if let Some(kind) = named
        && let Some(expected) = request.params.get(kind.param()).and_then(Value::as_str)
        && !names_the_same(kind, sent_name(headers).as_deref(), expected)
    {
        let field = kind.param();
        return Err(mismatch(&format!("Mcp-Name header does not match the request body's '{field}' parameter")));
    }
    Ok(terms?)
}

/// The last rung, for a `tools/call`: each argument its tool mirrors (`args`) is sent in
/// its `Mcp-Param-{Name}` header, once, in visible ASCII (plain, or `=?base64?…?=` for what
/// plain text cannot carry), and says what the arguments say: the same string, the same
/// number, `true` or `false`. An argument that is absent or `null` has no header.
pub(crate) fn check_mirrored(headers: &HeaderMap, request: &Request, args: &[MirroredArg]) -> Result<(), RpcError> {
    let arguments = request.params.get("arguments").unwrap_or(&Value::Null);
    for arg in args {
        let header = format!("Mcp-Param-{}", arg.header);
        let argument = arg.argument();
        let mut lines = headers.get_all(header.as_str()).into_iter();
        let sent = match (lines.next(), lines.next()) {
            (None, _) => None,
            (Some(line), None) => Some(line),
            (Some(_), Some(_)) => return Err(mismatch(&format!("{header} header is sent more than once"))),
        };
        let value = arg.value_in(arguments);
        let (sent, value) = match (sent, value) {
            (None, None) => continue,
            (None, Some(_)) => {
                return Err(mismatch(&format!(
                    "{header} header is missing: it must mirror the request body's '{argument}' argument"
                )));
            }
            (Some(_), None) => {
                return Err(mismatch(&format!(
                    "{header} header is sent but the request body's '{argument}' argument has no value"
                )));
            }
            (Some(sent), Some(value)) => (sent, value),
        };
        let Ok(raw) = sent.to_str() else {
            return Err(mismatch(&format!("{header} header holds characters a header value may not carry")));
        };
        let Some(text) = decode_header_value(raw.trim_ascii()) else {
            return Err(mismatch(&format!("{header} header is not valid base64 between =?base64? and ?=")));
        };
        let agrees = match value {
            Value::String(s) => *s == text,
            Value::Bool(b) => text == if *b { "true" } else { "false" },
            // Compared as numbers: `42.0` mirrors 42.
            _ => text.parse::<f64>().ok().is_some_and(|h| h.is_finite() && Some(h) == value.as_f64()),
        };
        if !agrees {
            return Err(mismatch(&format!("{header} header does not match the request body's '{argument}' argument")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::key;
    use crate::wire::message::Message;
    use serde_json::json;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    /// A decoded message of `method`: a request (or notification, without `id`) carrying
    /// `params`.
    fn message(method: &str, params: Value, id: Option<i64>) -> Incoming {
        let mut m = json!({"jsonrpc": "2.0", "method": method, "params": params});
        if let Some(id) = id {
            m["id"] = json!(id);
        }
        let Message::One(one) = Message::from(m) else { panic!("one message") };
        one
    }

    /// A request of `method` with an envelope at `version`, and `extra` params.
    fn request(method: &str, version: Value, extra: Value) -> Request {
        let mut p = json!({"_meta": {key::PROTOCOL_VERSION: version, key::CLIENT_CAPABILITIES: {}}});
        p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let Incoming::Request(request) = message(method, p, Some(1)) else { panic!("a request") };
        request
    }

    fn check_of(h: &HeaderMap, request: &Request) -> Result<Terms, RpcError> {
        check(h, header(h, &PROTOCOL_VERSION_HEADER).as_deref(), &mut request.clone())
    }

    fn code_of(h: &HeaderMap, request: &Request) -> i64 {
        check_of(h, request).unwrap_err().code
    }

    #[test]
    fn the_ladder() {
        let ok = headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "echo")]);
        let p = request("tools/call", json!("2026-07-28"), json!({"name": "echo"}));
        let terms = check_of(&ok, &p).unwrap();
        assert_eq!((terms.version, &*terms.client_capabilities), (Version::V2026_07_28, &json!({})));
        let Incoming::Request(no_caps) =
            message("tools/call", json!({"name": "echo", "_meta": {key::PROTOCOL_VERSION: "2026-07-28"}}), Some(1))
        else {
            panic!()
        };
        assert_eq!(code_of(&ok, &no_caps), -32602);
        assert_eq!(code_of(&headers(&[("mcp-method", "tools/call"), ("mcp-name", "echo")]), &p), -32020);
        let wrong_version =
            headers(&[("mcp-protocol-version", "2025-11-25"), ("mcp-method", "tools/call"), ("mcp-name", "echo")]);
        assert_eq!(code_of(&wrong_version, &p), -32020);
        let wrong_method =
            headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "TOOLS/CALL"), ("mcp-name", "echo")]);
        assert_eq!(code_of(&wrong_method, &p), -32020);
        let no_name = headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call")]);
        assert_eq!(code_of(&no_name, &p), -32020);
        let encoded = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?ZWNobw==?="),
        ]);
        assert!(check_of(&encoded, &p).is_ok());
        let bad_b64 = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?***?="),
        ]);
        assert_eq!(code_of(&bad_b64, &p), -32020);
        let future =
            headers(&[("mcp-protocol-version", "v999.0.0"), ("mcp-method", "tools/call"), ("mcp-name", "echo")]);
        let err = check_of(&future, &request("tools/call", json!("v999.0.0"), json!({"name": "echo"}))).unwrap_err();
        assert_eq!((err.code, err.data.unwrap()["requested"].clone()), (-32022, json!("v999.0.0")));
        let numeric = headers(&[("mcp-protocol-version", "5"), ("mcp-method", "tools/list")]);
        assert_eq!(code_of(&numeric, &request("tools/list", json!(5), json!({}))), -32602);
        // A method of the handshake era alone names no primitive on this path.
        let subscribe = headers(&[("mcp-protocol-version", "2026-07-28"), ("mcp-method", "resources/subscribe")]);
        assert!(
            check_of(&subscribe, &request("resources/subscribe", json!("2026-07-28"), json!({"uri": "test://x"})))
                .is_ok()
        );
    }

    #[test]
    fn era_detection() {
        let (modern, legacy) = (Version::parse("2026-07-28"), Version::parse("2025-11-25"));
        assert!(is_modern(&message("tools/call", json!({}), Some(1)), modern));
        assert!(!is_modern(&message("tools/call", json!({}), Some(1)), legacy));
        let enveloped = message("tools/call", json!({"_meta": {key::CLIENT_CAPABILITIES: {}}}), None);
        assert!(is_modern(&enveloped, None));
        assert!(!is_modern(&message("tools/call", json!({"_meta": {"progressToken": 1}}), Some(1)), None));
    }
}
