//! The file tools: `list_directory`, `find_files`, `read_file` and `describe_file` (the
//! search tool has a file of its own). Each resolves its path through `paths`, does its
//! file work off the async threads, and answers a failure as a tool error the model can
//! act on. All of them are read-only.

use super::files::{self, Body};
use super::paths::{Kind, Resolved};
use super::{Shared, blocking, uri, walk};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use duet::layer::{Content, HandlerError, Registry, RegistryError, RequestCx, ToolAnnotations, ToolResult, ToolSpec};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::future::Future;
use std::sync::Arc;

/// A tool's work: a result, or the message of a tool error.
pub type ToolOutcome = Result<ToolResult, String>;

pub fn register(registry: &mut Registry, shared: &Arc<Shared>) -> Result<(), RegistryError> {
    registry.tool(
        spec(shared, "list_directory", |shared, args, _| list_directory(shared, args))
            .title("List a directory")
            .description(
                "Lists the entries of a directory of the workspace (files, directories and symbolic links, \
                 without those .gitignore or hidden-file rules leave out), in name order, a page at a time. \
                 Pass the nextCursor of one page as cursor to get the next.",
            )
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "path": path_schema("The directory to list."),
                    "cursor": {"type": "string", "description": "The nextCursor of the previous page."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 200,
                              "description": "The most entries one page holds."}
                },
                "additionalProperties": false
            }))
            .output_schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "entries": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "path": {"type": "string"},
                            "type": {"enum": ["file", "directory", "symlink"]},
                            "size": {"type": "integer"}
                        },
                        "required": ["name", "path", "type"]
                    }},
                    "nextCursor": {"type": "string"}
                },
                "required": ["path", "entries"]
            })),
    )?;
    registry.tool(
        spec(shared, "find_files", find_files)
            .title("Find files by name")
            .description(
                "Finds files whose path matches a glob such as *.rs, src/**/*.ts or **/README.md. The glob \
                 is matched against paths relative to `path`, and * also crosses directories. Files that \
                 .gitignore or hidden-file rules leave out are not found.",
            )
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "glob": {"type": "string", "minLength": 1, "description": "The glob to match."},
                    "path": path_schema("The directory to search under."),
                    "limit": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 500,
                              "description": "The most paths returned."}
                },
                "required": ["glob"],
                "additionalProperties": false
            }))
            .output_schema(json!({
                "type": "object",
                "properties": {
                    "files": {"type": "array", "items": {"type": "string"}},
                    "truncated": {"type": "boolean"}
                },
                "required": ["files", "truncated"]
            })),
    )?;
    registry.tool(
        spec(shared, "read_file", |shared, args, _| read_file(shared, args))
            .title("Read a file")
            .description(format!(
                "Reads a text file, whole or a range of its lines (1-based, inclusive). One read returns at \
                 most {}: read bigger files in parts with start_line and end_line. Files .gitignore \
                 excludes, and .git directories, are not served.",
                files::human_size(files::MAX_READ_BYTES)
            ))
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file to read."},
                    "start_line": {"type": "integer", "minimum": 1, "description": "The first line (default 1)."},
                    "end_line": {"type": "integer", "minimum": 1, "description": "The last line (default: the end)."}
                },
                "required": ["path"],
                "additionalProperties": false
            })),
    )?;
    registry.tool(
        spec(shared, "describe_file", |shared, args, _| describe_file(shared, args))
            .title("Describe a file")
            .description(
                "Tells what a path is: its type, size, MIME type, modification time, whether it is binary, \
                 and how many lines a text file has.",
            )
            .input_schema(json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "The file or directory to describe."}},
                "required": ["path"],
                "additionalProperties": false
            }))
            .output_schema(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "uri": {"type": "string"},
                    "type": {"enum": ["file", "directory"]},
                    "size": {"type": "integer"},
                    "mimeType": {"type": "string"},
                    "modified": {"type": "string"},
                    "isBinary": {"type": "boolean"},
                    "lineCount": {"type": "integer"}
                },
                "required": ["path", "uri", "type"]
            })),
    )?;
    Ok(())
}

