//! Serves what a TOML manifest declares: command tools, resources, prompts and skills,
//! written in a file instead of code (`duet serve --manifest duet.toml`).
//!
//! [`load`] reads the file and [`parse`] turns its text into a [`Registry`], checking
//! everything that can be checked before the first request: unknown keys, names, argument
//! types and placeholders, paths. Every failure is a [`ManifestError`] that names the file,
//! the line and column, and the field: `duet.toml:12:1: tool "deploy": ...`.
//!
//! The layout: `schema.rs` holds the manifest's types, `locate.rs` finds fields in the
//! source, `template.rs` fills `{arg}` placeholders, `args.rs` turns arguments into a JSON
//! Schema, `tool.rs`, `resource.rs`, `prompt.rs` and `skill.rs` turn entries into specs, and
//! `command.rs` runs a tool's command.

mod args;
mod command;
mod locate;
mod prompt;
mod resource;
mod schema;
mod skill;
mod template;
mod tool;

#[cfg(test)]
mod tests;

use duet::layer::{Registry, ServerInfo};
use locate::{Locator, Place};
use schema::Manifest;
use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a manifest could not be loaded.
#[derive(Debug)]
pub(crate) enum ManifestError {
    /// The file could not be read.
    Read { path: PathBuf, source: std::io::Error },
    /// The file is not a valid manifest; `line` and `column` (1-based) point at the field.
    Invalid { path: PathBuf, line: usize, column: usize, message: String },
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManifestError::Read { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            ManifestError::Invalid { path, line, column, message } => {
                write!(f, "{}:{line}:{column}: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for ManifestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ManifestError::Read { source, .. } => Some(source),
            ManifestError::Invalid { .. } => None,
        }
    }
}

/// A check that failed: the field it concerns and what is wrong, before it has a line.
#[derive(Debug)]
pub(crate) struct Problem {
    place: Place,
    message: String,
}

impl Problem {
    pub(crate) fn new(place: Place, message: impl Into<String>) -> Self {
        Problem { place, message: message.into() }
    }
}

/// Reads and checks the manifest at `path`; relative paths inside it (`cwd`, `file`) are
/// relative to its directory.
pub(crate) fn load(path: &Path) -> Result<Registry, ManifestError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| ManifestError::Read { path: path.to_path_buf(), source })?;
    parse(&text, path)
}

/// Checks manifest text as if read from `path` (which names it in errors and anchors its
/// relative paths; the file need not exist).
pub(crate) fn parse(text: &str, path: &Path) -> Result<Registry, ManifestError> {
    let locator = Locator::new(text);
    let invalid = |offset: usize, message: String| {
        let (line, column) = locator.line_column(offset);
        ManifestError::Invalid { path: path.to_path_buf(), line, column, message }
    };
    let manifest: Manifest = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        let message = e.message().trim();
        match locator.entry_around(offset) {
            Some(entry) => invalid(offset, format!("{entry}: {message}")),
            None => invalid(offset, message.to_string()),
        }
    })?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    build(manifest, &dir, &locator).map_err(|p| invalid(locator.offset(&p.place), p.message))
}

fn build(manifest: Manifest, dir: &Path, locator: &Locator) -> Result<Registry, Problem> {
    let server = manifest.server;
    if server.name.trim().is_empty() {
        return Err(Problem::new(Place::root().key("server").key("name"), "server: name is empty"));
    }
    let mut info = ServerInfo::new(server.name, server.version);
    info.title = server.title;
    info.instructions = server.instructions;
    let mut registry = Registry::new(info);

    let mut names = HashSet::new();
    for (i, decl) in manifest.tool.into_iter().enumerate() {
        let at = unique_entry(&mut names, "tool", i, "name", &decl.name)?;
        let name = decl.name.clone();
        let spec = tool::compile(decl, &at, dir, locator)?;
        registry.tool(spec).map_err(|e| Problem::new(at, format!("tool {name:?}: {e}")))?;
    }

    let mut uris = HashSet::new();
    for (i, decl) in manifest.resource.into_iter().enumerate() {
        let at = unique_entry(&mut uris, "resource", i, "uri", &decl.uri)?;
        let spec = resource::compile(decl, &at, dir)?;
        registry.resource(spec).map_err(|e| Problem::new(at, e.to_string()))?;
    }

    let mut names = HashSet::new();
    for (i, decl) in manifest.prompt.into_iter().enumerate() {
        let at = unique_entry(&mut names, "prompt", i, "name", &decl.name)?;
        let spec = prompt::compile(decl, &at, locator)?;
        registry.prompt(spec).map_err(|e| Problem::new(at, e.to_string()))?;
    }

    let mut dirs = HashSet::new();
    for (i, decl) in manifest.skill.into_iter().enumerate() {
        let at = unique_entry(&mut dirs, "skill", i, "dir", &decl.dir)?;
        let shown = decl.dir.clone();
        let spec = skill::compile(decl, &at, dir)?;
        registry.skill(spec).map_err(|e| Problem::new(at.key("dir"), format!("skill {shown:?}: {e}")))?;
    }
    Ok(registry)
}

/// The place of entry `i` of `table`, once its `field` (`key`, a name or a URI) is known
/// not to repeat an earlier entry's; `seen` holds the keys of the entries before it.
fn unique_entry(seen: &mut HashSet<String>, table: &str, i: usize, field: &str, key: &str) -> Result<Place, Problem> {
    let at = Place::root().key(table).index(i);
    if !seen.insert(key.to_string()) {
        return Err(Problem::new(at.key(field), format!("{table} {key:?} is declared twice")));
    }
    Ok(at)
}

/// Checks a `roles` list: each role a non-empty name.
fn check_roles(roles: &[String], at: &Place, context: &str) -> Result<(), Problem> {
    match roles.iter().position(|r| r.trim().is_empty()) {
        Some(i) => Err(Problem::new(at.key("roles").index(i), format!("{context}: roles: a role name is empty"))),
        None => Ok(()),
    }
}
