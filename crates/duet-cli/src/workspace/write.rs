//! The write tools of `duet serve --allow-write`: `write_file` creates a text file or
//! replaces its contents, `edit_file` replaces exact text in one. Neither changes anything
//! before the user said yes. Each works out the change and asks through `crate::confirm`,
//! showing a summary of it; on the answer it works the change out again from scratch (the
//! path resolved anew through `paths`, the file read anew) and writes only if the user
//! confirmed that very change: a file edited in between makes it ask again. The write
//! itself goes through `atomic`, so nobody ever reads half a file.

use super::atomic::{self, Expect};
use super::files;
use super::paths::WriteTarget;
use super::tools::structured;
use super::{Shared, blocking, uri};
use crate::confirm::Question;
use duet::layer::{Registry, RegistryError, Reply, RequestCx, ToolAnnotations, ToolResult, ToolSpec, schema_for};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::sync::Arc;

/// The largest file the write tools write or replace.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// The most lines of each side a confirmation shows.
const PREVIEW_LINES: usize = 8;
/// Longer lines are cut in a confirmation.
const PREVIEW_CHARS: usize = 120;
/// The most line numbers a message lists.
const LISTED_LINES: usize = 10;

/// What a write tool's blocking body answers: a result, the question, or a tool error.
type WriteOutcome = Result<Reply<ToolResult>, String>;

pub fn register(registry: &mut Registry, shared: &Arc<Shared>) -> Result<(), RegistryError> {
    registry.tool(
        spec(shared, "write_file", write_file, true)
            .title("Write a file")
            .description(format!(
                "Creates a UTF-8 text file, or replaces the whole contents of one, under a root of the \
                 workspace; missing parent directories are created. The user must confirm each write first \
                 (the client asks them); if they decline, nothing is written. Files .gitignore excludes and \
                 .git directories cannot be written; files are at most {}. To change part of a file, use \
                 edit_file.",
                files::human_size(MAX_FILE_BYTES)
            ))
            .output_schema(schema_for::<Written>()),
    )?;
    registry.tool(
        spec(shared, "edit_file", edit_file, false)
            .title("Edit a file")
            .description(
                "Replaces exact text in a UTF-8 text file of the workspace: old_text must occur exactly once, \
                 whitespace and line breaks included (or set replace_all to replace every occurrence). The user \
                 must confirm the edit first (the client asks them); if they decline, nothing is changed.",
            )
            .output_schema(schema_for::<Edited>()),
    )?;
    Ok(())
}

