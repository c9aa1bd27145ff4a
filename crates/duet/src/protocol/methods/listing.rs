//! The four list methods, paginated, for the caller's principal and protocol version.

use super::Call;
use crate::jsonrpc::RpcError;
use crate::protocol::{cursor, shape};
use serde::Serialize;
use serde_json::{Map, Value};

fn page<T>(
    call: &Call<'_>,
    kind: &str,
    key: &str,
    items: &[T],
    render: impl Fn(&T) -> Value,
) -> Result<Value, RpcError> {
    let page_size = call.server().options().page_size;
    let (page, next) = cursor::paginate(kind, items, call.params.get("cursor"), page_size)?;
    let mut result = Map::with_capacity(2);
    result.insert(key.into(), Value::Array(page.iter().map(render).collect()));
    if let Some(next) = next {
        result.insert("nextCursor".into(), Value::from(next));
    }
    Ok(Value::Object(result))
}

fn plain<T: Serialize>(item: &T) -> Value {
    serde_json::to_value(item).unwrap_or(Value::Null)
}

pub(super) fn tools(call: &Call<'_>) -> Result<Value, RpcError> {
    let all = call.server().layer().tools(&call.principal);
    page(call, "tools", "tools", &all, |t| shape::tool(t, call.version))
}

pub(super) fn resources(call: &Call<'_>) -> Result<Value, RpcError> {
    let all = call.server().layer().resources(&call.principal);
    page(call, "resources", "resources", &all, plain)
}

pub(super) fn templates(call: &Call<'_>) -> Result<Value, RpcError> {
    let all = call.server().layer().templates(&call.principal);
    page(call, "templates", "resourceTemplates", &all, plain)
}

pub(super) fn prompts(call: &Call<'_>) -> Result<Value, RpcError> {
    let all = call.server().layer().prompts(&call.principal);
    page(call, "prompts", "prompts", &all, plain)
}
