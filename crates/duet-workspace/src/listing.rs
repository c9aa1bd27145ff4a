//! The listing: the name of every file the workspace serves, as one tree of names per root,
//! in name order. It holds names only (a page of resources looks at its files when it is
//! made), so a tree of 200,000 files costs a few megabytes, and it changes a file or a
//! directory at a time: the watcher adds what appears and removes what goes, with no
//! rescan. Pages of `resources/list` and path completion read it.
//!
//! Paths here are relative to their root, `/`-separated, and walk order is name order at
//! every level (a directory's files come right after it), which is also the order of pages.

use super::in_force::InForce;
use super::paths::Roots;
use super::walk;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The most values one completion keeps (the protocol's cap).
const MAX_COMPLETIONS: usize = duet::layer::MAX_COMPLETION_VALUES;

/// The served files under each root, in the order of the roots.
#[derive(Debug)]
pub(crate) struct Listing {
    roots: Vec<Dir>,
}

/// The served entries of one directory, in name order (bytewise, as the walk sorts them).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Dir {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    name: Box<str>,
    /// What a directory holds; `None` for a file.
    dir: Option<Box<Dir>>,
}

/// Which paths a completion offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    Files,
    /// Directories that hold a listed file.
    Dirs,
}

/// The paths a completion found: the first [`MAX_COMPLETIONS`] in name order, and how many
/// there were in all.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Completions {
    pub values: Vec<String>,
    pub total: usize,
}

impl Listing {
    /// Walks every root. `on_dir` is told each served directory as the walk reads it (the
    /// watcher starts watching it there). Where roots nest, a file belongs to the innermost.
    pub(crate) fn scan(roots: &Roots, on_dir: &mut dyn FnMut(&Path)) -> Listing {
        let all: Vec<&Path> = roots.iter().map(|r| r.path.as_path()).collect();
        let roots = all.iter().map(|top| Dir::scan(top, &all, on_dir)).collect();
        Listing { roots }
    }

    /// How many files it lists.
    pub(crate) fn files(&self) -> usize {
        self.roots.iter().map(Dir::files).sum()
    }

    pub(crate) fn is_file(&self, root: usize, rel: &str) -> bool {
        self.roots[root].find(rel).is_some_and(|e| e.dir.is_none())
    }

    pub(crate) fn is_dir(&self, root: usize, rel: &str) -> bool {
        rel.is_empty() || self.roots[root].find(rel).is_some_and(|e| e.dir.is_some())
    }

    /// Lists a file (and the directories on its way); whether it was not listed before.
    pub(crate) fn add_file(&mut self, root: usize, rel: &str) -> bool {
        self.roots[root].put(rel, None)
    }

    /// Puts `dir` at `rel` in place of whatever was there; whether that changed which files
    /// are listed.
    pub(crate) fn put_dir(&mut self, root: usize, rel: &str, dir: Dir) -> bool {
        if rel.is_empty() {
            let before = std::mem::replace(&mut self.roots[root], dir);
            return !before.same_files(&self.roots[root]);
        }
        self.roots[root].put(rel, Some(Box::new(dir)))
    }

    /// Forgets the file or directory at `rel`; how many files that took off the listing.
    pub(crate) fn remove(&mut self, root: usize, rel: &str) -> usize {
        let Some((parent, name)) = split_last(rel) else {
            return std::mem::take(&mut self.roots[root]).files();
        };
        let Some(dir) = self.roots[root].find_dir_mut(parent) else { return 0 };
        match dir.entries.binary_search_by(|e| (*e.name).cmp(name)) {
            Ok(at) => dir.entries.remove(at).dir.map_or(1, |d| d.files()),
            Err(_) => 0,
        }
    }

