//! `search_files`: a regular expression over the contents of the workspace's text files,
//! line by line. It can run long, so it reports progress as it goes, stops as soon as the
//! request is cancelled, and returns a bounded number of matches. Binary files, files that
//! `.gitignore` leaves out and files over [`MAX_SEARCHED_BYTES`] are skipped.

use super::Shared;
use super::files;
use super::paths::{Resolved, Root};
use super::tools::{ToolOutcome, dot, path_schema, spec, structured};
use super::walk;
use duet::layer::{Registry, RegistryError, RequestCx};
use globset::GlobMatcher;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Larger files are not searched.
const MAX_SEARCHED_BYTES: u64 = 16 * 1024 * 1024;
/// Matched lines are cut to this many characters.
const MAX_LINE_CHARS: usize = 500;
/// The least time between two progress reports.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

pub fn register(registry: &mut Registry, shared: &Arc<Shared>) -> Result<(), RegistryError> {
    let tool = spec(shared, "search_files", search_files)
        .title("Search file contents")
        .description(
            "Searches the lines of the workspace's text files for a regular expression (Rust regex syntax) \
             and returns each matching line with its path and line number. Binary files, files .gitignore \
             leaves out and files over 16 MiB are skipped. Reports progress while it runs.",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1, "description": "The regular expression."},
                "path": path_schema("The directory (or file) to search."),
                "glob": {"type": "string", "description": "Only search files whose path relative to `path` matches this glob, e.g. *.rs."},
                "case_insensitive": {"type": "boolean", "default": false},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 5000, "default": 200,
                                "description": "Stop after this many matching lines."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }))
        .output_schema(json!({
            "type": "object",
            "properties": {
                "matches": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "line": {"type": "integer"},
                        "text": {"type": "string"}
                    },
                    "required": ["path", "line", "text"]
                }},
                "filesScanned": {"type": "integer"},
                "truncated": {"type": "boolean"}
            },
            "required": ["matches", "filesScanned", "truncated"]
        }));
    registry.tool(tool)?;
    Ok(())
}

#[derive(Deserialize)]
struct SearchArgs {
    pattern: String,
    #[serde(default = "dot")]
    path: String,
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default = "SearchArgs::default_max")]
    max_results: usize,
}

impl SearchArgs {
    fn default_max() -> usize {
        200
    }
}

/// One matching line.
#[derive(Debug, Serialize)]
pub struct Match {
    pub path: String,
    pub line: usize,
    pub text: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Found {
    pub matches: Vec<Match>,
    pub files_scanned: usize,
    pub truncated: bool,
    #[serde(skip)]
    pub cancelled: bool,
}

/// What to look for.
pub struct Query {
    pub regex: Regex,
    pub glob: Option<GlobMatcher>,
    pub max_results: usize,
}

/// How a search reports and learns it should stop.
pub struct Feedback<'a> {
    pub cancelled: &'a dyn Fn() -> bool,
    /// Files scanned and matches so far.
    pub progress: &'a dyn Fn(usize, usize),
}

fn search_files(shared: &Shared, args: SearchArgs, cx: &RequestCx) -> ToolOutcome {
    let regex = regex::RegexBuilder::new(&args.pattern)
        .case_insensitive(args.case_insensitive)
        .build()
        .map_err(|e| format!("invalid regular expression {:?}: {e}", args.pattern))?;
    let glob = match &args.glob {
        None => None,
        Some(g) => Some(globset::Glob::new(g).map_err(|e| format!("invalid glob {g:?}: {e}"))?.compile_matcher()),
    };
    let scope = shared.roots.resolve_scope(&args.path).map_err(|e| e.to_string())?;
    let query = Query { regex, glob, max_results: args.max_results };
    let report = |files: usize, matches: usize| {
        cx.progress(files as f64, None, Some(&format!("{files} files scanned, {matches} matching lines")));
    };
    let found = search(shared, &scope, &query, &Feedback { cancelled: &|| cx.is_cancelled(), progress: &report });
    if found.cancelled {
        return Err(format!("search_files was cancelled after {} files", found.files_scanned));
    }
    let mut text: Vec<String> = found.matches.iter().map(|m| format!("{}:{}: {}", m.path, m.line, m.text)).collect();
    text.push(match (found.matches.len(), found.truncated) {
        (0, _) => format!("No matches for {:?} in {} files", args.pattern, found.files_scanned),
        (n, true) => format!("(stopped at {n} matching lines; narrow the search or raise max_results)"),
        (n, false) => format!("({n} matching lines in {} files scanned)", found.files_scanned),
    });
    structured(text.join("\n"), found)
}

/// Searches the files under `scope`: progress on the first file, then at most every
/// [`PROGRESS_EVERY`], and once more at the end; a look at `cancelled` before every file
/// and every 4096 lines.
pub fn search(shared: &Shared, scope: &[Resolved], query: &Query, feedback: &Feedback<'_>) -> Found {
    let mut found = Found { matches: Vec::new(), files_scanned: 0, truncated: false, cancelled: false };
    let mut last_report: Option<Instant> = None;
    let mut reported = 0;
    'scope: for base in scope {
        for entry in walk::files(&base.abs) {
            if (feedback.cancelled)() {
                found.cancelled = true;
                return found;
            }
            let rel = entry.path().strip_prefix(&base.abs).ok().filter(|r| !r.as_os_str().is_empty());
            let rel = rel.unwrap_or_else(|| entry.path().file_name().map_or(entry.path(), Path::new));
            if query.glob.as_ref().is_some_and(|g| !g.is_match(rel)) {
                continue;
            }
            if entry.metadata().is_ok_and(|m| m.len() > MAX_SEARCHED_BYTES) {
                continue;
            }
            let name = shared.roots.display(base.root, entry.path());
            search_file(entry.path(), shared.roots.get(base.root), &name, query, feedback, &mut found);
            found.files_scanned += 1;
            if found.cancelled {
                return found;
            }
            if last_report.is_none_or(|at| at.elapsed() >= PROGRESS_EVERY) {
                (feedback.progress)(found.files_scanned, found.matches.len());
                (last_report, reported) = (Some(Instant::now()), found.files_scanned);
            }
            if found.truncated {
                break 'scope;
            }
        }
    }
    if reported < found.files_scanned {
        (feedback.progress)(found.files_scanned, found.matches.len());
    }
    found
}

fn search_file(path: &Path, root: &Root, name: &str, query: &Query, feedback: &Feedback<'_>, found: &mut Found) {
    let Ok(file) = files::open(path, root) else { return };
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    match reader.fill_buf() {
        Ok(head) if !files::looks_binary(head) => {}
        _ => return,
    }
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if number % 4096 == 0 && (feedback.cancelled)() {
            found.cancelled = true;
            return;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        if query.regex.is_match(text) {
            if found.matches.len() == query.max_results {
                found.truncated = true;
                return;
            }
            found.matches.push(Match { path: name.to_string(), line: number, text: cut(text) });
        }
    }
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
