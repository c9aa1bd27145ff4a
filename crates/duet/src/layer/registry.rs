//! A [`Layer`] built from specs: tools with validated arguments and output, resources, URI
//! templates, prompts and completions, each visible to every principal or to some roles
//! only, and the program's shared state for the handlers that take it. Listing order is the
//! order of registration; lookups go through an index by name or URI.

use super::filtered::Filtered;
use super::handler::Boxed;
use super::skill::{self, Built};
use super::spec::{Common, Completer, PromptParts, ResourceParts, Roles, Spec, TemplateParts, ToolParts};
use super::validation::Schemas;
use super::*;
use duet_wire::mirrored;
use std::collections::HashMap;
use std::time::Duration;

/// Why the registry refused a tool, resource, template, prompt or skill.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// Another of the same kind has that name (or URI).
    #[error("{kind} {name:?} is already registered")]
    Duplicate {
        /// `tool`, `resource`, `template`, `prompt` or `skill`.
        kind: &'static str,
        /// The name or URI registered twice.
        name: String,
    },
    /// The tool's name is not 1 to 128 of the characters the specification allows.
    #[error("invalid tool name {0:?}: use 1 to 128 of A-Z a-z 0-9 _ . -")]
    InvalidName(String),
    /// The tool's input or output schema does not compile as a JSON Schema.
    #[error("the {which} of tool {tool:?} is not a valid JSON Schema: {reason}")]
    InvalidSchema {
        /// The tool's name.
        tool: String,
        /// `inputSchema` or `outputSchema`.
        which: &'static str,
        /// What the schema compiler said.
        reason: String,
    },
    /// An `x-mcp-header` declaration of the tool's input schema breaks the rules of SEP-2243.
    #[error("tool {tool:?} cannot mirror an argument in a header: {reason}")]
    InvalidHeader {
        /// The tool's name.
        tool: String,
        /// The rule broken.
        reason: String,
    },
    /// A resource template's URI template does not parse.
    #[error(transparent)]
    Template(#[from] super::template::TemplateError),
    /// The skill breaks a rule of SEP-2640 (its frontmatter, its name, its files).
    #[error("cannot serve the skill: {0}")]
    InvalidSkill(String),
    /// A resource's URI cannot be made canonical, the only spelling clients reach it by.
    #[error("resource {uri:?}: {reason}")]
    InvalidUri {
        /// The URI as registered.
        uri: String,
        /// Why it cannot be made canonical.
        reason: duet_wire::canonical_uri::InvalidUri,
    },
}

/// Tools, resources, templates and prompts registered by a program, and the state `S` its
/// handlers share (see [`RequestCx::state`]).
pub struct Registry<S = ()> {
    info: ServerInfo,
    state: S,
    tools: Shelf<Tool, RunTool<S>>,
    resources: Shelf<Resource, Boxed<S, String, Vec<ResourceContents>>>,
    templates: Shelf<ResourceTemplate, RunTemplate<S>>,
    prompts: Shelf<Prompt, RunPrompt<S>>,
    /// Skills by the URI of their `SKILL.md`, which is also a listed resource.
    skills: Shelf<Skill, ()>,
    /// The other files of the skills, by URI: the skill's index and the contents.
    skill_files: HashMap<String, (usize, ResourceContents)>,
    /// Indices into `templates`, longest template string first.
    template_order: Vec<usize>,
    feed: Arc<ChangeFeed>,
}

struct RunTool<S> {
    handler: Boxed<S, ToolArgs, ToolResult>,
    schemas: Schemas,
    timeout: Option<Duration>,
}

struct RunTemplate<S> {
    template: UriTemplate,
    completions: HashMap<String, Completer>,
    handler: Boxed<S, (String, BTreeMap<String, String>), Vec<ResourceContents>>,
}

struct RunPrompt<S> {
    completions: HashMap<String, Completer>,
    handler: Boxed<S, BTreeMap<String, String>, PromptResult>,
}

/// The registered primitives of one kind: their definitions in registration order (the
/// listing), what runs each and who may see it, and an index by name or URI.
struct Shelf<D, E> {
    defs: Listing<D>,
    entries: Vec<(Roles, E)>,
    by_key: HashMap<String, usize>,
    /// Whether some entry is for some roles only.
    restricted: bool,
    filtered: Filtered<D>,
}

impl<D, E> Default for Shelf<D, E> {
    fn default() -> Self {
        Shelf {
            defs: Listing::default(),
            entries: Vec::new(),
            by_key: HashMap::new(),
            restricted: false,
            filtered: Filtered::default(),
        }
    }
}

