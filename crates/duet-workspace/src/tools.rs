//! The file tools that look at the tree: `list_directory`, `directory_tree`, `find_files`
//! and `describe_file` (reading and searching have files of their own). Each resolves its path through `paths`, does its
//! file work off the async threads, and answers a failure as a tool error the model can
//! act on. All of them are read-only.

use super::files;
use super::in_force::InForce;
use super::paths::Kind;
use super::tree::{Entry, Node, Tree};
use super::{Cx, Shared, blocking, find, patterns, uri};
use crate::counted::count;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use duet::layer::{Registry, RegistryError, ToolAnnotations, ToolResult, ToolSpec, schema_for};
use schemars::transform::transform_subschemas;
use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The deepest `directory_tree` goes.
const MAX_TREE_DEPTH: usize = 20;

/// A tool's work: a result, or the message of a tool error.
pub(crate) type ToolOutcome = Result<ToolResult, String>;

pub(crate) fn register(registry: &mut Registry<Arc<Shared>>) -> Result<(), RegistryError> {
    registry.tool(
        spec("list_directory", |shared, in_force, args, _| list_directory(shared, in_force, args))
            .title("List a directory")
            .description(
                "Lists the entries of a directory of the workspace (files, directories and symbolic links, \
                 without those .gitignore or hidden-file rules leave out), in name order, a page at a time. \
                 Pass the nextCursor of one page as cursor to get the next.",
            )
            .output_schema(schema_for::<Listed>()),
    )?;
    registry.tool(
        spec("directory_tree", |shared, in_force, args, _| directory_tree(shared, in_force, args))
            .title("Show a directory tree")
            .description(
                "Shows the tree under a directory of the workspace, as deep as asked, with the size of each \
                 file: the same entries list_directory shows (nothing .gitignore or hidden-file rules leave \
                 out), in name order. Directories at the depth limit are shown without their contents \
                 (no children); a tree longer than the limit is cut short, and says so.",
            )
            .output_schema(schema_for::<Shown>()),
    )?;
    registry.tool(
        walking_spec("find_files", find_files)
            .title("Find files by name")
            .description(
                "Finds files whose path matches a glob such as *.rs, src/**/*.ts or **/README.md. The glob \
                 is matched against paths relative to `path`, and * also crosses directories. Files that \
                 .gitignore or hidden-file rules leave out are not found.",
            )
            .output_schema(schema_for::<Found>()),
    )?;
    registry.tool(
        spec("describe_file", |shared, in_force, args, _| describe_file(shared, in_force, args))
            .title("Describe a file")
            .description(
                "Tells what a path is: its type, size, MIME type, permissions (octal mode, read-only or \
                 not), times (modified, accessed, and created where the file system keeps it; RFC 3339), \
                 whether it is binary, and how many lines a text file has.",
            )
            .output_schema(schema_for::<Description>()),
    )?;
    Ok(())
}

/// The most walks matching a client's pattern (`search_files`, `find_files`) the workspace
/// runs at once; others wait for one to finish. Compiling the pattern counts too.
pub(crate) const MAX_CONCURRENT_WALKS: usize = 4;

/// Whether a tool waits for one of the [`MAX_CONCURRENT_WALKS`] turns before its work.
#[derive(Clone, Copy)]
enum Turn {
    NotNeeded,
    Walk,
}

