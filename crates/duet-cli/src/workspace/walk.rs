//! The one way the workspace walks a directory, so the listing, the tools, the prompts
//! and the watcher agree on what is in it: `.gitignore`, `.ignore` and git's exclude files
//! are honoured (inside a git repository or not), hidden files are skipped, symbolic links
//! are not followed (a walk never leaves the directory it starts in), and entries come in
//! name order.

use ignore::{DirEntry, WalkBuilder};
use std::path::Path;

/// A walker over `dir` with the workspace's rules; callers add a depth limit if they want.
pub fn walker(dir: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(dir);
    builder.standard_filters(true).require_git(false).follow_links(false).sort_by_file_name(|a, b| a.cmp(b));
    builder
}

/// The regular files under `dir` (or `dir` itself, when it is a file) whose paths are
/// UTF-8, in walk order. Entries that cannot be read are skipped.
pub fn files(dir: &Path) -> impl Iterator<Item = DirEntry> {
    walker(dir).build().filter_map(|entry| match entry {
        Ok(entry) => {
            let file = entry.file_type().is_some_and(|t| t.is_file());
            (file && entry.path().to_str().is_some()).then_some(entry)
        }
        Err(error) => {
            tracing::debug!("workspace walk skips an entry: {error}");
            None
        }
    })
}
