//! A [`Layer`] built from specs: tools with JSON Schema validated arguments, resources,
//! URI templates, prompts and completions, each visible to every principal or to some
//! roles only. Listing order is the order of registration.

use super::filtered::Filtered;
use super::typed::{IntoReply, schema_for};
use super::*;
use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::time::Duration;

type Handler<A, T> = Arc<dyn Fn(A, RequestCx) -> BoxFuture<'static, Result<Reply<T>, HandlerError>> + Send + Sync>;
/// Completes a partial value, given the other arguments' values.
pub type Completer = Arc<dyn Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync>;

fn boxed<A, T, F, Fut>(f: F) -> Handler<A, T>
where
    F: Fn(A, RequestCx) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoReply<T>,
    A: 'static,
    T: 'static,
{
    Arc::new(move |args, cx| f(args, cx).map(IntoReply::into_reply).boxed())
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("{kind} {name:?} is already registered")]
    Duplicate { kind: &'static str, name: String },
    #[error("invalid tool name {0:?}: use 1 to 128 of A-Z a-z 0-9 _ . -")]
    InvalidName(String),
    #[error("the {which} of tool {tool:?} is not a valid JSON Schema: {reason}")]
    InvalidSchema { tool: String, which: &'static str, reason: String },
    #[error(transparent)]
    Template(#[from] super::template::TemplateError),
}

/// Roles allowed to see a primitive; empty means everyone.
#[derive(Clone, Default)]
struct Visibility(BTreeSet<String>);

impl Visibility {
    fn allows(&self, who: &Principal) -> bool {
        self.0.is_empty() || self.0.iter().any(|r| who.has_role(r))
    }
}

/// A tool: its definition, its handler and who may see it.
pub struct ToolSpec {
    def: Tool,
    handler: Handler<Map<String, Value>, ToolResult>,
    visibility: Visibility,
    timeout: Option<Duration>,
}

impl ToolSpec {
    /// A tool whose handler takes the arguments object and the request context. The
    /// handler returns a [`ToolResult`], a [`Reply`], or a `Result` of either.
    pub fn new<F, Fut>(name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Map<String, Value>, RequestCx) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoReply<ToolResult>,
    {
        ToolSpec {
            def: Tool {
                name: name.into(),
                title: None,
                description: None,
                input_schema: serde_json::json!({"type": "object", "properties": {}}),
                output_schema: None,
                annotations: None,
                icons: None,
                meta: None,
            },
            handler: boxed(handler),
            visibility: Visibility::default(),
            timeout: None,
        }
    }

    /// A tool over a typed input: the input schema comes from `I`, and the arguments are
    /// deserialized into it (a mismatch answers a tool error naming the problem).
    pub fn typed<I, F, Fut>(name: impl Into<String>, handler: F) -> Self
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(I, RequestCx) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoReply<ToolResult>,
    {
        let handler = Arc::new(handler);
        Self::new(name, move |args: Map<String, Value>, cx: RequestCx| {
            let handler = handler.clone();
            async move {
                match serde_json::from_value::<I>(Value::Object(args)) {
                    Ok(input) => handler(input, cx).await.into_reply(),
                    Err(e) => Ok(Reply::Complete(ToolResult::error(format!("Invalid arguments: {e}")))),
                }
            }
        })
        .input_schema(schema_for::<I>())
    }

    /// Declares the structured output's schema from `O` (return it as `Json(o)`).
    pub fn output<O: JsonSchema>(self) -> Self {
        self.output_schema(schema_for::<O>())
    }

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.def.title = Some(title.into());
        self
    }

    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.def.description = Some(description.into());
        self
    }

    /// The JSON Schema of the arguments (root `type: object`); calls are validated against it.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.def.input_schema = schema;
        self
    }

    /// The JSON Schema of `structuredContent`; results are validated against it.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.def.output_schema = Some(schema);
        self
    }

    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.def.annotations = Some(annotations);
        self
    }

    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.def.meta = Some(meta);
        self
    }

    /// Only principals with one of these roles see and call the tool.
    pub fn roles<I: IntoIterator<Item = S>, S: Into<String>>(mut self, roles: I) -> Self {
        self.visibility = Visibility(roles.into_iter().map(Into::into).collect());
        self
    }

    /// A call running longer than this answers a tool error.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub fn definition(&self) -> &Tool {
        &self.def
    }
}

