//! Several layers served as one: a program's own [`Registry`](crate::layer::Registry) of
//! tools beside a workspace, say. [`Layers`] lists what its parts list, in their order, and
//! hands each request to the part it is for.

mod joined;
mod pages;

use super::{
    Change, ChangeFeed, ClientRoot, Completion, CompletionArg, CompletionRef, Layer, LayerError, Listener, Listing,
    OwnPage, Principal, Prompt, PromptArgs, PromptResult, Reply, RequestCx, Resource, ResourceContents,
    ResourceTemplate, ServerInfo, Skill, TaskSupport, Tool, ToolArgs, ToolResult,
};
use async_trait::async_trait;
use joined::Joined;
use std::sync::Arc;

/// Several layers as one [`Layer`].
///
/// - **Listings** are the parts' listings one after the other. Where two parts list a tool,
///   prompt or template of the same name (a resource or skill of the same URI), the first
///   part's is listed and the later one's is not: **the first part wins**. While the parts
///   hand out the same listings, so does this layer, so the engine's rendered pages last.
/// - **Calls** of a tool or prompt, its task support and the completion of a prompt's
///   argument or a template's variable go to the first part that lists it; a tool or prompt
///   none lists is unknown, and a reference none lists completes to nothing.
/// - **Reads** go to the parts in order until one knows the URI (answers anything but
///   [`LayerError::NotFound`]), since a part may read resources it does not list at once (a
///   template's, a skill's files, those it pages itself); when none does, the first part's
///   answer stands.
/// - **Pages**: when a part pages its resources itself ([`Layer::resource_page`]), the
///   resources are paged one part after the other, each page from one part; otherwise the
///   engine pages the joined listing.
/// - **Skills** are the parts' skills joined; none when no part serves skills.
/// - An update of a resource reaches a subscriber only when every part lets it
///   ([`Layer::may_see_resource`]).
/// - **Changes** every part raises are raised on this layer's feed.
/// - **Info** is the first part's, unless given ([`Layers::with_info`]).
pub struct Layers {
    parts: Vec<Arc<dyn Layer>>,
    info: Option<ServerInfo>,
    feed: Arc<ChangeFeed>,
    /// Raises each part's changes on `feed`: subscribed to every part's feed, which holds
    /// it weakly, so it lives here.
    relay: Arc<Listener>,
    tools: Joined<Tool>,
    resources: Joined<Resource>,
    templates: Joined<ResourceTemplate>,
    prompts: Joined<Prompt>,
    skills: Joined<Skill>,
}

impl Layers {
    /// `first` alone, to which [`with`](Layers::with) adds the others; the server's info is
    /// `first`'s.
    pub fn new(first: Arc<dyn Layer>) -> Self {
        let feed = Arc::new(ChangeFeed::new());
        let raise = feed.clone();
        let relay: Arc<Listener> = Arc::new(move |change: &Change| raise.notify(change.clone()));
        let layers = Layers {
            parts: Vec::new(),
            info: None,
            feed,
            relay,
            tools: Joined::default(),
            resources: Joined::default(),
            templates: Joined::default(),
            prompts: Joined::default(),
            skills: Joined::default(),
        };
        layers.with(first)
    }

    /// These layers and `part` after them, which wins no name it shares with them.
    pub fn with(mut self, part: Arc<dyn Layer>) -> Self {
        part.changes().subscribe(&self.relay);
        self.parts.push(part);
        self
    }

    /// These layers, saying they are `info` rather than the first part's info.
    pub fn with_info(mut self, info: ServerInfo) -> Self {
        self.info = Some(info);
        self
    }

    /// Each part's listing, joined by `joined`, an item known by `key`.
    fn join<T: Clone + Send + Sync + 'static>(
        &self,
        joined: &Joined<T>,
        listing: impl Fn(&dyn Layer) -> Listing<T>,
        key: impl Fn(&T) -> &str,
    ) -> Listing<T> {
        let parts: Vec<Listing<T>> = self.parts.iter().map(|part| listing(part.as_ref())).collect();
        joined.join(&parts, key)
    }

    /// The first part that lists a tool `name` to `who`.
    fn tool_owner(&self, name: &str, who: &Principal) -> Option<&dyn Layer> {
        self.owner(|part| part.tools(who).iter().any(|tool| tool.name == name))
    }

    /// The first part that lists a prompt `name` to `who`.
    fn prompt_owner(&self, name: &str, who: &Principal) -> Option<&dyn Layer> {
        self.owner(|part| part.prompts(who).iter().any(|prompt| prompt.name == name))
    }

    fn owner(&self, lists: impl Fn(&dyn Layer) -> bool) -> Option<&dyn Layer> {
        self.parts.iter().map(AsRef::as_ref).find(|part| lists(*part))
    }
}

#[async_trait]
impl Layer for Layers {
    fn info(&self) -> &ServerInfo {
        self.info.as_ref().unwrap_or_else(|| self.parts[0].info())
    }