impl<D: Clone + Send + Sync + 'static, E> Shelf<D, E> {
    fn add(&mut self, kind: &'static str, key: String, def: D, roles: Roles, entry: E) -> Result<(), RegistryError> {
        if self.by_key.contains_key(&key) {
            return Err(RegistryError::Duplicate { kind, name: key });
        }
        self.by_key.insert(key, self.entries.len());
        // In place unless a listing handed out earlier still holds the definitions.
        Arc::make_mut(&mut self.defs).push(def);
        self.restricted |= !roles.is_everyone();
        self.entries.push((roles, entry));
        self.filtered = Filtered::default();
        Ok(())
    }

    /// What `who` sees: one listing shared by every principal who sees the same items.
    fn listing(&self, who: &Principal) -> Listing<D> {
        if !self.restricted {
            return self.defs.clone();
        }
        self.filtered.filter(&self.defs, |i, _| self.entries[i].0.allow(who))
    }

    /// The entry registered under `key`, if `who` may see it.
    fn get(&self, key: &str, who: &Principal) -> Option<(&D, &E)> {
        let i = *self.by_key.get(key)?;
        let (roles, entry) = &self.entries[i];
        roles.allow(who).then(|| (&self.defs[i], entry))
    }
}

impl Registry<()> {
    /// An empty registry whose handlers share no state.
    pub fn new(info: ServerInfo) -> Self {
        Registry::with_state(info, ())
    }
}