/// A write tool: typed arguments, and a blocking body that may ask the user first.
fn spec<A>(
    shared: &Arc<Shared>,
    name: &str,
    work: fn(&Shared, A, &RequestCx) -> WriteOutcome,
    idempotent: bool,
) -> ToolSpec
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
{
    let shared = shared.clone();
    ToolSpec::typed(name, move |args: A, cx: RequestCx| {
        let shared = shared.clone();
        async move {
            let outcome = blocking(move || work(&shared, args, &cx)).await.and_then(|outcome| outcome);
            outcome.unwrap_or_else(|message| ToolResult::error(message).into())
        }
    })
    .annotations(ToolAnnotations {
        title: None,
        read_only_hint: Some(false),
        destructive_hint: Some(true),
        idempotent_hint: Some(idempotent),
        open_world_hint: Some(false),
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    /// The file to write: a path relative to the workspace, an absolute path under a root, or a file:// URI.
    path: String,
    /// The file's whole new contents.
    content: String,
    /// Refuse to replace a file that exists.
    #[serde(default)]
    create_only: bool,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Written {
    path: String,
    uri: String,
    /// Whether the file is new.
    created: bool,
    /// The file's size in bytes now.
    size: u64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    /// The file to edit: a path relative to the workspace, an absolute path under a root, or a file:// URI.
    path: String,
    /// The exact text to replace, whitespace and line breaks included.
    #[schemars(length(min = 1))]
    old_text: String,
    /// What replaces it.
    new_text: String,
    /// Replace every occurrence rather than require exactly one.
    #[serde(default)]
    replace_all: bool,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Edited {
    path: String,
    uri: String,
    /// How many occurrences were replaced.
    replacements: usize,
    /// The lines the replaced occurrences started on, as the file was.
    lines: Vec<usize>,
    /// The file's size in bytes now.
    size: u64,
}

/// A file as it is now, read whole.
struct Current {
    bytes: Vec<u8>,
    /// What the confirmation is bound to: an edit in between makes the question new.
    digest: String,
}

impl Current {
    /// The file `target` names, if it exists.
    fn read(shared: &Shared, target: &WriteTarget, name: &str) -> Result<Option<Current>, String> {
        if !target.exists {
            return Ok(None);
        }
        let cannot = |e: std::io::Error| format!("cannot read {name}: {e}");
        let file = files::open(&target.abs, shared.roots.get(target.root)).map_err(cannot)?;
        let meta = file.metadata().map_err(cannot)?;
        if meta.permissions().readonly() {
            return Err(format!("{name} is read-only; nothing was written"));
        }
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(cannot)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(format!(
                "{name} is over {}, more than the write tools handle; nothing was written",
                files::human_size(MAX_FILE_BYTES)
            ));
        }
        let digest = format!("{:x}", Sha256::digest(&bytes));
        Ok(Some(Current { bytes, digest }))
    }

    /// The contents as text, unless they are binary.
    fn text(&self) -> Option<&str> {
        (!files::looks_binary(&self.bytes)).then(|| std::str::from_utf8(&self.bytes).ok()).flatten()
    }
}

/// Asks the user to confirm `message` about the file as it is now.
fn confirmed(
    cx: &RequestCx,
    tool: &str,
    name: &str,
    mut message: String,
    current: Option<&Current>,
) -> Result<(), Reply<ToolResult>> {
    if [".gitignore", ".ignore"].iter().any(|ignore| name == *ignore || name.ends_with(&format!("/{ignore}"))) {
        message.push_str("\n\n(This is an ignore file: it decides which files the workspace serves.)");
    }
    let question = Question {
        tool: tool.into(),
        message,
        subject: current.map(|c| c.digest.clone()).into(),
        untouched: Some(format!("nothing was written to {name}")),
    };
    question.confirmed(cx)
}

/// Writes the confirmed bytes, in one step.
fn commit(shared: &Shared, target: &WriteTarget, name: &str, bytes: &[u8]) -> Result<(), String> {
    let expect = if target.exists { Expect::File } else { Expect::Absent };
    atomic::write(shared.roots.get(target.root), &target.abs, bytes, expect)
        .map_err(|e| format!("cannot write {name}: {e}; nothing was written"))
}

fn write_file(shared: &Shared, args: WriteArgs, cx: &RequestCx) -> WriteOutcome {
    let target = shared.roots.resolve_write(&args.path).map_err(|e| e.to_string())?;
    let name = shared.roots.display(target.root, &target.abs);
    if target.exists && args.create_only {
        return Err(format!("{name} already exists and create_only is set; nothing was written"));
    }
    let size = args.content.len() as u64;
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "the content is {}, more than the {} the write tools handle; nothing was written",
            files::human_size(size),
            files::human_size(MAX_FILE_BYTES)
        ));
    }
    let current = Current::read(shared, &target, &name)?;
    let new = describe_text(&args.content);
    let message = match &current {
        None => format!("Create {name} ({new})?{}", block(&preview('+', &lines_of(&args.content)))),
        Some(current) => {
            let was = files::human_size(current.bytes.len() as u64);
            match current.text() {
                Some(old) => format!("Overwrite {name} ({was}) with {new}? {}", changes(old, &args.content)),
                None => format!(
                    "Overwrite {name}, a binary file of {was}, with {new} of text?{}",
                    block(&preview('+', &lines_of(&args.content)))
                ),
            }
        }
    };
    if let Err(ask) = confirmed(cx, "write_file", &name, message, current.as_ref()) {
        return Ok(ask);
    }
    commit(shared, &target, &name, args.content.as_bytes())?;
    let text = match current {
        None => format!("Created {name} ({new})"),
        Some(_) => format!("Wrote {name} ({new})"),
    };
    let written = Written { path: name, uri: uri::from_path(&target.abs), created: !target.exists, size };
    structured(text, written).map(Reply::Complete)
}