    /// Up to `limit` files `in_force` (root and relative path; 0: no limit) that come after
    /// `after` in walk order, from the first file without it, and whether more follow.
    pub(crate) fn page(
        &self,
        in_force: &InForce,
        after: Option<(usize, &str)>,
        limit: usize,
    ) -> (Vec<(usize, String)>, bool) {
        let limit = if limit == 0 { usize::MAX - 1 } else { limit };
        let mut found = Vec::new();
        let (first_root, mut after) = match after {
            Some((root, rel)) => (root, Some(rel)),
            None => (0, None),
        };
        for (root, dir) in self.roots.iter().enumerate().skip(first_root) {
            let parts: Vec<&str> = after.take().map_or_else(Vec::new, |rel| rel.split('/').collect());
            let base = &in_force.roots().get(root).path;
            let keep = |rel: &str, is_dir: bool| {
                !in_force.is_narrowed() || {
                    let abs = base.join(rel);
                    if is_dir { in_force.reaches(&abs) } else { in_force.covers(&abs) }
                }
            };
            let mut files = Vec::new();
            dir.files_after(&mut String::new(), &parts, &keep, &mut files, limit + 1 - found.len());
            found.extend(files.into_iter().map(|rel| (root, rel)));
            if found.len() > limit {
                found.truncate(limit);
                return (found, true);
            }
        }
        (found, false)
    }

    /// Every directory it holds (each root's included), as absolute paths.
    pub(crate) fn dirs(&self, roots: &Roots) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for (root, dir) in roots.iter().zip(&self.roots) {
            out.push(root.path.clone());
            dir.dirs_under(&root.path, &mut out);
        }
        out
    }

    /// The listed paths (of the kind `want`) within the roots `in_force` that start with
    /// `prefix`: the tools' paths, or with `root`, paths relative to that root (a
    /// template's `{+path}`).
    pub(crate) fn complete(&self, in_force: &InForce, prefix: &str, want: Want, root: Option<usize>) -> Completions {
        let roots = in_force.roots();
        let mut found = Found::default();
        for (index, dir) in self.roots.iter().enumerate() {
            if root.is_some_and(|r| r != index) {
                continue;
            }
            // What the tools write before a path under this root: its name, with several.
            let mut at = match root {
                None if roots.len() > 1 => format!("{}/", roots.get(index).name),
                _ => String::new(),
            };
            if !(at.starts_with(prefix) || prefix.starts_with(&at)) {
                continue;
            }
            let name = at.trim_end_matches('/').to_string();
            let mut abs = roots.get(index).path.clone();
            if !in_force.reaches(&abs) {
                continue;
            }
            if want == Want::Dirs && !name.is_empty() && name.starts_with(prefix) && dir.has_files() {
                found.add(&name);
            }
            dir.complete(&mut Place { at: &mut at, abs: &mut abs }, prefix, want, in_force, &mut found);
        }
        found.into_completions()
    }
}

impl Dir {
    /// The served files and directories under `top`, walked in name order, telling
    /// `on_dir` each directory (`top` first) as the walk reads it. The directories of
    /// `roots` below `top` are left to their own listing.
    pub(crate) fn scan(top: &Path, roots: &[&Path], on_dir: &mut dyn FnMut(&Path)) -> Dir {
        let nested: Vec<PathBuf> =
            roots.iter().filter(|r| r.starts_with(top) && **r != top).map(|r| r.to_path_buf()).collect();
        // The directories the walk is in, from `top` down (the first `depth` of them), each
        // with the entries read so far, in buffers kept from one directory to the next: a
        // directory's entries then take one allocation, of their exact size.
        let mut open: Vec<(Box<str>, Vec<Entry>)> = vec![(Box::default(), Vec::new())];
        let mut depth = 1;
        for entry in walk::walker_skipping(top, nested).build() {
            let Some(entry) = walk::served_entry(entry) else { continue };
            let is_dir = walk::is_dir(&entry);
            if entry.depth() == 0 {
                if is_dir {
                    on_dir(entry.path());
                }
                continue;
            }
            while depth > entry.depth() {
                close(&mut open, &mut depth);
            }
            let Some(name) = entry.file_name().to_str().filter(|_| depth == entry.depth()) else {
                continue; // under a directory the walk could not list
            };
            if is_dir {
                on_dir(entry.path());
                match open.get_mut(depth) {
                    Some(level) => level.0 = name.into(),
                    None => open.push((name.into(), Vec::new())),
                }
                depth += 1;
            } else {
                open[depth - 1].1.push(Entry { name: name.into(), dir: None });
            }
        }
        while depth > 1 {
            close(&mut open, &mut depth);
        }
        Dir { entries: exact(&mut open[0].1) }
    }

    /// How many files it holds, at any depth.
    pub(crate) fn files(&self) -> usize {
        self.entries.iter().map(|e| e.dir.as_ref().map_or(1, |d| d.files())).sum()
    }