/// A static resource at one URI.
pub struct ResourceSpec {
    def: Resource,
    handler: Handler<String, Vec<ResourceContents>>,
    visibility: Visibility,
}

impl ResourceSpec {
    pub fn new<F, Fut>(uri: impl Into<String>, name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(String, RequestCx) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoReply<Vec<ResourceContents>>,
    {
        ResourceSpec {
            def: Resource {
                uri: uri.into(),
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                size: None,
                annotations: None,
                icons: None,
                meta: None,
            },
            handler: boxed(handler),
            visibility: Visibility::default(),
        }
    }

    /// A resource whose contents never change (its URI and MIME type are the contents').
    pub fn fixed(name: impl Into<String>, contents: ResourceContents) -> Self {
        let (uri, mime_type) = (contents.uri.clone(), contents.mime_type.clone());
        let mut spec = Self::new(uri, name, move |_, _| {
            let contents = contents.clone();
            async move { Ok::<_, HandlerError>(vec![contents]) }
        });
        spec.def.mime_type = mime_type;
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

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.def.title = Some(title.into());
        self
    }

    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.def.description = Some(description.into());
        self
    }

    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.def.mime_type = Some(mime_type.into());
        self
    }

    pub fn size(mut self, size: u64) -> Self {
        self.def.size = Some(size);
        self
    }

    pub fn roles<I: IntoIterator<Item = S>, S: Into<String>>(mut self, roles: I) -> Self {
        self.visibility = Visibility(roles.into_iter().map(Into::into).collect());
        self
    }
}

/// Resources under a URI template; the handler gets the URI and its decoded variables.
pub struct TemplateSpec {
    def: ResourceTemplate,
    handler: Handler<(String, BTreeMap<String, String>), Vec<ResourceContents>>,
    completions: HashMap<String, Completer>,
    visibility: Visibility,
}

impl TemplateSpec {
    pub fn new<F, Fut>(uri_template: impl Into<String>, name: impl Into<String>, handler: F) -> Self
    where
        F: Fn((String, BTreeMap<String, String>), RequestCx) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoReply<Vec<ResourceContents>>,
    {
        TemplateSpec {
            def: ResourceTemplate {
                uri_template: uri_template.into(),
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                annotations: None,
                icons: None,
                meta: None,
            },
            handler: boxed(handler),
            completions: HashMap::new(),
            visibility: Visibility::default(),
        }
    }

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.def.title = Some(title.into());
        self
    }

    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.def.description = Some(description.into());
        self
    }

    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.def.mime_type = Some(mime_type.into());
        self
    }

    /// Completion of one template variable.
    pub fn complete(
        mut self,
        variable: impl Into<String>,
        f: impl Fn(&str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.completions.insert(variable.into(), Arc::new(f));
        self
    }

    pub fn roles<I: IntoIterator<Item = S>, S: Into<String>>(mut self, roles: I) -> Self {
        self.visibility = Visibility(roles.into_iter().map(Into::into).collect());
        self
    }
}

/// A prompt: arguments (some required) and a handler that renders the messages.
pub struct PromptSpec {
    def: Prompt,
    handler: Handler<BTreeMap<String, String>, PromptResult>,
    completions: HashMap<String, Completer>,
    visibility: Visibility,
}

