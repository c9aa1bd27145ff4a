//! A [`Layer`] seen through a [`ScopeMap`]: each principal lists only the tools, prompts,
//! resources and templates its grants cover, and a call of anything else is refused. The
//! HTTP transport answers such a call with 403 `insufficient_scope` before the engine runs;
//! this wrapper is the same rule for every other path (stdio, the legacy SSE transport, a
//! batch, a program calling the engine in-process).
//!
//! Resource rules govern every way to a resource, not only `resources/read`: each call it
//! lets through carries the rules in its context ([`RequestCx::may_reach`]), and a layer that
//! reaches resources by other ways (a tool's path, a prompt's file, a completion) asks there
//! with the canonical URI of each before it opens, lists or completes it. The same rule
//! decides which subscribers an update of a resource reaches ([`Layer::may_see_resource`]).
//!
//! It is a [`Middleware`](crate::layer::Middleware): the server's info, task support and
//! changes are the inner layer's.

use super::scopes::ScopeMap;
use crate::layer::{
    ClientRoot, Completion, CompletionArg, CompletionRef, Filtered, Layer, LayerError, Listing, OwnPage, Principal,
    Prompt, PromptArgs, PromptResult, Reply, RequestCx, Resource, ResourceContents, ResourceTemplate, Skill, Tool,
    ToolArgs, ToolResult,
};
use async_trait::async_trait;
use duet_wire::method::Primitive;
use std::sync::Arc;

/// `inner`, filtered and guarded per principal by `map`.
pub struct ScopedLayer {
    inner: Arc<dyn Layer>,
    map: Arc<ScopeMap>,
    tools: Filtered<Tool>,
    resources: Filtered<Resource>,
    templates: Filtered<ResourceTemplate>,
    prompts: Filtered<Prompt>,
}

impl ScopedLayer {
    /// `inner`, with what each principal sees and may call limited by `map`.
    pub fn new(inner: Arc<dyn Layer>, map: Arc<ScopeMap>) -> Self {
        ScopedLayer {
            inner,
            map,
            tools: Filtered::default(),
            resources: Filtered::default(),
            templates: Filtered::default(),
            prompts: Filtered::default(),
        }
    }

    fn filter<T: Clone + Send + Sync + 'static>(
        &self,
        filtered: &Filtered<T>,
        all: Listing<T>,
        kind: Primitive,
        who: &Principal,
        key: impl Fn(&T) -> &str,
    ) -> Listing<T> {
        filtered.filter(&all, |_, item| self.map.allows(kind, key(item), who))
    }

    /// `cx`, reaching only the resources its principal's grants cover, however the handler
    /// reaches them ([`RequestCx::may_reach`]): the `[resources]` rules hold for a tool's
    /// path, a prompt's file and a completion as they do for `resources/read`.
    fn reaching(&self, cx: RequestCx) -> RequestCx {
        let map = self.map.clone();
        let held = map.grants(cx.principal());
        cx.reaching_only(Arc::new(move |uri: &str| {
            let required = map.required(Primitive::Resource, uri);
            if required.iter().all(|scope| held.contains(scope)) {
                Ok(())
            } else {
                Err(format!("it requires the scopes: {}", required.join(" ")))
            }
        }))
    }

    fn guard(&self, kind: Primitive, name: &str, who: &Principal) -> Result<(), LayerError> {
        let missing = self.map.missing(kind, name, who);
        if missing.is_empty() {
            return Ok(());
        }
        let required = self.map.required(kind, name).join(" ");
        Err(LayerError::AccessDenied(format!("{} {name} requires the scopes: {required}", kind.label())))
    }
}

// Named by its path: with `Middleware` imported as well as `Layer`, a call of a method both
// have on a `ScopedLayer` (the tests make many) would be ambiguous.
#[async_trait]
impl crate::layer::Middleware for ScopedLayer {
    fn inner(&self) -> &dyn Layer {
        &*self.inner
    }

