//! What a program serves: the [`Layer`] trait the engine calls, the [`Registry`] that
//! implements it from plain specs, the [`Middleware`] that wraps one and the [`Layers`]
//! that serve several as one, and the types they speak (definitions, content, errors, the
//! request context and change events).

mod changes;
mod context;
mod error;
mod filtered;
mod handler;
mod layers;
mod local;
mod log_level;
pub(crate) mod memo;
mod middleware;
pub use duet_wire::mirrored::{MirroredArg, mirrored_args};
mod registry;
mod reply;
mod roots;
pub mod skill;
mod spec;
mod template;
mod validation;

pub use changes::{Change, ChangeFeed, Feed, Listener, Receiver};
// The wire types a server lists and returns, shared with duet's client (`duet_wire::types`).
pub use context::{Elicited, ReachCheck, RequestCx, RequestCxBuilder};
pub(crate) use context::{NO_CAPABILITIES, TaskLink};
pub use duet_wire::types::*;
pub use error::{ACCESS_DENIED, HandlerError, LayerError, RATE_LIMITED, as_layer_error};
pub use filtered::Filtered;
pub use handler::{IntoReply, Json, schema_for};
pub use layers::Layers;
pub use local::{LocalCall, local};
pub use log_level::LogLevel;
pub use middleware::Middleware;
pub use registry::{Registry, RegistryError};
pub use reply::{InputRequired, Reply};
pub(crate) use roots::RootsSource;
pub use roots::{ClientRoot, ClientRoots};
pub use skill::{Skill, SkillFile, SkillParts, SkillSpec};
pub use spec::{
    PromptParts, PromptSpec, ResourceParts, ResourceSpec, Spec, TemplateParts, TemplateSpec, ToolParts, ToolSpec,
};
pub use template::UriTemplate;

mod principal;
pub use principal::Principal;

use async_trait::async_trait;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The arguments of a tool call: a JSON object.
pub type ToolArgs = Map<String, Value>;

/// The arguments of a prompt: names to strings.
pub type PromptArgs = BTreeMap<String, String>;

/// A listing for one principal. Cheap to clone. The engine renders each page of a listing
/// once per `Arc`: hand out the same one while the items stay the same (see [`Filtered`]).
pub type Listing<T> = Arc<Vec<T>>;

/// One page of resources that a layer made itself (see [`Layer::resource_page`]).
#[derive(Debug, Clone, Default)]
pub struct ResourcePage {
    /// The resources of this page.
    pub resources: Vec<Resource>,
    /// Where the next page starts; `None` on the last page. The client sends it back as it
    /// was given, so it is opaque to the client and the engine.
    pub next_cursor: Option<String>,
}

/// What [`Layer::resource_page`] answers: a page the layer made itself, or why it could not;
/// `None` when the layer leaves paging its resources to the engine.
pub type OwnPage = Option<Result<ResourcePage, LayerError>>;

/// What `completion/complete` completes: a prompt's argument or a template's variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionRef {
    /// An argument of the prompt `name`.
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// `uri` is the template string exactly as listed.
    Resource {
        /// The template.
        uri: String,
    },
}

/// The argument being completed, its partial value, and the values of the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletionArg {
    /// The argument's (or template variable's) name.
    pub name: String,
    /// What the user typed of it so far.
    pub value: String,
    /// The values already given to the other arguments, by name.
    pub context: BTreeMap<String, String>,
}