fn edit_file(shared: &Shared, args: EditArgs, cx: &RequestCx) -> WriteOutcome {
    if args.old_text == args.new_text {
        return Err("old_text and new_text are the same, so there is nothing to change".into());
    }
    let target = shared.roots.resolve_write(&args.path).map_err(|e| e.to_string())?;
    let name = shared.roots.display(target.root, &target.abs);
    let Some(current) = Current::read(shared, &target, &name)? else {
        return Err(format!("{:?} does not exist in the workspace; create it with write_file", args.path));
    };
    let Some(text) = current.text() else {
        return Err(format!("{name} is not UTF-8 text; edit_file edits text files only"));
    };
    let starts: Vec<usize> = text.match_indices(&args.old_text).map(|(at, _)| at).collect();
    let mut lines = line_numbers(text, &starts);
    lines.dedup();
    match starts.len() {
        0 => {
            let crlf = text.contains("\r\n") && args.old_text.contains('\n') && !args.old_text.contains("\r\n");
            let hint = if crlf { " (its lines end in \\r\\n, so old_text must use \\r\\n too)" } else { "" };
            return Err(format!(
                "old_text was not found in {name}{hint}; it must match exactly, whitespace and line breaks \
                 included; nothing was changed"
            ));
        }
        1 => {}
        n if !args.replace_all => {
            return Err(format!(
                "old_text occurs {n} times in {name} (at {}); include more of the text around the one to \
                 change so that it occurs once, or set replace_all to replace every occurrence; nothing was \
                 changed",
                list_lines(&lines)
            ));
        }
        _ => {}
    }
    let edited = text.replace(&args.old_text, &args.new_text);
    let count = starts.len();
    let occurrences = if count == 1 { "1 occurrence".to_string() } else { format!("{count} occurrences") };
    let mut shown = preview('-', &lines_of(&args.old_text));
    shown.extend(preview('+', &lines_of(&args.new_text)));
    let message = format!("Replace {occurrences} in {name} (at {})?{}", list_lines(&lines), block(&shown));
    if let Err(ask) = confirmed(cx, "edit_file", &name, message, Some(&current)) {
        return Ok(ask);
    }
    commit(shared, &target, &name, edited.as_bytes())?;
    let text = format!("Replaced {occurrences} in {name} (at {})", list_lines(&lines));
    let size = edited.len() as u64;
    let edited = Edited { path: name, uri: uri::from_path(&target.abs), replacements: count, lines, size };
    structured(text, edited).map(Reply::Complete)
}

/// `123 bytes, 4 lines`.
fn describe_text(text: &str) -> String {
    let lines = text.lines().count();
    format!("{}, {lines} line{}", files::human_size(text.len() as u64), if lines == 1 { "" } else { "s" })
}

