//! What the client answers when the server asks it something: the caller's handlers for
//! elicitation (a form or a URL for the user), sampling (a completion from the caller's
//! model) and roots (the folders the caller shares). One set serves both eras: in the
//! handshake era they answer the server's requests (`elicitation/create`,
//! `sampling/createMessage`, `roots/list`, and `ping`); in 2026 they answer the
//! `inputRequests` of an `input_required` result, which the client then retries. The
//! capabilities the client declares are those it has a handler for.

use duet_wire::jsonrpc::RpcError;
use duet_wire::method::Method;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::future::Future;
use std::sync::Arc;

/// What the server asks the user to fill in or visit (`elicitation/create`'s params).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Elicitation {
    /// `form` (fill in `requested_schema`) or `url` (visit `url`); a request without one is
    /// a form.
    #[serde(default = "form")]
    pub mode: String,
    /// What to tell the user.
    pub message: String,
    /// A form's fields: a flat object schema, each property possibly with a `default`.
    #[serde(default)]
    pub requested_schema: Option<Value>,
    /// The URL to visit, in `url` mode.
    #[serde(default)]
    pub url: Option<String>,
}

fn form() -> String {
    "form".into()
}

/// The user's answer to an [`Elicitation`].
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited {
    /// Submitted: the form's content (for a URL, empty). Fields the user left out that the
    /// form gives a `default` are filled in with it before the answer is sent.
    Accept(Map<String, Value>),
    /// Said no.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// A root the client shares with the server (`roots/list`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A name for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

type Elicit = dyn Fn(Elicitation) -> BoxFuture<'static, Result<Elicited, RpcError>> + Send + Sync;
type Sample = dyn Fn(Map<String, Value>) -> BoxFuture<'static, Result<Map<String, Value>, RpcError>> + Send + Sync;

/// The caller's answers to what a server may ask. None by default: a client without a
/// handler declares no capability for it, and refuses the request.
#[derive(Clone, Default)]
pub struct Handlers {
    elicitation: Option<Arc<Elicit>>,
    sampling: Option<Arc<Sample>>,
    roots: Option<Arc<[Root]>>,
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("elicitation", &self.elicitation.is_some())
            .field("sampling", &self.sampling.is_some())
            .field("roots", &self.roots)
            .finish()
    }
}

impl Handlers {
    /// No handlers.
    pub fn new() -> Handlers {
        Handlers::default()
    }

    /// Answers elicitations (form and URL mode) with `handler`.
    pub fn on_elicitation<F, Fut>(mut self, handler: F) -> Handlers
    where
        F: Fn(Elicitation) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Elicited, RpcError>> + Send + 'static,
    {
        self.elicitation = Some(Arc::new(move |request| Box::pin(handler(request))));
        self
    }

    /// Answers sampling requests with `handler`: it gets `sampling/createMessage`'s params
    /// and returns its result (`role`, `content`, `model`, `stopReason`).
    pub fn on_sampling<F, Fut>(mut self, handler: F) -> Handlers
    where
        F: Fn(Map<String, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Map<String, Value>, RpcError>> + Send + 'static,
    {
        self.sampling = Some(Arc::new(move |params| Box::pin(handler(params))));
        self
    }

    /// Shares `roots` with the server.
    pub fn with_roots(mut self, roots: Vec<Root>) -> Handlers {
        self.roots = Some(roots.into());
        self
    }

    /// The capabilities these handlers make the client declare.
    pub(crate) fn capabilities(&self) -> Map<String, Value> {
        let mut capabilities = Map::new();
        if self.elicitation.is_some() {
            capabilities.insert("elicitation".into(), json!({"form": {}, "url": {}}));
        }
        if self.sampling.is_some() {
            capabilities.insert("sampling".into(), json!({}));
        }
        if self.roots.is_some() {
            capabilities.insert("roots".into(), json!({}));
        }
        capabilities
    }

    /// The answer to a request of the server's: its result, or the error to send back.
    pub(crate) async fn answer(&self, method: &Method, params: Map<String, Value>) -> Result<Value, RpcError> {
        match method {
            Method::Ping => Ok(json!({})),
            Method::ElicitationCreate => {
                let handler = self.elicitation.as_ref().ok_or_else(|| unsupported(method))?;
                let request: Elicitation = serde_json::from_value(Value::Object(params))
                    .map_err(|e| RpcError::invalid_params(format!("elicitation/create's params: {e}")))?;
                let defaults = request.requested_schema.clone();
                Ok(elicited(handler(request).await?, defaults.as_ref()))
            }
            Method::SamplingCreateMessage => {
                let handler = self.sampling.as_ref().ok_or_else(|| unsupported(method))?;
                Ok(Value::Object(handler(params).await?))
            }
            Method::RootsList => {
                let roots = self.roots.as_ref().ok_or_else(|| unsupported(method))?;
                Ok(json!({"roots": &roots[..]}))
            }
            other => Err(RpcError::method_not_found(other.as_str())),
        }
    }
}

/// A request the client has no handler for.
fn unsupported(method: &Method) -> RpcError {
    RpcError::method_not_found(method.as_str())
}

/// `elicitation/create`'s result: the action and, when accepted, the content with the
/// form's defaults filled in for what the user left out (SEP-1034).
fn elicited(answer: Elicited, schema: Option<&Value>) -> Value {
    match answer {
        Elicited::Accept(mut content) => {
            let properties = schema.and_then(|schema| schema.get("properties")).and_then(Value::as_object);
            for (field, property) in properties.into_iter().flatten() {
                if let Some(default) = property.get("default")
                    && !content.contains_key(field)
                {
                    content.insert(field.clone(), default.clone());
                }
            }
            json!({"action": "accept", "content": content})
        }
        Elicited::Decline => json!({"action": "decline"}),
        Elicited::Cancel => json!({"action": "cancel"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_accepted_form_gets_its_defaults_and_keeps_what_the_user_gave() {
        let handlers = Handlers::new().on_elicitation(|_| async {
            let mut content = Map::new();
            content.insert("name".into(), "Ada".into());
            Ok(Elicited::Accept(content))
        });
        let params = json!({
            "message": "who?",
            "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "note": {"type": "string"}
            }}
        });
        let answer = handlers.answer(&Method::ElicitationCreate, params.as_object().unwrap().clone()).await.unwrap();
        assert_eq!(answer, json!({"action": "accept", "content": {"name": "Ada", "age": 30}}));
    }

    #[tokio::test]
    async fn without_a_handler_a_request_is_refused_and_no_capability_declared() {
        let handlers = Handlers::new();
        assert!(handlers.capabilities().is_empty());
        let refused = handlers.answer(&Method::SamplingCreateMessage, Map::new()).await.unwrap_err();
        assert_eq!(refused.code, duet_wire::jsonrpc::code::METHOD_NOT_FOUND);
        assert_eq!(handlers.answer(&Method::Ping, Map::new()).await.unwrap(), json!({}));
    }

    #[tokio::test]
    async fn roots_are_listed_and_declared() {
        let handlers = Handlers::new().with_roots(vec![Root { uri: "file:///work".into(), name: None }]);
        assert!(handlers.capabilities().contains_key("roots"));
        let listed = handlers.answer(&Method::RootsList, Map::new()).await.unwrap();
        assert_eq!(listed, json!({"roots": [{"uri": "file:///work"}]}));
    }
}