    fn tools(&self, who: &Principal) -> Listing<Tool> {
        self.filter(&self.tools, self.inner.tools(who), Primitive::Tool, who, |t| &t.name)
    }

    fn resources(&self, who: &Principal) -> Listing<Resource> {
        self.filter(&self.resources, self.inner.resources(who), Primitive::Resource, who, |r| &r.uri)
    }

    fn resources_within(&self, who: &Principal, roots: &[ClientRoot]) -> Listing<Resource> {
        self.filter(&self.resources, self.inner.resources_within(who, roots), Primitive::Resource, who, |r| &r.uri)
    }

    fn templates(&self, who: &Principal) -> Listing<ResourceTemplate> {
        self.filter(&self.templates, self.inner.templates(who), Primitive::Resource, who, |t| &t.uri_template)
    }

    fn prompts(&self, who: &Principal) -> Listing<Prompt> {
        self.filter(&self.prompts, self.inner.prompts(who), Primitive::Prompt, who, |p| &p.name)
    }

    async fn call_tool(&self, name: &str, args: ToolArgs, cx: RequestCx) -> Result<Reply<ToolResult>, LayerError> {
        self.guard(Primitive::Tool, name, cx.principal())?;
        self.inner.call_tool(name, args, self.reaching(cx)).await
    }

    async fn read_resource(&self, uri: &str, cx: RequestCx) -> Result<Reply<Vec<ResourceContents>>, LayerError> {
        self.guard(Primitive::Resource, uri, cx.principal())?;
        self.inner.read_resource(uri, self.reaching(cx)).await
    }

    async fn resource_page(&self, cursor: Option<&str>, limit: usize, cx: RequestCx) -> OwnPage {
        let page = self.inner.resource_page(cursor, limit, cx.clone()).await?;
        Some(page.map(|mut page| {
            page.resources.retain(|r| self.map.allows(Primitive::Resource, &r.uri, cx.principal()));
            page
        }))
    }

    async fn get_prompt(&self, name: &str, args: PromptArgs, cx: RequestCx) -> Result<Reply<PromptResult>, LayerError> {
        self.guard(Primitive::Prompt, name, cx.principal())?;
        self.inner.get_prompt(name, args, self.reaching(cx)).await
    }

    async fn complete(&self, of: CompletionRef, arg: CompletionArg, cx: RequestCx) -> Result<Completion, LayerError> {
        let allowed = match &of {
            CompletionRef::Prompt { name } => self.map.allows(Primitive::Prompt, name, cx.principal()),
            CompletionRef::Resource { uri } => self.map.allows(Primitive::Resource, uri, cx.principal()),
        };
        if !allowed {
            return Ok(Completion { values: Vec::new(), total: None, has_more: None });
        }
        self.inner.complete(of, arg, self.reaching(cx)).await
    }

    /// The rule a `resources/read` of `uri` follows: an update of a guarded resource
    /// reaches only the subscribers who may read it, whatever URI above it they follow.
    fn may_see_resource(&self, who: &Principal, uri: &str) -> bool {
        self.map.allows(Primitive::Resource, uri, who) && self.inner.may_see_resource(who, uri)
    }

    /// No skills are served through a scope map: the map has no rule for them, so a
    /// scoped server keeps the inner layer's skills hidden, as it always has.
    fn skills(&self, _who: &Principal) -> Option<Listing<Skill>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::{PromptSpec, Registry, ResourcePage, ServerInfo, ToolSpec};
    use serde_json::Map;

    fn layer() -> ScopedLayer {
        let mut registry = Registry::new(ServerInfo::new("t", "1"));
        for name in ["echo", "write_file"] {
            let tool = ToolSpec::new(name, |_, _| async { ToolResult::text("ok") });
            registry.tool(tool).expect("tool");
        }
        let prompt = PromptSpec::new("greet", |_, _| async { PromptResult::new(Vec::new()) });
        registry.prompt(prompt).expect("prompt");
        let map = ScopeMap::from_toml("[tools]\n\"*\" = \"mcp:tools\"\nwrite_file = [\"mcp:tools\", \"files:write\"]")
            .expect("map");
        ScopedLayer::new(Arc::new(registry), Arc::new(map))
    }