    fn tools(&self, who: &Principal) -> Listing<Tool> {
        self.join(&self.tools, |part| part.tools(who), |tool| &tool.name)
    }

    fn resources(&self, who: &Principal) -> Listing<Resource> {
        self.join(&self.resources, |part| part.resources(who), |resource| &resource.uri)
    }

    fn templates(&self, who: &Principal) -> Listing<ResourceTemplate> {
        self.join(&self.templates, |part| part.templates(who), |template| &template.uri_template)
    }

    fn prompts(&self, who: &Principal) -> Listing<Prompt> {
        self.join(&self.prompts, |part| part.prompts(who), |prompt| &prompt.name)
    }

    fn resources_within(&self, who: &Principal, roots: &[ClientRoot]) -> Listing<Resource> {
        self.join(&self.resources, |part| part.resources_within(who, roots), |resource| &resource.uri)
    }

    fn task_support(&self, name: &str, who: &Principal) -> TaskSupport {
        self.tool_owner(name, who).map_or(TaskSupport::Forbidden, |part| part.task_support(name, who))
    }

    async fn call_tool(&self, name: &str, args: ToolArgs, cx: RequestCx) -> Result<Reply<ToolResult>, LayerError> {
        match self.tool_owner(name, cx.principal()) {
            Some(part) => part.call_tool(name, args, cx).await,
            None => Err(LayerError::NotFound(format!("Unknown tool: {name}"))),
        }
    }

    async fn read_resource(&self, uri: &str, cx: RequestCx) -> Result<Reply<Vec<ResourceContents>>, LayerError> {
        let mut unknown = None;
        for part in &self.parts {
            match part.read_resource(uri, cx.clone()).await {
                Err(not_found @ LayerError::NotFound(_)) => {
                    unknown.get_or_insert(not_found);
                }
                known => return known,
            }
        }
        Err(unknown.unwrap_or_else(|| LayerError::NotFound(format!("Unknown resource: {uri}"))))
    }

    async fn resource_page(&self, cursor: Option<&str>, limit: usize, cx: RequestCx) -> OwnPage {
        pages::page(&self.parts, cursor, limit, cx).await
    }

    async fn get_prompt(&self, name: &str, args: PromptArgs, cx: RequestCx) -> Result<Reply<PromptResult>, LayerError> {
        match self.prompt_owner(name, cx.principal()) {
            Some(part) => part.get_prompt(name, args, cx).await,
            None => Err(LayerError::NotFound(format!("Unknown prompt: {name}"))),
        }
    }

    async fn complete(&self, of: CompletionRef, arg: CompletionArg, cx: RequestCx) -> Result<Completion, LayerError> {
        let who = cx.principal();
        let owner = match &of {
            CompletionRef::Prompt { name } => self.prompt_owner(name, who),
            CompletionRef::Resource { uri } => {
                self.owner(|part| part.templates(who).iter().any(|template| &template.uri_template == uri))
            }
        };
        match owner {
            Some(part) => part.complete(of, arg, cx).await,
            None => Ok(Completion::from_values(Vec::new())),
        }
    }

    fn skills(&self, who: &Principal) -> Option<Listing<Skill>> {
        let served: Vec<Listing<Skill>> = self.parts.iter().filter_map(|part| part.skills(who)).collect();
        (!served.is_empty()).then(|| self.skills.join(&served, |skill| &skill.uri))
    }

    fn may_see_resource(&self, who: &Principal, uri: &str) -> bool {
        self.parts.iter().all(|part| part.may_see_resource(who, uri))
    }

    fn changes(&self) -> &ChangeFeed {
        &self.feed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{ScopeMap, ScopedLayer};
    use crate::layer::{PromptSpec, Registry, ResourceSpec, SkillSpec, TemplateSpec, ToolSpec};
    use std::sync::Mutex;

    /// A registry named `name` whose tools answer `name:tool`.
    fn registry(name: &'static str, tools: &[&'static str]) -> Registry {
        let mut registry = Registry::new(ServerInfo::new(name, "1"));
        for &tool in tools {
            let spec = ToolSpec::new(tool, move |_, _| async move { ToolResult::text(format!("{name}:{tool}")) });
            registry.tool(spec.task_support(TaskSupport::Optional)).expect("tool");
        }
        registry
    }

    fn cx() -> RequestCx {
        RequestCx::builder(Principal::local()).build()
    }

    async fn answer(layers: &Layers, tool: &str) -> Result<String, LayerError> {
        let Reply::Complete(result) = layers.call_tool(tool, ToolArgs::new(), cx()).await? else {
            panic!("{tool} asked for input")
        };
        Ok(serde_json::to_value(&result.content).expect("content")[0]["text"].as_str().expect("text").to_string())
    }

