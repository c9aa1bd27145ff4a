//! The workspace layer: what `duet serve` serves out of the box, as a library a Rust program
//! mounts in its own server. It serves the files under
//! one or more root directories, read-only: every file (minus what `.gitignore` and hidden
//! file rules leave out) as a `file://` resource, a `file://` template per root for any
//! other file, tools to list, show as a tree, find, search, read and describe files, and prompts to review
//! a file or summarize a directory. With [`Workspace::watch`] it raises resource changes as
//! files change on disk. What `.gitignore` (or `.ignore`, or git's exclude files) leaves
//! out, and anything in a `.git` directory, is never served, not even when named; hidden
//! files nothing ignores are served when named.
//!
//! With [`Access::ConfirmedWrites`] (`duet serve --allow-write`) it also serves the tools
//! `write_file`, `edit_file`, `create_directory` and `move_file` (`write.rs`), which change
//! the tree only once the user has confirmed that change through the client; the same
//! confinement applies to what they write, and nothing ignored or in `.git` is ever
//! written.
//!
//! A client that lists its roots (MCP `roots/list`, asked by the engine) narrows what is
//! served to those within the workspace's roots, for every tool, resource and prompt
//! (`in_force`); it never widens it.
//!
//! Tools and prompts live in a [`Registry`] whose state is what they share (`Shared`), written
//! with typed arguments whose types are their schemas (it validates them); resources are
//! served here, a page at a time (`pages.rs`), from the listing of every served file
//! (`listing.rs`), which is made in the background as the server starts and kept current
//! by the watcher. Every path a client names goes through `paths` first: nothing outside
//! the roots, and nothing ignored, is ever opened.
//!
//! A [`Workspace`] is a duet [`Layer`]: serve it over stdio, or over HTTP with duet's
//! `HttpServer` or `McpService`, as any layer. A folder over stdio
//! (`examples/serve_folder.rs`):
//!
//! ```no_run
//! use duet::protocol::{Server, ServerOptions};
//! use duet::transport::stdio::{StdioOptions, serve_stdio};
//! use duet_workspace::{Access, Workspace};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let workspace = Workspace::open(["."], Access::ReadOnly)?;
//!     workspace.watch()?; // resource changes as files change
//!     // What is served narrows to the folders the user opened in the client (its roots).
//!     let options = ServerOptions { client_roots: true, ..ServerOptions::default() };
//!     serve_stdio(Server::new(workspace, options), StdioOptions::default()).await?;
//!     Ok(())
//! }
//! ```
//!
//! [`Options`] adds the write tools ([`Access::ConfirmedWrites`]), which ask the user
//! through the client before each change, so a client that cannot ask (no elicitation)
//! gets a tool error from them instead.

mod atomic;
pub mod confirm;
mod counted;
mod edit;
mod files;
mod find;
mod in_force;
mod listing;
mod pages;
mod paths;
mod patterns;
mod prompts;
mod read;
mod search;
mod skills;
mod tools;
mod tree;
mod walk;
mod watch;
mod watches;
mod write;

#[cfg(test)]
mod tests;

use async_trait::async_trait;
use duet::file_uri as uri;
use duet::layer::{
    About, ChangeFeed, ClientRoot, Completion, CompletionArg, CompletionRef, Layer, LayerError, Listing, OwnPage,
    Principal, Prompt, PromptArgs, PromptResult, ReachCheck, Registry, RegistryError, Reply, RequestCx, Resource,
    ResourceContents, ResourceTemplate, ServerInfo, Skill, TaskSupport, Tool, ToolArgs, ToolResult, skill,
};
use files::{Body, ReadError};
use in_force::InForce;
use listing::Want;
use paths::{Kind, Roots};
use skills::Skills;
use watches::Watches;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};

/// Whether the workspace's tools may change files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Only the tools that look at files are served.
    ReadOnly,
    /// The write tools are served; each change waits for the user's yes.
    ConfirmedWrites,
}

/// How a workspace serves its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Whether the write tools are served.
    pub access: Access,
    /// Serve files with other hard links too (`--follow-hard-links`); by default they are
    /// refused, since another name of the same file may lie outside the roots or be ignored.
    pub follow_hard_links: bool,
}

impl From<Access> for Options {
    fn from(access: Access) -> Options {
        Options { access, follow_hard_links: false }
    }
}

