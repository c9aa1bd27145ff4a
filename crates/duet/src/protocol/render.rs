//! Results as they go on the wire, serialized from their types straight into JSON text: no
//! `Value` in between. Handlers produce the newest shape; a client that speaks an older
//! revision gets only what its schema allows (no `structuredContent` or `outputSchema`
//! before 2025-06-18, no audio before 2025-03-26, no `resource_link` before 2025-06-18). A
//! 2026-07-28 result is stamped as it is written: `resultType`, the cache hints of a
//! cacheable method, and `serverInfo` in `_meta` beside the result's own entries.

use super::Version;
use crate::layer::{Content, ContentKind, PromptMessage, PromptResult, Tool, ToolResult};
use duet_wire::jsonrpc::{Rendered, RpcError};
use duet_wire::key;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// Cache hints stamped on the cacheable results of 2026 requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHints {
    /// How long a client may reuse the result, in milliseconds (`ttlMs`).
    pub ttl_ms: u64,
    /// `"private"` (per authorization context) or `"public"`.
    pub scope: &'static str,
}

impl Default for CacheHints {
    fn default() -> Self {
        CacheHints { ttl_ms: 0, scope: "private" }
    }
}

/// What a 2026-07-28 result is stamped with.
pub(crate) struct Stamp<'a> {
    /// `"complete"`, `"input_required"` or (a task) `"task"`.
    pub result_type: &'static str,
    /// The hints of a cacheable method's complete result.
    pub cache: Option<CacheHints>,
    /// The server's info, rendered once per server.
    pub server_info: &'a RawValue,
}

/// One result: the method's own fields (`body`, a struct or map without `_meta`), its own
/// `_meta` entries, and, on 2026-07-28, its stamp.
#[derive(Serialize)]
struct Wire<'a, B> {
    #[serde(flatten)]
    body: B,
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
    #[serde(rename = "ttlMs", skip_serializing_if = "Option::is_none")]
    ttl_ms: Option<u64>,
    #[serde(rename = "cacheScope", skip_serializing_if = "Option::is_none")]
    cache_scope: Option<&'static str>,
    #[serde(rename = "_meta", skip_serializing_if = "ResultMeta::is_empty")]
    meta: ResultMeta<'a>,
}

/// A result's `_meta`: its own entries, and `serverInfo` unless it set one.
struct ResultMeta<'a> {
    own: Option<&'a Map<String, Value>>,
    server_info: Option<&'a RawValue>,
}

impl ResultMeta<'_> {
    fn server_info(&self) -> Option<&RawValue> {
        self.server_info.filter(|_| !self.own.is_some_and(|m| m.contains_key(key::SERVER_INFO)))
    }

    fn is_empty(&self) -> bool {
        self.own.is_none_or(Map::is_empty) && self.server_info().is_none()
    }
}

impl Serialize for ResultMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (k, v) in self.own.into_iter().flatten() {
            map.serialize_entry(k, v)?;
        }
        if let Some(info) = self.server_info() {
            map.serialize_entry(key::SERVER_INFO, info)?;
        }
        map.end()
    }
}

/// Renders a result: `body` and its own `_meta`, stamped when `stamp` is given.
pub(crate) fn render<B: Serialize>(
    body: B,
    own_meta: Option<&Map<String, Value>>,
    stamp: Option<Stamp<'_>>,
) -> Result<Rendered, RpcError> {
    let wire = Wire {
        body,
        result_type: stamp.as_ref().map(|s| s.result_type),
        ttl_ms: stamp.as_ref().and_then(|s| s.cache).map(|c| c.ttl_ms),
        cache_scope: stamp.as_ref().and_then(|s| s.cache).map(|c| c.scope),
        meta: ResultMeta { own: own_meta, server_info: stamp.map(|s| s.server_info) },
    };
    Rendered::new(&wire).map_err(|e| {
        tracing::error!("a result could not be serialized: {e}");
        RpcError::internal()
    })
}

