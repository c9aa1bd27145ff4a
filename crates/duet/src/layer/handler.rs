//! What a spec runs: an async function or closure of the request's arguments and its
//! context ([`RequestCx`], which also carries the registry's shared state). Its future
//! produces anything that converts into a reply ([`IntoReply`]): a result, a [`Reply`], a
//! `Result` of either, or structured tool output ([`Json`], whose type is also the tool's
//! output schema). Typed arguments and output schemas are generated with `schemars`, every
//! subschema inlined (no root `$ref`, no `$defs` that clients choke on).

use super::{HandlerError, PromptResult, Reply, RequestCx, ResourceContents, ToolResult};
use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// A handler as a registry keeps it: arguments `A`, the registry's state `S`, replies of `T`.
pub(crate) type Boxed<S, A, T> =
    Arc<dyn Fn(A, RequestCx<S>) -> BoxFuture<'static, Result<Reply<T>, HandlerError>> + Send + Sync>;

pub(crate) fn boxed<S, A, T, F, Fut>(handler: F) -> Boxed<S, A, T>
where
    F: Fn(A, RequestCx<S>) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoReply<T>,
    T: 'static,
{
    Arc::new(move |args, cx| handler(args, cx).map(IntoReply::into_reply).boxed())
}

/// What a handler's future may produce.
pub trait IntoReply<T> {
    /// The reply, or the handler's error.
    fn into_reply(self) -> Result<Reply<T>, HandlerError>;

    /// The JSON Schema of the structured content this type carries: a tool whose handler
    /// returns it declares it as its output schema.
    fn output_schema() -> Option<Value> {
        None
    }
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

impl<T, R: IntoReply<T>> IntoReply<T> for Reply<R> {
    fn into_reply(self) -> Result<Reply<T>, HandlerError> {
        match self {
            Reply::Complete(r) => r.into_reply(),
            Reply::InputRequired(input) => Ok(Reply::InputRequired(input)),
        }
    }

    fn output_schema() -> Option<Value> {
        R::output_schema()
    }
}

impl<T, R: IntoReply<T>, E: Into<HandlerError>> IntoReply<T> for Result<R, E> {
    fn into_reply(self) -> Result<Reply<T>, HandlerError> {
        self.map_err(Into::into)?.into_reply()
    }

    fn output_schema() -> Option<Value> {
        R::output_schema()
    }
}

/// Structured tool output: serialized into `structuredContent` (and a compact text block
/// for clients that read text only). A tool whose handler returns it declares `O`'s schema
/// as its output schema.
pub struct Json<O>(pub O);

impl<O: Serialize + JsonSchema> IntoReply<ToolResult> for Json<O> {
    fn into_reply(self) -> Result<Reply<ToolResult>, HandlerError> {
        Ok(Reply::Complete(ToolResult::structured(serde_json::to_value(self.0)?)))
    }

    /// `O`'s schema, unless it allows anything (`serde_json::Value`'s, say).
    fn output_schema() -> Option<Value> {
        Some(schema_for::<O>()).filter(|s| s.as_object().is_some_and(|m| !m.is_empty()))
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

    #[derive(Serialize, JsonSchema)]
    struct Sum {
        sum: i64,
    }

    #[test]
    fn output_schemas_come_from_the_reply_type() {
        assert_eq!(
            <Json<Sum> as IntoReply<ToolResult>>::output_schema().unwrap()["properties"]["sum"]["type"],
            "integer"
        );
        type Asking = Result<Reply<Json<Sum>>, HandlerError>;
        assert!(<Asking as IntoReply<ToolResult>>::output_schema().is_some());
        assert_eq!(<ToolResult as IntoReply<ToolResult>>::output_schema(), None);
        assert_eq!(<Json<Value> as IntoReply<ToolResult>>::output_schema(), None, "any value has no object schema");
    }
}