/// A read-only tool whose blocking body gets the shared state, its parsed arguments and
/// the request context.
pub fn spec<A, F>(shared: &Arc<Shared>, name: &str, work: F) -> ToolSpec
where
    A: DeserializeOwned + Send + 'static,
    F: Fn(&Shared, A, &RequestCx) -> ToolOutcome + Send + Sync + Copy + 'static,
{
    let shared = shared.clone();
    ToolSpec::new(name, move |args: Map<String, Value>, cx: RequestCx| {
        let shared = shared.clone();
        run(async move {
            let args: A = serde_json::from_value(Value::Object(args)).map_err(|e| format!("Invalid arguments: {e}"))?;
            blocking(move || work(&shared, args, &cx)).await?
        })
    })
    .annotations(ToolAnnotations::read_only())
}

/// Turns a failure message into a tool error.
async fn run(work: impl Future<Output = ToolOutcome>) -> Result<ToolResult, HandlerError> {
    Ok(work.await.unwrap_or_else(ToolResult::error))
}

/// The schema of a `path` argument that defaults to the top of the workspace.
pub fn path_schema(what: &str) -> Value {
    json!({
        "type": "string",
        "default": ".",
        "description": format!("{what} A path relative to the workspace (\".\" for its top), an absolute path under a root, or a file:// URI.")
    })
}

/// Text for the model plus the same facts as structured content.
pub fn structured(text: String, value: impl Serialize) -> ToolOutcome {
    let value = serde_json::to_value(value).map_err(|e| format!("cannot encode the result: {e}"))?;
    Ok(ToolResult { structured_content: Some(value), ..ToolResult::text(text) })
}

pub fn dot() -> String {
    ".".into()
}

#[derive(Deserialize)]
struct ListArgs {
    #[serde(default = "dot")]
    path: String,
    cursor: Option<String>,
    #[serde(default = "ListArgs::default_limit")]
    limit: usize,
}

impl ListArgs {
    fn default_limit() -> usize {
        200
    }
}

