//! Admission: the rules a message passes before the engine runs it, written once for every
//! transport. The era of a message (its envelope, or the revision the transport declared
//! for it); a batch, which 2026-07-28 does not have; and the 2026 ladder, which reads a
//! request's envelope into the terms it runs under and, on a transport whose requests carry
//! headers that mirror the body (Streamable HTTP), compares each with the body, first
//! failure wins. stdio has no such headers: its requests climb the same ladder on their
//! envelope alone.

use super::envelope::{self, EnvelopeError, Terms};
use super::mirrored::MirroredByTool;
use crate::layer::{Layer, Principal};
use duet_wire::canonical_uri::canonicalize;
use duet_wire::jsonrpc::{RpcError, code};
use duet_wire::message::{Incoming, Notification, Request};
use duet_wire::method::Primitive;
use duet_wire::{Era, Version, headers};
use serde_json::Value;
use std::borrow::Cow;

/// What a transport saw beside a request's body (Streamable HTTP: its headers), read when
/// the engine asks: each a header that may appear once, its lines joined.
pub(crate) trait Hints: Sync {
    /// `MCP-Protocol-Version`.
    fn version(&self) -> Option<Cow<'_, str>>;
    /// `Mcp-Method`.
    fn method(&self) -> Option<Cow<'_, str>>;
    /// `Mcp-Name`, as sent (still in its `=?base64?…?=` spelling, if it came so).
    fn name(&self) -> Option<Cow<'_, str>>;
    /// The header that mirrors one argument (`Mcp-Param-{name}`).
    fn param(&self, header: &str) -> Param<'_>;
    /// The handshake-era session the request names (`Mcp-Session-Id`).
    #[cfg_attr(not(feature = "http"), expect(dead_code, reason = "only the HTTP transport names sessions"))]
    fn session(&self) -> Option<Cow<'_, str>>;
}

/// How an argument's header was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "http"), expect(dead_code, reason = "only the HTTP transport has headers"))]
pub(crate) enum Param<'a> {
    Absent,
    /// More than once.
    Repeated,
    /// With bytes a header value may not carry.
    Unreadable,
    Sent(&'a str),
}

/// The era of one message: the engine's one rule ([`envelope::era_of`]) with the revision
/// its transport declared for it (an HTTP request's `MCP-Protocol-Version`). A message with
/// no envelope of its own (a response, an invalid message) is of the declared era.
pub(crate) fn era_of(message: &Incoming, declared: Option<Version>) -> Era {
    match message {
        Incoming::Request(Request { meta, .. }) | Incoming::Notification(Notification { meta, .. }) => {
            envelope::era_of(meta, declared)
        }
        _ if declared.is_some_and(Version::is_modern) => Era::Modern,
        _ => Era::Handshake,
    }
}

/// The era rule for a batch: 2026-07-28 has none, so a batch that holds a 2026 message is
/// refused whole, whatever its other messages are and whatever the session agreed.
pub(crate) fn batch(items: &[Incoming], declared: Option<Version>) -> Option<RpcError> {
    items.iter().any(|item| era_of(item, declared) == Era::Modern).then(|| {
        let modern = Version::MODERN[0];
        RpcError::invalid_request(format!("JSON-RPC batches are not supported by protocol version {modern}"))
    })
}

/// The ladder for one 2026 request: the envelope's required keys; then, when the transport
/// has `hints`, `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` (for a method whose table
/// row names a primitive); the rest of the envelope; last, for a `tools/call`, each argument
/// its tool mirrors (as `principal` sees the tool). Returns the terms the envelope carries.
pub(crate) fn modern(
    mirrored: &MirroredByTool,
    layer: &dyn Layer,
    principal: &Principal,
    request: &mut Request,
    hints: Option<&dyn Hints>,
) -> Result<Terms, RpcError> {
    let terms = envelope::read(&mut request.meta);
    if let Err(EnvelopeError::Missing(error)) = terms {
        return Err(error);
    }
    let Some(hints) = hints else { return Ok(terms?) };
    check_headers(hints, request)?;
    let terms = terms?;
    let args = mirrored.of_call(request, layer, principal);
    check_mirrored(hints, request, &args)?;
    Ok(terms)
}

fn mismatch(message: &str) -> RpcError {
    RpcError::new(code::HEADER_MISMATCH, message)
}

/// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` against the body.
fn check_headers(hints: &dyn Hints, request: &Request) -> Result<(), RpcError> {
    let header_version = hints.version();
    let body_version = request.meta.protocol_version.as_ref().and_then(Value::as_str);
    if header_version.is_none() || body_version.is_some_and(|v| Some(v) != header_version.as_deref()) {
        return Err(mismatch("MCP-Protocol-Version header does not match the request envelope's protocol version"));
    }
    if hints.method().as_deref() != Some(request.method.as_str()) {
        return Err(mismatch("Mcp-Method header does not match the request body's method"));
    }
    let named = request.method.traits().target.filter(|_| request.method.served_in(true));
    if let Some(kind) = named
        && let Some(expected) = request.params.get(kind.param()).and_then(Value::as_str)
        && !names_the_same(kind, hints.name().as_deref().and_then(headers::decode).as_deref(), expected)
    {
        let field = kind.param();
        return Err(mismatch(&format!("Mcp-Name header does not match the request body's '{field}' parameter")));
    }
    Ok(())
}