/// The files under some directories, served as an MCP layer.
pub struct Workspace {
    shared: Arc<Shared>,
    /// The tools and prompts, whose handlers get `shared` from their context.
    registry: Registry<Arc<Shared>>,
    templates: Listing<ResourceTemplate>,
    /// The running watcher; dropping it stops watching.
    watcher: Mutex<Option<watch::Watcher>>,
}

/// What the resources, tools, prompts and the watcher share: the roots and the listing.
struct Shared {
    roots: Roots,
    state: Mutex<State>,
    /// Signalled when the first listing is made.
    listed: Condvar,
    /// The client roots the log last told of.
    told: Mutex<Option<Vec<ClientRoot>>>,
    /// A turn for each walk matching a client's pattern that may run at once.
    walks: Arc<tokio::sync::Semaphore>,
}

/// The listing, the skills and the watches, under one lock so that whichever of the first
/// walk and the start of watching comes second sees the other.
#[derive(Default)]
struct State {
    /// `None` until the first walk of the roots, which runs on a thread of its own so the
    /// server answers `initialize` at once, however large the tree.
    listing: Option<listing::Listing>,
    /// Found when the workspace opens, and again when the watcher sees a change where
    /// skills live.
    skills: Arc<Skills>,
    /// The directories watched, while the watcher (which owns them) lives.
    watches: Option<Weak<Mutex<Watches>>>,
}

/// Why a workspace could not open or start watching.
#[derive(Debug)]
pub enum WorkspaceError {
    /// No root directory was given.
    NoRoots,
    /// A root cannot be opened (it does not exist, say).
    Root {
        /// The root as given.
        path: PathBuf,
        /// Why it cannot be opened.
        source: io::Error,
    },
    /// A root is a file, not a directory.
    NotADirectory(PathBuf),
    /// A root's path is not UTF-8, so it has no `file://` URI the tools can name.
    NotUtf8(PathBuf),
    /// The workspace's own tools or prompts were refused (a bug, not a usage error).
    Registry(RegistryError),
    /// No thread to list the files on.
    Listing(io::Error),
    /// The file system watcher could not start.
    Watch(String),
}

impl fmt::Display for WorkspaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkspaceError::NoRoots => f.write_str("a workspace needs at least one root directory"),
            WorkspaceError::Root { path, source } => write!(f, "cannot serve {}: {source}", path.display()),
            WorkspaceError::NotADirectory(path) => write!(f, "cannot serve {}: not a directory", path.display()),
            WorkspaceError::NotUtf8(path) => write!(f, "cannot serve {}: its path is not UTF-8", path.display()),
            WorkspaceError::Registry(e) => write!(f, "the workspace's tools and prompts: {e}"),
            WorkspaceError::Listing(e) => write!(f, "cannot start listing the workspace: {e}"),
            WorkspaceError::Watch(e) => write!(f, "cannot watch the workspace for changes: {e}"),
        }
    }
}

impl std::error::Error for WorkspaceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WorkspaceError::Root { source, .. } | WorkspaceError::Listing(source) => Some(source),
            WorkspaceError::Registry(e) => Some(e),
            _ => None,
        }
    }
}

impl From<RegistryError> for WorkspaceError {
    fn from(e: RegistryError) -> Self {
        WorkspaceError::Registry(e)
    }
}

impl Workspace {
    /// A workspace of these directories (relative ones are taken from the current
    /// directory). Lists their files in the background (what needs the listing waits for
    /// it); call [`Workspace::watch`] to keep it current.
    pub fn open(
        roots: impl IntoIterator<Item = impl Into<PathBuf>>,
        options: impl Into<Options>,
    ) -> Result<Arc<Workspace>, WorkspaceError> {
        let Options { access, follow_hard_links } = options.into();
        let roots = Roots::new(roots.into_iter().map(Into::into).collect())?;
        let roots = if follow_hard_links { roots.follow_hard_links() } else { roots };
        let templates = Arc::new(roots.iter().map(template).collect());
        // The skills are few and found at once: `initialize` says whether they are served.
        let state = State { skills: Arc::new(Skills::scan(&roots)), ..State::default() };
        let shared = Arc::new(Shared {
            roots,
            state: Mutex::new(state),
            listed: Condvar::new(),
            told: Mutex::default(),
            walks: Arc::new(tokio::sync::Semaphore::new(tools::MAX_CONCURRENT_WALKS)),
        });
        let listing = shared.clone();
        std::thread::Builder::new()
            .name("duet-workspace-list".into())
            .spawn(move || listing.list())
            .map_err(WorkspaceError::Listing)?;
        let mut registry = Registry::with_state(info(&shared.roots, access), shared.clone());
        tools::register(&mut registry)?;
        read::register(&mut registry)?;
        search::register(&mut registry)?;
        if access == Access::ConfirmedWrites {
            write::register(&mut registry)?;
        }
        prompts::register(&mut registry)?;
        Ok(Arc::new(Workspace { shared, registry, templates, watcher: Mutex::new(None) }))
    }

