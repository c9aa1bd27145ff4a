//! What handlers return: content blocks, resource contents, tool and prompt results and
//! completions, as plain serde types in their newest wire shape. The engine adapts them to
//! older protocol versions (see `protocol::shape`).

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use serde_with::skip_serializing_none;

/// Who a piece of content is for and how much it matters.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    pub audience: Option<Vec<Role>>,
    pub priority: Option<f64>,
    pub last_modified: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One block of a tool result or prompt message.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Content {
    #[serde(flatten)]
    pub kind: ContentKind,
    pub annotations: Option<Annotations>,
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentKind {
    Text {
        text: String,
    },
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    Audio {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    ResourceLink(ResourceLink),
    Resource {
        resource: ResourceContents,
    },
}

/// A pointer to a resource the client may read.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    pub size: Option<u64>,
}

impl ResourceLink {
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink { uri: uri.into(), name: name.into(), title: None, description: None, mime_type: None, size: None }
    }
}

impl Content {
    fn of(kind: ContentKind) -> Self {
        Content { kind, annotations: None, meta: None }
    }

    pub fn text(text: impl Into<String>) -> Self {
        Self::of(ContentKind::Text { text: text.into() })
    }

    /// An image from raw bytes (base64-encoded here).
    pub fn image(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::of(ContentKind::Image { data: b64(bytes), mime_type: mime_type.into() })
    }

    /// Audio from raw bytes (base64-encoded here).
    pub fn audio(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Self::of(ContentKind::Audio { data: b64(bytes), mime_type: mime_type.into() })
    }

    pub fn link(link: ResourceLink) -> Self {
        Self::of(ContentKind::ResourceLink(link))
    }

    pub fn resource(resource: ResourceContents) -> Self {
        Self::of(ContentKind::Resource { resource })
    }

    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }
}

/// The contents of one resource: text or bytes.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    pub uri: String,
    pub mime_type: Option<String>,
    #[serde(flatten)]
    pub body: ResourceBody,
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResourceBody {
    Text(String),
    /// Base64 of the bytes.
    Blob(String),
}

impl ResourceContents {
    pub fn text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Text(text.into()),
            meta: None,
        }
    }

    pub fn blob(uri: impl Into<String>, mime_type: impl Into<String>, bytes: &[u8]) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Blob(b64(bytes)),
            meta: None,
        }
    }
}

/// What a tool call produced. `is_error` marks a tool execution error the model can act on.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub content: Vec<Content>,
    pub structured_content: Option<Value>,
    #[serde(default)]
    pub is_error: bool,
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
}

impl ToolResult {
    pub fn new(content: Vec<Content>) -> Self {
        ToolResult { content, ..Default::default() }
    }

    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![Content::text(text)])
    }

    /// A tool execution error: one text block and `isError: true`.
    pub fn error(message: impl Into<String>) -> Self {
        ToolResult { is_error: true, ..Self::text(message) }
    }

    /// Structured output, also serialized into a text block for clients that read text only;
    /// compact, which costs a model fewer tokens than indented JSON.
    pub fn structured(value: Value) -> Self {
        let text = serde_json::to_string(&value).unwrap_or_default();
        ToolResult { structured_content: Some(value), ..Self::text(text) }
    }

    pub fn with_content(mut self, content: Content) -> Self {
        self.content.push(content);
        self
    }
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    pub role: Role,
    pub content: Content,
}

impl PromptMessage {
    pub fn user(content: Content) -> Self {
        PromptMessage { role: Role::User, content }
    }

    pub fn assistant(content: Content) -> Self {
        PromptMessage { role: Role::Assistant, content }
    }
}

#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptResult {
    pub description: Option<String>,
    pub messages: Vec<PromptMessage>,
}

impl PromptResult {
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        PromptResult { description: None, messages }
    }
}

/// Completion values for one argument (at most 100 are sent).
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    pub values: Vec<String>,
    pub total: Option<u64>,
    pub has_more: Option<bool>,
}

/// The most values one completion carries on the wire.
pub const MAX_COMPLETION_VALUES: usize = 100;

impl Completion {
    /// Keeps the first 100 values and reports how many there were.
    pub fn from_values(mut values: Vec<String>) -> Self {
        let total = values.len();
        values.truncate(MAX_COMPLETION_VALUES);
        Completion { has_more: Some(total > values.len()), total: Some(total as u64), values }
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_shapes() {
        let c = Content::image(b"\x89PNG", "image/png");
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            json!({"type": "image", "data": "iVBORw==", "mimeType": "image/png"})
        );
        let link = Content::link(ResourceLink::new("test://a", "a"));
        assert_eq!(
            serde_json::to_value(&link).unwrap(),
            json!({"type": "resource_link", "uri": "test://a", "name": "a"})
        );
        let r = Content::resource(ResourceContents::text("test://x", "text/plain", "hi"));
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"type": "resource", "resource": {"uri": "test://x", "mimeType": "text/plain", "text": "hi"}})
        );
        let blob = ResourceContents::blob("test://b", "image/png", b"ab");
        assert_eq!(serde_json::to_value(&blob).unwrap()["blob"], "YWI=");
        assert_eq!(
            serde_json::to_value(ToolResult::error("boom")).unwrap(),
            json!({"content": [{"type": "text", "text": "boom"}], "isError": true})
        );
    }

    #[test]
    fn structured_output_is_also_compact_text() {
        let r = ToolResult::structured(json!({"text": "hi", "n": [1, 2]}));
        assert_eq!(r.structured_content, Some(json!({"text": "hi", "n": [1, 2]})));
        assert_eq!(
            serde_json::to_value(&r.content).unwrap(),
            json!([{"type": "text", "text": r#"{"n":[1,2],"text":"hi"}"#}])
        );
    }

    #[test]
    fn completions_are_capped() {
        let c = Completion::from_values((0..150).map(|i| i.to_string()).collect());
        assert_eq!((c.values.len(), c.total, c.has_more), (100, Some(150), Some(true)));
    }
}
