//! Multi round-trip requests: a handler asks the client for input (a confirmation, a
//! missing field, an LLM completion, the roots) and reads the answers on its next run.
//! On 2026-07-28 the engine answers `input_required` with sealed state and the client
//! retries; on the handshake era it sends real server-to-client requests and re-runs the
//! handler itself. This module holds what both need: the state seal, the capability rule,
//! and the at-most-once helper for side effects.

pub mod idempotency;
pub(crate) mod seal;

use duet_wire::jsonrpc::{RpcError, code};
use duet_wire::method::Method;
use serde_json::{Map, Value, json};

/// The error of a request that needs the client capabilities `required` (as
/// `missing_capabilities` gives them): -32021 on 2026-07-28 (`modern`), which defines it;
/// -32602 on the handshake era, which does not.
pub(crate) fn missing_capability_error(required: Value, modern: bool) -> RpcError {
    let names: Vec<&str> = required.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
    let code = if modern { code::MISSING_CLIENT_CAPABILITY } else { code::INVALID_PARAMS };
    RpcError::new(
        code,
        format!("this request needs client capabilities the client did not declare: {}", names.join(", ")),
    )
    .with_data(json!({ "requiredCapabilities": required }))
}

/// The client capabilities that `requests` need but `declared` lacks, as a
/// `ClientCapabilities` object (`None` when nothing is missing).
pub fn missing_capabilities(requests: &Map<String, Value>, declared: &Value) -> Option<Value> {
    let mut missing = Map::new();
    for request in requests.values() {
        let params = request.get("params");
        match request.get("method").and_then(Value::as_str).map(Method::parse) {
            Some(Method::ElicitationCreate) => {
                let url_mode = params.and_then(|p| p.get("mode")).and_then(Value::as_str) == Some("url");
                let elicitation = declared.get("elicitation").and_then(Value::as_object);
                let ok = match (elicitation, url_mode) {
                    (None, _) => false,
                    (Some(e), true) => e.contains_key("url"),
                    (Some(e), false) => e.is_empty() || e.contains_key("form"),
                };
                if !ok {
                    missing.insert("elicitation".into(), if url_mode { json!({"url": {}}) } else { json!({}) });
                }
            }
            Some(Method::SamplingCreateMessage) if declared.get("sampling").is_none() => {
                missing.insert("sampling".into(), json!({}));
            }
            Some(Method::RootsList) if declared.get("roots").is_none() => {
                missing.insert("roots".into(), json!({}));
            }
            _ => {}
        }
    }
    (!missing.is_empty()).then_some(Value::Object(missing))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requests(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn capability_rule() {
        let form = requests(json!({"c": {"method": "elicitation/create", "params": {"message": "ok?"}}}));
        let url = requests(
            json!({"c": {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x"}}}),
        );
        assert_eq!(missing_capabilities(&form, &json!({"elicitation": {}})), None);
        assert_eq!(missing_capabilities(&form, &json!({"elicitation": {"url": {}}})), Some(json!({"elicitation": {}})));
        assert_eq!(missing_capabilities(&url, &json!({"elicitation": {}})), Some(json!({"elicitation": {"url": {}}})));
        assert_eq!(missing_capabilities(&url, &json!({"elicitation": {"url": {}}})), None);
        let both =
            requests(json!({"s": {"method": "sampling/createMessage", "params": {}}, "r": {"method": "roots/list"}}));
        assert_eq!(missing_capabilities(&both, &json!({})), Some(json!({"sampling": {}, "roots": {}})));
        assert_eq!(missing_capabilities(&both, &json!({"sampling": {}, "roots": {}})), None);
    }
}