    /// Starts watching the roots (once; later calls do nothing), without waiting for the
    /// first walk: once the listing is made (`resources/list` waits for it), every
    /// directory it holds is watched. Changes are raised on the layer's change feed from a
    /// thread of the watcher's own, which ends when the workspace is dropped. Needs no
    /// async runtime.
    pub fn watch(&self) -> Result<(), WorkspaceError> {
        let mut watcher = self.watcher.lock().unwrap_or_else(|p| p.into_inner());
        if watcher.is_none() {
            *watcher = Some(watch::Watcher::start(self.shared.clone(), self.registry.change_feed())?);
        }
        Ok(())
    }
}

impl Shared {
    /// The first walk of the roots: the listing, and a watch on each directory as the walk
    /// reads it once watching has started. When watching started during the walk, every
    /// directory listed is watched before the listing is handed out (under the lock, so a
    /// start of watching that comes later finds the listing and does it itself).
    fn list(&self) {
        let started = std::time::Instant::now();
        let listing = listing::Listing::scan(&self.roots, &mut |dir| self.watch_dir(dir));
        tracing::debug!(files = listing.files(), took = ?started.elapsed(), "the workspace is listed");
        let mut state = self.lock();
        if let Some(watches) = state.watches.as_ref().and_then(Weak::upgrade) {
            watches::watch_all(&watches, listing.dirs(&self.roots));
        }
        state.listing = Some(listing);
        self.listed.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The listing, once the first walk has made it. Hold it briefly: the watcher waits.
    fn listing(&self) -> Listed<'_> {
        let mut state = self.lock();
        while state.listing.is_none() {
            state = self.listed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        Listed(state)
    }

    /// The skills as last found.
    fn skills(&self) -> Arc<Skills> {
        self.lock().skills.clone()
    }

    /// Finds the skills again; whether the skills listed changed.
    fn rescan_skills(&self) -> bool {
        let fresh = Arc::new(Skills::scan(&self.roots));
        let uris = |s: &Skills| s.listing().iter().map(|k| k.uri.clone()).collect::<Vec<_>>();
        let mut state = self.lock();
        let changed = uris(&state.skills) != uris(&fresh);
        state.skills = fresh;
        changed
    }

    /// Watches `dir`, if watching has started.
    fn watch_dir(&self, dir: &Path) {
        let watches = self.lock().watches.as_ref().and_then(Weak::upgrade);
        if let Some(watches) = watches {
            watches.lock().unwrap_or_else(|p| p.into_inner()).add(dir);
        }
    }

    /// The listed paths (of the kind `want`) within the roots `in_force` that start with
    /// `prefix`, as the tools write them, or with `root`, relative to that root.
    fn complete(&self, in_force: &InForce, prefix: &str, want: Want, root: Option<usize>) -> Completion {
        let found = self.listing().complete(in_force, prefix, want, root);
        let total = found.total;
        Completion { has_more: Some(total > found.values.len()), total: Some(total as u64), values: found.values }
    }

    /// What a request of a client that listed `client` (`None`: it stated no roots) may
    /// reach, within what its context allows (`reach`, see [`RequestCx::reach_check`]). The
    /// log says which roots are in force whenever a client's roots change.
    fn in_force(&self, client: Option<&[ClientRoot]>, reach: Option<ReachCheck>) -> InForce<'_> {
        let in_force = InForce::new(&self.roots, client).reaching(reach);
        if let Some(client) = client {
            let mut told = self.told.lock().unwrap_or_else(|p| p.into_inner());
            if told.as_deref() != Some(client) {
                tracing::info!("the client listed its roots; {}", in_force.describe());
                *told = Some(client.to_vec());
            }
        }
        in_force
    }