/// The result of `ping`, `logging/setLevel` and the subscription methods.
#[derive(Serialize)]
pub(crate) struct Empty {}

/// A tool as a client at `v` may list it: no `outputSchema` before 2025-06-18, and before
/// 2026-07-28 only one whose root is an object; `execution` only on 2025-11-25.
pub(crate) fn tool(tool: &Tool, v: Version) -> Cow<'_, Tool> {
    let object_root = tool.output_schema.as_ref().is_some_and(|s| s.get("type") == Some(&Value::from("object")));
    let keeps_output = v.has_structured_output() && (v.is_modern() || object_root);
    let drops_output = tool.output_schema.is_some() && !keeps_output;
    let drops_execution = tool.execution.is_some() && !v.has_core_tasks();
    if !drops_output && !drops_execution {
        return Cow::Borrowed(tool);
    }
    let mut shaped = tool.clone();
    if drops_output {
        shaped.output_schema = None;
    }
    if drops_execution {
        shaped.execution = None;
    }
    Cow::Owned(shaped)
}

/// `c` as a client at `v` may receive it: content kinds its revision lacks become text.
fn content(c: &Content, v: Version) -> Cow<'_, Content> {
    match &c.kind {
        ContentKind::Audio { mime_type, .. } if !v.has_audio() => {
            Cow::Owned(Content::text(format!("[{mime_type} audio omitted: protocol version {v} has no audio content]")))
        }
        ContentKind::ResourceLink(link) if !v.has_structured_output() => {
            Cow::Owned(Content::text(format!("Resource: {} <{}>", link.name, link.uri)))
        }
        _ => Cow::Borrowed(c),
    }
}

/// Content blocks as a client at `v` may receive them, shaped as they are written.
struct Shaped<'a>(&'a [Content], Version);

impl Serialize for Shaped<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|c| content(c, self.1)))
    }
}

/// A tool result as a client at `v` receives it, without its `_meta` (rendered beside).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolResultBody<'a> {
    content: Shaped<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<&'a Value>,
    is_error: bool,
}

pub(crate) fn tool_result(r: &ToolResult, v: Version) -> ToolResultBody<'_> {
    let structured = r.structured_content.as_ref();
    ToolResultBody {
        content: Shaped(&r.content, v),
        structured_content: structured
            .filter(|s| v.has_structured_output() && (v.structured_content_any() || s.is_object())),
        is_error: r.is_error,
    }
}

/// A prompt result as a client at `v` receives it.
pub(crate) fn prompt_result(r: &PromptResult, v: Version) -> Cow<'_, PromptResult> {
    let shaped = |m: &PromptMessage| matches!(content(&m.content, v), Cow::Owned(_));
    if !r.messages.iter().any(shaped) {
        return Cow::Borrowed(r);
    }
    let messages =
        r.messages.iter().map(|m| PromptMessage { role: m.role, content: content(&m.content, v).into_owned() });
    Cow::Owned(PromptResult { description: r.description.clone(), messages: messages.collect() })
}

/// One page of a list method: its items under `key`, and the next page's cursor.
pub(crate) struct Page<'a, T> {
    pub key: &'static str,
    pub items: &'a [T],
    pub next_cursor: Option<String>,
}

