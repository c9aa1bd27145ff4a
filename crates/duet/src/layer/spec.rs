//! The specs a program registers: a tool, a resource, a URI template or a prompt, each with
//! its handler. What every primitive has — a title, a description, icons, `_meta` and the
//! roles that may see it — is written once, on [`Spec`]; each kind adds its own fields.

use super::handler::{self, Boxed, IntoReply};
use super::{
    About, Icon, Principal, PromptArgument, PromptResult, RequestCx, ResourceContents, TaskSupport, ToolAnnotations,
    ToolArgs, ToolResult, schema_for,
};
use futures::FutureExt;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A primitive to register: its own parts `P`, and what every primitive has.
pub struct Spec<P> {
    pub(crate) parts: P,
    pub(crate) common: Common,
}

/// The fields every primitive shares: what it says about itself, and who may see it.
#[derive(Default)]
pub(crate) struct Common {
    pub about: About,
    pub roles: Roles,
}

/// Roles allowed to see a primitive; empty means everyone.
#[derive(Clone, Default)]
pub(crate) struct Roles(BTreeSet<String>);

impl Roles {
    pub(crate) fn allow(&self, who: &Principal) -> bool {
        self.0.is_empty() || self.0.iter().any(|r| who.has_role(r))
    }

    pub(crate) fn is_everyone(&self) -> bool {
        self.0.is_empty()
    }
}

impl<P> Spec<P> {
    pub(super) fn of(parts: P) -> Self {
        Spec { parts, common: Common::default() }
    }

    /// A name for people.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.common.about.title = Some(title.into());
        self
    }

    /// What it is and does, for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.common.about.description = Some(description.into());
        self
    }

    /// Icons a client may show.
    pub fn icons(mut self, icons: Vec<Icon>) -> Self {
        self.common.about.icons = Some(icons);
        self
    }

    /// Metadata listed with it (`_meta`).
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.common.about.meta = Some(meta);
        self
    }

    /// Only principals with one of these roles see it and use it.
    pub fn roles<I: IntoIterator<Item = S>, S: Into<String>>(mut self, roles: I) -> Self {
        self.common.roles = Roles(roles.into_iter().map(Into::into).collect());
        self
    }
}

/// Completes a partial value, given the other arguments' values.
pub(crate) type Completer = Arc<dyn Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync>;

/// A tool: its name, schemas and annotations, and its handler. `S` is the registry's state.
pub type ToolSpec<S = ()> = Spec<ToolParts<S>>;

/// What a tool has of its own.
pub struct ToolParts<S> {
    pub(crate) name: String,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Option<Value>,
    pub(crate) annotations: Option<ToolAnnotations>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) task_support: TaskSupport,
    pub(crate) handler: Boxed<S, ToolArgs, ToolResult>,
}

impl<S: 'static> Spec<ToolParts<S>> {
    /// A tool whose handler takes the arguments object and the request context (whose
    /// [`state`](RequestCx::state) is the registry's). The handler returns a
    /// [`ToolResult`], a [`Json`] (whose type is the output schema), a [`Reply`] of either,
    /// or a `Result`.
    ///
    /// [`Json`]: super::Json
    /// [`Reply`]: super::Reply
    pub fn new<F, Fut>(name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(ToolArgs, RequestCx<S>) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoReply<ToolResult>,
    {
        Self::tool(name, handler::boxed(handler), <Fut::Output as IntoReply<ToolResult>>::output_schema())
    }

    /// A tool over a typed input: the input schema comes from `I`, and the arguments are
    /// deserialized into it (a mismatch answers a tool error naming the problem).
    pub fn typed<I, F, Fut>(name: impl Into<String>, handler: F) -> Self
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(I, RequestCx<S>) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoReply<ToolResult>,
    {
        let output_schema = <Fut::Output as IntoReply<ToolResult>>::output_schema();
        let handler: Boxed<S, ToolArgs, ToolResult> =
            Arc::new(move |args, cx| match I::deserialize(Value::Object(args)) {
                Ok(input) => handler(input, cx).map(IntoReply::into_reply).boxed(),
                Err(e) => {
                    let refused = ToolResult::error(format!("Invalid arguments: {e}"));
                    futures::future::ready(Ok(super::Reply::Complete(refused))).boxed()
                }
            });
        Self::tool(name, handler, output_schema).input_schema(schema_for::<I>())
    }

    fn tool(name: impl Into<String>, handler: Boxed<S, ToolArgs, ToolResult>, output_schema: Option<Value>) -> Self {
        Spec::of(ToolParts {
            name: name.into(),
            input_schema: serde_json::json!({"type": "object", "properties": {}}),
            output_schema,
            annotations: None,
            timeout: None,
            task_support: TaskSupport::Forbidden,
            handler,
        })
    }

    /// The JSON Schema of the arguments (root `type: object`); calls are validated against it.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.parts.input_schema = schema;
        self
    }

    /// The JSON Schema of `structuredContent`; results are validated against it. A handler
    /// that returns [`Json`](super::Json) declares its type's schema by itself.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.parts.output_schema = Some(schema);
        self
    }

    /// Hints about the tool's behaviour.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.parts.annotations = Some(annotations);
        self
    }

    /// A call running longer than this answers a tool error.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.parts.timeout = Some(timeout);
        self
    }

    /// Whether calls may run as tasks (the client polls for the result, or cancels). The
    /// handler is the same either way; see [`TaskSupport`] and
    /// [`RequestCx::become_task`](super::RequestCx::become_task).
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.parts.task_support = support;
        self
    }
}