    /// One file as resource contents, named by `uri`.
    fn read_resource(&self, uri: &str, in_force: &InForce) -> Result<ResourceContents, LayerError> {
        let resolved = in_force.resolve(uri).map_err(|e| e.to_layer())?;
        if resolved.kind == Kind::Dir {
            return Err(LayerError::invalid_arguments(format!(
                "{uri} is a directory; list it with the list_directory tool"
            )));
        }
        match files::read_whole(&resolved.abs, self.roots.get(resolved.root)) {
            Ok(Body::Text(text)) => Ok(ResourceContents::text(uri, files::mime_type(&resolved.abs, Some(true)), text)),
            Ok(Body::Binary(bytes)) => {
                Ok(ResourceContents::blob(uri, files::mime_type(&resolved.abs, Some(false)), &bytes))
            }
            Err(ReadError::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
                Err(LayerError::NotFound(format!("{uri} does not exist in the workspace")))
            }
            Err(e) => Err(LayerError::invalid_arguments(e.message(uri))),
        }
    }

    /// One file of a skill, named by its `skill://` URI.
    fn read_skill_file(&self, uri: &str) -> Result<ResourceContents, LayerError> {
        let skills = self.skills();
        let Some((root, path)) = skills.file(uri) else {
            return Err(LayerError::NotFound(format!("{uri} is not a file of a skill in the workspace")));
        };
        let markdown = path.extension().is_some_and(|e| e == "md");
        match files::read_whole(path, self.roots.get(root)) {
            Ok(Body::Text(text)) if markdown => Ok(ResourceContents::text(uri, skill::MARKDOWN, text)),
            Ok(Body::Text(text)) => Ok(ResourceContents::text(uri, files::mime_type(path, Some(true)), text)),
            Ok(Body::Binary(bytes)) => Ok(ResourceContents::blob(uri, files::mime_type(path, Some(false)), &bytes)),
            Err(ReadError::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
                Err(LayerError::NotFound(format!("{uri} no longer exists in the workspace")))
            }
            Err(e) => Err(LayerError::invalid_arguments(e.message(uri))),
        }
    }
}

/// What the workspace's tool and prompt handlers get: the request, with the state they share.
type Cx = RequestCx<Arc<Shared>>;

/// The listing, locked.
struct Listed<'a>(MutexGuard<'a, State>);

impl Listed<'_> {
    /// The skills found with the listing.
    fn skills(&self) -> Arc<Skills> {
        self.0.skills.clone()
    }
}

impl std::ops::Deref for Listed<'_> {
    type Target = listing::Listing;

    fn deref(&self) -> &listing::Listing {
        self.0.listing.as_ref().unwrap_or_else(|| unreachable!("a Listed is made once the listing is"))
    }
}

impl std::ops::DerefMut for Listed<'_> {
    fn deref_mut(&mut self) -> &mut listing::Listing {
        self.0.listing.as_mut().unwrap_or_else(|| unreachable!("a Listed is made once the listing is"))
    }
}

/// Runs blocking file work off the async threads. Should the work panic, the log gets the
/// details and the client only a generic message: a panic's text names internals.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        tracing::error!(error = %e, "workspace file work failed");
        "internal error: the server could not finish this request".to_string()
    })
}

fn info(roots: &Roots, access: Access) -> ServerInfo {
    let served: Vec<String> = roots.iter().map(|r| format!("{} ({})", r.name, r.path.display())).collect();
    let paths = if roots.len() == 1 {
        "Paths are relative to the root; absolute paths and file:// URIs under it work too.".to_string()
    } else {
        "A relative path starts with a root's name; absolute paths and file:// URIs under a root work too.".into()
    };
    let (access, writes) = match access {
        Access::ReadOnly => ("Read-only access", ""),
        Access::ConfirmedWrites => (
            "Access",
            " Change files with write_file (whole files), edit_file (edits; dry_run shows the diff), \
             create_directory and move_file: the user must confirm each change, and ignored files and .git \
             directories cannot be written.",
        ),
    };
    ServerInfo::new("duet", env!("CARGO_PKG_VERSION")).title("duet workspace").instructions(format!(
        "{access} to the files under {}. {paths} Every file not ignored by .gitignore is a resource; \
         ignored files and .git directories are not served at all. Find files with find_files, search their \
         contents with search_files, see a directory's tree with directory_tree, read big files in parts with \
         read_file (a line range, its head or its tail) and several files at once with read_multiple_files. \
         Skills (folders holding a SKILL.md under .claude/skills, .agents/skills, .github/skills or skills) are \
         served as skill://<name>/ resources through the skills extension.{writes}",
        served.join(", ")
    ))
}