/// Whether the `Mcp-Name` header names what the body does: a resource URI (which decoding
/// made canonical in the body) in any spelling of it, anything else exactly.
fn names_the_same(kind: Primitive, sent: Option<&str>, expected: &str) -> bool {
    match sent {
        Some(sent) if kind == Primitive::Resource => canonicalize(sent).is_ok_and(|sent| sent == expected),
        sent => sent == Some(expected),
    }
}

/// The last rung, for a `tools/call`: each argument its tool mirrors (`args`) is sent in
/// its `Mcp-Param-{Name}` header, once, in visible ASCII (plain, or `=?base64?…?=` for what
/// plain text cannot carry), and says what the arguments say: the same string, the same
/// number, `true` or `false`. An argument that is absent or `null` has no header.
fn check_mirrored(
    hints: &dyn Hints,
    request: &Request,
    args: &[duet_wire::mirrored::MirroredArg],
) -> Result<(), RpcError> {
    let arguments = request.params.get("arguments").unwrap_or(&Value::Null);
    for arg in args {
        let header = format!("{}{}", headers::PARAM_PREFIX, arg.header);
        let argument = arg.argument();
        let sent = match hints.param(&header) {
            Param::Absent => None,
            Param::Repeated => return Err(mismatch(&format!("{header} header is sent more than once"))),
            Param::Unreadable => Some(None),
            Param::Sent(raw) => Some(Some(raw)),
        };
        let (raw, value) = match (sent, arg.value_in(arguments)) {
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
            (Some(raw), Some(value)) => (raw, value),
        };
        let Some(raw) = raw else {
            return Err(mismatch(&format!("{header} header holds characters a header value may not carry")));
        };
        let Some(text) = headers::decode(raw.trim_ascii()) else {
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
    use crate::layer::{Registry, ServerInfo};
    use crate::protocol::Server;
    use duet_wire::key;
    use duet_wire::message::Message;
    use serde_json::json;
    use std::sync::Arc;

    /// Headers as a transport read them: a name may repeat.
    struct Headers(Vec<(&'static str, &'static str)>);

    impl Headers {
        fn one(&self, name: &str) -> Option<Cow<'_, str>> {
            let lines: Vec<&str> =
                self.0.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| *v).collect();
            (!lines.is_empty()).then(|| Cow::Owned(lines.join(", ")))
        }
    }

    impl Hints for Headers {
        fn version(&self) -> Option<Cow<'_, str>> {
            self.one("mcp-protocol-version")
        }
        fn method(&self) -> Option<Cow<'_, str>> {
            self.one("mcp-method")
        }
        fn name(&self) -> Option<Cow<'_, str>> {
            self.one("mcp-name")
        }
        fn param(&self, header: &str) -> Param<'_> {
            let mut lines = self.0.iter().filter(|(k, _)| k.eq_ignore_ascii_case(header));
            match (lines.next(), lines.next()) {
                (None, _) => Param::Absent,
                (Some((_, v)), None) => Param::Sent(v),
                _ => Param::Repeated,
            }
        }
        fn session(&self) -> Option<Cow<'_, str>> {
            self.one("mcp-session-id")
        }
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> Headers {
        Headers(pairs.to_vec())
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

    fn check_of(h: &Headers, request: &Request) -> Result<Terms, RpcError> {
        let server = Server::new(Arc::new(Registry::new(ServerInfo::new("t", "1"))), Default::default());
        server.admit_modern(&Principal::anonymous(), &mut request.clone(), Some(h))
    }

    fn code_of(h: &Headers, request: &Request) -> i64 {
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

    fn modern_of(message: &Incoming, declared: Option<Version>) -> bool {
        era_of(message, declared) == Era::Modern
    }

    #[test]
    fn era_detection() {
        let (modern, legacy) = (Version::parse("2026-07-28"), Version::parse("2025-11-25"));
        assert!(modern_of(&message("tools/call", json!({}), Some(1)), modern));
        assert!(!modern_of(&message("tools/call", json!({}), Some(1)), legacy));
        let enveloped = message("tools/call", json!({"_meta": {key::CLIENT_CAPABILITIES: {}}}), None);
        assert!(modern_of(&enveloped, None));
        assert!(!modern_of(&message("tools/call", json!({"_meta": {"progressToken": 1}}), Some(1)), None));
    }

    #[test]
    fn a_batch_that_holds_a_2026_message_is_refused_whole() {
        let handshake = message("ping", json!({}), Some(1));
        let enveloped = message("tools/list", json!({"_meta": {key::PROTOCOL_VERSION: "2026-07-28"}}), Some(2));
        assert_eq!(batch(std::slice::from_ref(&handshake), None), None);
        let refused = batch(&[handshake.clone(), enveloped], None).unwrap();
        assert_eq!(
            (refused.code, refused.message.as_str()),
            (-32600, "JSON-RPC batches are not supported by protocol version 2026-07-28")
        );
        assert!(batch(&[handshake], Version::parse("2026-07-28")).is_some(), "the declared revision counts");
    }

    #[test]
    fn without_headers_the_ladder_reads_the_envelope_alone() {
        let server = Server::new(Arc::new(Registry::new(ServerInfo::new("t", "1"))), Default::default());
        let mut p = request("tools/call", json!("2026-07-28"), json!({"name": "echo"}));
        let terms = server.admit_modern(&Principal::anonymous(), &mut p, None).unwrap();
        assert_eq!(terms.version, Version::V2026_07_28);
        let mut future = request("tools/call", json!("v999.0.0"), json!({"name": "echo"}));
        assert_eq!(server.admit_modern(&Principal::anonymous(), &mut future, None).unwrap_err().code, -32022);
    }
}