fn lines_of(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// The lines of one side of a change, as a confirmation shows them: marked with `sign`,
/// the first [`PREVIEW_LINES`], each cut at [`PREVIEW_CHARS`].
fn preview(sign: char, lines: &[&str]) -> Vec<String> {
    let mut shown: Vec<String> = lines
        .iter()
        .take(PREVIEW_LINES)
        .map(|line| {
            let line = line.trim_end_matches(['\n', '\r']);
            match line.char_indices().nth(PREVIEW_CHARS) {
                Some((cut, _)) => format!("{sign} {}…", &line[..cut]),
                None => format!("{sign} {line}"),
            }
        })
        .collect();
    if lines.len() > PREVIEW_LINES {
        shown.push(format!("{sign} … and {} more lines", lines.len() - PREVIEW_LINES));
    }
    shown
}

/// What replacing `old` with `new` changes, by lines: what lies between their common first
/// and last lines, said and shown.
fn changes(old: &str, new: &str) -> String {
    let (old, new) = (lines_of(old), lines_of(new));
    let same_start = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let same_end =
        old[same_start..].iter().rev().zip(new[same_start..].iter().rev()).take_while(|(a, b)| a == b).count();
    let (removed, added) = (&old[same_start..old.len() - same_end], &new[same_start..new.len() - same_end]);
    let first = same_start + 1;
    let span = |n: usize| if n == 1 { format!("Line {first}") } else { format!("Lines {first} to {}", first + n - 1) };
    let count = |n: usize| if n == 1 { "1 line".to_string() } else { format!("{n} lines") };
    let verb = |n: usize, one: &'static str, many: &'static str| if n == 1 { one } else { many };
    let said = match (removed.len(), added.len()) {
        (0, 0) => return "The contents stay the same.".into(),
        (0, n) if same_start == 0 => format!("{} {} added at the start.", count(n), verb(n, "is", "are")),
        (0, n) => format!("{} {} added after line {same_start}.", count(n), verb(n, "is", "are")),
        (n, 0) => format!("{} {} removed.", span(n), verb(n, "is", "are")),
        (n, m) => format!("{} {} {}.", span(n), verb(n, "becomes", "become"), count(m)),
    };
    let mut shown = preview('-', removed);
    shown.extend(preview('+', added));
    format!("{said}{}", block(&shown))
}

/// Preview lines as a block after a sentence; nothing when there are none.
fn block(lines: &[String]) -> String {
    if lines.is_empty() { String::new() } else { format!("\n\n{}", lines.join("\n")) }
}

/// The 1-based line of each byte offset in `starts` (ascending).
fn line_numbers(text: &str, starts: &[usize]) -> Vec<usize> {
    let (mut line, mut counted) = (1, 0);
    starts
        .iter()
        .map(|&at| {
            line += text.as_bytes()[counted..at].iter().filter(|b| **b == b'\n').count();
            counted = at;
            line
        })
        .collect()
}

/// `line 4`, `lines 4, 9, 12`, or the first [`LISTED_LINES`] and how many more.
fn list_lines(lines: &[usize]) -> String {
    let shown: Vec<String> = lines.iter().take(LISTED_LINES).map(usize::to_string).collect();
    let more = lines.len().saturating_sub(LISTED_LINES);
    match (lines.len(), more) {
        (1, _) => format!("line {}", shown[0]),
        (_, 0) => format!("lines {}", shown.join(", ")),
        _ => format!("lines {} and {more} more", shown.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_summaries() {
        let old = "a\nb\nc\nd\n";
        assert_eq!(changes(old, "a\nB\nc\nd\n"), "Line 2 becomes 1 line.\n\n- b\n+ B");
        assert_eq!(changes(old, "a\nb\nx\ny\nc\nd\n"), "2 lines are added after line 2.\n\n+ x\n+ y");
        assert_eq!(changes(old, "a\nd\n"), "Lines 2 to 3 are removed.\n\n- b\n- c");
        assert_eq!(changes(old, "z\na\nb\nc\nd\n"), "1 line is added at the start.\n\n+ z");
        assert_eq!(changes(old, old), "The contents stay the same.");
    }

    #[test]
    fn previews_are_bounded() {
        let long = "x".repeat(PREVIEW_CHARS + 5);
        assert_eq!(preview('+', &[&long]), [format!("+ {}…", "x".repeat(PREVIEW_CHARS))]);
        let many: Vec<String> = (0..12).map(|n| format!("{n}\n")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let shown = preview('-', &many);
        assert_eq!(shown.len(), PREVIEW_LINES + 1);
        assert_eq!(shown.last().unwrap(), "- … and 4 more lines");
    }

    #[test]
    fn lines_are_numbered_and_listed() {
        let text = "one\ntwo x\nthree\nx four x\n";
        let starts: Vec<usize> = text.match_indices('x').map(|(at, _)| at).collect();
        let lines = line_numbers(text, &starts);
        assert_eq!(lines, [2, 4, 4]);
        assert_eq!(list_lines(&lines[..1]), "line 2");
        assert_eq!(list_lines(&lines), "lines 2, 4, 4");
        assert_eq!(list_lines(&(1..=12).collect::<Vec<_>>()), "lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 more");
    }
}
