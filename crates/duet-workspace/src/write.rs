//! The write tools of `duet serve --allow-write`: `write_file` creates a text file or
//! replaces its contents, `edit_file` makes edits in one (all or none; `edit` finds and
//! applies them, and a dry run only shows their diff), `create_directory` makes a
//! directory, `move_file` gives a file a new path. None changes anything before the user
//! said yes. Each works out the change and asks through `crate::confirm`,
//! showing a summary of it; on the answer it works the change out again from scratch (the
//! path resolved anew through `paths`, the file read anew) and writes only if the user
//! confirmed that very change: a file edited in between makes it ask again. The write
//! itself goes through `atomic`, so nobody ever reads half a file.

use super::atomic::{self, Expect};
use super::edit::{self, Applied, Edit};
use super::files;
use super::in_force::InForce;
use super::paths::WriteTarget;
use super::tools::structured;
use super::{Cx, Shared, blocking, uri};
use crate::confirm::Question;
use duet::layer::{Registry, RegistryError, Reply, ToolAnnotations, ToolResult, ToolSpec, schema_for};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::sync::Arc;

/// The largest file the write tools write or replace.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// The most lines of each side a confirmation shows.
const PREVIEW_LINES: usize = 8;
/// Longer lines are cut in a confirmation.
const PREVIEW_CHARS: usize = 120;

/// What a write tool's blocking body answers: a result, the question, or a tool error.
type WriteOutcome = Result<Reply<ToolResult>, String>;

pub(crate) fn register(registry: &mut Registry<Arc<Shared>>) -> Result<(), RegistryError> {
    registry.tool(
        spec("write_file", write_file, true, true)
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
        spec("edit_file", edit_file, false, true)
            .title("Edit a file")
            .description(
                "Replaces text in a UTF-8 text file of the workspace: old_text with new_text, or several \
                 edits (edits: [{old_text, new_text}]) applied in order, all or none. Each old_text must occur \
                 exactly once, whitespace and line breaks included (or set replace_all to replace every \
                 occurrence); when it is not there exactly, whole lines are matched with whitespace ignored, \
                 the new text takes the file's indentation, and the result says so. dry_run shows the change \
                 as a unified diff and writes nothing. The user must confirm the edit first (the client asks \
                 them); if they decline, nothing is changed.",
            )
            .output_schema(schema_for::<Edited>()),
    )?;
    registry.tool(
        spec("create_directory", create_directory, true, false)
            .title("Create a directory")
            .description(
                "Creates a directory of the workspace, and the missing ones on its way; one that exists \
                 already is fine. The user must confirm it first (the client asks them). Ignored paths and \
                 .git directories cannot be created.",
            )
            .output_schema(schema_for::<CreatedDir>()),
    )?;
    registry.tool(
        spec("move_file", move_file, false, true)
            .title("Move a file")
            .description(
                "Moves or renames a file of the workspace to a new path under a root (missing directories are \
                 created). A file already at the destination is replaced only with overwrite set. The user \
                 must confirm the move first (the client asks them). Neither path may be ignored or in .git.",
            )
            .output_schema(schema_for::<Moved>()),
    )?;
    Ok(())
}

