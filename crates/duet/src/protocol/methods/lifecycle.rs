//! Session setup: `initialize` and `logging/setLevel` on the handshake era, `server/discover`
//! on 2026-07-28, and the capabilities both declare.

use super::Call;
use crate::layer::{LogLevel, ServerInfo, TaskSupport, skill};
use crate::protocol::render::Empty;
use crate::protocol::tasks;
use crate::protocol::{Era, Version};
use duet_wire::jsonrpc::{Rendered, RpcError};
use duet_wire::params::{InitializeParams, SetLevelParams, decode};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// What duet declares it can do, to a client of one version.
#[derive(Serialize)]
struct Capabilities {
    tools: ListChanged,
    resources: Resources,
    prompts: ListChanged,
    logging: Empty,
    #[serde(skip_serializing_if = "Option::is_none")]
    completions: Option<Empty>,
    /// 2025-11-25's experimental tasks: listed, cancelled, and `tools/call` as a task.
    #[serde(skip_serializing_if = "Option::is_none")]
    tasks: Option<Value>,
    /// The extensions served (SEP-2133), by identifier.
    #[serde(skip_serializing_if = "Map::is_empty")]
    extensions: Map<String, Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListChanged {
    list_changed: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Resources {
    subscribe: bool,
    list_changed: bool,
}

impl Capabilities {
    /// What duet declares to `call`'s client at version `v`.
    fn of(call: &Call<'_>, v: Version) -> Self {
        let mut extensions = Map::new();
        if call.shared.layer.skills(&call.principal).is_some() {
            // Every folder of the skills is listed (see `directories.rs`).
            extensions.insert(skill::EXTENSION.into(), json!({"directoryRead": true}));
        }
        // Tasks when some tool this client sees may run as one: in 2025-11-25's core
        // (`tasks` below), as an extension on 2026-07-28.
        let tools = call.shared.layer.tools(&call.principal);
        let runs_tasks = tools.iter().any(|t| t.task_support() != TaskSupport::Forbidden);
        if runs_tasks && v.is_modern() {
            extensions.insert(tasks::EXTENSION.into(), json!({}));
        }
        Capabilities {
            tools: ListChanged { list_changed: true },
            resources: Resources { subscribe: true, list_changed: true },
            prompts: ListChanged { list_changed: true },
            logging: Empty {},
            completions: v.has_completions_capability().then_some(Empty {}),
            tasks: (runs_tasks && v.has_core_tasks())
                .then(|| json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})),
            extensions,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult<'a> {
    protocol_version: Version,
    capabilities: Capabilities,
    server_info: &'a ServerInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DiscoverResult<'a> {
    supported_versions: [Version; 5],
    capabilities: Capabilities,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
}

pub(super) fn initialize(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let InitializeParams { protocol_version: requested, capabilities, .. } = decode(params)?;
    let version = Version::parse(&requested).filter(|v| !v.is_modern()).unwrap_or(Version::LATEST_HANDSHAKE);
    if let Some(session) = call.session {
        let mut state = session.state();
        if state.init_responded {
            return Err(RpcError::invalid_request("Session already initialized"));
        }
        state.era = Some(Era::Handshake);
        state.version = Some(version);
        state.init_responded = true;
        state.client_capabilities = Arc::new(Value::Object(capabilities.unwrap_or_default()));
    }
    let info = &call.shared.info;
    let result = InitializeResult {
        protocol_version: version,
        capabilities: Capabilities::of(call, version),
        server_info: info,
        instructions: info.instructions.as_deref(),
    };
    call.complete(result, None)
}

pub(super) fn discover(call: &Call<'_>) -> Result<Rendered, RpcError> {
    let result = DiscoverResult {
        supported_versions: Version::ALL,
        capabilities: Capabilities::of(call, Version::V2026_07_28),
        instructions: call.shared.info.instructions.as_deref(),
    };
    call.complete(result, None)
}

pub(super) fn set_level(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let SetLevelParams { level } = decode(params)?;
    let Some(level) = LogLevel::parse(&level) else {
        return Err(RpcError::invalid_params(SetLevelParams::refusal(&Value::String(level))));
    };
    if let Some(session) = call.session {
        session.state().log_threshold = level;
    }
    call.complete(Empty {}, None)
}