impl<S: Clone + Send + Sync + 'static> Registry<S> {
    /// A registry whose handlers share `state`: each call's context carries a clone of it
    /// ([`RequestCx::state`]), so make it cheap to clone (an `Arc`, or a struct of them).
    pub fn with_state(info: ServerInfo, state: S) -> Self {
        Registry {
            info,
            state,
            tools: Shelf::default(),
            resources: Shelf::default(),
            templates: Shelf::default(),
            prompts: Shelf::default(),
            skills: Shelf::default(),
            skill_files: HashMap::new(),
            template_order: Vec::new(),
            feed: Arc::new(ChangeFeed::new()),
        }
    }

    /// The state handlers share.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The change feed, for handlers that raise changes (clone it before registering them).
    pub fn change_feed(&self) -> Arc<ChangeFeed> {
        self.feed.clone()
    }

    /// Registers a tool. Refused when its name is taken or invalid, a schema does not
    /// compile (the input schema's root must be `type: object`), or a mirrored-header
    /// declaration breaks SEP-2243.
    pub fn tool(&mut self, spec: ToolSpec<S>) -> Result<&mut Self, RegistryError> {
        let Spec {
            parts: ToolParts { name, input_schema, output_schema, annotations, timeout, task_support, handler },
            common,
        } = spec;
        if name.is_empty() || name.len() > 128 || !name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        {
            return Err(RegistryError::InvalidName(name));
        }
        let schemas = Schemas::compile(&name, &input_schema, output_schema.as_ref())?;
        mirrored::mirrored_args(&input_schema)
            .map_err(|reason| RegistryError::InvalidHeader { tool: name.clone(), reason })?;
        let Common { about, roles } = common;
        let execution = (task_support != TaskSupport::Forbidden).then_some(ToolExecution { task_support });
        let def = Tool { name: name.clone(), about, input_schema, output_schema, annotations, execution };
        self.tools.add("tool", name, def, roles, RunTool { handler, schemas, timeout })?;
        Ok(self)
    }

    /// Registers a resource, listed and read by its canonical URI. Refused when that URI is
    /// taken or cannot be made canonical.
    pub fn resource(&mut self, spec: ResourceSpec<S>) -> Result<&mut Self, RegistryError> {
        let Spec { parts: ResourceParts { uri, name, mime_type, size, handler }, common } = spec;
        // Listed as it is read: in the canonical spelling every request's URI is given.
        let uri =
            duet_wire::canonical_uri::canonicalize(&uri).map_err(|reason| RegistryError::InvalidUri { uri, reason })?;
        let Common { about, roles } = common;
        let def = Resource { uri: uri.clone(), name, about, mime_type, size, annotations: None };
        self.resources.add("resource", uri, def, roles, handler)?;
        Ok(self)
    }

    /// Registers a resource template; a read tries the templates longest first. Refused
    /// when the template does not parse or is taken.
    pub fn template(&mut self, spec: TemplateSpec<S>) -> Result<&mut Self, RegistryError> {
        let Spec { parts: TemplateParts { uri_template, name, mime_type, completions, handler }, common } = spec;
        let template = UriTemplate::parse(&uri_template)?;
        let Common { about, roles } = common;
        let def = ResourceTemplate { uri_template: uri_template.clone(), name, about, mime_type, annotations: None };
        self.templates.add("template", uri_template, def, roles, RunTemplate { template, completions, handler })?;
        let mut order: Vec<usize> = (0..self.templates.defs.len()).collect();
        order.sort_by_key(|i| std::cmp::Reverse(self.templates.defs[*i].uri_template.len()));
        self.template_order = order;
        Ok(self)
    }

    /// Registers a prompt. Refused when its name is taken.
    pub fn prompt(&mut self, spec: PromptSpec<S>) -> Result<&mut Self, RegistryError> {
        let Spec { parts: PromptParts { name, arguments, completions, handler }, common } = spec;
        let Common { about, roles } = common;
        let def = Prompt { name: name.clone(), about, arguments };
        self.prompts.add("prompt", name, def, roles, RunPrompt { completions, handler })?;
        Ok(self)
    }

    /// A skill (SEP-2640): listed by `skills/list`, its `SKILL.md` listed among the
    /// resources, each of its files read at `skill://<path>/<file>`. Refused when its
    /// frontmatter, name or files break the extension's rules, or its URI is taken.
    pub fn skill(&mut self, spec: SkillSpec) -> Result<&mut Self, RegistryError> {
        let Spec { parts, common } = spec;
        let Built { skill, contents } = parts.build().map_err(RegistryError::InvalidSkill)?;
        let Common { about, roles } = common;
        let mut listed = skill.manifest_resource();
        listed.about = About { description: about.description.or(listed.about.description), ..about };
        let mut contents = contents.into_iter().map(|(uri, bytes)| (uri.clone(), skill_contents(uri, bytes)));
        let Some((uri, manifest)) = contents.next() else { unreachable!("a built skill has its SKILL.md") };
        let read: Boxed<S, String, Vec<ResourceContents>> =
            super::handler::boxed(move |_, _| futures::future::ready(vec![manifest.clone()]));
        for (kind, taken) in [("skill", &self.skills.by_key), ("resource", &self.resources.by_key)] {
            if taken.contains_key(&uri) {
                return Err(RegistryError::Duplicate { kind, name: uri });
            }
        }
        let index = self.skills.entries.len();
        self.skills.add("skill", uri.clone(), skill, roles.clone(), ())?;
        self.resources.add("resource", uri, listed, roles, read)?;
        self.skill_files.extend(contents.map(|(uri, file)| (uri, (index, file))));
        Ok(self)
    }

    /// The context a handler gets: the request's, with this registry's state.
    fn cx(&self, cx: RequestCx) -> RequestCx<S> {
        cx.with_state(self.state.clone())
    }

    async fn run_tool(
        &self,
        def: &Tool,
        tool: &RunTool<S>,
        args: ToolArgs,
        cx: RequestCx,
    ) -> Result<Reply<ToolResult>, LayerError> {
        let args = Value::Object(args);
        if let Some(problems) = tool.schemas.argument_problems(&args) {
            return Ok(Reply::Complete(ToolResult::error(format!("Invalid arguments: {problems}"))));
        }
        let Value::Object(args) = args else { unreachable!("validated as an object above") };
        let run = (tool.handler)(args, self.cx(cx));
        let outcome = match tool.timeout {
            Some(limit) => match tokio::time::timeout(limit, run).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    let msg = format!("Tool {} timed out after {:.1} s", def.name, limit.as_secs_f64());
                    return Ok(Reply::Complete(ToolResult::error(msg)));
                }
            },
            None => run.await,
        };
        match outcome {
            Ok(Reply::Complete(result)) => Ok(Reply::Complete(tool.schemas.check_output(&def.name, result))),
            Ok(input) => Ok(input),
            Err(e) => match as_layer_error(&e) {
                Some(err @ LayerError::MissingCapability { .. }) => Err(err.clone()),
                _ => Ok(Reply::Complete(ToolResult::error(e.to_string()))),
            },
        }
    }
}

/// Handler failures of resources and prompts: a [`LayerError`] keeps its meaning.
fn protocol_error(error: HandlerError) -> LayerError {
    match as_layer_error(&error) {
        Some(e) => e.clone(),
        None => LayerError::Internal(error.to_string()),
    }
}