impl PromptSpec {
    pub fn new<F, Fut>(name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(BTreeMap<String, String>, RequestCx) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoReply<PromptResult>,
    {
        PromptSpec {
            def: Prompt {
                name: name.into(),
                title: None,
                description: None,
                arguments: Vec::new(),
                icons: None,
                meta: None,
            },
            handler: boxed(handler),
            completions: HashMap::new(),
            visibility: Visibility::default(),
        }
    }

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.def.title = Some(title.into());
        self
    }

    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.def.description = Some(description.into());
        self
    }

    pub fn argument(mut self, name: impl Into<String>, description: impl Into<String>, required: bool) -> Self {
        self.def.arguments.push(PromptArgument {
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
        self.completions.insert(argument.into(), Arc::new(f));
        self
    }

    pub fn roles<I: IntoIterator<Item = S>, S: Into<String>>(mut self, roles: I) -> Self {
        self.visibility = Visibility(roles.into_iter().map(Into::into).collect());
        self
    }
}

struct CompiledTool {
    spec: ToolSpec,
    input: jsonschema::Validator,
    output: Option<jsonschema::Validator>,
}

struct CompiledTemplate {
    spec: TemplateSpec,
    template: UriTemplate,
}

/// Tools, resources, templates and prompts registered by a program.
pub struct Registry {
    info: ServerInfo,
    tools: Vec<CompiledTool>,
    resources: Vec<ResourceSpec>,
    templates: Vec<CompiledTemplate>,
    prompts: Vec<PromptSpec>,
    /// Indices into `templates`, longest template string first.
    template_order: Vec<usize>,
    listings: Listings,
    feed: Arc<ChangeFeed>,
}

#[derive(Default)]
struct Listings {
    tools: Shown<Tool>,
    resources: Shown<Resource>,
    templates: Shown<ResourceTemplate>,
    prompts: Shown<Prompt>,
}

/// The listing of one kind: everything, and what principals who see only some of it see.
struct Shown<T> {
    all: Listing<T>,
    some: Filtered<T>,
}

impl<T> Default for Shown<T> {
    fn default() -> Self {
        Shown { all: Listing::default(), some: Filtered::default() }
    }
}

impl<T: Clone + Send + Sync + 'static> Shown<T> {
    fn new(items: Vec<T>) -> Self {
        Shown { all: Arc::new(items), some: Filtered::default() }
    }

    /// What `who` sees of `specs` (whose definitions are `all`, in order).
    fn to<S>(&self, specs: &[S], visibility: impl Fn(&S) -> &Visibility, who: &Principal) -> Listing<T> {
        self.some.filter(&self.all, |i, _| specs.get(i).is_some_and(|s| visibility(s).allows(who)))
    }
}

impl Registry {
    pub fn new(info: ServerInfo) -> Self {
        Registry {
            info,
            tools: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            template_order: Vec::new(),
            listings: Listings::default(),
            feed: Arc::new(ChangeFeed::new()),
        }
    }

    /// The change feed, for handlers that raise changes (clone it before registering them).
    pub fn change_feed(&self) -> Arc<ChangeFeed> {
        self.feed.clone()
    }

    pub fn tool(&mut self, spec: ToolSpec) -> Result<&mut Self, RegistryError> {
        let name = spec.def.name.clone();
        if name.is_empty() || name.len() > 128 || !name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        {
            return Err(RegistryError::InvalidName(name));
        }
        if self.tools.iter().any(|t| t.spec.def.name == name) {
            return Err(RegistryError::Duplicate { kind: "tool", name });
        }
        let compile = |which, schema: &Value| {
            jsonschema::validator_for(schema).map_err(|e| RegistryError::InvalidSchema {
                tool: name.clone(),
                which,
                reason: e.to_string(),
            })
        };
        if spec.def.input_schema.get("type") != Some(&Value::from("object")) {
            return Err(RegistryError::InvalidSchema {
                tool: name,
                which: "inputSchema",
                reason: "its root must be `type: object`".into(),
            });
        }
        let input = compile("inputSchema", &spec.def.input_schema)?;
        let output = spec.def.output_schema.as_ref().map(|s| compile("outputSchema", s)).transpose()?;
        self.tools.push(CompiledTool { spec, input, output });
        self.listings.tools = Shown::new(self.tools.iter().map(|t| t.spec.def.clone()).collect());
        Ok(self)
    }

    pub fn resource(&mut self, spec: ResourceSpec) -> Result<&mut Self, RegistryError> {
        if self.resources.iter().any(|r| r.def.uri == spec.def.uri) {
            return Err(RegistryError::Duplicate { kind: "resource", name: spec.def.uri });
        }
        self.resources.push(spec);
        self.listings.resources = Shown::new(self.resources.iter().map(|r| r.def.clone()).collect());
        Ok(self)
    }

