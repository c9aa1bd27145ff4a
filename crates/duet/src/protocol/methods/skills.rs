//! The skills extension (SEP-2640): `skills/list`, `skills/get` and
//! `resources/directory/read`, answered from the layer's skills for the caller. A layer that
//! serves no skills has none of these methods (-32601), and declares no extension.

use super::Call;
use super::listing::{page, plain};
use crate::layer::{Listing, Skill};
use duet_wire::jsonrpc::{Rendered, RpcError};
use duet_wire::params::{ListParams, ReadDirectoryParams, ResourceParams, decode};
use serde::Serialize;
use serde_json::{Map, Value, json};

#[derive(Serialize)]
struct GetResult<'a> {
    skill: &'a Skill,
}

/// The skills the caller sees, if the layer serves skills at all.
fn served(call: &Call<'_>) -> Result<Listing<Skill>, RpcError> {
    call.shared.layer.skills(&call.principal).ok_or_else(|| RpcError::method_not_found(call.method.as_str()))
}

pub(super) fn list(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let skills = served(call)?;
    let ListParams { cursor } = decode(params)?;
    page(call, "skills", "skills", skills, cursor.as_deref(), plain(call))
}

pub(super) fn get(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let skills = served(call)?;
    let ResourceParams { uri } = decode(params)?;
    match skills.iter().find(|s| s.uri == uri) {
        Some(skill) => call.complete(GetResult { skill }, None),
        None => Err(RpcError::invalid_params(format!("Unknown skill: {uri}")).with_data(json!({"uri": uri}))),
    }
}

pub(super) fn read_directory(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let skills = served(call)?;
    let ReadDirectoryParams { uri, cursor } = decode(params)?;
    let Some(children) = call.shared.directories.children(&skills, &uri) else {
        let message = format!("{uri} is not a directory of the skills this server serves");
        return Err(RpcError::invalid_params(message).with_data(json!({"uri": uri})));
    };
    page(call, "directory", "resources", children, cursor.as_deref(), plain(call))
}