#[async_trait]
impl<S: Clone + Send + Sync + 'static> Layer for Registry<S> {
    fn info(&self) -> &ServerInfo {
        &self.info
    }

    fn tools(&self, who: &Principal) -> Listing<Tool> {
        self.tools.listing(who)
    }

    fn resources(&self, who: &Principal) -> Listing<Resource> {
        self.resources.listing(who)
    }

    fn templates(&self, who: &Principal) -> Listing<ResourceTemplate> {
        self.templates.listing(who)
    }

    fn prompts(&self, who: &Principal) -> Listing<Prompt> {
        self.prompts.listing(who)
    }

    fn task_support(&self, name: &str, who: &Principal) -> TaskSupport {
        self.tools.get(name, who).map_or(TaskSupport::Forbidden, |(def, _)| def.task_support())
    }

    async fn call_tool(&self, name: &str, args: ToolArgs, cx: RequestCx) -> Result<Reply<ToolResult>, LayerError> {
        match self.tools.get(name, cx.principal()) {
            Some((def, tool)) => self.run_tool(def, tool, args, cx).await,
            None => Err(LayerError::NotFound(format!("Unknown tool: {name}"))),
        }
    }

    async fn read_resource(&self, uri: &str, cx: RequestCx) -> Result<Reply<Vec<ResourceContents>>, LayerError> {
        let who = cx.principal();
        if let Some((_, read)) = self.resources.get(uri, who) {
            return read(uri.to_string(), self.cx(cx)).await.map_err(protocol_error);
        }
        for i in &self.template_order {
            let (roles, t) = &self.templates.entries[*i];
            if !roles.allow(who) {
                continue;
            }
            if let Some(vars) = t.template.matches(uri) {
                return (t.handler)((uri.to_string(), vars), self.cx(cx)).await.map_err(protocol_error);
            }
        }
        match self.skill_files.get(uri) {
            Some((skill, contents)) if self.skills.entries[*skill].0.allow(who) => {
                Ok(Reply::Complete(vec![contents.clone()]))
            }
            _ => Err(LayerError::NotFound(format!("Unknown resource: {uri}"))),
        }
    }

    async fn get_prompt(&self, name: &str, args: PromptArgs, cx: RequestCx) -> Result<Reply<PromptResult>, LayerError> {
        let Some((def, prompt)) = self.prompts.get(name, cx.principal()) else {
            return Err(LayerError::NotFound(format!("Unknown prompt: {name}")));
        };
        let missing: Vec<&str> = def
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
        (prompt.handler)(args, self.cx(cx)).await.map_err(protocol_error)
    }

    async fn complete(&self, of: CompletionRef, arg: CompletionArg, cx: RequestCx) -> Result<Completion, LayerError> {
        let who = cx.principal();
        let completer = match &of {
            CompletionRef::Prompt { name } => {
                self.prompts.get(name, who).and_then(|(_, p)| p.completions.get(&arg.name))
            }
            CompletionRef::Resource { uri } => {
                self.templates.get(uri, who).and_then(|(_, t)| t.completions.get(&arg.name))
            }
        };
        let values = completer.map(|f| f(&arg.value, &arg.context)).unwrap_or_default();
        Ok(Completion::from_values(values))
    }

    fn skills(&self, who: &Principal) -> Option<Listing<Skill>> {
        (!self.skills.defs.is_empty()).then(|| self.skills.listing(who))
    }

    fn changes(&self) -> &ChangeFeed {
        &self.feed
    }
}

