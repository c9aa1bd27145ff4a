//! Typed tools: a handler over a `serde` + `schemars` input type, registered in one line.
//! The input schema is generated from the type with every subschema inlined (no root
//! `$ref`, no `$defs` that clients choke on); arguments are deserialized into the type.
//! Handlers return anything that converts into a reply: a result, a reply, or a `Result`
//! of either.

use super::{HandlerError, PromptResult, Reply, ResourceContents, ToolResult};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde_json::Value;

/// What a handler's future may produce.
pub trait IntoReply<T> {
    fn into_reply(self) -> Result<Reply<T>, HandlerError>;
}

macro_rules! complete_results {
    ($($t:ty),*) => {$(
        impl IntoReply<$t> for $t {
            fn into_reply(self) -> Result<Reply<$t>, HandlerError> {
                Ok(Reply::Complete(self))
            }
        }
    )*};
}

complete_results!(ToolResult, PromptResult, Vec<ResourceContents>);

impl<T> IntoReply<T> for Reply<T> {
    fn into_reply(self) -> Result<Reply<T>, HandlerError> {
        Ok(self)
    }
}

impl<T, R: IntoReply<T>, E: Into<HandlerError>> IntoReply<T> for Result<R, E> {
    fn into_reply(self) -> Result<Reply<T>, HandlerError> {
        self.map_err(Into::into)?.into_reply()
    }
}

/// Structured tool output: serialized into `structuredContent` (and a text block).
/// Declare its schema with `ToolSpec::output::<O>()`.
pub struct Json<O>(pub O);

impl<O: Serialize> IntoReply<ToolResult> for Json<O> {
    fn into_reply(self) -> Result<Reply<ToolResult>, HandlerError> {
        Ok(Reply::Complete(ToolResult::structured(serde_json::to_value(self.0)?)))
    }
}

/// The JSON Schema of `T`, inlined, without the root's `$schema` and `title`.
pub fn schema_for<T: JsonSchema>() -> Value {
    let schema = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Value::Object(m) = &mut value {
        m.remove("$schema");
        m.remove("title");
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Point {
        x: i64,
        y: i64,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Segment {
        /// Where it starts.
        from: Point,
        to: Point,
        label: Option<String>,
    }

    #[test]
    fn schemas_are_inlined_objects() {
        let schema = schema_for::<Segment>();
        assert_eq!(schema["type"], "object");
        let text = schema.to_string();
        assert!(!text.contains("$ref") && !text.contains("$defs") && !text.contains("$schema"), "{text}");
        assert_eq!(schema["properties"]["from"]["properties"]["x"]["type"], "integer");
        assert_eq!(schema["required"], json!(["from", "to"]));
    }
}