    fn names(tools: &[Tool]) -> Vec<&str> {
        tools.iter().map(|t| t.name.as_str()).collect()
    }

    #[tokio::test]
    async fn listings_and_calls_follow_the_grants() {
        let layer = layer();
        let reader = Principal::new("r", ["mcp:tools"]);
        let writer = Principal::new("w", ["mcp:tools", "files:write"]);
        assert_eq!(names(&layer.tools(&reader)), ["echo"]);
        assert_eq!(names(&layer.tools(&writer)), ["echo", "write_file"]);
        let other_reader = Principal::new("r2", ["mcp:tools"]);
        assert!(Arc::ptr_eq(&layer.tools(&reader), &layer.tools(&other_reader)), "one listing per visible subset");
        assert!(layer.tools(&Principal::anonymous()).is_empty());
        assert_eq!(layer.prompts(&Principal::anonymous()).len(), 1, "unguarded kinds stay visible");
        let cx = RequestCx::builder(reader).build();
        let refused = layer.call_tool("write_file", Map::new(), cx.clone()).await.err();
        assert_eq!(
            refused,
            Some(LayerError::AccessDenied("Tool write_file requires the scopes: mcp:tools files:write".into()))
        );
        assert!(layer.call_tool("echo", Map::new(), cx.clone()).await.is_ok());
    }