/// A write tool: typed arguments, and a blocking body that may ask the user first.
fn spec<A>(
    name: &str,
    work: fn(&InForce, A, &Cx) -> WriteOutcome,
    idempotent: bool,
    destructive: bool,
) -> ToolSpec<Arc<Shared>>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
{
    ToolSpec::typed(name, move |args: A, cx: Cx| async move {
        let client = cx.client_roots().await;
        let work = move || work(&cx.state().in_force(client.listed(), cx.reach_check()), args, &cx);
        blocking(work).await.and_then(|outcome| outcome)
    })
    .annotations(ToolAnnotations {
        title: None,
        read_only_hint: Some(false),
        destructive_hint: Some(destructive),
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
    /// For one edit: the text to replace, whitespace and line breaks included.
    #[schemars(length(min = 1))]
    old_text: Option<String>,
    /// For one edit: what replaces it.
    new_text: Option<String>,
    /// For one edit: replace every occurrence rather than require exactly one.
    #[serde(default)]
    replace_all: bool,
    /// Several edits instead, applied in order (each to what the ones before it made); all apply or none does.
    edits: Option<Vec<EditSpec>>,
    /// Show the change as a unified diff and write nothing; nothing is asked.
    #[serde(default)]
    dry_run: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditSpec {
    /// The text to replace, whitespace and line breaks included.
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
    /// How many occurrences were replaced, all edits together.
    replacements: usize,
    /// The lines the replaced occurrences started on, each edit's in the text as it was when it applied.
    lines: Vec<usize>,
    /// How each edit applied, in order.
    edits: Vec<EditDone>,
    /// The file's size in bytes now (after a dry run, what it would be).
    size: u64,
    /// Nothing was written: `diff` shows what would change.
    dry_run: bool,
    /// The unified diff of a dry run.
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EditDone {
    replacements: usize,
    lines: Vec<usize>,
    /// old_text was not there exactly; it matched whole lines with whitespace ignored.
    whitespace_ignored: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CreateDirArgs {
    /// The directory to create: a path relative to the workspace, an absolute path under a root, or a file:// URI.
    path: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct CreatedDir {
    path: String,
    uri: String,
    /// Whether it was created (false: it existed already).
    created: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct MoveArgs {
    /// The file to move: a path relative to the workspace, an absolute path under a root, or a file:// URI.
    source: String,
    /// Its new path, file name included.
    destination: String,
    /// Replace a file already at the destination.
    #[serde(default)]
    overwrite: bool,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Moved {
    source: String,
    destination: String,
    /// The file's URI now.
    uri: String,
    /// Whether a file at the destination was replaced.
    replaced: bool,
}

/// A file as it is now, read whole.
struct Current {
    bytes: Vec<u8>,
    /// What the confirmation is bound to: an edit in between makes the question new.
    digest: String,
}

impl Current {
    /// The file `target` names, if it exists.
    fn read(in_force: &InForce, target: &WriteTarget, name: &str) -> Result<Option<Current>, String> {
        if !target.exists {
            return Ok(None);
        }
        let cannot = |e: std::io::Error| format!("cannot read {name}: {e}");
        let file = files::open(&target.abs, in_force.roots().get(target.root)).map_err(cannot)?;
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

/// Asks the user to confirm `message` about the paths it `touches` as they are now
/// (`subject`); `untouched` says what a refusal left alone.
fn confirmed(
    cx: &Cx,
    tool: &str,
    touches: &[&str],
    mut message: String,
    subject: Value,
    untouched: String,
) -> Result<(), Reply<ToolResult>> {
    let ignore_file =
        |name: &&str| [".gitignore", ".ignore"].iter().any(|i| *name == *i || name.ends_with(&format!("/{i}")));
    if touches.iter().any(ignore_file) {
        message.push_str("\n\n(This is an ignore file: it decides which files the workspace serves.)");
    }
    let question = Question { tool: tool.into(), message, subject, untouched: Some(untouched) };
    question.confirmed(cx)
}

/// Asks the user to confirm `message` about the file `name` as it is now.
fn file_confirmed(
    cx: &Cx,
    tool: &str,
    name: &str,
    message: String,
    current: Option<&Current>,
) -> Result<(), Reply<ToolResult>> {
    let subject = current.map(|c| c.digest.clone()).into();
    confirmed(cx, tool, &[name], message, subject, format!("nothing was written to {name}"))
}

/// Writes the confirmed bytes, in one step.
fn commit(in_force: &InForce, target: &WriteTarget, name: &str, bytes: &[u8]) -> Result<(), String> {
    let expect = if target.exists { Expect::File } else { Expect::Absent };
    atomic::write(in_force.roots().get(target.root), &target.abs, bytes, expect)
        .map_err(|e| format!("cannot write {name}: {e}; nothing was written"))
}

fn write_file(in_force: &InForce, args: WriteArgs, cx: &Cx) -> WriteOutcome {
    let target = in_force.resolve_write(&args.path).map_err(|e| e.to_string())?;
    let name = in_force.roots().display(target.root, &target.abs);
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
    let current = Current::read(in_force, &target, &name)?;
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
    if let Err(ask) = file_confirmed(cx, "write_file", &name, message, current.as_ref()) {
        return Ok(ask);
    }
    commit(in_force, &target, &name, args.content.as_bytes())?;
    let text = match current {
        None => format!("Created {name} ({new})"),
        Some(_) => format!("Wrote {name} ({new})"),
    };
    let written = Written { path: name, uri: uri::from_path(&target.abs), created: !target.exists, size };
    structured(text, written).map(Reply::Complete)
}

fn edit_file(in_force: &InForce, args: EditArgs, cx: &Cx) -> WriteOutcome {
    let EditArgs { path, old_text, new_text, replace_all, edits, dry_run } = args;
    let single = old_text.is_some();
    let edits: Vec<Edit> = match (old_text, new_text, edits) {
        (Some(old_text), Some(new_text), None) => vec![Edit { old_text, new_text, replace_all }],
        (None, None, Some(edits)) if !edits.is_empty() && !replace_all => edits
            .into_iter()
            .map(|e| Edit { old_text: e.old_text, new_text: e.new_text, replace_all: e.replace_all })
            .collect(),
        (None, None, Some(_)) if replace_all => {
            return Err("replace_all goes with old_text; with edits, set it on each edit".into());
        }
        (None, None, Some(_)) => return Err("edits is empty; give at least one edit".into()),
        (Some(_), None, None) => return Err("new_text is missing: old_text needs it".into()),
        (None, Some(_), None) => return Err("old_text is missing: new_text needs it".into()),
        (None, None, None) => return Err("give old_text and new_text, or edits".into()),
        _ => return Err("give old_text and new_text, or edits, not both".into()),
    };
    // Which edit a refusal is about, when there are several.
    let which = |i: usize| if single { String::new() } else { format!("edits[{i}]: ") };
    if let Some(i) = edits.iter().position(|e| e.old_text == e.new_text) {
        return Err(format!("{}old_text and new_text are the same, so there is nothing to change", which(i)));
    }
    let target = in_force.resolve_write(&path).map_err(|e| e.to_string())?;
    let name = in_force.roots().display(target.root, &target.abs);
    let Some(current) = Current::read(in_force, &target, &name)? else {
        return Err(format!("{path:?} does not exist in the workspace; create it with write_file"));
    };
    let Some(text) = current.text() else {
        return Err(format!("{name} is not UTF-8 text; edit_file edits text files only"));
    };
    let (edited, applied) =
        edit::apply(text, &edits).map_err(|(i, why)| format!("{}{}", which(i), why.message(&name)))?;
    let diff = dry_run.then(|| edit::unified_diff(&name, text, &edited));
    // "1 occurrence in a.rs (at line 2)", or "2 edits to a.rs: 1. 1 occurrence (at line 2); 2. …".
    let (verbs, summary) = match applied.as_slice() {
        [one] => (["Replace", "Replaced", "replace"], told(one, &format!(" in {name}"))),
        several => {
            let each: Vec<String> =
                several.iter().enumerate().map(|(i, a)| format!("{}. {}", i + 1, told(a, ""))).collect();
            (["Apply", "Applied", "apply"], format!("{} edits to {name}: {}", several.len(), each.join("; ")))
        }
    };
    let done = match &diff {
        Some(diff) => format!("{diff}\n(dry run: nothing was written; this would {} {summary})", verbs[2]),
        None => {
            let message = match applied.as_slice() {
                [one] => format!("{} {summary}?{}", verbs[0], block(&shown(one))),
                several => {
                    let each = several
                        .iter()
                        .enumerate()
                        .map(|(i, a)| format!("{}. Replace {}{}", i + 1, told(a, ""), block(&shown(a))));
                    format!(
                        "{} {} edits to {name}?\n\n{}",
                        verbs[0],
                        several.len(),
                        each.collect::<Vec<_>>().join("\n\n")
                    )
                }
            };
            if let Err(ask) = file_confirmed(cx, "edit_file", &name, message, Some(&current)) {
                return Ok(ask);
            }
            commit(in_force, &target, &name, edited.as_bytes())?;
            format!("{} {summary}", verbs[1])
        }
    };
    let report = Edited {
        uri: uri::from_path(&target.abs),
        path: name,
        replacements: applied.iter().map(|a| a.replacements).sum(),
        lines: applied.iter().flat_map(|a| a.lines.iter().copied()).collect(),
        edits: applied
            .iter()
            .map(|a| EditDone { replacements: a.replacements, lines: a.lines.clone(), whitespace_ignored: a.loose })
            .collect(),
        size: edited.len() as u64,
        dry_run,
        diff,
    };
    structured(done, report).map(Reply::Complete)
}

/// `1 occurrence{within} (at line 2)`, and how it matched when whitespace was ignored.
fn told(applied: &Applied, within: &str) -> String {
    let count = match applied.replacements {
        1 => "1 occurrence".to_string(),
        n => format!("{n} occurrences"),
    };
    let loose = if applied.loose {
        " (old_text matched only with whitespace ignored; the new text takes the file's indentation)"
    } else {
        ""
    };
    format!("{count}{within} (at {}){loose}", edit::list_lines(&applied.lines))
}

/// What one edit replaced and with what, as a confirmation shows it.
fn shown(applied: &Applied) -> Vec<String> {
    let mut shown = preview('-', &lines_of(&applied.old));
    shown.extend(preview('+', &lines_of(&applied.new)));
    shown
}

fn create_directory(in_force: &InForce, args: CreateDirArgs, cx: &Cx) -> WriteOutcome {
    let target = in_force.resolve_dir_write(&args.path).map_err(|e| e.to_string())?;
    let name = in_force.roots().display(target.root, &target.abs);
    let created = CreatedDir { path: name.clone(), uri: uri::from_path(&target.abs), created: !target.exists };
    if target.exists {
        return structured(format!("{name} exists already"), created).map(Reply::Complete);
    }
    let untouched = format!("{name} was not created");
    if let Err(ask) =
        confirmed(cx, "create_directory", &[&name], format!("Create the directory {name}?"), Value::Null, untouched)
    {
        return Ok(ask);
    }
    atomic::create_dir(in_force.roots().get(target.root), &target.abs)
        .map_err(|e| format!("cannot create {name}: {e}"))?;
    structured(format!("Created {name}"), created).map(Reply::Complete)
}

fn move_file(in_force: &InForce, args: MoveArgs, cx: &Cx) -> WriteOutcome {
    let from = in_force.resolve_write(&args.source).map_err(|e| e.to_string())?;
    let from_name = in_force.roots().display(from.root, &from.abs);
    if !from.exists {
        return Err(format!("{:?} does not exist in the workspace; nothing was moved", args.source));
    }
    let to = in_force.resolve_write(&args.destination).map_err(|e| e.to_string())?;
    let to_name = in_force.roots().display(to.root, &to.abs);
    if to.abs == from.abs {
        return Err(format!("{from_name} is already there; nothing was moved"));
    }
    if to.exists && !args.overwrite {
        return Err(format!("{to_name} exists already; set overwrite to replace it; nothing was moved"));
    }
    let message = match to.abs.metadata() {
        Ok(meta) if to.exists => {
            format!("Move {from_name} to {to_name}, replacing the file there ({})?", files::human_size(meta.len()))
        }
        _ => format!("Move {from_name} to {to_name}?"),
    };
    // The question is about these two files as they are: either one changing asks again.
    let subject = json!([stamp(&from.abs), to.exists.then(|| stamp(&to.abs))]);
    let untouched = "nothing was moved".to_string();
    if let Err(ask) = confirmed(cx, "move_file", &[&from_name, &to_name], message, subject, untouched) {
        return Ok(ask);
    }
    let expect = if to.exists { Expect::File } else { Expect::Absent };
    let (from_root, to_root) = (in_force.roots().get(from.root), in_force.roots().get(to.root));
    atomic::rename(from_root, &from.abs, to_root, &to.abs, expect)
        .map_err(|e| format!("cannot move {from_name} to {to_name}: {e}; nothing was moved"))?;
    let replacing = if to.exists { ", replacing the file there" } else { "" };
    let text = format!("Moved {from_name} to {to_name}{replacing}");
    let moved = Moved { source: from_name, destination: to_name, uri: uri::from_path(&to.abs), replaced: to.exists };
    structured(text, moved).map(Reply::Complete)
}

/// What tells one version of a file from the next without reading it: where it is on
/// disk, its size and its modification time.
fn stamp(path: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = path.metadata().ok()?;
    Some(format!("{}:{}:{}:{}.{}", meta.dev(), meta.ino(), meta.len(), meta.mtime(), meta.mtime_nsec()))
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
}