    #[tokio::test]
    async fn the_parts_are_listed_in_order_and_the_first_part_wins() {
        let layers =
            Layers::new(Arc::new(registry("a", &["echo", "add"]))).with(Arc::new(registry("b", &["echo", "time"])));
        let who = Principal::local();
        let names: Vec<String> = layers.tools(&who).iter().map(|tool| tool.name.clone()).collect();
        assert_eq!(names, ["echo", "add", "time"]);
        assert!(
            Arc::ptr_eq(&layers.tools(&who), &layers.tools(&Principal::anonymous())),
            "one listing while the parts'"
        );
        assert_eq!(answer(&layers, "echo").await, Ok("a:echo".into()));
        assert_eq!(answer(&layers, "time").await, Ok("b:time".into()));
        assert_eq!(answer(&layers, "nope").await, Err(LayerError::NotFound("Unknown tool: nope".into())));
        assert_eq!(layers.task_support("time", &who), TaskSupport::Optional);
        assert_eq!(layers.task_support("nope", &who), TaskSupport::Forbidden);
        assert_eq!(layers.info().name, "a");
        assert_eq!(layers.with_info(ServerInfo::new("both", "2")).info().name, "both");
    }

    #[tokio::test]
    async fn reads_prompts_and_completions_reach_the_part_that_serves_them() {
        let mut served = registry("b", &[]);
        served.resource(ResourceSpec::text("test://b", "b", "text/plain", "from b")).expect("resource");
        let template = TemplateSpec::new("test://b/{name}", "named", |(uri, _), _| async move {
            Ok::<_, crate::layer::HandlerError>(vec![ResourceContents::text(uri, "text/plain", "named")])
        });
        served.template(template.complete("name", |_, _| vec!["x".into()])).expect("template");
        let prompt = PromptSpec::new("greet", |_, _| async { PromptResult::new(Vec::new()) });
        served.prompt(prompt.complete("who", |_, _| vec!["you".into()])).expect("prompt");
        let layers = Layers::new(Arc::new(registry("a", &["echo"]))).with(Arc::new(served));

        let read = layers.read_resource("test://b/n", cx()).await.expect("read through the template");
        assert!(matches!(read, Reply::Complete(contents) if contents.len() == 1));
        assert!(layers.read_resource("test://b", cx()).await.is_ok());
        let unknown = layers.read_resource("test://none", cx()).await.err();
        assert_eq!(unknown, Some(LayerError::NotFound("Unknown resource: test://none".into())), "the first part's");
        assert!(layers.get_prompt("greet", PromptArgs::new(), cx()).await.is_ok());
        let arg = |name: &str| CompletionArg { name: name.into(), value: String::new(), context: Default::default() };
        let completed = |of| layers.complete(of, arg("who"), cx());
        assert_eq!(completed(CompletionRef::Prompt { name: "greet".into() }).await.expect("values").values, ["you"]);
        assert!(completed(CompletionRef::Prompt { name: "nope".into() }).await.expect("nothing").values.is_empty());
        let of = CompletionRef::Resource { uri: "test://b/{name}".into() };
        assert_eq!(layers.complete(of, arg("name"), cx()).await.expect("values").values, ["x"]);
    }

    #[test]
    fn every_parts_changes_are_raised_on_one_feed() {
        let (a, b) = (registry("a", &[]), registry("b", &[]));
        let (a_feed, b_feed) = (a.change_feed(), b.change_feed());
        let layers = Layers::new(Arc::new(a)).with(Arc::new(b));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let listener: Arc<Listener> = Arc::new(move |change: &Change| record.lock().unwrap().push(change.clone()));
        layers.changes().subscribe(&listener);
        a_feed.notify(Change::ToolsChanged);
        b_feed.notify(Change::ResourceUpdated("test://b".into()));
        assert_eq!(*seen.lock().unwrap(), [Change::ToolsChanged, Change::ResourceUpdated("test://b".into())]);
    }

    #[test]
    fn skills_are_joined_and_a_guarded_update_is_seen_only_where_every_part_lets_it() {
        let plain = Layers::new(Arc::new(registry("a", &[])));
        assert!(plain.skills(&Principal::local()).is_none(), "no part serves skills");
        let mut skilled = registry("b", &[]);
        skilled.skill(SkillSpec::new("---\nname: lint\ndescription: Lint\n---\nRun it.\n")).expect("skill");
        let map = ScopeMap::from_toml("[resources]\n\"file:///secret/*\" = \"files:secret\"").expect("map");
        let guarded = ScopedLayer::new(Arc::new(registry("c", &[])), Arc::new(map));
        let layers = plain.with(Arc::new(skilled)).with(Arc::new(guarded));
        let skills = layers.skills(&Principal::local()).expect("skills");
        assert_eq!(skills.iter().map(|skill| skill.uri.as_str()).collect::<Vec<_>>(), ["skill://lint/SKILL.md"]);
        let reader = Principal::new("r", ["mcp:tools"]);
        assert!(!layers.may_see_resource(&reader, "file:///secret/key"));
        assert!(layers.may_see_resource(&reader, "file:///open"));
    }
}