    pub fn template(&mut self, spec: TemplateSpec) -> Result<&mut Self, RegistryError> {
        let template = UriTemplate::parse(&spec.def.uri_template)?;
        if self.templates.iter().any(|t| t.spec.def.uri_template == spec.def.uri_template) {
            return Err(RegistryError::Duplicate { kind: "template", name: spec.def.uri_template });
        }
        self.templates.push(CompiledTemplate { spec, template });
        self.listings.templates = Shown::new(self.templates.iter().map(|t| t.spec.def.clone()).collect());
        let mut order: Vec<usize> = (0..self.templates.len()).collect();
        order.sort_by_key(|i| std::cmp::Reverse(self.templates[*i].spec.def.uri_template.len()));
        self.template_order = order;
        Ok(self)
    }

    pub fn prompt(&mut self, spec: PromptSpec) -> Result<&mut Self, RegistryError> {
        if self.prompts.iter().any(|p| p.def.name == spec.def.name) {
            return Err(RegistryError::Duplicate { kind: "prompt", name: spec.def.name });
        }
        self.prompts.push(spec);
        self.listings.prompts = Shown::new(self.prompts.iter().map(|p| p.def.clone()).collect());
        Ok(self)
    }

    fn find_tool(&self, name: &str, who: &Principal) -> Option<&CompiledTool> {
        self.tools.iter().find(|t| t.spec.def.name == name && t.spec.visibility.allows(who))
    }

    async fn run_tool(&self, tool: &CompiledTool, args: Map<String, Value>, cx: &RequestCx) -> Outcome<ToolResult> {
        let args = Value::Object(args);
        if let Some(problems) = problems(&tool.input, &args) {
            return Ok(Reply::Complete(ToolResult::error(format!("Invalid arguments: {problems}"))));
        }
        let Value::Object(args) = args else { unreachable!("validated as an object above") };
        let run = (tool.spec.handler)(args, cx.clone());
        let outcome = match tool.spec.timeout {
            Some(limit) => match tokio::time::timeout(limit, run).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    let msg = format!("Tool {} timed out after {:.1} s", tool.spec.def.name, limit.as_secs_f64());
                    return Ok(Reply::Complete(ToolResult::error(msg)));
                }
            },
            None => run.await,
        };
        match outcome {
            Ok(Reply::Complete(result)) => Ok(Reply::Complete(check_output(tool, result))),
            Ok(input) => Ok(input),
            Err(e) => match as_layer_error(&e) {
                Some(err @ LayerError::MissingCapability { .. }) => Err(err.clone()),
                _ => Ok(Reply::Complete(ToolResult::error(e.to_string()))),
            },
        }
    }
}

/// A tool that declares an output schema must return conforming structured content.
fn check_output(tool: &CompiledTool, result: ToolResult) -> ToolResult {
    let (Some(validator), false) = (&tool.output, result.is_error) else {
        return result;
    };
    let problem = match &result.structured_content {
        None => Some("it returned no structured content".to_string()),
        Some(v) => problems(validator, v),
    };
    match problem {
        None => result,
        Some(p) => {
            tracing::warn!(tool = %tool.spec.def.name, "tool output does not match its outputSchema: {p}");
            ToolResult::error(format!(
                "Tool {} produced output that does not match its outputSchema: {p}",
                tool.spec.def.name
            ))
        }
    }
}

/// Why `instance` does not match the schema, every problem in one line; `None` when it does
/// (checked first, without collecting errors).
fn problems(validator: &jsonschema::Validator, instance: &Value) -> Option<String> {
    if validator.is_valid(instance) {
        return None;
    }
    Some(validator.iter_errors(instance).map(|e| describe(&e)).collect::<Vec<_>>().join("; "))
}

fn describe(error: &jsonschema::ValidationError<'_>) -> String {
    let path = error.instance_path().to_string();
    if path.is_empty() { error.to_string() } else { format!("{}: {error}", path.trim_start_matches('/')) }
}