    fn find(&self, rel: &str) -> Option<&Entry> {
        let mut dir = self;
        let mut parts = rel.split('/').peekable();
        while let Some(part) = parts.next() {
            let entry = dir.entries.binary_search_by(|e| (*e.name).cmp(part)).ok().map(|at| &dir.entries[at])?;
            if parts.peek().is_none() {
                return Some(entry);
            }
            dir = entry.dir.as_deref()?;
        }
        None
    }

    /// The directory at `rel` (`self` for ""), if it is listed as one.
    fn find_dir_mut(&mut self, rel: &str) -> Option<&mut Dir> {
        let mut dir = self;
        for part in rel.split('/').filter(|p| !p.is_empty()) {
            let at = dir.entries.binary_search_by(|e| (*e.name).cmp(part)).ok()?;
            dir = dir.entries[at].dir.as_deref_mut()?;
        }
        Some(dir)
    }

    /// Lists `what` (a file for `None`) at `rel`, making the directories on its way (a file
    /// in their place gives way); whether the files listed changed.
    fn put(&mut self, rel: &str, what: Option<Box<Dir>>) -> bool {
        let Some((parent, name)) = split_last(rel) else { return false };
        let mut dir = self;
        let mut changed = false;
        for part in parent.split('/').filter(|p| !p.is_empty()) {
            let at = match dir.entries.binary_search_by(|e| (*e.name).cmp(part)) {
                Ok(at) => at,
                Err(at) => {
                    dir.entries.insert(at, Entry { name: part.into(), dir: Some(Box::default()) });
                    at
                }
            };
            let entry = &mut dir.entries[at];
            changed |= entry.dir.is_none();
            dir = entry.dir.get_or_insert_with(Box::default);
        }
        match dir.entries.binary_search_by(|e| (*e.name).cmp(name)) {
            Ok(at) => {
                let old = std::mem::replace(&mut dir.entries[at].dir, what);
                let same = match (&old, &dir.entries[at].dir) {
                    (None, None) => true,
                    (Some(a), Some(b)) => a.same_files(b),
                    _ => false,
                };
                changed || !same
            }
            Err(at) => {
                let files = what.as_ref().map_or(1, |d| d.files());
                dir.entries.insert(at, Entry { name: name.into(), dir: what });
                changed || files > 0
            }
        }
    }

    /// Whether both hold the same files (empty directories aside).
    fn same_files(&self, other: &Dir) -> bool {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        self.files_after(&mut String::new(), &[], &|_, _| true, &mut a, usize::MAX);
        other.files_after(&mut String::new(), &[], &|_, _| true, &mut b, usize::MAX);
        a == b
    }

    /// Appends the paths (under `at`) of the files after `after` (a path's parts relative to
    /// this directory; everything for none) to `out`, until it holds `limit`.
    /// Adds to `out` (up to `limit`) the files under it, `at` the path to it, that come
    /// after `after` and that `keep` keeps (told each path and whether it is a directory).
    fn files_after(
        &self,
        at: &mut String,
        after: &[&str],
        keep: &dyn Fn(&str, bool) -> bool,
        out: &mut Vec<String>,
        limit: usize,
    ) {
        let mut from = 0;
        if let Some((first, rest)) = after.split_first() {
            from = self.entries.partition_point(|e| &*e.name < *first);
            if let Some(entry) = self.entries.get(from).filter(|e| &*e.name == *first) {
                // A directory's files come after the directory itself.
                if let Some(dir) = &entry.dir {
                    within(at, &entry.name, |at| dir.files_after(at, rest, keep, out, limit));
                }
                from += 1;
            }
        }
        for entry in &self.entries[from..] {
            if out.len() >= limit {
                return;
            }
            let len = at.len();
            at.push_str(&entry.name);
            let kept = keep(at, entry.dir.is_some());
            at.truncate(len);
            match &entry.dir {
                _ if !kept => {}
                None => out.push(format!("{at}{}", entry.name)),
                Some(dir) => within(at, &entry.name, |at| dir.files_after(at, &[], keep, out, limit)),
            }
        }
    }

    fn dirs_under(&self, at: &Path, out: &mut Vec<PathBuf>) {
        for entry in &self.entries {
            if let Some(dir) = &entry.dir {
                let path = at.join(&*entry.name);
                dir.dirs_under(&path, out);
                out.push(path);
            }
        }
    }

