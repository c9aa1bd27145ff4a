//! The era of a message, decided once by one rule for every transport, and the 2026
//! `_meta` envelope a modern request carries: its protocol version, the client's
//! capabilities, and optionally a log level (client info is not kept). The envelope is read
//! once per request into the [`Terms`] the request runs under.
// Its `pub` items are the fuzz targets' (`crate::fuzzing`, feature `fuzzing`); without
// that feature nothing outside the crate reaches them.
#![cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]

use crate::layer::{LogLevel, NO_CAPABILITIES};
use duet_wire::jsonrpc::{RpcError, code};
use duet_wire::key;
use duet_wire::message::Meta;
use duet_wire::{Era, Version};
use serde_json::{Value, json};
use std::sync::Arc;

/// What a request runs under: its protocol version, what its client can do, and the lowest
/// log level the client wants to hear. A 2026-07-28 request carries them in its envelope; a
/// handshake-era session agreed on them at `initialize`.
#[derive(Debug, Clone, PartialEq)]
pub struct Terms {
    /// The protocol revision.
    pub version: Version,
    /// The capabilities the client declared.
    pub client_capabilities: Arc<Value>,
    /// The lowest level of log messages the client wants; `None`: none.
    pub log_level: Option<LogLevel>,
}

/// The era of a message: 2026-07-28 when its `_meta` carries an envelope key (its protocol
/// version or client capabilities), or when the transport declared a modern revision for
/// it (an HTTP request's `MCP-Protocol-Version` header); the handshake era otherwise.
pub fn era_of(meta: &Meta, declared: Option<Version>) -> Era {
    let enveloped = meta.protocol_version.is_some() || meta.client_capabilities.is_some();
    if enveloped || declared.is_some_and(Version::is_modern) { Era::Modern } else { Era::Handshake }
}

/// Why an envelope could not be read. The HTTP ladder answers missing keys before it looks at
/// the headers, and other problems after.
#[derive(Debug, Clone, PartialEq)]
pub enum EnvelopeError {
    /// A key the envelope must carry is absent.
    Missing(RpcError),
    /// A key is there but its value is not one duet takes.
    Invalid(RpcError),
}

impl From<EnvelopeError> for RpcError {
    fn from(error: EnvelopeError) -> Self {
        match error {
            EnvelopeError::Missing(e) | EnvelopeError::Invalid(e) => e,
        }
    }
}

/// The -32602 error of a 2026 request without both required envelope keys.
pub(crate) fn missing_keys(meta: &Meta) -> Option<RpcError> {
    let missing: Vec<&str> = [
        (key::PROTOCOL_VERSION, meta.protocol_version.is_none()),
        (key::CLIENT_CAPABILITIES, meta.client_capabilities.is_none()),
    ]
    .into_iter()
    .filter_map(|(k, gone)| gone.then_some(k))
    .collect();
    (!missing.is_empty()).then(|| {
        RpcError::invalid_params(format!(
            "params._meta is missing the required envelope key(s): {}",
            missing.join(", ")
        ))
    })
}

/// The -32022 error of a version duet does not serve on this path.
pub(crate) fn unsupported_version(requested: &Value) -> RpcError {
    let shown = requested.as_str().map_or_else(|| requested.to_string(), str::to_string);
    RpcError::new(code::UNSUPPORTED_PROTOCOL_VERSION, format!("Unsupported protocol version: {shown}"))
        .with_data(json!({"supported": Version::MODERN, "requested": requested}))
}

