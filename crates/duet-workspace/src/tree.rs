//! The tree under a directory, as deep as asked and no longer than a bound: what the
//! `directory_tree` tool returns and the `summarize_directory` prompt shows. It walks the
//! way every listing does (`walk`): nothing ignored, hidden or in `.git`, links not
//! followed, nothing the request may not reach; a tree cut short says so.

use super::Shared;
use super::files;
use super::paths::Resolved;
use super::tools::json_integers;
use super::walk;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::Path;

/// One entry of a tree, in walk order (a directory before what it holds).
#[derive(Serialize, JsonSchema)]
#[schemars(transform = json_integers)]
pub(crate) struct Entry {
    /// How far below the top it is: 0 for the directory walked, 1 for its entries; with
    /// several roots walked at once, each root is at 1.
    #[serde(skip)]
    pub depth: usize,
    pub name: String,
    /// As the tools write paths.
    pub path: String,
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["file", "directory", "symlink"]))]
    pub kind: &'static str,
    /// Of a regular file.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "integer"))]
    pub size: Option<u64>,
}

impl Entry {
    /// `src/`, `src/main.rs (1.2 KiB)`, `link (symbolic link)`.
    pub(crate) fn line(&self) -> String {
        match (self.kind, self.size) {
            ("directory", _) => format!("{}/", self.path),
            ("symlink", _) => format!("{} (symbolic link)", self.path),
            (_, Some(size)) => format!("{} ({})", self.path, files::human_size(size)),
            _ => self.path.clone(),
        }
    }
}

/// The entries under some directories, at most `depth` levels below each.
pub(crate) struct Tree {
    pub entries: Vec<Entry>,
    /// The bound was reached: there are more entries than `entries` holds.
    pub truncated: bool,
    /// The depth of the deepest entries walked: directories there were not looked into.
    deepest: usize,
}

impl Tree {
    /// Walks each of `scope` (one directory, or every root) down to `depth`, keeping the
    /// first `max` entries the request may reach (`reachable`).
    pub(crate) fn walk(
        shared: &Shared,
        scope: &[Resolved],
        reachable: &dyn Fn(&Path) -> bool,
        depth: usize,
        max: usize,
    ) -> Tree {
        let below = usize::from(scope.len() > 1);
        let mut tree = Tree { entries: Vec::new(), truncated: false, deepest: depth + below };
        for base in scope {
            for entry in walk::walker(&base.abs).max_depth(Some(depth)).build().filter_map(Result::ok) {
                let Some(file_type) = entry.file_type() else { continue };
                let (kind, size) = match file_type {
                    t if t.is_dir() => ("directory", None),
                    t if t.is_file() => ("file", entry.metadata().ok().map(|m| m.len())),
                    t if t.is_symlink() => ("symlink", None),
                    _ => continue,
                };
                if !reachable(entry.path()) {
                    continue;
                }
                if tree.entries.len() == max {
                    tree.truncated = true;
                    return tree;
                }
                let path = shared.roots.display(base.root, entry.path());
                let name = match entry.depth() {
                    0 => path.clone(),
                    _ => entry.file_name().to_string_lossy().into_owned(),
                };
                tree.entries.push(Entry { depth: entry.depth() + below, name, path, kind, size });
            }
        }
        tree
    }

    /// One line an entry, indented by depth.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.entries.iter().map(|e| format!("{}{}", "  ".repeat(e.depth), e.line())).collect()
    }

    /// The entries below the top, nested: each directory holds its `children`, except
    /// those at the depth limit, whose contents were not walked.
    pub(crate) fn nested(&self) -> Vec<Node> {
        let mut at = self.entries.iter().position(|e| e.depth >= 1).unwrap_or(self.entries.len());
        children(&self.entries, &mut at, 1, self.deepest)
    }
}

/// An entry with what it holds, as `directory_tree` returns it.
#[derive(Serialize, JsonSchema)]
#[schemars(transform = json_integers)]
pub(crate) struct Node {
    name: String,
    path: String,
    #[serde(rename = "type")]
    #[schemars(extend("enum" = ["file", "directory", "symlink"]))]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "integer"))]
    size: Option<u64>,
    // In the schema, entries of the same shape not spelt out (that takes a `$ref`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<Map<String, Value>>>", extend("type" = "array"))]
    children: Option<Vec<Node>>,
}

/// The entries from `at` on that stand at `depth`, each with those below it.
fn children(entries: &[Entry], at: &mut usize, depth: usize, limit: usize) -> Vec<Node> {
    let mut nodes = Vec::new();
    while let Some(e) = entries.get(*at).filter(|e| e.depth == depth) {
        *at += 1;
        let children = (e.kind == "directory" && depth < limit).then(|| children(entries, at, depth + 1, limit));
        nodes.push(Node { name: e.name.clone(), path: e.path.clone(), kind: e.kind, size: e.size, children });
    }
    nodes
}