    /// Adds the paths under `at` that start with `prefix` to `found`, looking only where
    /// such paths can be.
    /// Adds to `found` what it holds (at `place`) that `complete` offers.
    fn complete(&self, place: &mut Place, prefix: &str, want: Want, in_force: &InForce, found: &mut Found) {
        for entry in &self.entries {
            let len = place.at.len();
            place.at.push_str(&entry.name);
            place.abs.push(&*entry.name);
            let matches = place.at.starts_with(prefix);
            match &entry.dir {
                None if matches && want == Want::Files && in_force.covers(place.abs) => found.add(place.at),
                Some(dir) if want == Want::Dirs && matches && dir.has_files() && in_force.reaches(place.abs) => {
                    found.add(place.at)
                }
                _ => {}
            }
            if let Some(dir) = &entry.dir
                && (matches || prefix.starts_with(place.at.as_str()))
                && in_force.reaches(place.abs)
            {
                place.at.push('/');
                dir.complete(place, prefix, want, in_force, found);
            }
            place.at.truncate(len);
            place.abs.pop();
        }
    }

    fn has_files(&self) -> bool {
        self.entries.iter().any(|e| e.dir.as_ref().is_none_or(|d| d.has_files()))
    }
}

/// Where a completion is in the tree: the path as the tools write it, and on disk.
struct Place<'a> {
    at: &'a mut String,
    abs: &'a mut PathBuf,
}

/// Runs `f` with `name/` appended to `at`.
fn within(at: &mut String, name: &str, f: impl FnOnce(&mut String)) {
    let len = at.len();
    at.push_str(name);
    at.push('/');
    f(at);
    at.truncate(len);
}

/// Closes the deepest open directory of a walk (`open[depth - 1]`) into its parent.
fn close(open: &mut [(Box<str>, Vec<Entry>)], depth: &mut usize) {
    *depth -= 1;
    let (parents, done) = open.split_at_mut(*depth);
    let (name, entries) = &mut done[0];
    let dir = Dir { entries: exact(entries) };
    parents[*depth - 1].1.push(Entry { name: std::mem::take(name), dir: Some(Box::new(dir)) });
}

/// The entries of a buffer, moved into a vector of their exact size; the buffer keeps its
/// room for the next directory.
fn exact(buffer: &mut Vec<Entry>) -> Vec<Entry> {
    let mut entries = Vec::with_capacity(buffer.len());
    entries.append(buffer);
    entries
}

/// `("a/b", "c")` for `"a/b/c"`, `("", "c")` for `"c"`; `None` for `""`.
fn split_last(rel: &str) -> Option<(&str, &str)> {
    match rel.rsplit_once('/') {
        Some(split) => Some(split),
        None if rel.is_empty() => None,
        None => Some(("", rel)),
    }
}

/// The first completions in name order, and a count of all.
#[derive(Default)]
struct Found {
    kept: BTreeSet<String>,
    total: usize,
}

impl Found {
    fn add(&mut self, value: &str) {
        self.total += 1;
        if self.kept.len() < MAX_COMPLETIONS || self.kept.last().is_some_and(|last| value < last.as_str()) {
            self.kept.insert(value.to_string());
            if self.kept.len() > MAX_COMPLETIONS {
                self.kept.pop_last();
            }
        }
    }

    fn into_completions(self) -> Completions {
        Completions { values: self.kept.into_iter().collect(), total: self.total }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A tree with ignored, hidden and nested files, and its workspace roots.
    fn tree() -> (tempfile::TempDir, Roots) {
        let dir = tempfile::TempDir::new().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for rel in [
            "README.md",
            "a-b/x.txt",
            "a/z.txt",
            "a/b/c/deep.rs",
            "a.txt",
            "src/main.rs",
            "src/lib.rs",
            "target/out.o",
            "debug.log",
            ".hidden/secret",
            ".git/HEAD",
        ] {
            let path = root.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, rel).unwrap();
        }
        fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        fs::create_dir_all(root.join("empty")).unwrap();
        let roots = Roots::new(vec![root]).unwrap();
        (dir, roots)
    }

