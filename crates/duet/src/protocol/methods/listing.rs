//! The four list methods, paginated, for the caller's principal and protocol version. Each
//! page is rendered once per listing, version and position, and then served as that text
//! (see `pages`). A layer may page its resources itself (`Layer::resource_page`): those
//! pages are rendered as the layer makes them, each time.

use super::Call;
use crate::layer::{ClientRoots, Listing};
use crate::protocol::cursor;
use crate::protocol::render::{self, Page};
use duet_wire::jsonrpc::{Rendered, RpcError};
use duet_wire::params::{ListParams, decode};
use serde::Serialize;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// The page of `items` that `cursor` names, listed under `key`; `kind` names the list in
/// cursors.
pub(super) fn page<T: Send + Sync + 'static>(
    call: &Call<'_>,
    kind: &'static str,
    key: &'static str,
    items: Listing<T>,
    cursor: Option<&str>,
    render: impl FnOnce(Page<'_, T>) -> Result<Rendered, RpcError>,
) -> Result<Rendered, RpcError> {
    let page_size = call.shared.options.page_size;
    let (range, next_cursor) = cursor::paginate(kind, items.len(), cursor, page_size)?;
    let start = range.start;
    let page = Page { key, items: &items[range], next_cursor };
    if call.is_retry() {
        // Stamped with a time to live of zero; not worth keeping.
        return render(page);
    }
    call.shared.pages.get_or_render(kind, &items, call.version(), start, || render(page))
}

/// Renders a page whose items go out as they are.
pub(super) fn plain<T: Serialize>(call: &Call<'_>) -> impl FnOnce(Page<'_, T>) -> Result<Rendered, RpcError> {
    move |page| call.complete(page, None)
}

pub(super) fn tools(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let ListParams { cursor } = decode(params)?;
    let all = call.shared.layer.tools(&call.principal);
    page(call, "tools", "tools", all, cursor.as_deref(), |page| {
        let shaped: Vec<Cow<_>> = page.items.iter().map(|t| render::tool(t, call.version())).collect();
        call.complete(Page { key: page.key, items: &shaped, next_cursor: page.next_cursor }, None)
    })
}

/// The resources: pages the layer makes itself (within the client's roots, which it reads
/// from the request's context), or pages of its listing, within the client's roots when it
/// listed them.
pub(super) async fn resources(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let ListParams { cursor } = decode(params)?;
    let cursor = cursor.as_deref();
    let layer = &call.shared.layer;
    if let Some(page) = layer.resource_page(cursor, call.shared.options.page_size, call.request_cx()).await {
        let page = page.map_err(|e| e.to_rpc())?;
        return call.complete(Page { key: "resources", items: &page.resources, next_cursor: page.next_cursor }, None);
    }
    let all = match call.client_roots().await {
        ClientRoots::Listed(roots) => layer.resources_within(&call.principal, &roots),
        ClientRoots::Unstated => layer.resources(&call.principal),
    };
    page(call, "resources", "resources", all, cursor, plain(call))
}

pub(super) fn templates(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let ListParams { cursor } = decode(params)?;
    let all = call.shared.layer.templates(&call.principal);
    page(call, "templates", "resourceTemplates", all, cursor.as_deref(), plain(call))
}

pub(super) fn prompts(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let ListParams { cursor } = decode(params)?;
    let all = call.shared.layer.prompts(&call.principal);
    page(call, "prompts", "prompts", all, cursor.as_deref(), plain(call))
}
