//! `resources/read`. A missing resource is -32002 on the handshake era and -32602 on
//! 2026-07-28, with the URI in `data` either way.

use super::input::Echoed;
use super::{Call, input};
use crate::layer::{LayerError, ResourceContents};
use duet_wire::jsonrpc::{Rendered, RpcError, code};
use duet_wire::params::{ReadResourceParams, decode};
use serde::Serialize;
use serde_json::{Map, Value, json};

#[derive(Serialize)]
struct ReadResult<'a> {
    contents: &'a [ResourceContents],
}

pub(super) async fn read(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let ReadResourceParams { uri, input_responses, request_state } = decode(params)?;
    let uri = call.found.named(uri);
    let echoed = Echoed { responses: input_responses, state: request_state };
    let layer = &call.shared.layer;
    let invoke = |cx| layer.read_resource(uri, cx);
    let fail = |e| match e {
        LayerError::NotFound(message) => {
            let code = if call.modern() { code::INVALID_PARAMS } else { code::RESOURCE_NOT_FOUND };
            RpcError::new(code, message).with_data(json!({"uri": uri}))
        }
        e => e.to_rpc(),
    };
    let finish = |done: Result<Vec<ResourceContents>, String>| {
        let contents = done.map_err(super::input_failed)?;
        call.complete(ReadResult { contents: &contents }, None)
    };
    input::run(call, uri, &Value::Null, echoed, invoke, fail, finish).await
}