    fn all(listing: &Listing, roots: &Roots) -> Vec<String> {
        listing.page(&InForce::new(roots, None), None, 0).0.into_iter().map(|(_, rel)| rel).collect()
    }

    #[test]
    fn a_scan_lists_what_the_walk_serves_in_walk_order() {
        let (_dir, roots) = tree();
        let mut dirs = Vec::new();
        let listing = Listing::scan(&roots, &mut |d| dirs.push(d.to_path_buf()));
        let top = &roots.get(0).path;
        let rel = |e: ignore::DirEntry| e.path().strip_prefix(top).unwrap().to_str().unwrap().to_string();
        let walked: Vec<String> = walk::files(top).map(rel).collect();
        assert_eq!(all(&listing, &roots), walked);
        assert_eq!(
            walked,
            ["README.md", "a/b/c/deep.rs", "a/z.txt", "a-b/x.txt", "a.txt", "src/lib.rs", "src/main.rs"]
        );
        assert_eq!(listing.files(), 7);
        // Each served directory was told as the walk read it; nothing ignored or hidden.
        let rel: Vec<_> = dirs.iter().map(|d| d.strip_prefix(top).unwrap().to_str().unwrap()).collect();
        assert_eq!(rel, ["", "a", "a/b", "a/b/c", "a-b", "empty", "src"]);
        let mut listed = listing.dirs(&roots);
        listed.sort();
        dirs.sort();
        assert_eq!(listed, dirs);
        assert!(listing.is_file(0, "a/b/c/deep.rs") && !listing.is_file(0, "a/b") && listing.is_dir(0, "a/b"));
        assert!(!listing.is_file(0, "target/out.o") && !listing.is_dir(0, "target") && listing.is_dir(0, ""));
    }

    #[test]
    fn files_come_and_go_one_at_a_time() {
        let (_dir, roots) = tree();
        let mut listing = Listing::scan(&roots, &mut |_| {});
        assert!(listing.add_file(0, "new/deeper/file.txt"), "a new file");
        assert!(!listing.add_file(0, "new/deeper/file.txt"), "listed already");
        assert!(listing.is_dir(0, "new/deeper"));
        assert!(listing.add_file(0, "a/a.txt"));
        assert_eq!(listing.files(), 9);
        assert_eq!(listing.remove(0, "a"), 3, "a directory takes its files with it");
        assert_eq!(listing.remove(0, "a"), 0, "gone already");
        assert_eq!(listing.remove(0, "README.md"), 1);
        assert_eq!(listing.remove(0, "missing/file"), 0);
        assert_eq!(all(&listing, &roots), ["a-b/x.txt", "a.txt", "new/deeper/file.txt", "src/lib.rs", "src/main.rs"]);
        // A file where a directory was, and the other way round.
        assert!(listing.add_file(0, "a.txt/inner"), "a.txt gave way to a directory");
        assert_eq!(
            all(&listing, &roots),
            ["a-b/x.txt", "a.txt/inner", "new/deeper/file.txt", "src/lib.rs", "src/main.rs"]
        );
        assert!(listing.add_file(0, "new"), "the directory new gave way to a file");
        assert_eq!(all(&listing, &roots), ["a-b/x.txt", "a.txt/inner", "new", "src/lib.rs", "src/main.rs"]);
    }

    #[test]
    fn putting_a_directory_says_whether_the_files_changed() {
        let (_dir, roots) = tree();
        let mut listing = Listing::scan(&roots, &mut |_| {});
        let src = roots.get(0).path.join("src");
        let same = Dir::scan(&src, &[], &mut |_| {});
        assert_eq!(same.files(), 2);
        assert!(!listing.put_dir(0, "src", same), "the same files");
        assert!(!listing.put_dir(0, "fresh/empty", Dir::default()), "an empty directory lists no file");
        assert!(listing.is_dir(0, "fresh/empty"));
        fs::write(src.join("new.rs"), "").unwrap();
        assert!(listing.put_dir(0, "src", Dir::scan(&src, &[], &mut |_| {})));
        assert!(listing.is_file(0, "src/new.rs"));
        assert!(listing.put_dir(0, "src", Dir::default()), "its files went");
        assert!(!listing.is_file(0, "src/new.rs") && listing.is_dir(0, "src"));
        // The whole root at once.
        let top = Dir::scan(&roots.get(0).path, &[], &mut |_| {});
        assert!(listing.put_dir(0, "", top));
        assert_eq!(listing.files(), 8);
    }

