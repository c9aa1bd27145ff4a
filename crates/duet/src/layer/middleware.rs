//! Layers that wrap a layer and change only part of it (the Go SDK's middleware): a
//! [`Middleware`] names the layer it wraps, and every method it does not write itself is
//! that layer's. [`ScopedLayer`] is one: it filters the listings and guards the calls, and
//! says nothing about the server's info, its tasks, its skills or its changes.
//!
//! Why a trait of its own with a blanket `impl Layer`, rather than defaults in [`Layer`]:
//! a layer that serves something must still be made to write its listings and calls (the
//! compiler asks for them), while a wrapper must be spared them. Rust lets a type implement
//! `Layer` either way without overlap, because a type implements `Middleware` only when
//! it says so: `Registry`, the workspace and any program's own layer implement `Layer`
//! directly, and a wrapper implements `Middleware` instead.
//!
//! [`ScopedLayer`]: crate::auth::ScopedLayer

use super::{
    ChangeFeed, ClientRoot, Completion, CompletionArg, CompletionRef, Layer, LayerError, Listing, OwnPage, Principal,
    Prompt, PromptArgs, PromptResult, Reply, RequestCx, Resource, ResourceContents, ResourceTemplate, ServerInfo,
    Skill, TaskSupport, Tool, ToolArgs, ToolResult,
};
use async_trait::async_trait;

/// A layer that wraps [`inner`](Middleware::inner): it writes only the methods whose
/// answers it changes, and every other one is the inner layer's (each method is
/// [`Layer`]'s, which see). Every type that implements it is a [`Layer`].
///
/// Each default asks the inner layer, not this one: a wrapper that changes
/// [`resources`](Middleware::resources) changes
/// [`resources_within`](Middleware::resources_within) too, and one that hides tools may
/// answer [`task_support`](Middleware::task_support) for them. With both traits in scope, a
/// call on the wrapper's own type names the trait: `Layer::tools(&wrapper, who)`.
#[async_trait]
pub trait Middleware: Send + Sync + 'static {
    /// The layer this one wraps.
    fn inner(&self) -> &dyn Layer;

    /// [`Layer::info`].
    fn info(&self) -> &ServerInfo {
        self.inner().info()
    }
    /// [`Layer::tools`].
    fn tools(&self, who: &Principal) -> Listing<Tool> {
        self.inner().tools(who)
    }
    /// [`Layer::resources`].
    fn resources(&self, who: &Principal) -> Listing<Resource> {
        self.inner().resources(who)
    }
    /// [`Layer::templates`].
    fn templates(&self, who: &Principal) -> Listing<ResourceTemplate> {
        self.inner().templates(who)
    }
    /// [`Layer::prompts`].
    fn prompts(&self, who: &Principal) -> Listing<Prompt> {
        self.inner().prompts(who)
    }
    /// [`Layer::resources_within`].
    fn resources_within(&self, who: &Principal, roots: &[ClientRoot]) -> Listing<Resource> {
        self.inner().resources_within(who, roots)
    }
    /// [`Layer::task_support`].
    fn task_support(&self, name: &str, who: &Principal) -> TaskSupport {
        self.inner().task_support(name, who)
    }
    /// [`Layer::call_tool`].
    async fn call_tool(&self, name: &str, args: ToolArgs, cx: RequestCx) -> Result<Reply<ToolResult>, LayerError> {
        self.inner().call_tool(name, args, cx).await
    }
    /// [`Layer::read_resource`].
    async fn read_resource(&self, uri: &str, cx: RequestCx) -> Result<Reply<Vec<ResourceContents>>, LayerError> {
        self.inner().read_resource(uri, cx).await
    }
    /// [`Layer::resource_page`].
    async fn resource_page(&self, cursor: Option<&str>, limit: usize, cx: RequestCx) -> OwnPage {
        self.inner().resource_page(cursor, limit, cx).await
    }
    /// [`Layer::get_prompt`].
    async fn get_prompt(&self, name: &str, args: PromptArgs, cx: RequestCx) -> Result<Reply<PromptResult>, LayerError> {
        self.inner().get_prompt(name, args, cx).await
    }
    /// [`Layer::complete`].
    async fn complete(&self, of: CompletionRef, arg: CompletionArg, cx: RequestCx) -> Result<Completion, LayerError> {
        self.inner().complete(of, arg, cx).await
    }
    /// [`Layer::skills`].
    fn skills(&self, who: &Principal) -> Option<Listing<Skill>> {
        self.inner().skills(who)
    }
    /// [`Layer::may_see_resource`].
    fn may_see_resource(&self, who: &Principal, uri: &str) -> bool {
        self.inner().may_see_resource(who, uri)
    }
    /// [`Layer::changes`].
    fn changes(&self) -> &ChangeFeed {
        self.inner().changes()
    }
}

#[async_trait]
impl<M: Middleware> Layer for M {
    fn info(&self) -> &ServerInfo {
        Middleware::info(self)
    }
    fn tools(&self, who: &Principal) -> Listing<Tool> {
        Middleware::tools(self, who)
    }
    fn resources(&self, who: &Principal) -> Listing<Resource> {
        Middleware::resources(self, who)
    }
    fn templates(&self, who: &Principal) -> Listing<ResourceTemplate> {
        Middleware::templates(self, who)
    }
    fn prompts(&self, who: &Principal) -> Listing<Prompt> {
        Middleware::prompts(self, who)
    }
    fn resources_within(&self, who: &Principal, roots: &[ClientRoot]) -> Listing<Resource> {
        Middleware::resources_within(self, who, roots)
    }
    fn task_support(&self, name: &str, who: &Principal) -> TaskSupport {
        Middleware::task_support(self, name, who)
    }
    async fn call_tool(&self, name: &str, args: ToolArgs, cx: RequestCx) -> Result<Reply<ToolResult>, LayerError> {
        Middleware::call_tool(self, name, args, cx).await
    }
    async fn read_resource(&self, uri: &str, cx: RequestCx) -> Result<Reply<Vec<ResourceContents>>, LayerError> {
        Middleware::read_resource(self, uri, cx).await
    }
    async fn resource_page(&self, cursor: Option<&str>, limit: usize, cx: RequestCx) -> OwnPage {
        Middleware::resource_page(self, cursor, limit, cx).await
    }
    async fn get_prompt(&self, name: &str, args: PromptArgs, cx: RequestCx) -> Result<Reply<PromptResult>, LayerError> {
        Middleware::get_prompt(self, name, args, cx).await
    }
    async fn complete(&self, of: CompletionRef, arg: CompletionArg, cx: RequestCx) -> Result<Completion, LayerError> {
        Middleware::complete(self, of, arg, cx).await
    }
    fn skills(&self, who: &Principal) -> Option<Listing<Skill>> {
        Middleware::skills(self, who)
    }
    fn may_see_resource(&self, who: &Principal, uri: &str) -> bool {
        Middleware::may_see_resource(self, who, uri)
    }
    fn changes(&self) -> &ChangeFeed {
        Middleware::changes(self)
    }
}
