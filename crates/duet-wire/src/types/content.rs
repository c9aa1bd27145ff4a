//! What handlers return: content blocks, resource contents, tool and prompt results and
//! completions, as plain serde types in their newest wire shape. duet's engine adapts them
//! to older protocol versions (its `protocol::shape`); a client reads them as sent.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use serde_with::skip_serializing_none;

/// Who a piece of content is for and how much it matters.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the content is meant for: the user, the model (assistant), or both.
    pub audience: Option<Vec<Role>>,
    /// How important it is, from 0 (least) to 1 (most).
    pub priority: Option<f64>,
    /// When it last changed, as an ISO 8601 timestamp.
    pub last_modified: Option<String>,
}

/// A side of the conversation: who a message or a piece of content is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human user.
    User,
    /// The model.
    Assistant,
}

/// One block of a tool result or prompt message.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Content {
    /// What the block holds: text, an image, audio, a link or a resource.
    #[serde(flatten)]
    pub kind: ContentKind,
    /// Who it is for and how much it matters.
    pub annotations: Option<Annotations>,
    /// Metadata for the client (`_meta`), passed through as given.
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
}

/// The kinds of content block, tagged by `type` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentKind {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// The image's bytes, base64-encoded.
        data: String,
        /// Its media type (`image/png`...).
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A sound.
    Audio {
        /// The audio's bytes, base64-encoded.
        data: String,
        /// Its media type (`audio/wav`...).
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A link to a resource the client may read (`resource_link`).
    ResourceLink(ResourceLink),
    /// A resource's contents, embedded.
    Resource {
        /// The contents.
        resource: ResourceContents,
    },
}

/// A pointer to a resource the client may read.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name, for a program.
    pub name: String,
    /// Its name for people.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// Its media type, when known.
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    pub size: Option<u64>,
}

impl ResourceLink {
    /// A link to `uri`, named `name`, with nothing else said of it.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink { uri: uri.into(), name: name.into(), title: None, description: None, mime_type: None, size: None }
    }
}

impl Content {
    fn of(kind: ContentKind) -> Self {
        Content { kind, annotations: None, meta: None }
    }

    /// A text block.
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

    /// A link to a resource.
    pub fn link(link: ResourceLink) -> Self {
        Self::of(ContentKind::ResourceLink(link))
    }

    /// A resource's contents, embedded.
    pub fn resource(resource: ResourceContents) -> Self {
        Self::of(ContentKind::Resource { resource })
    }

    /// The block with `annotations`.
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
    /// The resource's URI.
    pub uri: String,
    /// Its media type, when known.
    pub mime_type: Option<String>,
    /// The text or the bytes.
    #[serde(flatten)]
    pub body: ResourceBody,
    /// Metadata for the client (`_meta`), passed through as given.
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
}

/// The body of a resource: `text` or `blob` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResourceBody {
    /// Text.
    Text(String),
    /// Base64 of the bytes.
    Blob(String),
}

impl ResourceContents {
    /// A text resource.
    pub fn text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            body: ResourceBody::Text(text.into()),
            meta: None,
        }
    }

    /// A binary resource, from raw bytes (base64-encoded here).
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
    /// The blocks the model reads.
    pub content: Vec<Content>,
    /// The structured output (`structuredContent`), which matches the tool's output schema.
    pub structured_content: Option<Value>,
    /// Whether the call failed (`isError`): an error the model can read and act on.
    #[serde(default)]
    pub is_error: bool,
    /// Metadata for the client (`_meta`), passed through as given.
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
}

impl ToolResult {
    /// A result of `content`.
    pub fn new(content: Vec<Content>) -> Self {
        ToolResult { content, ..Default::default() }
    }

    /// A result of one text block.
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

    /// The result with one more block.
    pub fn with_content(mut self, content: Content) -> Self {
        self.content.push(content);
        self
    }
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: Content,
}

impl PromptMessage {
    /// A message from the user.
    pub fn user(content: Content) -> Self {
        PromptMessage { role: Role::User, content }
    }

    /// A message from the model.
    pub fn assistant(content: Content) -> Self {
        PromptMessage { role: Role::Assistant, content }
    }
}

/// What `prompts/get` returns: a prompt's messages, filled in with its arguments.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptResult {
    /// What the prompt is for, if the server says.
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage>,
}

impl PromptResult {
    /// A result of `messages`, with no description.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        PromptResult { description: None, messages }
    }
}

/// Completion values for one argument (at most 100 are sent).
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// The completion values, at most 100.
    pub values: Vec<String>,
    /// How many values there are in all, when known.
    pub total: Option<u64>,
    /// Whether there are more values than those sent.
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