/// Handler failures of resources and prompts: a [`LayerError`] keeps its meaning.
fn protocol_error(error: HandlerError) -> LayerError {
    match as_layer_error(&error) {
        Some(e) => e.clone(),
        None => LayerError::Internal(error.to_string()),
    }
}

#[async_trait]
impl Layer for Registry {
    fn info(&self) -> &ServerInfo {
        &self.info
    }

    fn tools(&self, who: &Principal) -> Listing<Tool> {
        self.listings.tools.to(&self.tools, |t| &t.spec.visibility, who)
    }

    fn resources(&self, who: &Principal) -> Listing<Resource> {
        self.listings.resources.to(&self.resources, |r| &r.visibility, who)
    }

    fn templates(&self, who: &Principal) -> Listing<ResourceTemplate> {
        self.listings.templates.to(&self.templates, |t| &t.spec.visibility, who)
    }

    fn prompts(&self, who: &Principal) -> Listing<Prompt> {
        self.listings.prompts.to(&self.prompts, |p| &p.visibility, who)
    }

    async fn call_tool(&self, name: &str, args: Map<String, Value>, cx: &RequestCx) -> Outcome<ToolResult> {
        match self.find_tool(name, cx.principal()) {
            Some(tool) => self.run_tool(tool, args, cx).await,
            None => Err(LayerError::NotFound(format!("Unknown tool: {name}"))),
        }
    }

    async fn read_resource(&self, uri: &str, cx: &RequestCx) -> Outcome<Vec<ResourceContents>> {
        let who = cx.principal();
        if let Some(r) = self.resources.iter().find(|r| r.def.uri == uri && r.visibility.allows(who)) {
            return (r.handler)(uri.to_string(), cx.clone()).await.map_err(protocol_error);
        }
        for t in self.template_order.iter().map(|i| &self.templates[*i]) {
            if !t.spec.visibility.allows(who) {
                continue;
            }
            if let Some(vars) = t.template.matches(uri) {
                return (t.spec.handler)((uri.to_string(), vars), cx.clone()).await.map_err(protocol_error);
            }
        }
        Err(LayerError::NotFound(format!("Unknown resource: {uri}")))
    }

    async fn get_prompt(&self, name: &str, args: BTreeMap<String, String>, cx: &RequestCx) -> Outcome<PromptResult> {
        let Some(p) = self.prompts.iter().find(|p| p.def.name == name && p.visibility.allows(cx.principal())) else {
            return Err(LayerError::NotFound(format!("Unknown prompt: {name}")));
        };
        let missing: Vec<&str> = p
            .def
            .arguments
            .iter()
            .filter(|a| a.required && args.get(&a.name).is_none_or(|v| v.is_empty()))
            .map(|a| a.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(LayerError::invalid_arguments(format!(
                "Missing required prompt arguments: {}",
                missing.join(", ")
            )));
        }
        (p.handler)(args, cx.clone()).await.map_err(protocol_error)
    }

    async fn complete(&self, of: CompletionRef, arg: CompletionArg, cx: &RequestCx) -> Result<Completion, LayerError> {
        let who = cx.principal();
        let completer = match &of {
            CompletionRef::Prompt { name } => self
                .prompts
                .iter()
                .find(|p| &p.def.name == name && p.visibility.allows(who))
                .and_then(|p| p.completions.get(&arg.name)),
            CompletionRef::Resource { uri } => self
                .templates
                .iter()
                .find(|t| &t.spec.def.uri_template == uri && t.spec.visibility.allows(who))
                .and_then(|t| t.spec.completions.get(&arg.name)),
        };
        let values = completer.map(|f| f(&arg.value, &arg.context)).unwrap_or_default();
        Ok(Completion::from_values(values))
    }

