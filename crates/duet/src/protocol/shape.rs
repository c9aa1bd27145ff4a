//! Per-version result shapes. Handlers produce the newest shape; a client that speaks an
//! older revision gets only what its schema allows (no `structuredContent` or
//! `outputSchema` before 2025-06-18, no audio before 2025-03-26, no `resource_link` before
//! 2025-06-18). Modern results are stamped with `resultType`, cache hints and `serverInfo`.

use super::Version;
use crate::jsonrpc::{CACHEABLE_METHODS, envelope_key};
use crate::layer::{Content, ContentKind, PromptResult, Tool, ToolResult};
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// Cache hints stamped on the cacheable results of 2026 requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheHints {
    pub ttl_ms: u64,
    /// `"private"` (per authorization context) or `"public"`.
    pub scope: &'static str,
}

impl Default for CacheHints {
    fn default() -> Self {
        CacheHints { ttl_ms: 0, scope: "private" }
    }
}

fn to_map<T: Serialize>(value: &T) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

pub fn tool(tool: &Tool, v: Version) -> Value {
    let mut m = to_map(tool);
    let object_root = tool.output_schema.as_ref().is_some_and(|s| s.get("type") == Some(&json!("object")));
    if !v.has_structured_output() || (!v.is_modern() && !object_root) {
        m.remove("outputSchema");
    }
    Value::Object(m)
}

/// `c` as a client at `v` may receive it: content kinds its revision lacks become text.
fn shaped(c: &Content, v: Version) -> Cow<'_, Content> {
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

pub fn content(c: &Content, v: Version) -> Value {
    serde_json::to_value(shaped(c, v)).unwrap_or(Value::Null)
}

/// A tool result as a client at `v` receives it, serialized straight from the
/// [`ToolResult`]. With `server_info` (a 2026 request) it is stamped as
/// [`stamp_modern`] stamps a result.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShapedToolResult<'a> {
    content: Vec<Cow<'a, Content>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<&'a Value>,
    is_error: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
    #[serde(rename = "_meta", skip_serializing_if = "Meta::is_empty")]
    meta: Meta<'a>,
}

/// A result's `_meta`: the handler's own entries, and `serverInfo` (rendered once per
/// server) unless it set one.
struct Meta<'a> {
    own: Option<&'a Map<String, Value>>,
    server_info: Option<&'a RawValue>,
}

impl Meta<'_> {
    fn server_info(&self) -> Option<&RawValue> {
        self.server_info.filter(|_| !self.own.is_some_and(|m| m.contains_key(envelope_key::SERVER_INFO)))
    }

    fn is_empty(&self) -> bool {
        self.own.is_none_or(Map::is_empty) && self.server_info().is_none()
    }
}

impl Serialize for Meta<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (k, v) in self.own.into_iter().flatten() {
            map.serialize_entry(k, v)?;
        }
        if let Some(info) = self.server_info() {
            map.serialize_entry(envelope_key::SERVER_INFO, info)?;
        }
        map.end()
    }
}

pub fn tool_result<'a>(r: &'a ToolResult, v: Version, server_info: Option<&'a RawValue>) -> ShapedToolResult<'a> {
    let structured = r.structured_content.as_ref();
    ShapedToolResult {
        content: r.content.iter().map(|c| shaped(c, v)).collect(),
        structured_content: structured
            .filter(|s| v.has_structured_output() && (v.structured_content_any() || s.is_object())),
        is_error: r.is_error,
        result_type: server_info.map(|_| "complete"),
        meta: Meta { own: r.meta.as_ref(), server_info },
    }
}

pub fn prompt_result(r: &PromptResult, v: Version) -> Value {
    let mut m = Map::with_capacity(2);
    if let Some(d) = &r.description {
        m.insert("description".into(), Value::from(d.as_str()));
    }
    let messages = r.messages.iter().map(|msg| json!({"role": msg.role, "content": content(&msg.content, v)}));
    m.insert("messages".into(), Value::Array(messages.collect()));
    Value::Object(m)
}

