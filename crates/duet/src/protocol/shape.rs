//! Per-version result shapes. Handlers produce the newest shape; a client that speaks an
//! older revision gets only what its schema allows (no `structuredContent` or
//! `outputSchema` before 2025-06-18, no audio before 2025-03-26, no `resource_link` before
//! 2025-06-18). Modern results are stamped with `resultType`, cache hints and `serverInfo`.

use super::Version;
use crate::jsonrpc::{CACHEABLE_METHODS, envelope_key};
use crate::layer::{Content, ContentKind, PromptResult, Tool, ToolResult};
use serde::Serialize;
use serde_json::{Map, Value, json};

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

pub fn content(c: &Content, v: Version) -> Value {
    let replacement = match &c.kind {
        ContentKind::Audio { mime_type, .. } if !v.has_audio() => {
            Some(format!("[{mime_type} audio omitted: protocol version {v} has no audio content]"))
        }
        ContentKind::ResourceLink(link) if !v.has_structured_output() => {
            Some(format!("Resource: {} <{}>", link.name, link.uri))
        }
        _ => None,
    };
    match replacement {
        Some(text) => serde_json::to_value(Content::text(text)).unwrap_or(Value::Null),
        None => serde_json::to_value(c).unwrap_or(Value::Null),
    }
}

pub fn tool_result(r: &ToolResult, v: Version) -> Value {
    let mut m = Map::with_capacity(4);
    m.insert("content".into(), Value::Array(r.content.iter().map(|c| content(c, v)).collect()));
    if let Some(s) = &r.structured_content
        && v.has_structured_output()
        && (v.structured_content_any() || s.is_object())
    {
        m.insert("structuredContent".into(), s.clone());
    }
    m.insert("isError".into(), Value::Bool(r.is_error));
    if let Some(meta) = &r.meta {
        m.insert("_meta".into(), Value::Object(meta.clone()));
    }
    Value::Object(m)
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
        let old = tool_result(&r, Version::V2024_11_05);
        assert!(old.get("structuredContent").is_none());
        assert_eq!(old["content"][1]["type"], "text");
        assert_eq!(old["content"][2]["text"], "Resource: a <test://a>");
        let mid = tool_result(&r, Version::V2025_03_26);
        assert_eq!(mid["content"][1]["type"], "audio");
        assert_eq!(mid["content"][2]["type"], "text");
        let new = tool_result(&r, Version::V2025_06_18);
        assert_eq!(new["structuredContent"], json!({"a": 1}));
        assert_eq!(new["content"][2]["type"], "resource_link");
        let scalar = ToolResult::structured(json!([1, 2]));
        assert!(tool_result(&scalar, Version::V2025_11_25).get("structuredContent").is_none());
        assert_eq!(tool_result(&scalar, Version::V2026_07_28)["structuredContent"], json!([1, 2]));
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
}