    #[tokio::test]
    async fn handlers_reach_only_the_resources_the_rules_allow() {
        let mut registry = Registry::new(ServerInfo::new("t", "1"));
        let probe = ToolSpec::new("probe", |args: ToolArgs, cx: RequestCx| async move {
            let uri = args.get("uri").and_then(|u| u.as_str()).unwrap_or_default();
            ToolResult::text(match cx.may_reach(uri) {
                Ok(()) => "reached".to_string(),
                Err(why) => why,
            })
        });
        registry.tool(probe).expect("tool");
        let map = ScopeMap::from_toml("[resources]\n\"file:///secret/*\" = \"files:secret\"").expect("map");
        let layer = ScopedLayer::new(Arc::new(registry), Arc::new(map));
        let probe = |who: Principal, uri: &'static str| {
            let layer = &layer;
            async move {
                let args = serde_json::json!({"uri": uri}).as_object().cloned().unwrap_or_default();
                let reply = layer.call_tool("probe", args, RequestCx::builder(who).build()).await.expect("a result");
                let Reply::Complete(result) = reply else { panic!("not complete") };
                serde_json::to_value(&result.content).expect("content")[0]["text"].clone()
            }
        };
        let reader = Principal::new("r", ["mcp:tools"]);
        assert_eq!(probe(reader.clone(), "file:///secret/key").await, "it requires the scopes: files:secret");
        assert_eq!(probe(reader, "file:///open").await, "reached");
        assert_eq!(probe(Principal::new("s", ["files:secret"]), "file:///secret/key").await, "reached");
        let unguarded = RequestCx::builder(Principal::anonymous()).build();
        assert_eq!(unguarded.may_reach("file:///secret/key"), Ok(()), "no scope map, no rule");
    }

    /// A registry that narrows its listing to the client's roots (keeping the resources the
    /// roots' URIs name) and pages its resources itself: two a page, `file:///a`,
    /// `file:///secret/b` then `file:///c`.
    struct Narrowing(Registry);

    #[async_trait]
    impl crate::layer::Middleware for Narrowing {
        fn inner(&self) -> &dyn Layer {
            &self.0
        }
        fn resources_within(&self, who: &Principal, roots: &[ClientRoot]) -> Listing<Resource> {
            let all = self.0.resources(who);
            Arc::new(all.iter().filter(|r| roots.iter().any(|root| root.uri == r.uri)).cloned().collect())
        }
        async fn resource_page(&self, cursor: Option<&str>, _limit: usize, _cx: RequestCx) -> OwnPage {
            let uris: &[&str] = if cursor.is_none() { &["file:///a", "file:///secret/b"] } else { &["file:///c"] };
            let resources = uris
                .iter()
                .map(|uri| Resource {
                    uri: uri.to_string(),
                    name: uri.to_string(),
                    about: Default::default(),
                    mime_type: None,
                    size: None,
                    annotations: None,
                })
                .collect();
            Some(Ok(ResourcePage { resources, next_cursor: cursor.is_none().then(|| "next".into()) }))
        }
    }

    #[tokio::test]
    async fn pages_a_layer_makes_follow_the_grants() {
        let map = ScopeMap::from_toml("[resources]\n\"file:///secret/*\" = \"files:secret\"").expect("map");
        let layer = ScopedLayer::new(Arc::new(Narrowing(Registry::new(ServerInfo::new("t", "1")))), Arc::new(map));
        let uris =
            |page: ResourcePage| (page.resources.into_iter().map(|r| r.uri).collect::<Vec<_>>(), page.next_cursor);
        let page = |who: Principal, cursor: Option<&'static str>| {
            let layer = &layer;
            async move { uris(layer.resource_page(cursor, 2, RequestCx::builder(who).build()).await.unwrap().unwrap()) }
        };
        let reader = Principal::new("r", ["mcp:tools"]);
        assert_eq!(page(reader.clone(), None).await, (vec!["file:///a".to_string()], Some("next".to_string())));
        assert_eq!(page(reader, Some("next")).await, (vec!["file:///c".to_string()], None));
        let insider = Principal::new("s", ["files:secret"]);
        assert_eq!(page(insider, None).await.0, ["file:///a", "file:///secret/b"]);
    }

    #[test]
    fn updates_of_a_guarded_resource_are_seen_only_by_who_may_read_it() {
        let unguarded = Arc::new(Registry::new(ServerInfo::new("t", "1")));
        let map = ScopeMap::from_toml("[resources]\n\"file:///secret/*\" = \"files:secret\"").expect("map");
        let layer = ScopedLayer::new(unguarded.clone(), Arc::new(map));
        let reader = Principal::new("r", ["mcp:tools"]);
        assert!(!layer.may_see_resource(&reader, "file:///secret/key"));
        assert!(layer.may_see_resource(&reader, "file:///open"));
        assert!(layer.may_see_resource(&Principal::new("s", ["files:secret"]), "file:///secret/key"));
        assert!(unguarded.may_see_resource(&reader, "file:///secret/key"), "a layer without rules shows every update");
    }

    #[test]
    fn a_listing_within_the_client_roots_is_the_inner_layers() {
        let mut registry = Registry::new(ServerInfo::new("t", "1"));
        for uri in ["file:///a", "file:///b", "file:///secret"] {
            registry.resource(crate::layer::ResourceSpec::text(uri, uri, "text/plain", "x")).expect("resource");
        }
        let map = ScopeMap::from_toml("[resources]\n\"file:///secret\" = \"secrets\"").expect("map");
        let layer = ScopedLayer::new(Arc::new(Narrowing(registry)), Arc::new(map));
        let root = |uri: &str| ClientRoot { uri: uri.into(), name: None };
        let who = Principal::new("r", ["mcp:resources"]);
        let uris = |listed: Listing<Resource>| listed.iter().map(|r| r.uri.clone()).collect::<Vec<_>>();
        assert_eq!(uris(layer.resources(&who)), ["file:///a", "file:///b"]);
        assert_eq!(uris(layer.resources_within(&who, &[root("file:///b"), root("file:///secret")])), ["file:///b"]);
    }
}