/// A read-only tool whose blocking body gets the shared state, the roots in force, its
/// arguments (their type is the input schema) and the request context.
pub(crate) fn spec<A, F>(name: &'static str, work: F) -> ToolSpec<Arc<Shared>>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(&Shared, &InForce, A, &Cx) -> ToolOutcome + Send + Sync + Copy + 'static,
{
    read_only_tool(name, Turn::NotNeeded, work)
}

/// A read-only tool that walks the tree matching a client's pattern: like [`spec`], but its
/// body runs only once it has a turn, waited for without holding a blocking thread.
pub(crate) fn walking_spec<A, F>(name: &'static str, work: F) -> ToolSpec<Arc<Shared>>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(&Shared, &InForce, A, &Cx) -> ToolOutcome + Send + Sync + Copy + 'static,
{
    read_only_tool(name, Turn::Walk, work)
}

/// A typed, read-only tool over the workspace's state: it waits for its turn if it needs
/// one, then runs `work` on a blocking thread. A failure's message is a tool error the
/// model can act on (the registry makes it one).
fn read_only_tool<A, F>(name: &'static str, turn: Turn, work: F) -> ToolSpec<Arc<Shared>>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(&Shared, &InForce, A, &Cx) -> ToolOutcome + Send + Sync + Copy + 'static,
{
    ToolSpec::typed(name, move |args: A, cx: Cx| async move {
        let _turn = match turn {
            Turn::Walk => Some(wait_for_turn(&cx.state().walks, name, &cx).await?),
            Turn::NotNeeded => None,
        };
        let client = cx.client_roots().await;
        blocking(move || {
            let shared = cx.state();
            work(shared, &shared.in_force(client.listed(), cx.reach_check()), args, &cx)
        })
        .await?
    })
    .annotations(ToolAnnotations::read_only())
}

/// Waits until fewer than [`MAX_CONCURRENT_WALKS`] walks run, or the request is cancelled.
async fn wait_for_turn(walks: &Arc<Semaphore>, tool: &str, cx: &Cx) -> Result<OwnedSemaphorePermit, String> {
    let cancelled = || format!("{tool} was cancelled while it waited for other searches to finish");
    tokio::select! {
        turn = walks.clone().acquire_owned() => turn.map_err(|_| cancelled()),
        () = cx.cancelled() => Err(cancelled()),
    }
}

/// Drops the `format` schemars gives Rust's integer types (`uint`, `uint64`) throughout a
/// schema: JSON has integers, not Rust's widths, and some clients refuse a format they do
/// not know. Every argument and result type of the read-only tools is transformed so.
pub(crate) fn json_integers(schema: &mut Schema) {
    if schema.get("type").and_then(Value::as_str) == Some("integer") {
        schema.remove("format");
    }
    transform_subschemas(&mut json_integers, schema);
}

/// The description of a `path` argument that defaults to the top of the workspace: what
/// it names, and how paths are written.
macro_rules! path_doc {
    ($what:literal) => {
        concat!(
            $what,
            " A path relative to the workspace (\".\" for its top), an absolute path under a root, or a file:// URI."
        )
    };
}
pub(crate) use path_doc;

/// Text for the model plus the same facts as structured content.
pub(crate) fn structured(text: String, value: impl Serialize) -> ToolOutcome {
    let value = serde_json::to_value(value).map_err(|e| format!("cannot encode the result: {e}"))?;
    Ok(ToolResult { structured_content: Some(value), ..ToolResult::text(text) })
}

pub(crate) fn dot() -> String {
    ".".into()
}

#[derive(Deserialize, JsonSchema)]
#[schemars(transform = json_integers)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default = "dot")]
    #[schemars(description = path_doc!("The directory to list."))]
    path: String,
    /// The nextCursor of the previous page.
    #[schemars(extend("type" = "string"))]
    cursor: Option<String>,
    /// The most entries one page holds.
    #[serde(default = "ListArgs::default_limit")]
    #[schemars(range(min = 1, max = 1000))]
    limit: usize,
}

impl ListArgs {
    fn default_limit() -> usize {
        200
    }
}

#[derive(Serialize, JsonSchema)]
#[schemars(transform = json_integers)]
#[serde(rename_all = "camelCase")]
struct Listed {
    path: String,
    entries: Vec<Entry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "string"))]
    next_cursor: Option<String>,
}

/// Where the next page of a directory starts; opaque to the client.
#[derive(Serialize, Deserialize)]
struct Cursor {
    dir: String,
    after: String,
}