/// Stamps a complete 2026 result: `resultType`, cache hints on cacheable methods, and
/// `serverInfo` (`info`, rendered once per server) in `_meta`. Values already present are
/// kept; an `input_required` result gets no cache hints.
pub fn stamp_modern(method: &str, result: &mut Value, info: &Value, cache: &CacheHints) {
    let Value::Object(m) = result else { return };
    let complete = m.entry("resultType").or_insert_with(|| Value::from("complete")) == "complete";
    if complete && CACHEABLE_METHODS.contains(&method) {
        m.entry("ttlMs").or_insert_with(|| Value::from(cache.ttl_ms));
        m.entry("cacheScope").or_insert_with(|| Value::from(cache.scope));
    }
    let meta = m.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.entry(envelope_key::SERVER_INFO).or_insert_with(|| info.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::{ResourceLink, ServerInfo, ToolResult};

    fn shaped_tool_result(r: &ToolResult, v: Version, server_info: Option<&Value>) -> Value {
        let rendered = server_info.map(|info| serde_json::value::to_raw_value(info).unwrap());
        serde_json::to_value(tool_result(r, v, rendered.as_deref())).unwrap()
    }

    #[test]
    fn old_versions_lose_new_fields() {
        let r = ToolResult::structured(json!({"a": 1})).with_content(Content::audio(b"x", "audio/wav")).with_content(
            Content::link(ResourceLink {
                uri: "test://a".into(),
                name: "a".into(),
                title: None,
                description: None,
                mime_type: None,
                size: None,
            }),
        );
        let old = shaped_tool_result(&r, Version::V2024_11_05, None);
        assert!(old.get("structuredContent").is_none());
        assert_eq!(old["content"][1]["type"], "text");
        assert_eq!(old["content"][2]["text"], "Resource: a <test://a>");
        let mid = shaped_tool_result(&r, Version::V2025_03_26, None);
        assert_eq!(mid["content"][1]["type"], "audio");
        assert_eq!(mid["content"][2]["type"], "text");
        let new = shaped_tool_result(&r, Version::V2025_06_18, None);
        assert_eq!(new["structuredContent"], json!({"a": 1}));
        assert_eq!(new["content"][2]["type"], "resource_link");
        let scalar = ToolResult::structured(json!([1, 2]));
        assert!(shaped_tool_result(&scalar, Version::V2025_11_25, None).get("structuredContent").is_none());
        assert_eq!(shaped_tool_result(&scalar, Version::V2026_07_28, None)["structuredContent"], json!([1, 2]));
    }

    #[test]
    fn stamping() {
        let info = serde_json::to_value(ServerInfo::new("duet", "1")).unwrap();
        let mut list = json!({"tools": []});
        stamp_modern("tools/list", &mut list, &info, &CacheHints::default());
        assert_eq!(list["resultType"], "complete");
        assert_eq!((list["ttlMs"].clone(), list["cacheScope"].clone()), (json!(0), json!("private")));
        assert_eq!(list["_meta"][envelope_key::SERVER_INFO]["name"], "duet");
        let mut call = json!({"content": [], "_meta": {"x": 1}});
        stamp_modern("tools/call", &mut call, &info, &CacheHints::default());
        assert!(call.get("ttlMs").is_none());
        assert_eq!(call["_meta"]["x"], 1);
    }

    #[test]
    fn tool_results_are_stamped_like_any_2026_result() {
        let info = serde_json::to_value(ServerInfo::new("duet", "1")).unwrap();
        let mut r = ToolResult::text("hi");
        let plain = shaped_tool_result(&r, Version::V2025_11_25, None);
        assert_eq!(plain, json!({"content": [{"type": "text", "text": "hi"}], "isError": false}));
        let mut expected = plain.clone();
        stamp_modern("tools/call", &mut expected, &info, &CacheHints::default());
        assert_eq!(shaped_tool_result(&r, Version::V2026_07_28, Some(&info)), expected);
        // The handler's own `_meta` is kept, its own serverInfo too.
        let own = json!({"x": 1, envelope_key::SERVER_INFO: "mine"});
        r.meta = own.as_object().cloned();
        let stamped = shaped_tool_result(&r, Version::V2026_07_28, Some(&info));
        assert_eq!(stamped["_meta"], own);
        r.meta = json!({"x": 1}).as_object().cloned();
        let stamped = shaped_tool_result(&r, Version::V2026_07_28, Some(&info));
        assert_eq!(stamped["_meta"], json!({"x": 1, envelope_key::SERVER_INFO: info}));
        assert_eq!(shaped_tool_result(&r, Version::V2025_11_25, None)["_meta"], json!({"x": 1}));
    }
}
