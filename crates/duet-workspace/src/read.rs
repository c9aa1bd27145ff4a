//! The reading tools: `read_file` (a whole file, a range of its lines, its first or last
//! lines) and `read_multiple_files` (several whole files in one call, each failure said in
//! its place). Both read a whole file the same way: text as text, an image or a sound as
//! image or audio content (base64 with its MIME type), any other binary file refused with
//! a pointer to its resource.

use super::files::{self, Body, ReadError};
use super::in_force::InForce;
use super::paths::{Kind, Resolved};
use super::tools::{ToolOutcome, json_integers, spec, structured};
use super::{Shared, uri};
use duet::layer::{Content, Registry, RegistryError, ToolResult, schema_for};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The most files one `read_multiple_files` call reads.
const MAX_FILES: usize = 50;
/// The most bytes one `read_multiple_files` call returns, all files together.
const MAX_TOTAL_BYTES: u64 = 4 * files::MAX_READ_BYTES;

pub(crate) fn register(registry: &mut Registry<Arc<Shared>>) -> Result<(), RegistryError> {
    registry.tool(
        spec("read_file", |_, in_force, args, _| read_file(in_force, args)).title("Read a file").description(format!(
            "Reads a text file, whole, a range of its lines (start_line and end_line, 1-based, inclusive), \
                 its first lines (head) or its last lines (tail, read from the end: fast on a file of any \
                 size). One read returns at most {}: read bigger files in parts. An image or an audio file \
                 comes back as image or audio content. Files .gitignore excludes, and .git directories, are \
                 not served.",
            files::human_size(files::MAX_READ_BYTES)
        )),
    )?;
    registry.tool(
        spec("read_multiple_files", |_, in_force, args, _| read_multiple_files(in_force, args))
            .title("Read several files")
            .description(format!(
                "Reads several whole files in one call, in the order given: each file's text (or image or \
                 audio content) after a line naming it. A file that cannot be read gets its error in its \
                 place and the others are still read. At most {MAX_FILES} paths, {} per file and {} in all.",
                files::human_size(files::MAX_READ_BYTES),
                files::human_size(MAX_TOTAL_BYTES)
            ))
            .output_schema(schema_for::<ReadMany>()),
    )?;
    Ok(())
}

// An `Option` is absent or a number, never null: its schema's type is `integer` alone.
#[derive(Deserialize, JsonSchema)]
#[schemars(transform = json_integers)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// The file to read.
    path: String,
    /// The first line (default 1).
    #[schemars(range(min = 1), extend("type" = "integer"))]
    start_line: Option<usize>,
    /// The last line (default: the end).
    #[schemars(range(min = 1), extend("type" = "integer"))]
    end_line: Option<usize>,
    /// Read only this many lines from the start.
    #[schemars(range(min = 1), extend("type" = "integer"))]
    head: Option<usize>,
    /// Read only this many lines from the end.
    #[schemars(range(min = 1), extend("type" = "integer"))]
    tail: Option<usize>,
}

/// A whole file, read.
struct Whole {
    /// The path as the tools write it.
    name: String,
    /// Its contents: a text, image or audio block.
    content: Content,
    kind: &'static str,
    size: u64,
}

/// The file `input` names, and its name as the tools write it.
fn resolve_file(in_force: &InForce, input: &str) -> Result<(Resolved, String), String> {
    let file = in_force.resolve(input).map_err(|e| e.to_string())?;
    let name = in_force.roots().display(file.root, &file.abs);
    if file.kind == Kind::Dir {
        return Err(format!("{name} is a directory; list it with list_directory"));
    }
    Ok((file, name))
}

/// Reads the whole file `input` names, as a content block; the message of a refusal.
fn read_whole(in_force: &InForce, input: &str) -> Result<Whole, String> {
    let (file, name) = resolve_file(in_force, input)?;
    let mime = files::mime_type(&file.abs, Some(false));
    let media = match mime.split_once('/') {
        Some(("image", _)) => Some("image"),
        Some(("audio", _)) => Some("audio"),
        _ => None,
    };
    match (files::read_whole(&file.abs, in_force.roots().get(file.root)), media) {
        (Ok(Body::Text(text)), _) => {
            let size = text.len() as u64;
            Ok(Whole { name, content: Content::text(text), kind: "text", size })
        }
        (Ok(Body::Binary(bytes)), Some(kind)) => {
            let size = bytes.len() as u64;
            let content = if kind == "image" { Content::image(&bytes, mime) } else { Content::audio(&bytes, mime) };
            Ok(Whole { name, content, kind, size })
        }
        (Ok(Body::Binary(bytes)), None) => {
            Err(refused(&file.abs, &name, ReadError::Binary { size: bytes.len() as u64 }))
        }
        (Err(ReadError::TooLarge { size }), Some(kind)) => Err(format!(
            "{name} is {} ({size} bytes), over the {} limit of one read; an {kind} file is read whole, so this one \
             cannot be read",
            files::human_size(size),
            files::human_size(files::MAX_READ_BYTES)
        )),
        (Err(e), _) => Err(e.message(&name)),
    }
}