/// A skill file as resource contents: text when it is UTF-8 (Markdown for `.md` files),
/// bytes otherwise.
fn skill_contents(uri: String, bytes: Vec<u8>) -> ResourceContents {
    match String::from_utf8(bytes) {
        Ok(text) => {
            let mime = if uri.ends_with(".md") { skill::MARKDOWN } else { "text/plain" };
            ResourceContents::text(uri, mime, text)
        }
        Err(e) => ResourceContents::blob(uri, "application/octet-stream", e.as_bytes()),
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
        let no_uri = r.resource(ResourceSpec::text("notes", "notes", "text/plain", ""));
        let message = no_uri.err().map(|e| e.to_string());
        assert_eq!(message.as_deref(), Some("resource \"notes\": not a valid URI: relative URL without a base"));
    }

    #[tokio::test]
    async fn a_resource_is_listed_and_read_by_its_canonical_uri() {
        let mut r = Registry::new(ServerInfo::new("t", "1"));
        r.resource(ResourceSpec::text("MEM://notes/./a%7Eb", "notes", "text/plain", "x")).unwrap();
        let listed: Vec<_> = r.resources(&Principal::anonymous()).iter().map(|r| r.uri.clone()).collect();
        assert_eq!(listed, ["mem://notes/a~b"]);
        assert!(r.read_resource("mem://notes/a~b", cx(Principal::anonymous())).await.is_ok());
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Routed {
        #[schemars(extend("x-mcp-header" = "Region"))]
        region: String,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Fractional {
        #[schemars(extend("x-mcp-header" = "Weight"))]
        weight: f64,
    }

    #[test]
    fn header_mirrored_arguments_are_checked_at_registration() {
        let mut r = Registry::new(ServerInfo::new("t", "1"));
        r.tool(ToolSpec::typed("routed", |_: Routed, _| async { ToolResult::text("") })).unwrap();
        assert_eq!(r.tools(&Principal::local())[0].input_schema["properties"]["region"]["x-mcp-header"], "Region");
        let number = r.tool(ToolSpec::typed("weighed", |_: Fractional, _| async { ToolResult::text("") }));
        let Err(RegistryError::InvalidHeader { tool, reason }) = number else { panic!("{:?}", number.is_ok()) };
        assert_eq!(tool, "weighed");
        assert!(reason.contains("\"Weight\" annotates 'weight', whose type is \"number\""), "{reason}");
        let spaced = r.tool(ToolSpec::new("spaced", |_, _| async { ToolResult::text("") }).input_schema(json!({
            "type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "My Region"}}
        })));
        let message = spaced.err().expect("refused").to_string();
        assert!(message.starts_with("tool \"spaced\" cannot mirror an argument in a header: "), "{message}");
        assert!(message.contains("' ' is not allowed"), "{message}");
        assert_eq!(r.tools(&Principal::local()).len(), 1, "refused tools are not registered");
    }

    #[tokio::test]
    async fn skills_are_served_to_the_roles_that_may_see_them() {
        let mut r = Registry::new(ServerInfo::new("t", "1"));
        assert!(r.skills(&Principal::local()).is_none(), "no skill, no extension");
        let ops = "---\nname: ops\ndescription: Runbooks\n---\n";
        r.skill(SkillSpec::new(ops).file("runbook.md", "# Runbook").roles(["admin"])).unwrap();
        r.skill(SkillSpec::new("---\nname: lint\ndescription: Lint\n---\n").title("Linting")).unwrap();
        let names = |p: &Principal| r.skills(p).unwrap().iter().map(|s| s.name().to_string()).collect::<Vec<_>>();
        assert_eq!(names(&Principal::local()), ["lint"]);
        assert_eq!(names(&Principal::new("root", ["admin"])), ["ops", "lint"]);
        let listed: Vec<_> =
            r.resources(&Principal::local()).iter().map(|l| (l.uri.clone(), l.about.title.clone())).collect();
        assert_eq!(listed, [("skill://lint/SKILL.md".to_string(), Some("Linting".to_string()))]);
        for uri in ["skill://ops/SKILL.md", "skill://ops/runbook.md"] {
            assert!(
                matches!(r.read_resource(uri, cx(Principal::local())).await, Err(LayerError::NotFound(_))),
                "{uri}"
            );
            let Reply::Complete(read) = r.read_resource(uri, cx(Principal::new("root", ["admin"]))).await.unwrap()
            else {
                panic!()
            };
            assert_eq!(read[0].uri, uri);
        }
        let twice = r.skill(SkillSpec::new(ops));
        assert!(matches!(twice, Err(RegistryError::Duplicate { kind: "skill", .. })));
        let bad = r.skill(SkillSpec::new("no frontmatter"));
        let Err(RegistryError::InvalidSkill(why)) = bad else { panic!("refused") };
        assert!(why.contains("frontmatter"), "{why}");
    }

    #[tokio::test]
    async fn roles_hide_tools() {
        let r = registry();
        let names = |p: &Principal| r.tools(p).iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&Principal::local()), ["echo", "liar"]);
        assert_eq!(names(&Principal::new("root", ["admin"])), ["echo", "admin", "liar"]);
        let (local, other) = (r.tools(&Principal::local()), r.tools(&Principal::new("other", ["ops"])));
        assert!(Arc::ptr_eq(&local, &other), "principals who see the same tools share one listing");
        assert!(Arc::ptr_eq(&r.tools(&Principal::new("root", ["admin"])), &r.tools.defs));
        let hidden = r.call_tool("admin", Map::new(), cx(Principal::local())).await;
        assert_eq!(hidden.unwrap_err(), LayerError::NotFound("Unknown tool: admin".into()));
    }

    #[tokio::test]
    async fn arguments_and_output_are_validated() {
        let r = registry();
        let Reply::Complete(res) = r.call_tool("echo", Map::new(), cx(Principal::local())).await.unwrap() else {
            panic!()
        };
        assert!(res.is_error);
        let Reply::Complete(res) = r.call_tool("liar", Map::new(), cx(Principal::local())).await.unwrap() else {
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
        r.tool(ToolSpec::typed("add", |i: Add, _| async move { Json(Sum { sum: i.a + i.b }) })).unwrap();
        let def = &r.tools(&Principal::local())[0];
        assert_eq!(def.input_schema["required"], json!(["a", "b"]));
        assert_eq!(def.output_schema.as_ref().unwrap()["properties"]["sum"]["type"], "integer");
        let args = json!({"a": 2, "b": 3}).as_object().unwrap().clone();
        let Reply::Complete(res) = r.call_tool("add", args, cx(Principal::local())).await.unwrap() else { panic!() };
        assert_eq!((res.structured_content, res.is_error), (Some(json!({"sum": 5})), false));
        let bad = json!({"a": "two", "b": 3}).as_object().unwrap().clone();
        let Reply::Complete(res) = r.call_tool("add", bad, cx(Principal::local())).await.unwrap() else { panic!() };
        assert!(res.is_error);
        let not_object =
            r.tool(ToolSpec::new("s", |_, _| async { ToolResult::text("") }).input_schema(json!({"type": "string"})));
        assert!(matches!(not_object, Err(RegistryError::InvalidSchema { .. })));
    }

    #[derive(Clone)]
    struct Desk {
        refunds: Arc<std::sync::atomic::AtomicU64>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Refund {
        cents: u64,
    }

    async fn refund(r: Refund, cx: RequestCx<Desk>) -> Json<Sum> {
        let total = cx.state().refunds.fetch_add(r.cents, std::sync::atomic::Ordering::SeqCst) + r.cents;
        Json(Sum { sum: total as i64 })
    }

    #[tokio::test]
    async fn handlers_share_the_registry_state() {
        let desk = Desk { refunds: Arc::default() };
        let mut r = Registry::with_state(ServerInfo::new("t", "1"), desk.clone());
        r.tool(ToolSpec::typed("refund", refund)).unwrap();
        r.tool(ToolSpec::new("count", |_, cx: RequestCx<Desk>| async move {
            ToolResult::text(cx.state().refunds.load(std::sync::atomic::Ordering::SeqCst).to_string())
        }))
        .unwrap();
        let args = |v: Value| v.as_object().unwrap().clone();
        for cents in [5, 7] {
            let call = r.call_tool("refund", args(json!({"cents": cents})), cx(Principal::local())).await;
            let Reply::Complete(res) = call.unwrap() else { panic!() };
            assert!(!res.is_error, "{res:?}");
        }
        assert_eq!(desk.refunds.load(std::sync::atomic::Ordering::SeqCst), 12, "every call saw the same state");
        let listed = r.tools(&Principal::local());
        assert_eq!(listed[0].output_schema.as_ref().unwrap()["properties"]["sum"]["type"], "integer");
        let Reply::Complete(count) = r.call_tool("count", Map::new(), cx(Principal::local())).await.unwrap() else {
            panic!()
        };
        assert_eq!(count, ToolResult::text("12"));
    }

    #[test]
    fn registering_keeps_one_listing_until_it_changes() {
        let mut r = Registry::new(ServerInfo::new("t", "1"));
        for i in 0..3 {
            r.tool(ToolSpec::new(format!("t{i}"), |_, _| async { ToolResult::text("") })).unwrap();
        }
        let first = r.tools(&Principal::local());
        assert!(Arc::ptr_eq(&first, &r.tools(&Principal::anonymous())), "nothing restricted: one listing for all");
        r.tool(ToolSpec::new("t3", |_, _| async { ToolResult::text("") })).unwrap();
        let second = r.tools(&Principal::local());
        assert_eq!((first.len(), second.len()), (3, 4), "a listing handed out keeps what it listed");
    }
}