fn list_directory(shared: &Shared, in_force: &InForce, args: ListArgs) -> ToolOutcome {
    let roots = &shared.roots;
    let scope = in_force.resolve_scope(&args.path).map_err(|e| e.to_string())?;
    let after = match &args.cursor {
        None => None,
        Some(cursor) => Some(decode_cursor(cursor, &args.path)?),
    };
    // Several resolved directories means the top of a workspace of several roots.
    let (shown, depth) = match scope.as_slice() {
        [one] if one.kind == Kind::File => {
            return Err(format!("{:?} is a file; use read_file or describe_file", args.path));
        }
        [one] => (roots.display(one.root, &one.abs), 1),
        _ => (".".to_string(), 0),
    };
    let tree = Tree::walk(shared, &scope, &|entry| in_force.reachable(entry).is_ok(), depth, usize::MAX);
    let mut entries: Vec<Entry> = tree.entries.into_iter().filter(|e| e.depth == 1).collect();
    if let Some(after) = &after {
        entries.retain(|e| &e.name > after);
    }
    let next_cursor = (entries.len() > args.limit).then(|| {
        let after = entries[args.limit - 1].name.clone();
        URL_SAFE_NO_PAD.encode(json!(Cursor { dir: args.path.clone(), after }).to_string())
    });
    entries.truncate(args.limit);
    let mut text: Vec<String> = entries.iter().map(Entry::line).collect();
    if entries.is_empty() {
        text.push(format!("{shown} is empty"));
    }
    if let Some(cursor) = &next_cursor {
        text.push(format!("(more entries: pass cursor {cursor:?})"));
    }
    structured(text.join("\n"), Listed { path: shown, entries, next_cursor })
}

fn decode_cursor(cursor: &str, path: &str) -> Result<String, String> {
    let invalid = || format!("invalid cursor {cursor:?}: pass the nextCursor of the previous page of {path:?}");
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let cursor: Cursor = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if cursor.dir != path {
        return Err(invalid());
    }
    Ok(cursor.after)
}

#[derive(Deserialize, JsonSchema)]
#[schemars(transform = json_integers)]
#[serde(deny_unknown_fields)]
struct TreeArgs {
    #[serde(default = "dot")]
    #[schemars(description = path_doc!("The directory to show."))]
    path: String,
    /// How many levels below the directory to show.
    #[serde(default = "TreeArgs::default_depth")]
    #[schemars(range(min = 1, max = MAX_TREE_DEPTH))]
    depth: usize,
    /// The most entries shown.
    #[serde(default = "TreeArgs::default_limit")]
    #[schemars(range(min = 1, max = 10000))]
    limit: usize,
}

impl TreeArgs {
    fn default_depth() -> usize {
        3
    }

    fn default_limit() -> usize {
        1000
    }
}

#[derive(Serialize, JsonSchema)]
#[schemars(transform = json_integers)]
struct Shown {
    path: String,
    entries: Vec<Node>,
    truncated: bool,
}

fn directory_tree(shared: &Shared, in_force: &InForce, args: TreeArgs) -> ToolOutcome {
    let scope = in_force.resolve_scope(&args.path).map_err(|e| e.to_string())?;
    let shown = match scope.as_slice() {
        [one] if one.kind == Kind::File => {
            return Err(format!("{:?} is a file; directory_tree shows a directory", args.path));
        }
        [one] => shared.roots.display(one.root, &one.abs),
        _ => ".".to_string(),
    };
    let tree = Tree::walk(shared, &scope, &|entry| in_force.reachable(entry).is_ok(), args.depth, args.limit);
    let mut text = tree.lines();
    if tree.truncated {
        text.push(format!(
            "(the tree stops at {}: there are more; show less depth, a directory further down, or raise limit)",
            count(tree.entries.len(), "entry")
        ));
    }
    let entries = tree.nested();
    structured(text.join("\n"), Shown { path: shown, entries, truncated: tree.truncated })
}

#[derive(Deserialize, JsonSchema)]
#[schemars(transform = json_integers)]
#[serde(deny_unknown_fields)]
struct FindArgs {
    /// The glob to match; at most 1 KiB.
    #[schemars(length(min = 1))]
    glob: String,
    #[serde(default = "dot")]
    #[schemars(description = path_doc!("The directory to search under."))]
    path: String,
    /// The most paths returned.
    #[serde(default = "FindArgs::default_limit")]
    #[schemars(range(min = 1, max = 10000))]
    limit: usize,
}

impl FindArgs {
    fn default_limit() -> usize {
        500
    }
}

#[derive(Serialize, JsonSchema)]
#[schemars(transform = json_integers)]
struct Found {
    files: Vec<String>,
    truncated: bool,
}