fn read_file(in_force: &InForce, args: ReadArgs) -> ToolOutcome {
    let ranged = args.start_line.is_some() || args.end_line.is_some();
    let (start, end) = match (ranged, args.head, args.tail) {
        (false, None, None) => {
            return read_whole(in_force, &args.path).map(|whole| ToolResult::new(vec![whole.content]));
        }
        (false, None, Some(count)) => return read_tail(in_force, &args.path, count),
        (false, Some(count), None) => (1, Some(count)),
        (true, None, None) => (args.start_line.unwrap_or(1), args.end_line),
        _ => return Err("give one of head, tail, or start_line and end_line, not several".into()),
    };
    if let Some(end) = end
        && end < start
    {
        return Err(format!("end_line {end} is before start_line {start}"));
    }
    let (file, name) = resolve_file(in_force, &args.path)?;
    let lines = match files::read_lines(&file.abs, in_force.roots().get(file.root), start, end) {
        // The first lines of an empty file: none.
        Err(ReadError::PastEnd { start: 1, total: 0 }) => return Ok(ToolResult::text(format!("[{name} is empty]"))),
        other => other.map_err(|e| refused(&file.abs, &name, e))?,
    };
    let of = lines.total.map_or_else(String::new, |t| format!(" of {t}"));
    let note = format!("[{name}: lines {} to {}{of}]", lines.first, lines.last);
    Ok(ToolResult::text(lines.text).with_content(Content::text(note)))
}

fn read_tail(in_force: &InForce, input: &str, count: usize) -> ToolOutcome {
    let (file, name) = resolve_file(in_force, input)?;
    let tail = files::read_tail(&file.abs, in_force.roots().get(file.root), count)
        .map_err(|e| refused(&file.abs, &name, e))?;
    let note = match (tail.lines, tail.total) {
        (0, _) => return Ok(ToolResult::text(format!("[{name} is empty]"))),
        (n, Some(total)) => format!("[{name}: lines {} to {total} of {total}]", total + 1 - n),
        (1, None) => format!("[{name}: its last line]"),
        (n, None) => format!("[{name}: its last {n} lines]"),
    };
    Ok(ToolResult::text(tail.text).with_content(Content::text(note)))
}

/// Why a file could not be read; a binary file is pointed to as a resource.
fn refused(abs: &std::path::Path, name: &str, error: ReadError) -> String {
    match error {
        ReadError::Binary { .. } => format!("{} ({})", error.message(name), uri::from_path(abs)),
        e => e.message(name),
    }
}

#[derive(Deserialize, JsonSchema)]
#[schemars(transform = json_integers)]
#[serde(deny_unknown_fields)]
struct ReadManyArgs {
    /// The files to read.
    #[schemars(length(min = 1, max = MAX_FILES))]
    paths: Vec<String>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(transform = json_integers)]
struct ReadMany {
    files: Vec<OneFile>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(transform = json_integers)]
struct OneFile {
    path: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "string", "enum" = ["text", "image", "audio"]))]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "integer"))]
    size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "string"))]
    error: Option<String>,
}

fn read_multiple_files(in_force: &InForce, args: ReadManyArgs) -> ToolOutcome {
    let (mut content, mut listed, mut returned) = (Vec::new(), Vec::new(), 0u64);
    for input in &args.paths {
        let read = read_whole(in_force, input).and_then(|whole| {
            if returned + whole.size > MAX_TOTAL_BYTES {
                return Err(format!(
                    "{} was not read: with it this call would return over {}; read it on its own",
                    whole.name,
                    files::human_size(MAX_TOTAL_BYTES)
                ));
            }
            Ok(whole)
        });
        match read {
            Ok(whole) => {
                returned += whole.size;
                content.push(Content::text(format!("{}:", whole.name)));
                content.push(whole.content);
                listed.push(OneFile { path: whole.name, kind: Some(whole.kind), size: Some(whole.size), error: None });
            }
            Err(error) => {
                content.push(Content::text(format!("{input}: error: {error}")));
                listed.push(OneFile { path: input.clone(), kind: None, size: None, error: Some(error) });
            }
        }
    }
    // The blocks in order, and the same facts as structured content.
    let facts = structured(String::new(), ReadMany { files: listed })?;
    Ok(ToolResult { content, ..facts })
}
