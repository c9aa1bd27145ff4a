//! The 2026 `_meta` envelope: every modern request carries its protocol version, the
//! client's capabilities, and optionally client info and a log level.

use super::Version;
use crate::jsonrpc::{MODERN_VERSIONS, RpcError, code, envelope_key as key, log_level_rank};
use crate::message::Meta;
use serde_json::{Value, json};

/// What a modern request says about itself (borrowed from its `_meta`).
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope<'a> {
    pub version: Version,
    pub client_capabilities: &'a Value,
    pub log_level: Option<&'a str>,
}

/// The -32602 error of an envelope that lacks required keys.
pub fn missing_keys_error(missing: &[&str]) -> RpcError {
    RpcError::invalid_params(format!("params._meta is missing the required envelope key(s): {}", missing.join(", ")))
}

/// The -32022 error of a version duet does not serve on this path.
pub fn unsupported_version(requested: &Value) -> RpcError {
    let shown = requested.as_str().map_or_else(|| requested.to_string(), str::to_string);
    RpcError::new(code::UNSUPPORTED_PROTOCOL_VERSION, format!("Unsupported protocol version: {shown}"))
        .with_data(json!({"supported": MODERN_VERSIONS, "requested": requested}))
}

/// The two required envelope keys, the requested version and the client's capabilities;
/// otherwise the error that names the missing ones.
pub fn required(meta: &Meta) -> Result<(&Value, &Value), RpcError> {
    match (&meta.protocol_version, &meta.client_capabilities) {
        (Some(version), Some(capabilities)) => Ok((version, capabilities)),
        (version, capabilities) => {
            let missing =
                [(key::PROTOCOL_VERSION, version.is_none()), (key::CLIENT_CAPABILITIES, capabilities.is_none())];
            Err(missing_keys_error(&missing.into_iter().filter_map(|(k, gone)| gone.then_some(k)).collect::<Vec<_>>()))
        }
    }
}

/// Reads and checks the envelope: both required keys, a string version that is a modern
/// revision, and a valid log level when one is given.
pub fn parse(meta: &Meta) -> Result<Envelope<'_>, RpcError> {
    let (requested, client_capabilities) = required(meta)?;
    let Some(version_str) = requested.as_str() else {
        return Err(RpcError::invalid_params(format!("{} must be a string", key::PROTOCOL_VERSION)));
    };
    let version =
        Version::parse(version_str).filter(|v| v.is_modern()).ok_or_else(|| unsupported_version(requested))?;
    if !client_capabilities.is_object() {
        return Err(RpcError::invalid_params(format!("{} must be an object", key::CLIENT_CAPABILITIES)));
    }
    let log_level = match &meta.log_level {
        None | Some(Value::Null) => None,
        Some(Value::String(l)) if log_level_rank(l).is_some() => Some(l.as_str()),
        Some(other) => {
            return Err(RpcError::invalid_params(format!("Invalid log level: {other}")));
        }
    };
    Ok(Envelope { version, client_capabilities, log_level })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(meta: Value) -> Meta {
        serde_json::from_value(meta).unwrap()
    }

    #[test]
    fn checks_in_order() {
        let e = parse(&meta(json!({key::PROTOCOL_VERSION: "2026-07-28"}))).unwrap_err();
        assert_eq!(
            e.message,
            "params._meta is missing the required envelope key(s): io.modelcontextprotocol/clientCapabilities"
        );
        let e = parse(&meta(json!({key::PROTOCOL_VERSION: 5, key::CLIENT_CAPABILITIES: {}}))).unwrap_err();
        assert_eq!(e.code, -32602);
        let e = parse(&meta(json!({key::PROTOCOL_VERSION: "2099-01-01", key::CLIENT_CAPABILITIES: {}}))).unwrap_err();
        assert_eq!((e.code, e.data), (-32022, Some(json!({"supported": ["2026-07-28"], "requested": "2099-01-01"}))));
        let e = parse(&meta(json!({key::PROTOCOL_VERSION: "2025-11-25", key::CLIENT_CAPABILITIES: {}}))).unwrap_err();
        assert_eq!(e.code, -32022);
        let e = parse(&meta(
            json!({key::PROTOCOL_VERSION: "2026-07-28", key::CLIENT_CAPABILITIES: {}, key::LOG_LEVEL: "loud"}),
        ))
        .unwrap_err();
        assert_eq!(e.code, -32602);
        let debug = meta(
            json!({key::PROTOCOL_VERSION: "2026-07-28", key::CLIENT_CAPABILITIES: {"sampling": {}}, key::LOG_LEVEL: "debug"}),
        );
        let ok = parse(&debug).unwrap();
        assert_eq!((ok.version, ok.log_level), (Version::V2026_07_28, Some("debug")));
    }
}