impl<T: Serialize> Serialize for Page<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(self.key, self.items)?;
        if let Some(next) = &self.next_cursor {
            map.serialize_entry("nextCursor", next)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::{ResourceLink, ServerInfo};
    use serde_json::json;

    fn info() -> Box<RawValue> {
        serde_json::value::to_raw_value(&ServerInfo::new("duet", "1")).unwrap()
    }

    fn stamp(info: &RawValue, cache: Option<CacheHints>) -> Stamp<'_> {
        Stamp { result_type: "complete", cache, server_info: info }
    }

    fn shaped_tool_result(r: &ToolResult, v: Version, stamped: bool) -> Value {
        let info = info();
        render(tool_result(r, v), r.meta.as_ref(), stamped.then(|| stamp(&info, None))).unwrap().to_value()
    }

    #[test]
    fn old_versions_lose_new_fields() {
        let r = ToolResult::structured(json!({"a": 1}))
            .with_content(Content::audio(b"x", "audio/wav"))
            .with_content(Content::link(ResourceLink::new("test://a", "a")));
        let old = shaped_tool_result(&r, Version::V2024_11_05, false);
        assert!(old.get("structuredContent").is_none());
        assert_eq!(old["content"][1]["type"], "text");
        assert_eq!(old["content"][2]["text"], "Resource: a <test://a>");
        let mid = shaped_tool_result(&r, Version::V2025_03_26, false);
        assert_eq!(mid["content"][1]["type"], "audio");
        assert_eq!(mid["content"][2]["type"], "text");
        let new = shaped_tool_result(&r, Version::V2025_06_18, false);
        assert_eq!(new["structuredContent"], json!({"a": 1}));
        assert_eq!(new["content"][2]["type"], "resource_link");
        let scalar = ToolResult::structured(json!([1, 2]));
        assert!(shaped_tool_result(&scalar, Version::V2025_11_25, false).get("structuredContent").is_none());
        assert_eq!(shaped_tool_result(&scalar, Version::V2026_07_28, true)["structuredContent"], json!([1, 2]));
        let prompt = PromptResult::new(vec![PromptMessage::user(Content::audio(b"x", "audio/wav"))]);
        assert!(matches!(prompt_result(&prompt, Version::V2025_03_26), Cow::Borrowed(_)));
        let old_prompt = prompt_result(&prompt, Version::V2024_11_05);
        assert!(matches!(old_prompt.messages[0].content.kind, ContentKind::Text { .. }));
    }

    #[test]
    fn stamping() {
        let info = info();
        let tools: [Tool; 0] = [];
        let page = Page { key: "tools", items: &tools, next_cursor: Some("c".into()) };
        let list = render(page, None, Some(stamp(&info, Some(CacheHints::default())))).unwrap().to_value();
        assert_eq!(list["tools"], json!([]));
        assert_eq!(list["nextCursor"], "c");
        assert_eq!(list["resultType"], "complete");
        assert_eq!((list["ttlMs"].clone(), list["cacheScope"].clone()), (json!(0), json!("private")));
        assert_eq!(list["_meta"][key::SERVER_INFO]["name"], "duet");
        let plain = render(Empty {}, None, None).unwrap();
        assert_eq!(plain.as_bytes(), b"{}");
    }

    #[test]
    fn a_results_own_meta_is_kept_beside_the_server_info() {
        let mut r = ToolResult::text("hi");
        let plain = shaped_tool_result(&r, Version::V2025_11_25, false);
        assert_eq!(plain, json!({"content": [{"type": "text", "text": "hi"}], "isError": false}));
        let stamped = shaped_tool_result(&r, Version::V2026_07_28, true);
        let info = json!({"name": "duet", "version": "1"});
        assert_eq!(stamped["resultType"], "complete");
        assert!(stamped.get("ttlMs").is_none(), "tools/call is not cacheable");
        assert_eq!(stamped["_meta"], json!({key::SERVER_INFO: info}));
        // The handler's own `_meta` is kept, its own serverInfo too.
        let own = json!({"x": 1, key::SERVER_INFO: "mine"});
        r.meta = own.as_object().cloned();
        assert_eq!(shaped_tool_result(&r, Version::V2026_07_28, true)["_meta"], own);
        r.meta = json!({"x": 1}).as_object().cloned();
        assert_eq!(
            shaped_tool_result(&r, Version::V2026_07_28, true)["_meta"],
            json!({"x": 1, key::SERVER_INFO: info})
        );
        assert_eq!(shaped_tool_result(&r, Version::V2025_11_25, false)["_meta"], json!({"x": 1}));
    }
}