#[derive(Serialize)]
struct ListEntry {
    name: String,
    path: String,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Listed {
    path: String,
    entries: Vec<ListEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

/// Where the next page of a directory starts; opaque to the client.
#[derive(Serialize, Deserialize)]
struct Cursor {
    dir: String,
    after: String,
}

fn list_directory(shared: &Shared, args: ListArgs) -> ToolOutcome {
    let roots = &shared.roots;
    let scope = roots.resolve_scope(&args.path).map_err(|e| e.to_string())?;
    let after = match &args.cursor {
        None => None,
        Some(cursor) => Some(decode_cursor(cursor, &args.path)?),
    };
    // Several resolved directories means the top of a workspace of several roots.
    let (shown, mut entries) = match scope.as_slice() {
        [one] if one.kind == Kind::File => {
            return Err(format!("{:?} is a file; use read_file or describe_file", args.path));
        }
        [one] => (roots.display(one.root, &one.abs), entries_of(shared, one)),
        all => (".".to_string(), all.iter().map(|r| root_entry(shared, r)).collect()),
    };
    if let Some(after) = &after {
        entries.retain(|e| &e.name > after);
    }
    let next_cursor = (entries.len() > args.limit).then(|| {
        let after = entries[args.limit - 1].name.clone();
        URL_SAFE_NO_PAD.encode(json!(Cursor { dir: args.path.clone(), after }).to_string())
    });
    entries.truncate(args.limit);
    let mut text: Vec<String> = entries
        .iter()
        .map(|e| match (e.kind, e.size) {
            ("directory", _) => format!("{}/", e.path),
            ("symlink", _) => format!("{} (symbolic link)", e.path),
            (_, Some(size)) => format!("{} ({})", e.path, files::human_size(size)),
            _ => e.path.clone(),
        })
        .collect();
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

fn root_entry(shared: &Shared, root: &Resolved) -> ListEntry {
    let name = shared.roots.get(root.root).name.clone();
    ListEntry { path: name.clone(), name, kind: "directory", size: None }
}

fn entries_of(shared: &Shared, dir: &Resolved) -> Vec<ListEntry> {
    let walk = walk::walker(&dir.abs).max_depth(Some(1)).build();
    walk.filter_map(Result::ok)
        .filter(|e| e.depth() == 1)
        .filter_map(|e| {
            let file_type = e.file_type()?;
            let (kind, size) = match file_type {
                t if t.is_dir() => ("directory", None),
                t if t.is_file() => ("file", e.metadata().ok().map(|m| m.len())),
                t if t.is_symlink() => ("symlink", None),
                _ => return None,
            };
            let name = e.file_name().to_str()?.to_string();
            Some(ListEntry { name, path: shared.roots.display(dir.root, e.path()), kind, size })
        })
        .collect()
}

#[derive(Deserialize)]
struct FindArgs {
    glob: String,
    #[serde(default = "dot")]
    path: String,
    #[serde(default = "FindArgs::default_limit")]
    limit: usize,
}

impl FindArgs {
    fn default_limit() -> usize {
        500
    }
}

#[derive(Serialize)]
struct Found {
    files: Vec<String>,
    truncated: bool,
}

fn find_files(shared: &Shared, args: FindArgs, cx: &RequestCx) -> ToolOutcome {
    let glob = globset::GlobBuilder::new(&args.glob)
        .literal_separator(false)
        .build()
        .map_err(|e| format!("invalid glob {:?}: {e}", args.glob))?
        .compile_matcher();
    let scope = shared.roots.resolve_scope(&args.path).map_err(|e| e.to_string())?;
    if let [one] = scope.as_slice()
        && one.kind == Kind::File
    {
        return Err(format!("{:?} is a file; find_files searches under a directory", args.path));
    }
    let (mut found, mut truncated) = (Vec::new(), false);
    'bases: for base in &scope {
        for entry in walk::files(&base.abs) {
            if cx.is_cancelled() {
                return Err("find_files was cancelled".into());
            }
            let Ok(rel) = entry.path().strip_prefix(&base.abs) else { continue };
            if glob.is_match(rel) {
                if found.len() == args.limit {
                    truncated = true;
                    break 'bases;
                }
                found.push(shared.roots.display(base.root, entry.path()));
            }
        }
    }
    let mut text = if found.is_empty() { format!("No files match {:?}", args.glob) } else { found.join("\n") };
    if truncated {
        text.push_str(&format!("\n(only the first {} matches; narrow the glob or the path)", args.limit));
    }
    structured(text, Found { files: found, truncated })
}

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    start_line: Option<usize>,
    end_line: Option<usize>,
}

fn read_file(shared: &Shared, args: ReadArgs) -> ToolOutcome {
    let file = shared.roots.resolve(&args.path).map_err(|e| e.to_string())?;
    let name = shared.roots.display(file.root, &file.abs);
    if file.kind == Kind::Dir {
        return Err(format!("{name} is a directory; list it with list_directory"));
    }
    let root = shared.roots.get(file.root);
    let binary = |e: files::ReadError| format!("{} ({})", e.message(&name), uri::from_path(&file.abs));
    if args.start_line.is_none() && args.end_line.is_none() {
        return match files::read_whole(&file.abs, root) {
            Ok(Body::Text(text)) => Ok(ToolResult::text(text)),
            Ok(Body::Binary(bytes)) => Err(binary(files::ReadError::Binary { size: bytes.len() as u64 })),
            Err(e) => Err(e.message(&name)),
        };
    }
    let start = args.start_line.unwrap_or(1);
    if let Some(end) = args.end_line
        && end < start
    {
        return Err(format!("end_line {end} is before start_line {start}"));
    }
    let lines = files::read_lines(&file.abs, root, start, args.end_line).map_err(|e| match e {
        files::ReadError::Binary { .. } => binary(e),
        e => e.message(&name),
    })?;
    let of = lines.total.map_or_else(String::new, |t| format!(" of {t}"));
    let note = format!("[{name}: lines {} to {}{of}]", lines.first, lines.last);
    Ok(ToolResult::text(lines.text).with_content(Content::text(note)))
}

#[derive(Deserialize)]
struct DescribeArgs {
    path: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Description {
    path: String,
    uri: String,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    modified: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_binary: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line_count: Option<usize>,
}

fn describe_file(shared: &Shared, args: DescribeArgs) -> ToolOutcome {
    let target = shared.roots.resolve(&args.path).map_err(|e| e.to_string())?;
    let name = shared.roots.display(target.root, &target.abs);
    let meta = target.abs.metadata().map_err(|e| format!("cannot read {name}: {e}"))?;
    let mut d = Description {
        path: name.clone(),
        uri: uri::from_path(&target.abs),
        kind: "directory",
        size: None,
        mime_type: None,
        modified: meta.modified().ok().and_then(files::rfc3339),
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
        text.push(format!("size: {} ({} bytes)", files::human_size(meta.len()), meta.len()));
        text.extend(d.mime_type.iter().map(|m| format!("MIME type: {m}")));
        text.extend(d.line_count.map(|n| format!("lines: {n}")));
    } else {
        text.push("type: directory".into());
    }
    text.extend(d.modified.iter().map(|m| format!("modified: {m}")));
    structured(text.join("\n"), d)
}