/// A resource at one URI. `S` is the registry's state.
pub type ResourceSpec<S = ()> = Spec<ResourceParts<S>>;

/// What a resource has of its own.
pub struct ResourceParts<S> {
    pub(crate) uri: String,
    pub(crate) name: String,
    pub(crate) mime_type: Option<String>,
    pub(crate) size: Option<u64>,
    pub(crate) handler: Boxed<S, String, Vec<ResourceContents>>,
}

impl<S: 'static> Spec<ResourceParts<S>> {
    /// A resource whose handler reads it (given its URI).
    pub fn new<F, Fut>(uri: impl Into<String>, name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(String, RequestCx<S>) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoReply<Vec<ResourceContents>>,
    {
        Spec::of(ResourceParts {
            uri: uri.into(),
            name: name.into(),
            mime_type: None,
            size: None,
            handler: handler::boxed(handler),
        })
    }

    /// A resource whose contents never change (its URI and MIME type are the contents').
    pub fn fixed(name: impl Into<String>, contents: ResourceContents) -> Self {
        let (uri, mime_type) = (contents.uri.clone(), contents.mime_type.clone());
        let read = move |_, _| futures::future::ready(vec![contents.clone()]);
        let mut spec = Self::new(uri, name, read);
        spec.parts.mime_type = mime_type;
        spec
    }

    /// Fixed text contents.
    pub fn text(uri: impl Into<String>, name: impl Into<String>, mime_type: &str, text: impl Into<String>) -> Self {
        Self::fixed(name, ResourceContents::text(uri, mime_type, text))
    }

    /// Fixed binary contents.
    pub fn blob(uri: impl Into<String>, name: impl Into<String>, mime_type: &str, bytes: &[u8]) -> Self {
        Self::fixed(name, ResourceContents::blob(uri, mime_type, bytes)).size(bytes.len() as u64)
    }

    /// The resource's media type, as listed.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.parts.mime_type = Some(mime_type.into());
        self
    }

    /// The resource's size in bytes, as listed.
    pub fn size(mut self, size: u64) -> Self {
        self.parts.size = Some(size);
        self
    }
}

/// Resources under a URI template; the handler gets the URI and its decoded variables.
/// `S` is the registry's state.
pub type TemplateSpec<S = ()> = Spec<TemplateParts<S>>;

/// What a template has of its own.
pub struct TemplateParts<S> {
    pub(crate) uri_template: String,
    pub(crate) name: String,
    pub(crate) mime_type: Option<String>,
    pub(crate) completions: HashMap<String, Completer>,
    pub(crate) handler: Boxed<S, (String, BTreeMap<String, String>), Vec<ResourceContents>>,
}

impl<S: 'static> Spec<TemplateParts<S>> {
    /// Resources at the URIs `uri_template` makes, read by `handler` (it gets the URI and
    /// the template's variables, decoded).
    pub fn new<F, Fut>(uri_template: impl Into<String>, name: impl Into<String>, handler: F) -> Self
    where
        F: Fn((String, BTreeMap<String, String>), RequestCx<S>) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoReply<Vec<ResourceContents>>,
    {
        Spec::of(TemplateParts {
            uri_template: uri_template.into(),
            name: name.into(),
            mime_type: None,
            completions: HashMap::new(),
            handler: handler::boxed(handler),
        })
    }

    /// The media type of the resources it makes, as listed.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.parts.mime_type = Some(mime_type.into());
        self
    }

    /// Completion of one template variable.
    pub fn complete(
        mut self,
        variable: impl Into<String>,
        f: impl Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.parts.completions.insert(variable.into(), Arc::new(f));
        self
    }
}

/// A prompt: arguments (some required) and a handler that renders the messages. `S` is the
/// registry's state.
pub type PromptSpec<S = ()> = Spec<PromptParts<S>>;

/// What a prompt has of its own.
pub struct PromptParts<S> {
    pub(crate) name: String,
    pub(crate) arguments: Vec<PromptArgument>,
    pub(crate) completions: HashMap<String, Completer>,
    pub(crate) handler: Boxed<S, BTreeMap<String, String>, PromptResult>,
}

impl<S: 'static> Spec<PromptParts<S>> {
    /// A prompt named `name`, whose messages `handler` makes from the arguments.
    pub fn new<F, Fut>(name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(BTreeMap<String, String>, RequestCx<S>) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoReply<PromptResult>,
    {
        Spec::of(PromptParts {
            name: name.into(),
            arguments: Vec::new(),
            completions: HashMap::new(),
            handler: handler::boxed(handler),
        })
    }

    /// An argument the prompt takes; an empty description is left out.
    pub fn argument(mut self, name: impl Into<String>, description: impl Into<String>, required: bool) -> Self {
        self.parts.arguments.push(PromptArgument {
            name: name.into(),
            title: None,
            description: Some(description.into()).filter(|d: &String| !d.is_empty()),
            required,
        });
        self
    }

    /// Completion of one argument.
    pub fn complete(
        mut self,
        argument: impl Into<String>,
        f: impl Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.parts.completions.insert(argument.into(), Arc::new(f));
        self
    }
}