fn find_files(shared: &Shared, in_force: &InForce, args: FindArgs, cx: &Cx) -> ToolOutcome {
    let glob = patterns::glob(&args.glob)?;
    let scope = in_force.resolve_scope(&args.path).map_err(|e| e.to_string())?;
    if let [one] = scope.as_slice()
        && one.kind == Kind::File
    {
        return Err(format!("{:?} is a file; find_files searches under a directory", args.path));
    }
    // The glob reads paths relative to the directory asked for.
    let asked = shared.roots.resolve_scope(&args.path).map_err(|e| e.to_string())?;
    let cancelled = || cx.is_cancelled();
    let reachable = |file: &std::path::Path| in_force.reachable(file).is_ok();
    let find::Found { paths: found, truncated } =
        find::matching(shared, &scope, &reachable, &asked, &glob, args.limit, &cancelled)
            .ok_or("find_files was cancelled")?;
    let mut text = if found.is_empty() { format!("No files match {:?}", args.glob) } else { found.join("\n") };
    if truncated {
        text.push_str(&format!("\n(only the first {}; narrow the glob or the path)", count(args.limit, "match")));
    }
    structured(text, Found { files: found, truncated })
}

#[derive(Deserialize, JsonSchema)]
#[schemars(transform = json_integers)]
#[serde(deny_unknown_fields)]
struct DescribeArgs {
    /// The file or directory to describe.
    path: String,
}

#[derive(Serialize, JsonSchema)]
#[schemars(transform = json_integers)]
#[serde(rename_all = "camelCase")]
struct Description {
    path: String,
    uri: String,
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["file", "directory"]))]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "integer"))]
    size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "string"))]
    mime_type: Option<String>,
    /// The permission bits in octal, e.g. 0644.
    mode: String,
    /// Whether nobody may write it.
    readonly: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "string", "format" = "date-time"))]
    modified: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "string", "format" = "date-time"))]
    accessed: Option<String>,
    /// When it was created, where the file system keeps that.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "string", "format" = "date-time"))]
    created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "boolean"))]
    is_binary: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "integer"))]
    line_count: Option<usize>,
}

fn describe_file(shared: &Shared, in_force: &InForce, args: DescribeArgs) -> ToolOutcome {
    let target = in_force.resolve(&args.path).map_err(|e| e.to_string())?;
    let name = shared.roots.display(target.root, &target.abs);
    let meta = target.abs.metadata().map_err(|e| format!("cannot read {name}: {e}"))?;
    let mut d = Description {
        path: name.clone(),
        uri: uri::from_path(&target.abs),
        kind: "directory",
        size: None,
        mime_type: None,
        mode: format!("{:04o}", meta.permissions().mode() & 0o7777),
        readonly: meta.permissions().readonly(),
        modified: meta.modified().ok().and_then(files::rfc3339),
        accessed: meta.accessed().ok().and_then(files::rfc3339),
        created: meta.created().ok().and_then(files::rfc3339),
        is_binary: None,
        line_count: None,
    };
    let mut text = vec![format!("path: {name}"), format!("uri: {}", d.uri)];
    if target.kind == Kind::File {
        let sniffed = files::sniff(&target.abs, shared.roots.get(target.root)).map_err(|e| e.message(&name))?;
        d.kind = "file";
        d.size = Some(meta.len());
        d.mime_type = Some(files::mime_type(&target.abs, Some(!sniffed.binary)));
        d.is_binary = Some(sniffed.binary);
        d.line_count = sniffed.lines;
        text.push(format!("type: file, {}", if sniffed.binary { "binary" } else { "text" }));
        text.push(format!("size: {} ({})", files::human_size(meta.len()), count(meta.len(), "byte")));
        text.extend(d.mime_type.iter().map(|m| format!("MIME type: {m}")));
        text.extend(d.line_count.map(|n| format!("lines: {n}")));
    } else {
        text.push("type: directory".into());
    }
    let readonly = if d.readonly { ", read-only" } else { "" };
    text.push(format!("permissions: {}{readonly}", d.mode));
    for (what, time) in [("modified", &d.modified), ("accessed", &d.accessed), ("created", &d.created)] {
        text.extend(time.iter().map(|t| format!("{what}: {t}")));
    }
    structured(text.join("\n"), d)
}
