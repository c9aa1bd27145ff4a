//! `search_files`: a regular expression (or a fixed string) over the contents of the
//! workspace's text files, line by line, with ripgrep's own searcher and matcher over the
//! workspace's walk run on several threads. It can run long, so it reports progress as it
//! goes, stops as soon as the request is cancelled, and returns a bounded number of
//! matches, the same ones every time: the first by path then line. Binary files, files
//! that `.gitignore` leaves out and files over [`MAX_SEARCHED_BYTES`] are skipped.
//!
//! `file.rs` searches one file, `kept.rs` keeps the first matches whatever order files
//! finish in, `parallel.rs` runs the walk, and `render.rs` writes the text for the model.

mod file;
mod kept;
mod parallel;
mod render;

pub use parallel::{Feedback, search};

use super::in_force::InForce;
use super::tools::{ToolOutcome, dot, path_schema, structured, walking_spec};
use super::{Shared, files, patterns};
use crate::counted::count;
use duet::layer::{Registry, RegistryError, RequestCx};
use globset::GlobSet;
use grep_regex::{ErrorKind, RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Larger files are not searched.
const MAX_SEARCHED_BYTES: u64 = 16 * 1024 * 1024;
/// Matched lines, and lines of context, are cut to this many characters.
const MAX_LINE_CHARS: usize = 500;
/// The least time between two progress reports.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);
/// The most lines of context asked for on either side of a match.
const MAX_CONTEXT: usize = 20;
/// The most memory one pattern's compiled program may take, and the most its lazy DFA's
/// cache may grow to (past that the search goes on, slower). grep-regex allows 100 MiB and
/// 1000 MiB by default, which lets a short pattern such as `(?:[\w\s]{1,20}){1,100}\d`
/// take hundreds of MiB; ordinary patterns need well under 1 MiB. (What this does not
/// count, an alternation of literals, is bounded by the pattern's length:
/// [`patterns::MAX_PATTERN_BYTES`].)
const MAX_COMPILED_BYTES: usize = 10 * 1024 * 1024;

pub fn register(registry: &mut Registry, shared: &Arc<Shared>) -> Result<(), RegistryError> {
    let line = json!({
        "type": "object",
        "properties": {"line": {"type": "integer"}, "text": {"type": "string"}},
        "required": ["line", "text"]
    });
    let context = |side: &str| {
        json!({"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT, "default": 0,
               "description": format!("Also return this many lines {side} each match (like rg -{}).",
                                      if side == "before" { 'B' } else { 'A' })})
    };
    let tool = walking_spec(shared, "search_files", search_files)
        .title("Search file contents")
        .description(
            "Searches the lines of the workspace's text files for a regular expression (Rust regex syntax), \
             or for a fixed string with literal, and returns each matching line with its path and line \
             number, in path then line order; before and after add the lines around each match. Binary \
             files, files .gitignore leaves out and files over 16 MiB are skipped. Reports progress while \
             it runs.",
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1,
                            "description": "The regular expression (or, with literal, the text) to find; at most 16 KiB."},
                "path": path_schema("The directory (or file) to search."),
                "glob": {"type": "string",
                         "description": "Only search files whose path relative to `path` matches this glob, e.g. *.rs; at most 1 KiB."},
                "literal": {"type": "boolean", "default": false,
                            "description": "Match pattern as a fixed string, not a regular expression (like rg -F)."},
                "case_insensitive": {"type": "boolean", "default": false, "description": "Ignore case (like rg -i)."},
                "before": context("before"),
                "after": context("after"),
                "max_results": {"type": "integer", "minimum": 1, "maximum": 5000, "default": 200,
                                "description": "Return at most this many matching lines (the first by path then line)."}
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
                        "text": {"type": "string"},
                        "before": {"type": "array", "items": line,
                                   "description": "With before or after: the lines just before this one, matching or not."},
                        "after": {"type": "array", "items": line,
                                  "description": "With before or after: the lines just after this one, matching or not."}
                    },
                    "required": ["path", "line", "text"]
                }},
                "filesScanned": {"type": "integer",
                                 "description": "Files searched. When truncated, files that sort after the kept matches may have been skipped."},
                "truncated": {"type": "boolean", "description": "Whether more lines matched than were returned."}
            },
            "required": ["matches", "filesScanned", "truncated"]
        }));
    registry.tool(tool)?;
    Ok(())
}

#[derive(Deserialize)]
pub struct SearchArgs {
    pattern: String,
    #[serde(default = "dot")]
    path: String,
    glob: Option<String>,
    #[serde(default)]
    literal: bool,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    before: usize,
    #[serde(default)]
    after: usize,
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
    /// With context asked for: the lines before and after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Vec<Line>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Vec<Line>>,
}

/// A line around a match.
#[derive(Debug, Serialize)]
pub struct Line {
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
    matcher: RegexMatcher,
    glob: Option<GlobSet>,
    max_results: usize,
    before: usize,
    after: usize,
}

impl Query {
    pub fn new(args: &SearchArgs) -> Result<Query, String> {
        let what = if args.literal { "pattern" } else { "regular expression" };
        patterns::within(&format!("the {what}"), &args.pattern, patterns::MAX_PATTERN_BYTES)?;
        // Searched a line at a time (multi-line only lets `^` and `$` match at the ends of
        // lines inside the searcher's buffer, as ripgrep does), and `$` matches before \r\n
        // as before \n: a line's terminator is no part of it, for the pattern as for the text.
        let matcher = RegexMatcherBuilder::new()
            .fixed_strings(args.literal)
            .case_insensitive(args.case_insensitive)
            .multi_line(true)
            .crlf(true)
            .line_terminator(Some(b'\n'))
            .size_limit(MAX_COMPILED_BYTES)
            .dfa_size_limit(MAX_COMPILED_BYTES)
            .build(&args.pattern)
            .map_err(|e| match e.kind() {
                ErrorKind::Regex(message) if message.starts_with("compiled regex exceeds size limit") => format!(
                    "the {what} {:?} is too large to compile: it would take over {} (use fewer or smaller repetitions)",
                    args.pattern,
                    files::human_size(MAX_COMPILED_BYTES as u64)
                ),
                _ => format!("invalid {what} {:?}: {e}", args.pattern),
            })?;
        let glob = args.glob.as_deref().map(patterns::glob).transpose()?;
        let (before, after) = (args.before.min(MAX_CONTEXT), args.after.min(MAX_CONTEXT));
        Ok(Query { matcher, glob, max_results: args.max_results, before, after })
    }

    /// A searcher for one file: numbered lines, the context asked for, no binary check
    /// (the workspace makes its own first) and no transcoding.
    fn searcher(&self) -> Searcher {
        SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::none())
            .bom_sniffing(false)
            .before_context(self.before)
            .after_context(self.after)
            .build()
    }
}

fn search_files(shared: &Shared, in_force: &InForce, args: SearchArgs, cx: &RequestCx) -> ToolOutcome {
    let query = Query::new(&args)?;
    let scope = in_force.resolve_scope(&args.path).map_err(|e| e.to_string())?;
    let report = |files: usize, matches: usize| {
        let message = format!("{} scanned, {}", count(files, "file"), count(matches, "matching line"));
        cx.progress(files as f64, None, Some(&message));
    };
    let feedback = Feedback { cancelled: &|| cx.is_cancelled(), progress: &report };
    let found = search(shared, &scope, &|file| in_force.reachable(file).is_ok(), &query, &feedback);
    if found.cancelled {
        return Err(format!("search_files was cancelled after {}", count(found.files_scanned, "file")));
    }
    structured(render::text(&args.pattern, &found), found)
}