/// Reads the envelope of a 2026 request into its terms: both required keys, a string
/// version that is a modern revision, an object of capabilities, and a valid log level when
/// one is given. The capabilities move out of `meta`.
pub fn read(meta: &mut Meta) -> Result<Terms, EnvelopeError> {
    if let Some(missing) = missing_keys(meta) {
        return Err(EnvelopeError::Missing(missing));
    }
    let invalid = |message: String| Err(EnvelopeError::Invalid(RpcError::invalid_params(message)));
    let requested = meta.protocol_version.as_ref().unwrap_or(&Value::Null);
    let Some(name) = requested.as_str() else {
        return invalid(format!("{} must be a string", key::PROTOCOL_VERSION));
    };
    let Some(version) = Version::parse(name).filter(|v| v.is_modern()) else {
        return Err(EnvelopeError::Invalid(unsupported_version(requested)));
    };
    let log_level = match &meta.log_level {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) if LogLevel::parse(name).is_some() => LogLevel::parse(name),
        Some(other) => return invalid(format!("Invalid log level: {other}")),
    };
    match meta.client_capabilities.take() {
        Some(Value::Object(capabilities)) => {
            // A client that declares nothing shares one empty object.
            let client_capabilities =
                if capabilities.is_empty() { NO_CAPABILITIES.clone() } else { Arc::new(Value::Object(capabilities)) };
            Ok(Terms { version, client_capabilities, log_level })
        }
        other => {
            meta.client_capabilities = other;
            invalid(format!("{} must be an object", key::CLIENT_CAPABILITIES))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(meta: Value) -> Meta {
        serde_json::from_value(meta).unwrap()
    }

    fn error(meta_value: Value) -> EnvelopeError {
        read(&mut meta(meta_value)).unwrap_err()
    }

    #[test]
    fn checks_in_order() {
        let EnvelopeError::Missing(e) = error(json!({key::PROTOCOL_VERSION: "2026-07-28"})) else { panic!() };
        assert_eq!(
            e.message,
            "params._meta is missing the required envelope key(s): io.modelcontextprotocol/clientCapabilities"
        );
        let e = RpcError::from(error(json!({key::PROTOCOL_VERSION: 5, key::CLIENT_CAPABILITIES: {}})));
        assert_eq!(e.code, -32602);
        let e = RpcError::from(error(json!({key::PROTOCOL_VERSION: "2099-01-01", key::CLIENT_CAPABILITIES: {}})));
        assert_eq!((e.code, e.data), (-32022, Some(json!({"supported": ["2026-07-28"], "requested": "2099-01-01"}))));
        let e = RpcError::from(error(json!({key::PROTOCOL_VERSION: "2025-11-25", key::CLIENT_CAPABILITIES: {}})));
        assert_eq!(e.code, -32022);
        let loud = json!({key::PROTOCOL_VERSION: "2026-07-28", key::CLIENT_CAPABILITIES: {}, key::LOG_LEVEL: "loud"});
        assert!(matches!(error(loud), EnvelopeError::Invalid(e) if e.code == -32602));
        let not_object = json!({key::PROTOCOL_VERSION: "2026-07-28", key::CLIENT_CAPABILITIES: []});
        assert!(matches!(error(not_object), EnvelopeError::Invalid(e) if e.code == -32602));
        let mut debug = meta(
            json!({key::PROTOCOL_VERSION: "2026-07-28", key::CLIENT_CAPABILITIES: {"sampling": {}}, key::LOG_LEVEL: "debug"}),
        );
        let terms = read(&mut debug).unwrap();
        assert_eq!((terms.version, terms.log_level), (Version::V2026_07_28, Some(LogLevel::Debug)));
        assert_eq!(*terms.client_capabilities, json!({"sampling": {}}));
    }

    #[test]
    fn one_rule_decides_the_era() {
        let plain = meta(json!({"progressToken": 1}));
        assert_eq!(era_of(&plain, None), Era::Handshake);
        assert_eq!(era_of(&plain, Some(Version::V2025_11_25)), Era::Handshake);
        assert_eq!(era_of(&plain, Some(Version::V2026_07_28)), Era::Modern, "the transport declared it");
        // Either envelope key makes a modern message, even alone (and then an invalid one).
        assert_eq!(era_of(&meta(json!({key::CLIENT_CAPABILITIES: {}})), None), Era::Modern);
        assert_eq!(era_of(&meta(json!({key::PROTOCOL_VERSION: "2026-07-28"})), None), Era::Modern);
    }
}