fn template(root: &paths::Root) -> ResourceTemplate {
    let base = uri::from_path(&root.path);
    ResourceTemplate {
        uri_template: format!("{}/{{+path}}", base.trim_end_matches('/')),
        name: root.name.clone(),
        about: About {
            title: Some(format!("Files under {}", root.path.display())),
            description: Some(
                "Any file under this root by its relative path, including hidden ones, which the resource list \
                 leaves out; files .gitignore excludes are not served."
                    .into(),
            ),
            ..About::default()
        },
        mime_type: None,
        annotations: None,
    }
}

#[async_trait]
impl Layer for Workspace {
    fn info(&self) -> &ServerInfo {
        self.registry.info()
    }

    fn tools(&self, who: &Principal) -> Listing<Tool> {
        self.registry.tools(who)
    }

    /// Every file, as one listing made on each call (`duet resources` shows it); the
    /// engine lists pages of them instead ([`Layer::resource_page`]).
    fn resources(&self, _who: &Principal) -> Listing<Resource> {
        match pages::page(&self.shared, &InForce::new(&self.shared.roots, None), None, 0) {
            Ok(page) => Arc::new(page.resources),
            Err(_) => Arc::default(),
        }
    }

    async fn resource_page(&self, cursor: Option<&str>, limit: usize, cx: RequestCx) -> OwnPage {
        let (shared, cursor, client) = (self.shared.clone(), cursor.map(str::to_string), cx.client_roots().await);
        let page = blocking(move || {
            let in_force = shared.in_force(client.listed(), cx.reach_check());
            pages::page(&shared, &in_force, cursor.as_deref(), limit)
        })
        .await;
        Some(page.map_err(LayerError::Internal).and_then(|page| page))
    }

    fn templates(&self, _who: &Principal) -> Listing<ResourceTemplate> {
        self.templates.clone()
    }

    fn prompts(&self, who: &Principal) -> Listing<Prompt> {
        self.registry.prompts(who)
    }

    fn task_support(&self, name: &str, who: &Principal) -> TaskSupport {
        self.registry.task_support(name, who)
    }

    async fn call_tool(&self, name: &str, args: ToolArgs, cx: RequestCx) -> Result<Reply<ToolResult>, LayerError> {
        self.registry.call_tool(name, args, cx).await
    }

    async fn read_resource(&self, uri: &str, cx: RequestCx) -> Result<Reply<Vec<ResourceContents>>, LayerError> {
        let (shared, owned) = (self.shared.clone(), uri.to_string());
        let contents = if uri::is_file_uri(uri) {
            let client = cx.client_roots().await;
            blocking(move || shared.read_resource(&owned, &shared.in_force(client.listed(), cx.reach_check()))).await
        } else if uri.starts_with(skill::SCHEME) {
            blocking(move || shared.read_skill_file(&owned)).await
        } else {
            return Err(LayerError::NotFound(format!("Unknown resource: {uri}")));
        };
        Ok(Reply::Complete(vec![contents.map_err(LayerError::Internal)??]))
    }

    async fn get_prompt(&self, name: &str, args: PromptArgs, cx: RequestCx) -> Result<Reply<PromptResult>, LayerError> {
        self.registry.get_prompt(name, args, cx).await
    }

    /// A template's `path` (under its root) and a prompt's `path` complete from the listing,
    /// within the client's roots.
    async fn complete(&self, of: CompletionRef, arg: CompletionArg, cx: RequestCx) -> Result<Completion, LayerError> {
        let (want, root) = match &of {
            CompletionRef::Resource { uri } => match self.templates.iter().position(|t| &t.uri_template == uri) {
                Some(root) => (Want::Files, Some(root)),
                None => return Ok(Completion::from_values(Vec::new())),
            },
            CompletionRef::Prompt { name } => match prompts::completes(name) {
                Some(want) => (want, None),
                None => return self.registry.complete(of, arg, cx).await,
            },
        };
        if arg.name != "path" {
            return Ok(Completion::from_values(Vec::new()));
        }
        let (shared, client) = (self.shared.clone(), cx.client_roots().await);
        blocking(move || shared.complete(&shared.in_force(client.listed(), cx.reach_check()), &arg.value, want, root))
            .await
            .map_err(LayerError::Internal)
    }

    /// Always served (the listing may be empty): skills appear as files change.
    fn skills(&self, _who: &Principal) -> Option<Listing<Skill>> {
        Some(self.shared.skills().listing())
    }

    fn changes(&self) -> &ChangeFeed {
        self.registry.changes()
    }
}
