//! `initialize` and `logging/setLevel`: the handshake era's session setup.

use super::Call;
use crate::jsonrpc::{LATEST_HANDSHAKE_VERSION, RpcError, log_level_rank};
use crate::protocol::{Era, Version};
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub(super) fn initialize(call: &Call<'_>) -> Result<Value, RpcError> {
    let Some(Value::String(requested)) = call.params.get("protocolVersion") else {
        return Err(RpcError::invalid_params("Missing or invalid parameter: protocolVersion"));
    };
    let version = Version::parse(requested)
        .filter(|v| !v.is_modern())
        .or_else(|| Version::parse(LATEST_HANDSHAKE_VERSION))
        .unwrap_or(Version::V2025_11_25);
    {
        let mut state = call.session.state();
        if state.init_responded {
            return Err(RpcError::invalid_request("Session already initialized"));
        }
        state.era = Some(Era::Handshake);
        state.version = Some(version);
        state.init_responded = true;
        state.client_capabilities = Arc::new(match call.params.get("capabilities") {
            Some(caps @ Value::Object(_)) => caps.clone(),
            _ => json!({}),
        });
    }
    let server = call.server();
    let mut result = json!({
        "protocolVersion": version.as_str(),
        "capabilities": server.capabilities(version),
        "serverInfo": server.info(),
    });
    if let Some(instructions) = &server.info().instructions {
        result["instructions"] = Value::from(instructions.as_str());
    }
    Ok(result)
}

pub(super) fn set_level(call: &Call<'_>) -> Result<Value, RpcError> {
    let level = call.params.get("level");
    let Some(rank) = level.and_then(Value::as_str).and_then(log_level_rank) else {
        let shown = level.map_or_else(|| "missing".to_string(), |l| l.to_string().replace('"', "'"));
        return Err(RpcError::invalid_params(format!("Invalid log level: {shown}")));
    };
    call.session.state().log_threshold = rank;
    Ok(Value::Object(Map::new()))
}