/// What a program serves, per principal. [`Registry`] implements it; a program may
/// implement it directly, wrap a layer with a [`Middleware`] that changes part of it, or
/// serve several as one with [`Layers`]. Listing methods are called on every list request:
/// keep them cheap, and return the same [`Listing`] while nothing changed, so its rendered
/// pages are reused.
#[async_trait]
pub trait Layer: Send + Sync + 'static {
    /// The server's name, version and instructions.
    fn info(&self) -> &ServerInfo;
    /// The tools `who` may see and call.
    fn tools(&self, who: &Principal) -> Listing<Tool>;
    /// The resources `who` may see and read.
    fn resources(&self, who: &Principal) -> Listing<Resource>;
    /// The resource templates `who` may see.
    fn templates(&self, who: &Principal) -> Listing<ResourceTemplate>;
    /// The prompts `who` may see and get.
    fn prompts(&self, who: &Principal) -> Listing<Prompt>;

    /// The resources listed to `who` when its client listed its roots (see
    /// [`ClientRoots`]; only with [`ServerOptions::client_roots`]): by default the same as
    /// [`Layer::resources`]. A layer serving files lists only those under `roots`. Called
    /// on every list request too: hand out the same listing for the same roots
    /// ([`Filtered`] does).
    ///
    /// [`ServerOptions::client_roots`]: crate::protocol::ServerOptions::client_roots
    fn resources_within(&self, who: &Principal, roots: &[ClientRoot]) -> Listing<Resource> {
        let _ = roots;
        self.resources(who)
    }

    /// Whether a call of tool `name` by `who` may run as a task. Called on every
    /// `tools/call`: the default looks the tool up in [`tools`](Layer::tools); a layer
    /// with many tools answers from an index.
    fn task_support(&self, name: &str, who: &Principal) -> TaskSupport {
        self.tools(who).iter().find(|t| t.name == name).map_or(TaskSupport::Forbidden, Tool::task_support)
    }

    /// Runs a tool. Only an unknown (or hidden) tool is an error; every other failure is a
    /// result with `isError: true`. Each call gets its request's context to keep.
    async fn call_tool(&self, name: &str, args: ToolArgs, cx: RequestCx) -> Result<Reply<ToolResult>, LayerError>;
    /// Reads a resource, by a URI listed or made from a template; an unknown (or hidden)
    /// resource is an error, and so is a read that failed.
    async fn read_resource(&self, uri: &str, cx: RequestCx) -> Result<Reply<Vec<ResourceContents>>, LayerError>;

    /// A page of resources the layer makes itself, for a layer with too many resources to
    /// hold as one [`Listing`] (the files of a large tree): at most `limit` of them (0: no
    /// limit), from `cursor`, which is `None` for the first page and otherwise the
    /// `next_cursor` of an earlier page as the client sent it back (a cursor the layer
    /// cannot read is [`LayerError::InvalidArguments`]). `None`, the default, has the engine
    /// page [`Layer::resources`] instead.
    async fn resource_page(&self, cursor: Option<&str>, limit: usize, cx: RequestCx) -> OwnPage {
        let _ = (cursor, limit, cx);
        None
    }

    /// Fills in a prompt with its arguments; an unknown (or hidden) prompt is an error.
    async fn get_prompt(&self, name: &str, args: PromptArgs, cx: RequestCx) -> Result<Reply<PromptResult>, LayerError>;
    /// Completion values; an unknown reference completes to nothing rather than failing.
    async fn complete(&self, of: CompletionRef, arg: CompletionArg, cx: RequestCx) -> Result<Completion, LayerError>;

    /// The skills `who` sees (SEP-2640), each file of which [`Layer::read_resource`]
    /// reads; `None` for a layer that serves no skills, which then does not declare the
    /// skills extension. Called on every request that needs it, like the listings.
    fn skills(&self, _who: &Principal) -> Option<Listing<Skill>> {
        None
    }

    /// Whether `who` may learn of resource `uri` (canonical, as raised on the feed): an
    /// update of `uri` reaches a subscriber only when this says so, whatever URI above it
    /// the subscriber follows. The default lets everyone; a layer that guards resources per
    /// principal answers with the rule its reads follow ([`ScopedLayer`] does). Asked once
    /// per update and subscriber covering it, on the replica delivering it: keep it cheap.
    ///
    /// [`ScopedLayer`]: crate::auth::ScopedLayer
    fn may_see_resource(&self, who: &Principal, uri: &str) -> bool {
        let _ = (who, uri);
        true
    }

    /// The feed this layer raises its changes on.
    fn changes(&self) -> &ChangeFeed;
}
