//! The four list methods, paginated, for the caller's principal and protocol version. Each
//! page is rendered once per listing and version and then served as text (see `pages`).

use super::Call;
use crate::jsonrpc::{Output, RpcError};
use crate::layer::Listing;
use crate::protocol::{cursor, shape};
use serde::Serialize;
use serde_json::{Map, Value};

fn page<T: Send + Sync + 'static>(
    call: &Call<'_>,
    kind: &'static str,
    key: &str,
    items: Listing<T>,
    render: impl Fn(&T) -> Value,
) -> Result<Output, RpcError> {
    let page_size = call.server().options().page_size;
    let (range, next) = cursor::paginate(kind, items.len(), call.params.get("cursor"), page_size)?;
    let start = range.start;
    let build = || {
        let mut result = Map::with_capacity(2);
        result.insert(key.into(), Value::Array(items[range].iter().map(render).collect()));
        if let Some(next) = next {
            result.insert("nextCursor".into(), Value::from(next));
        }
        Value::Object(result)
    };
    if call.is_retry() {
        // Stamped with a time to live of zero; not worth keeping.
        return Ok(Output::Value(build()));
    }
    let rendered = call.server().shared.pages.get_or_render(kind, &items, call.version, start, || {
        let mut result = build();
        if call.modern() {
            call.stamp(&mut result);
        }
        result
    });
    Ok(Output::Rendered(rendered))
}

fn plain<T: Serialize>(item: &T) -> Value {
    serde_json::to_value(item).unwrap_or(Value::Null)
}

pub(super) fn tools(call: &Call<'_>) -> Result<Output, RpcError> {
    let all = call.server().layer().tools(&call.principal);
    page(call, "tools", "tools", all, |t| shape::tool(t, call.version))
}

pub(super) fn resources(call: &Call<'_>) -> Result<Output, RpcError> {
    let all = call.server().layer().resources(&call.principal);
    page(call, "resources", "resources", all, plain)
}

pub(super) fn templates(call: &Call<'_>) -> Result<Output, RpcError> {
    let all = call.server().layer().templates(&call.principal);
    page(call, "templates", "resourceTemplates", all, plain)
}

pub(super) fn prompts(call: &Call<'_>) -> Result<Output, RpcError> {
    let all = call.server().layer().prompts(&call.principal);
    page(call, "prompts", "prompts", all, plain)
}
