//! The one way the workspace walks a directory, so the listing, the tools, the prompts
//! and the watcher agree on what is in it: `.gitignore`, `.ignore` and git's exclude files
//! are honoured (inside a git repository or not), hidden files are skipped, `.git`
//! directories are never entered, symbolic links are not followed (a walk never leaves the
//! directory it starts in), and entries come in name order.
//!
//! [`Rules`] answers the same question for one path at a time: would a walk from the root
//! skip it as ignored? Confinement refuses such paths, so a client cannot read by name
//! what `.gitignore` keeps out of every listing. It builds on the `ignore` crate's own
//! gitignore matchers, combined the way its walker combines them.

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{DirEntry, Match, WalkBuilder, WalkParallel};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The directory git keeps its repository in; never served, whatever the ignore files say.
pub const GIT_DIR: &str = ".git";

/// A walker over `dir` with the workspace's rules; callers add a depth limit if they want.
pub fn walker(dir: &Path) -> WalkBuilder {
    walker_skipping(dir, Vec::new())
}

/// The same walker, which also leaves out the directories `skip` (other roots nested in
/// this one, listed with their own).
pub fn walker_skipping(dir: &Path, skip: Vec<PathBuf>) -> WalkBuilder {
    let mut builder = WalkBuilder::new(dir);
    builder
        .standard_filters(true)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        // Hidden already, unless an ignore file whitelists it: still never served.
        .filter_entry(move |entry| {
            entry.file_name() != OsStr::new(GIT_DIR) && !skip.iter().any(|s| s.as_path() == entry.path())
        });
    builder
}

/// The regular files under `dir` (or `dir` itself, when it is a file) whose paths are
/// UTF-8, in walk order. Entries that cannot be read are skipped.
pub fn files(dir: &Path) -> impl Iterator<Item = DirEntry> {
    walker(dir).build().filter_map(served_entry).filter(|e| !is_dir(e))
}

/// The most threads one parallel walk takes.
const MAX_THREADS: usize = 8;

/// The same walk over `threads` threads, for work that does not need name order: the
/// visitor gets entries in no particular order, directories included.
pub fn parallel(dir: &Path, threads: usize) -> WalkParallel {
    walker(dir).threads(threads).build_parallel()
}

/// How many threads a parallel walk takes: one per core, at most [`MAX_THREADS`].
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get).min(MAX_THREADS)
}

/// A walked entry that is a directory or a regular file with a UTF-8 path; `None` for
/// anything else, and for entries that cannot be read (logged).
pub fn served_entry(entry: Result<DirEntry, ignore::Error>) -> Option<DirEntry> {
    match entry {
        Ok(entry) => {
            let kind = entry.file_type().is_some_and(|t| t.is_file() || t.is_dir());
            (kind && entry.path().to_str().is_some()).then_some(entry)
        }
        Err(error) => {
            tracing::debug!("workspace walk skips an entry: {error}");
            None
        }
    }
}

/// Whether a walked entry is a directory (links are not followed, so never a link to one).
pub fn is_dir(entry: &DirEntry) -> bool {
    entry.file_type().is_some_and(|t| t.is_dir())
}

/// Why a path under a root is not served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exclusion {
    /// It lies inside a `.git` directory.
    GitDir,
    /// An ignore file rules it out (or rules out a directory it lies in); the kind of file
    /// is named, never its path.
    Ignored(&'static str),
}

/// How many directories' rules are kept before the cache starts over.
const MAX_CACHED_DIRS: usize = 4096;

/// The ignore rules the walker applies, for checking one path at a time. Each directory's
/// matchers are built once and kept while its ignore files stay as they were: every check
/// looks at their size and modification time, so an edited `.gitignore` counts at once,
/// watcher or not.
pub struct Rules {
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    dirs: HashMap<PathBuf, Arc<DirRules>>,
    /// The global gitignore (git's `core.excludesFile`), read when first needed.
    global: Option<Arc<Gitignore>>,
}

/// One directory's rules, as the walker reads them there.
struct DirRules {
    stamps: Stamps,
    /// `.ignore`, which wins over the others.
    ignore: Gitignore,
    gitignore: Gitignore,
    /// `info/exclude` of the repository whose `.git` is in this directory.
    exclude: Gitignore,
}

/// What tells one version of a directory's ignore files from the next.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamps {
    ignore: Option<FileStamp>,
    gitignore: Option<FileStamp>,
    git: Option<FileStamp>,
    /// Where the exclude file was looked for, and what was there.
    exclude: Option<(PathBuf, Option<FileStamp>)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    dir: bool,
}

fn stamp(path: &Path) -> Option<FileStamp> {
    let meta = fs::metadata(path).ok()?;
    Some(FileStamp { len: meta.len(), modified: meta.modified().ok(), dir: meta.is_dir() })
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rules").finish_non_exhaustive()
    }
}

impl Default for Rules {
    fn default() -> Self {
        Rules::new()
    }
}

impl Rules {
    pub fn new() -> Rules {
        Rules { cache: Mutex::new(Cache::default()) }
    }