    #[test]
    fn pages_visit_every_file_once_even_as_files_change() {
        let (_dir, roots) = tree();
        let mut listing = Listing::scan(&roots, &mut |_| {});
        let every = all(&listing, &roots);
        for limit in 1..=8 {
            let (mut seen, mut after) = (Vec::new(), None::<(usize, String)>);
            loop {
                let (page, more) =
                    listing.page(&InForce::new(&roots, None), after.as_ref().map(|(r, p)| (*r, p.as_str())), limit);
                assert!(page.len() <= limit);
                seen.extend(page.iter().map(|(_, rel)| rel.clone()));
                if !more {
                    break;
                }
                after = page.last().cloned();
            }
            assert_eq!(seen, every, "pages of {limit}");
        }
        // After a file that is gone, and after a directory: the page goes on from there.
        let (first, more) = listing.page(&InForce::new(&roots, None), None, 2);
        assert_eq!((first.len(), more), (2, true));
        assert_eq!(first[1].1, "a/b/c/deep.rs");
        assert_eq!(listing.remove(0, "a/b/c/deep.rs"), 1);
        assert!(listing.add_file(0, "a/b/c/before.rs"), "sorts before the cursor: not on a later page");
        assert!(listing.add_file(0, "a/b/c/later.rs"));
        let rest: Vec<_> = listing
            .page(&InForce::new(&roots, None), Some((0, "a/b/c/deep.rs")), 100)
            .0
            .into_iter()
            .map(|(_, p)| p)
            .collect();
        assert_eq!(rest[..2], ["a/b/c/later.rs", "a/z.txt"]);
        let rest: Vec<_> =
            listing.page(&InForce::new(&roots, None), Some((0, "a")), 1).0.into_iter().map(|(_, p)| p).collect();
        assert_eq!(rest, ["a/b/c/before.rs"], "a directory's files come after it");
        let none = listing.page(&InForce::new(&roots, None), Some((0, "zzz")), 10);
        assert_eq!(none, (Vec::new(), false));
    }

    #[test]
    fn nested_roots_list_each_file_once() {
        let (dir, _) = tree();
        let top = dir.path().canonicalize().unwrap();
        let roots = Roots::new(vec![top.clone(), top.join("src")]).unwrap();
        let listing = Listing::scan(&roots, &mut |_| {});
        let (files, more) = listing.page(&InForce::new(&roots, None), None, 0);
        assert!(!more);
        assert!(files.contains(&(1, "main.rs".to_string())) && !files.contains(&(0, "src/main.rs".to_string())));
        assert_eq!(files.len(), 7);
        // Pages cross from one root to the next.
        let (next, _) = listing.page(&InForce::new(&roots, None), Some((0, "zzz")), 10);
        assert_eq!(next, [(1, "lib.rs".to_string()), (1, "main.rs".to_string())]);
    }

    #[test]
    fn completions_look_where_the_prefix_leads_and_keep_the_first_hundred() {
        let (_dir, roots) = tree();
        let mut listing = Listing::scan(&roots, &mut |_| {});
        let complete =
            |l: &Listing, prefix: &str, want| l.complete(&InForce::new(&roots, None), prefix, want, None).values;
        assert_eq!(complete(&listing, "src/", Want::Files), ["src/lib.rs", "src/main.rs"]);
        assert_eq!(complete(&listing, "a", Want::Files), ["a-b/x.txt", "a.txt", "a/b/c/deep.rs", "a/z.txt"]);
        assert_eq!(complete(&listing, "a/b", Want::Dirs), ["a/b", "a/b/c"]);
        assert_eq!(complete(&listing, "", Want::Dirs), ["a", "a-b", "a/b", "a/b/c", "src"], "empty holds no file");
        assert!(complete(&listing, "target", Want::Files).is_empty());
        for n in 0..150 {
            listing.add_file(0, &format!("many/f{n:03}"));
        }
        let many = listing.complete(&InForce::new(&roots, None), "many/", Want::Files, Some(0));
        assert_eq!((many.values.len(), many.total), (100, 150));
        assert_eq!(many.values[0], "many/f000");
        assert_eq!(many.values[99], "many/f099");
    }
}
