//! Agreeing on a revision with the server ([`Negotiate`]), what was agreed ([`Terms`]), and
//! the 2026 `_meta` envelope every request of that era carries. `Auto` asks
//! `server/discover` in a 2026 envelope; a server that does not speak 2026 (any error
//! answer, an HTTP failure, no answer in time) gets `initialize` at the newest handshake
//! revision instead, whose choice the client takes when it knows it, and then
//! `notifications/initialized`.

use crate::connection::{Connection, decode};
use crate::error::Error;
use crate::transport::Outgoing;
use duet_wire::jsonrpc::code;
use duet_wire::key;
use duet_wire::method::Method;
use duet_wire::params::InitializeParams;
use duet_wire::types::ServerInfo;
use duet_wire::version::Version;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Which revision to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Negotiate {
    /// 2026-07-28 when the server speaks it, else what `initialize` agrees on.
    Auto,
    /// This revision or none: `server/discover` for 2026-07-28, `initialize` for a
    /// handshake revision (a server that answers with another is refused).
    Pin(Version),
}

/// The client's name and version, as it tells the server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientInfo {
    /// Its name, for a program.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl Default for ClientInfo {
    /// `duet-client` at this crate's version.
    fn default() -> Self {
        ClientInfo { name: "duet-client".into(), version: env!("CARGO_PKG_VERSION").into() }
    }
}

/// What the client and the server agreed on.
#[derive(Debug, Clone, PartialEq)]
pub struct Terms {
    /// The revision spoken.
    pub version: Version,
    /// The server's name and version, when it said (`serverInfo`; in 2026 the result's
    /// `_meta`).
    pub server_info: Option<ServerInfo>,
    /// What the server can do.
    pub capabilities: Map<String, Value>,
    /// How to use the server, for the model.
    pub instructions: Option<String>,
}

/// Who asks: the client's name and version, and the capabilities it declares.
pub(crate) struct Asking<'a> {
    pub(crate) info: &'a ClientInfo,
    pub(crate) capabilities: &'a Map<String, Value>,
}

/// The `_meta` envelope of a 2026 request: the revision, the client's capabilities, its
/// info, and the log level it wants, if any.
pub(crate) fn envelope(version: Version, asking: &Asking<'_>, log_level: Option<&str>) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(key::PROTOCOL_VERSION.into(), version.as_str().into());
    meta.insert(key::CLIENT_CAPABILITIES.into(), Value::Object(asking.capabilities.clone()));
    meta.insert(key::CLIENT_INFO.into(), json!(asking.info));
    if let Some(level) = log_level {
        meta.insert(key::LOG_LEVEL.into(), level.into());
    }
    meta
}

/// Agrees on a revision; `probe` bounds the wait for `server/discover` under `Auto`.
pub(crate) async fn negotiate(
    connection: &Connection,
    how: Negotiate,
    asking: &Asking<'_>,
    probe: Duration,
) -> Result<Terms, Error> {
    match how {
        Negotiate::Pin(version) if version.is_modern() => discover(connection, version, asking).await,
        Negotiate::Pin(version) => initialize(connection, version, asking, true).await,
        Negotiate::Auto => {
            match tokio::time::timeout(probe, discover(connection, Version::V2026_07_28, asking)).await {
                Ok(Ok(terms)) => Ok(terms),
                // Nothing to fall back on: the server cannot be reached at all.
                Ok(Err(error @ (Error::Transport(_) | Error::Closed))) => Err(error),
                // The server named the revisions it speaks: the newest handshake one of them.
                Ok(Err(error)) => {
                    let named = supported(&error).into_iter().filter(|v| !v.is_modern()).max();
                    initialize(connection, named.unwrap_or(Version::LATEST_HANDSHAKE), asking, false).await
                }
                Err(_) => initialize(connection, Version::LATEST_HANDSHAKE, asking, false).await,
            }
        }
    }
}

/// What `server/discover` answers.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Discovered {
    supported_versions: Vec<String>,
    #[serde(default)]
    capabilities: Map<String, Value>,
    instructions: Option<String>,
    #[serde(rename = "_meta", default)]
    meta: Map<String, Value>,
}

/// The revisions a server's `UnsupportedProtocolVersion` error (-32022) names as the ones
/// it speaks (`data.supported`), those this client knows; none for any other error.
fn supported(error: &Error) -> Vec<Version> {
    let Error::Rpc(error) = error else { return Vec::new() };
    if error.code != code::UNSUPPORTED_PROTOCOL_VERSION {
        return Vec::new();
    }
    let named = error.data.as_ref().and_then(|data| data.get("supported")).and_then(Value::as_array);
    named.into_iter().flatten().filter_map(|v| Version::parse(v.as_str()?)).collect()
}

/// `server/discover` in `version`. A server that refuses the revision yet names it among
/// those it speaks (a gateway that routed the request to an older replica, say) is asked
/// once more; one that does not name it is taken at its word.
async fn discover(connection: &Connection, version: Version, asking: &Asking<'_>) -> Result<Terms, Error> {
    match discover_once(connection, version, asking).await {
        Err(error) if supported(&error).contains(&version) => discover_once(connection, version, asking).await,
        answered => answered,
    }
}

async fn discover_once(connection: &Connection, version: Version, asking: &Asking<'_>) -> Result<Terms, Error> {
    let mut params = Map::new();
    params.insert("_meta".into(), Value::Object(envelope(version, asking, None)));
    let id = connection.next_id();
    let result = connection.request(&id, Outgoing::new(Method::ServerDiscover, params, Some(version))).await?;
    let discovered: Discovered = decode(Method::ServerDiscover, result)?;
    if !discovered.supported_versions.iter().any(|v| v == version.as_str()) {
        return Err(Error::Protocol(format!("the server supports {:?}, not {version}", discovered.supported_versions)));
    }
    let server_info = discovered.meta.get(key::SERVER_INFO).and_then(|v| ServerInfo::deserialize(v).ok());
    Ok(Terms { version, server_info, capabilities: discovered.capabilities, instructions: discovered.instructions })
}

/// What `initialize` answers.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Initialized {
    protocol_version: String,
    #[serde(default)]
    capabilities: Map<String, Value>,
    server_info: Option<ServerInfo>,
    instructions: Option<String>,
}

async fn initialize(
    connection: &Connection,
    asked: Version,
    asking: &Asking<'_>,
    pinned: bool,
) -> Result<Terms, Error> {
    let params = InitializeParams {
        protocol_version: asked.as_str().into(),
        capabilities: Some(asking.capabilities.clone()),
        client_info: Some(json!(asking.info)),
    };
    let params = match serde_json::to_value(params) {
        Ok(Value::Object(params)) => params,
        _ => return Err(Error::Invalid("initialize's params are not an object".into())),
    };
    let id = connection.next_id();
    let result = connection.request(&id, Outgoing::new(Method::Initialize, params, None)).await?;
    let initialized: Initialized = decode(Method::Initialize, result)?;
    let chosen = Version::parse(&initialized.protocol_version).filter(|v| !v.is_modern()).ok_or_else(|| {
        Error::Protocol(format!(
            "the server chose protocol version {:?}, which this client does not speak in the handshake era",
            initialized.protocol_version
        ))
    })?;
    if pinned && chosen != asked {
        return Err(Error::Protocol(format!("the server chose protocol version {chosen}, not the pinned {asked}")));
    }
    connection.notify(Method::Initialized, Map::new(), chosen).await?;
    Ok(Terms {
        version: chosen,
        server_info: initialized.server_info,
        capabilities: initialized.capabilities,
        instructions: initialized.instructions,
    })
}