    /// Whether a walk from `root` would leave `path` out because it, or a directory it
    /// lies in, is ignored; or whether it lies in a `.git` directory. Hidden names alone
    /// exclude nothing. `root` itself is never excluded, and neither is a path not under
    /// it (confinement refuses those for other reasons).
    pub fn excluded(&self, root: &Path, path: &Path) -> Option<Exclusion> {
        let rel = path.strip_prefix(root).ok()?;
        let parts: Vec<_> = rel.components().filter(|c| !matches!(c, Component::CurDir)).collect();
        if parts.iter().any(|c| c.as_os_str() == GIT_DIR) {
            return Some(Exclusion::GitDir);
        }
        if parts.is_empty() {
            return None;
        }
        // The walker reads ignore files from every directory above where it starts (its
        // "parents"), then from each directory it enters.
        let mut chain: Vec<Arc<DirRules>> =
            root.ancestors().collect::<Vec<_>>().into_iter().rev().map(|d| self.dir(d)).collect();
        let global = self.global();
        let mut at = root.to_path_buf();
        for (i, part) in parts.iter().enumerate() {
            at.push(part);
            // A link counts as a directory when it leads to one (the walker, which does not
            // follow links, would not enter it at all), and what does not exist is matched
            // both ways: refusals never tell whether an ignored path exists.
            let kinds: &[bool] = match fs::metadata(&at) {
                Ok(meta) if meta.is_dir() => &[true],
                Ok(_) => &[false],
                Err(_) => &[false, true],
            };
            if let Some(by) = kinds.iter().find_map(|is_dir| ignored(&chain, &global, &at, *is_dir)) {
                return Some(Exclusion::Ignored(by));
            }
            if i + 1 < parts.len() {
                chain.push(self.dir(&at));
            }
        }
        None
    }

    /// The rules read in `dir`, from the cache while its ignore files are unchanged.
    fn dir(&self, dir: &Path) -> Arc<DirRules> {
        let cached = self.cache.lock().unwrap_or_else(|p| p.into_inner()).dirs.get(dir).cloned();
        let stamps = Stamps::of(dir, cached.as_ref().and_then(|c| c.stamps.exclude.as_ref().map(|e| e.0.clone())));
        if let Some(cached) = cached
            && cached.stamps == stamps
        {
            return cached;
        }
        let rules = Arc::new(DirRules::read(dir));
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.dirs.len() >= MAX_CACHED_DIRS {
            cache.dirs.clear();
        }
        cache.dirs.insert(dir.to_path_buf(), rules.clone());
        rules
    }

    fn global(&self) -> Arc<Gitignore> {
        if let Some(global) = &self.cache.lock().unwrap_or_else(|p| p.into_inner()).global {
            return global.clone();
        }
        // As the walker builds it: relative to the current directory, or not at all.
        let global = match std::env::current_dir() {
            Ok(cwd) => GitignoreBuilder::new(cwd).build_global().0,
            Err(_) => Gitignore::empty(),
        };
        let global = Arc::new(global);
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).global = Some(global.clone());
        global
    }
}

impl Stamps {
    /// The stamps of `dir`'s ignore files; `exclude` is where its exclude file was found
    /// last time, if it had one.
    fn of(dir: &Path, exclude: Option<PathBuf>) -> Stamps {
        let git = stamp(&dir.join(GIT_DIR));
        let exclude = match (&git, exclude) {
            (Some(_), Some(path)) => Some((path.clone(), stamp(&path))),
            (Some(_), None) => exclude_file(dir).map(|path| (path.clone(), stamp(&path))),
            (None, _) => None,
        };
        Stamps { ignore: stamp(&dir.join(".ignore")), gitignore: stamp(&dir.join(".gitignore")), git, exclude }
    }
}

impl DirRules {
    fn read(dir: &Path) -> DirRules {
        // Stamps first: should a file change while it is read, the next look rereads it.
        let stamps = Stamps::of(dir, None);
        DirRules {
            ignore: matcher(dir, stamps.ignore.map(|_| dir.join(".ignore"))),
            gitignore: matcher(dir, stamps.gitignore.map(|_| dir.join(".gitignore"))),
            exclude: matcher(dir, stamps.exclude.as_ref().map(|e| e.0.clone())),
            stamps,
        }
    }
}

/// The rules of one ignore file, relative to `dir`. Lines that are not valid globs are
/// skipped and the others kept, as the walker does.
fn matcher(dir: &Path, file: Option<PathBuf>) -> Gitignore {
    let Some(file) = file.filter(|f| f.is_file()) else { return Gitignore::empty() };
    let mut builder = GitignoreBuilder::new(dir);
    if let Some(error) = builder.add(&file) {
        tracing::debug!("workspace ignore rules: {error}");
    }
    builder.build().unwrap_or_else(|error| {
        tracing::debug!("workspace ignore rules: {error}");
        Gitignore::empty()
    })
}