    fn changes(&self) -> &ChangeFeed {
        &self.feed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn registry() -> Registry {
        let mut r = Registry::new(ServerInfo::new("t", "1"));
        r.tool(
            ToolSpec::new("echo", |args, _| async move {
                Ok::<_, HandlerError>(ToolResult::structured(json!({"text": args["text"]})))
            })
            .input_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
            .output_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})),
        )
        .unwrap();
        r.tool(ToolSpec::new("admin", |_, _| async { Ok::<_, HandlerError>(ToolResult::text("ok")) }).roles(["admin"]))
            .unwrap();
        r.tool(
            ToolSpec::new("liar", |_, _| async { Ok::<_, HandlerError>(ToolResult::structured(json!({"n": 1}))) })
                .output_schema(json!({"type": "object", "required": ["text"]})),
        )
        .unwrap();
        r
    }

    fn cx(p: Principal) -> RequestCx {
        RequestCx::builder(p).build()
    }

    #[test]
    fn registration_errors() {
        let mut r = registry();
        let dup = r.tool(ToolSpec::new("echo", |_, _| async { Ok::<_, HandlerError>(ToolResult::text("")) }));
        assert!(matches!(dup, Err(RegistryError::Duplicate { .. })));
        let bad = r.tool(ToolSpec::new("bad name", |_, _| async { Ok::<_, HandlerError>(ToolResult::text("")) }));
        assert!(matches!(bad, Err(RegistryError::InvalidName(_))));
        let schema = r.tool(
            ToolSpec::new("s", |_, _| async { Ok::<_, HandlerError>(ToolResult::text("")) })
                .input_schema(json!({"type": 12})),
        );
        assert!(matches!(schema, Err(RegistryError::InvalidSchema { .. })));
    }

    #[tokio::test]
    async fn roles_hide_tools() {
        let r = registry();
        let names = |p: &Principal| r.tools(p).iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&Principal::local()), ["echo", "liar"]);
        assert_eq!(names(&Principal::new("root", ["admin"])), ["echo", "admin", "liar"]);
        let (local, other) = (r.tools(&Principal::local()), r.tools(&Principal::new("other", ["ops"])));
        assert!(Arc::ptr_eq(&local, &other), "principals who see the same tools share one listing");
        assert!(Arc::ptr_eq(&r.tools(&Principal::new("root", ["admin"])), &r.listings.tools.all));
        let hidden = r.call_tool("admin", Map::new(), &cx(Principal::local())).await;
        assert_eq!(hidden.unwrap_err(), LayerError::NotFound("Unknown tool: admin".into()));
    }

    #[tokio::test]
    async fn arguments_and_output_are_validated() {
        let r = registry();
        let Reply::Complete(res) = r.call_tool("echo", Map::new(), &cx(Principal::local())).await.unwrap() else {
            panic!()
        };
        assert!(res.is_error);
        let Reply::Complete(res) = r.call_tool("liar", Map::new(), &cx(Principal::local())).await.unwrap() else {
            panic!()
        };
        assert!(res.is_error);
        assert!(serde_json::to_string(&res).unwrap().contains("does not match its outputSchema"));
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Add {
        a: i64,
        b: i64,
    }

    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct Sum {
        sum: i64,
    }

    #[tokio::test]
    async fn typed_tools() {
        let mut r = Registry::new(ServerInfo::new("t", "1"));
        r.tool(ToolSpec::typed("add", |i: Add, _| async move { Json(Sum { sum: i.a + i.b }) }).output::<Sum>())
            .unwrap();
        let def = &r.tools(&Principal::local())[0];
        assert_eq!(def.input_schema["required"], json!(["a", "b"]));
        assert_eq!(def.output_schema.as_ref().unwrap()["properties"]["sum"]["type"], "integer");
        let args = json!({"a": 2, "b": 3}).as_object().unwrap().clone();
        let Reply::Complete(res) = r.call_tool("add", args, &cx(Principal::local())).await.unwrap() else { panic!() };
        assert_eq!((res.structured_content, res.is_error), (Some(json!({"sum": 5})), false));
        let bad = json!({"a": "two", "b": 3}).as_object().unwrap().clone();
        let Reply::Complete(res) = r.call_tool("add", bad, &cx(Principal::local())).await.unwrap() else { panic!() };
        assert!(res.is_error);
        let not_object =
            r.tool(ToolSpec::new("s", |_, _| async { ToolResult::text("") }).input_schema(json!({"type": "string"})));
        assert!(matches!(not_object, Err(RegistryError::InvalidSchema { .. })));
    }
}
