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

pub(crate) use parallel::{Feedback, search};

use super::in_force::InForce;
use super::tools::{ToolOutcome, dot, json_integers, path_doc, structured, walking_spec};
use super::{Cx, Shared, files, patterns};
use crate::counted::count;
use duet::layer::{Registry, RegistryError, schema_for};
use globset::GlobSet;
use grep_regex::{ErrorKind, RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
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

pub(crate) fn register(registry: &mut Registry<Arc<Shared>>) -> Result<(), RegistryError> {
    let tool = walking_spec("search_files", search_files)
        .title("Search file contents")
        .description(
            "Searches the lines of the workspace's text files for a regular expression (Rust regex syntax), \
             or for a fixed string with literal, and returns each matching line with its path and line \
             number, in path then line order; before and after add the lines around each match. Binary \
             files, files .gitignore leaves out and files over 16 MiB are skipped. Reports progress while \
             it runs.",
        )
        .output_schema(schema_for::<Found>());
    registry.tool(tool)?;
    Ok(())
}

#[derive(Deserialize, JsonSchema)]
#[schemars(transform = json_integers)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    /// The regular expression (or, with literal, the text) to find; at most 16 KiB.
    #[schemars(length(min = 1))]
    pattern: String,
    #[serde(default = "dot")]
    #[schemars(description = path_doc!("The directory (or file) to search."))]
    path: String,
    /// Only search files whose path relative to `path` matches this glob, e.g. *.rs; at most 1 KiB.
    #[schemars(extend("type" = "string"))]
    glob: Option<String>,
    /// Match pattern as a fixed string, not a regular expression (like rg -F).
    #[serde(default)]
    literal: bool,
    /// Ignore case (like rg -i).
    #[serde(default)]
    case_insensitive: bool,
    /// Also return this many lines before each match (like rg -B).
    #[serde(default)]
    #[schemars(range(max = MAX_CONTEXT))]
    before: usize,
    /// Also return this many lines after each match (like rg -A).
    #[serde(default)]
    #[schemars(range(max = MAX_CONTEXT))]
    after: usize,
    /// Return at most this many matching lines (the first by path then line).
    #[serde(default = "SearchArgs::default_max")]
    #[schemars(range(min = 1, max = 5000))]
    max_results: usize,
}

impl SearchArgs {
    fn default_max() -> usize {
        200
    }
}

/// One matching line.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = json_integers)]
pub(crate) struct Match {
    pub path: String,
    pub line: usize,
    pub text: String,
    /// With before or after: the lines just before this one, matching or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "array"))]
    pub before: Option<Vec<Line>>,
    /// With before or after: the lines just after this one, matching or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "array"))]
    pub after: Option<Vec<Line>>,
}

/// A line around a match.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = json_integers)]
pub(crate) struct Line {
    pub line: usize,
    pub text: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(transform = json_integers)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Found {
    pub matches: Vec<Match>,
    /// Files searched. When truncated, files that sort after the kept matches may have been skipped.
    pub files_scanned: usize,
    /// Whether more lines matched than were returned.
    pub truncated: bool,
    #[serde(skip)]
    pub cancelled: bool,
}

/// What to look for.
pub(crate) struct Query {
    matcher: RegexMatcher,
    glob: Option<GlobSet>,
    max_results: usize,
    before: usize,
    after: usize,
}

impl Query {
    pub(crate) fn new(args: &SearchArgs) -> Result<Query, String> {
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

fn search_files(shared: &Shared, in_force: &InForce, args: SearchArgs, cx: &Cx) -> ToolOutcome {
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