/// `info/exclude` of the repository whose `.git` is in `dir`: in that directory, or in the
/// common directory of a worktree whose `.git` is a file (as the walker finds it).
fn exclude_file(dir: &Path) -> Option<PathBuf> {
    let git = dir.join(GIT_DIR);
    if !fs::metadata(&git).ok()?.is_file() {
        return Some(git.join("info/exclude"));
    }
    let first_line =
        |path: &Path| -> Option<String> { BufReader::new(fs::File::open(path).ok()?).lines().next()?.ok() };
    let real = PathBuf::from(first_line(&git)?.strip_prefix("gitdir: ")?);
    let common = first_line(&real.join("commondir"))?;
    let common = if common.starts_with('.') { real.join(common) } else { PathBuf::from(common) };
    Some(common.join("info/exclude"))
}

/// Whether `path` is ignored by the rules of `chain` (outermost directory first) and the
/// global gitignore, with the walker's precedence: the innermost directory with a rule
/// for it decides, `.ignore` over `.gitignore` over git's exclude file over the global
/// one, and a whitelist (`!pattern`) keeps it in.
fn ignored(chain: &[Arc<DirRules>], global: &Gitignore, path: &Path, is_dir: bool) -> Option<&'static str> {
    let innermost = |pick: fn(&DirRules) -> &Gitignore| {
        chain.iter().rev().map(|d| pick(d).matched(path, is_dir)).find(|m| !m.is_none())
    };
    let decided = innermost(|d| &d.ignore)
        .map(|m| (m, ".ignore"))
        .or_else(|| innermost(|d| &d.gitignore).map(|m| (m, ".gitignore")))
        .or_else(|| innermost(|d| &d.exclude).map(|m| (m, ".git/info/exclude")))
        .or_else(|| {
            let m = global.matched(path, is_dir);
            (!m.is_none()).then_some((m, "the global gitignore"))
        });
    match decided {
        Some((Match::Ignore(_), by)) => Some(by),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Every file under `dir`, hidden or not, outside `.git` directories.
    fn every_file(dir: &Path, out: &mut BTreeSet<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() && entry.file_name() != GIT_DIR {
                every_file(&entry.path(), out);
            } else if kind.is_file() {
                out.insert(entry.path());
            }
        }
    }

    #[test]
    fn rules_agree_with_the_walker() {
        let dir = tempfile::TempDir::new().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for (rel, contents) in [
            (".gitignore", "*.log\n!keep.log\nbuild/\n/top.txt\nnested/**/deep.txt\n"),
            (".ignore", "!forced.log\n"),
            (".git/info/exclude", "*.tmp\n"),
            (".git/HEAD", "ref: refs/heads/main\n"),
            ("a.log", ""),
            ("keep.log", ""),
            ("forced.log", ""),
            ("x.tmp", ""),
            ("top.txt", ""),
            ("plain.txt", ""),
            ("build/out.txt", ""),
            ("docs/build", "a file, which build/ does not match"),
            ("nested/deep.txt", ""),
            ("nested/a/b/deep.txt", ""),
            ("nested/a/b/shallow.txt", ""),
            ("sub/.gitignore", "*.rs\n!main.rs\n"),
            ("sub/top.txt", ""),
            ("sub/lib.rs", ""),
            ("sub/main.rs", ""),
            ("sub/build/out.txt", ""),
            ("sub/inner/.ignore", "main.rs\n"),
            ("sub/inner/main.rs", ""),
            ("sub/inner/other.rs", ""),
            ("sub/.env", ""),
            (".hidden/file.txt", ""),
            ("wl/.gitignore", "*\n!*.md\n"),
            ("wl/a.md", ""),
            ("wl/b.txt", ""),
        ] {
            let path = root.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, contents).unwrap();
        }
        // The workspace's walker, hidden files included: what it yields is what the rules
        // let through.
        let mut builder = walker(&root);
        builder.hidden(false);
        let walked: BTreeSet<PathBuf> = builder
            .build()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(DirEntry::into_path)
            .collect();
        let mut all = BTreeSet::new();
        every_file(&root, &mut all);
        let rules = Rules::new();
        for file in &all {
            assert_eq!(rules.excluded(&root, file).is_none(), walked.contains(file), "{}", file.display());
        }
        // And the agreement is not empty.
        let why = |rel: &str| rules.excluded(&root, &root.join(rel));
        assert_eq!(why("a.log"), Some(Exclusion::Ignored(".gitignore")));
        assert_eq!(why("build/out.txt"), Some(Exclusion::Ignored(".gitignore")));
        assert_eq!(why("x.tmp"), Some(Exclusion::Ignored(".git/info/exclude")));
        assert_eq!(why("sub/inner/main.rs"), Some(Exclusion::Ignored(".ignore")));
        assert_eq!(why(".git/HEAD"), Some(Exclusion::GitDir));
        assert_eq!(why(".git"), Some(Exclusion::GitDir));
        for kept in ["forced.log", "keep.log", "sub/top.txt", "docs/build", "sub/main.rs", ".hidden/file.txt", ""] {
            assert_eq!(why(kept), None, "{kept}");
        }
        assert!(walked.len() > 8 && all.len() > walked.len() + 8, "{walked:?}");
    }
}
