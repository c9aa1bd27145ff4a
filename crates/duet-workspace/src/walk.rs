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
//!
//! No walk can block. The `ignore` crate opens a directory's `.ignore`, `.gitignore` and
//! git's exclude file (found through a `.git` file's `gitdir` and that directory's
//! `commondir`, which may be anywhere) without looking at what they are, so a FIFO there
//! would block it for good: a directory where one of them is neither a file nor a
//! directory is not walked (logged), and a walk whose starting directory (or one above
//! it) has such a file walks nothing, or, when only git's exclude file is at fault, walks
//! without exclude files. [`Rules`] reads the same files itself, and only regular ones
//! (an unreadable one holds no rules). Each walk also stops after [`MAX_WALK_TIME`].

use super::files;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{DirEntry, Match, WalkBuilder, WalkParallel};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// The directory git keeps its repository in; never served, whatever the ignore files say.
pub(crate) const GIT_DIR: &str = ".git";

/// The longest one walk runs: past it, it yields nothing more (logged).
pub(crate) const MAX_WALK_TIME: Duration = Duration::from_secs(120);

/// The ignore file in a directory that the walker must not open, and whether it is git's
/// exclude file (which a walk can do without) or an ignore file (which it cannot).
#[derive(Debug)]
enum Unwalkable {
    IgnoreFile(PathBuf),
    ExcludeFile(PathBuf),
}

/// Whether something at `path` exists and is neither a file nor a directory (links
/// followed): opening it could block, or never end.
fn special(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// What the walker would open in `dir` to read its rules that could block it.
fn unwalkable(dir: &Path) -> Option<Unwalkable> {
    if let Some(path) = [".ignore", ".gitignore"].iter().map(|name| dir.join(name)).find(|p| special(p)) {
        return Some(Unwalkable::IgnoreFile(path));
    }
    match exclude_file(dir) {
        Err(path) => Some(Unwalkable::ExcludeFile(path)),
        Ok(Some(path)) if special(&path) => Some(Unwalkable::ExcludeFile(path)),
        Ok(_) => None,
    }
}

/// A walker over `dir` with the workspace's rules; callers add a depth limit if they want.
pub(crate) fn walker(dir: &Path) -> WalkBuilder {
    walker_skipping(dir, Vec::new())
}

/// The same walker, which also leaves out the directories `skip` (other roots nested in
/// this one, listed with their own).
pub(crate) fn walker_skipping(dir: &Path, skip: Vec<PathBuf>) -> WalkBuilder {
    walker_until(dir, skip, Instant::now() + MAX_WALK_TIME)
}

/// The same walker, which yields nothing more once `deadline` has passed.
fn walker_until(dir: &Path, skip: Vec<PathBuf>, deadline: Instant) -> WalkBuilder {
    let mut builder = WalkBuilder::new(dir);
    builder.standard_filters(true).require_git(false).follow_links(false).sort_by_file_name(|a, b| a.cmp(b));
    // The walker reads the rules of every directory above where it starts, too.
    let above: Vec<Unwalkable> = dir.ancestors().filter_map(unwalkable).collect();
    let ignore_file_above = above.iter().find_map(|u| match u {
        Unwalkable::IgnoreFile(path) => Some(path),
        Unwalkable::ExcludeFile(_) => None,
    });
    if let Some(path) = ignore_file_above {
        tracing::warn!("{} is not walked: {} is not a regular file", dir.display(), path.display());
        builder.ignore(false).git_ignore(false).git_exclude(false).git_global(false).parents(false);
    } else if let Some(Unwalkable::ExcludeFile(path)) = above.first() {
        tracing::warn!(
            "{} is walked without git's exclude files: {} is not a regular file",
            dir.display(),
            path.display()
        );
        builder.git_exclude(false);
    }
    let timed_out = AtomicBool::new(false);
    let walk_nothing = ignore_file_above.is_some();
    let dir = dir.to_path_buf();
    builder.filter_entry(move |entry| {
        if walk_nothing {
            return false;
        }
        if Instant::now() > deadline {
            if !timed_out.swap(true, Ordering::Relaxed) {
                tracing::warn!("the walk of {} ran out of time and stopped", dir.display());
            }
            return false;
        }
        // Hidden already, unless an ignore file whitelists it: still never served.
        if entry.file_name() == OsStr::new(GIT_DIR) || skip.iter().any(|s| s.as_path() == entry.path()) {
            return false;
        }
        match is_dir(entry).then(|| unwalkable(entry.path())).flatten() {
            Some(Unwalkable::IgnoreFile(path) | Unwalkable::ExcludeFile(path)) => {
                tracing::warn!("{} is not walked: {} is not a regular file", entry.path().display(), path.display());
                false
            }
            None => true,
        }
    });
    builder
}

/// The regular files under `dir` (or `dir` itself, when it is a file) whose paths are
/// UTF-8, in walk order. Entries that cannot be read are skipped.
pub(crate) fn files(dir: &Path) -> impl Iterator<Item = DirEntry> {
    walker(dir).build().filter_map(served_entry).filter(|e| !is_dir(e))
}

/// The most threads one parallel walk takes.
const MAX_THREADS: usize = 8;

/// The same walk over `threads` threads, for work that does not need name order: the
/// visitor gets entries in no particular order, directories included.
pub(crate) fn parallel(dir: &Path, threads: usize) -> WalkParallel {
    walker(dir).threads(threads).build_parallel()
}

/// How many threads a parallel walk takes: one per core, at most [`MAX_THREADS`].
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get).min(MAX_THREADS)
}

/// A walked entry that is a directory or a regular file with a UTF-8 path; `None` for
/// anything else, and for entries that cannot be read (logged).
pub(crate) fn served_entry(entry: Result<DirEntry, ignore::Error>) -> Option<DirEntry> {
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
pub(crate) fn is_dir(entry: &DirEntry) -> bool {
    entry.file_type().is_some_and(|t| t.is_dir())
}

/// Why a path under a root is not served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exclusion {
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
pub(crate) struct Rules {
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
    pub(crate) fn new() -> Rules {
        Rules { cache: Mutex::new(Cache::default()) }
    }

    /// Whether a walk from `root` would leave `path` out because it, or a directory it
    /// lies in, is ignored; or whether it lies in a `.git` directory. Hidden names alone
    /// exclude nothing. `root` itself is never excluded, and neither is a path not under
    /// it (confinement refuses those for other reasons).
    pub(crate) fn excluded(&self, root: &Path, path: &Path) -> Option<Exclusion> {
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
            (Some(_), None) => exclude_file(dir).ok().flatten().map(|path| (path.clone(), stamp(&path))),
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

/// The rules of one ignore file, relative to `dir`, if it is a regular file. Lines that
/// are not valid globs (or not UTF-8) are skipped and the others kept, as the walker does.
fn matcher(dir: &Path, file: Option<PathBuf>) -> Gitignore {
    let Some(file) = file else { return Gitignore::empty() };
    let mut text = Vec::new();
    if let Err(error) = files::open_regular(&file).and_then(|mut f| f.read_to_end(&mut text)) {
        tracing::debug!("workspace ignore rules: cannot read {}: {error}", file.display());
        return Gitignore::empty();
    }
    let mut builder = GitignoreBuilder::new(dir);
    let lines = text.split(|b| *b == b'\n').map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    for (i, line) in lines.enumerate().filter_map(|(i, line)| Some((i, std::str::from_utf8(line).ok()?))) {
        // As git does, a byte-order mark before the first line is no part of it.
        let line = if i == 0 { line.trim_start_matches('\u{feff}') } else { line };
        if let Err(error) = builder.add_line(Some(file.clone()), line) {
            tracing::debug!("workspace ignore rules: {error}");
        }
    }
    builder.build().unwrap_or_else(|error| {
        tracing::debug!("workspace ignore rules: {error}");
        Gitignore::empty()
    })
}

/// `info/exclude` of the repository whose `.git` is in `dir`: in that directory, or in the
/// common directory of a worktree whose `.git` is a file (as the walker finds it); `None`
/// when there is none. `Err` names a file on the way that is neither a file nor a
/// directory, which the walker would open (and block on).
fn exclude_file(dir: &Path) -> Result<Option<PathBuf>, PathBuf> {
    let git = dir.join(GIT_DIR);
    match fs::metadata(&git) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Ok(Some(git.join("info/exclude"))),
        Err(_) => return Ok(None),
    }
    let first_line = |path: &Path| -> Result<Option<String>, PathBuf> {
        if special(path) {
            return Err(path.to_path_buf());
        }
        let mut text = Vec::new();
        // A line of a path: a few KiB at most.
        let read = files::open_regular(path).and_then(|f| f.take(64 * 1024).read_to_end(&mut text));
        let line = text.split(|b| *b == b'\n').next().and_then(|l| String::from_utf8(l.to_vec()).ok());
        Ok(read.ok().and(line))
    };
    let Some(real) = first_line(&git)?.and_then(|l| l.strip_prefix("gitdir: ").map(PathBuf::from)) else {
        return Ok(None);
    };
    let Some(common) = first_line(&real.join("commondir"))? else { return Ok(None) };
    let common = if common.starts_with('.') { real.join(common) } else { PathBuf::from(common) };
    Ok(Some(common.join("info/exclude")))
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

    /// The files a walk of `root` yields, from another thread: a walk that blocks fails
    /// the test instead of hanging it.
    fn walked_within(root: &Path, limit: Duration) -> Vec<String> {
        let (sent, received) = std::sync::mpsc::channel();
        let dir = root.to_path_buf();
        std::thread::spawn(move || {
            let rel = |e: DirEntry| e.path().strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
            let _ = sent.send(files(&dir).map(rel).collect::<Vec<_>>());
        });
        received.recv_timeout(limit).expect("the walk blocked")
    }

    fn mkfifo(path: &Path) {
        rustix::fs::mkfifoat(rustix::fs::CWD, path, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
    }

    #[test]
    fn fifos_among_the_rules_never_block_a_walk() {
        let (dir, gitdir) = (tempfile::TempDir::new().unwrap(), tempfile::TempDir::new().unwrap());
        let root = dir.path().canonicalize().unwrap();
        for rel in
            ["a.txt", "ignored/.gitignore", "ignored/b.txt", "repo/c.txt", "excluded/.git/info/x", "excluded/d.txt"]
        {
            fs::create_dir_all(root.join(rel).parent().unwrap()).unwrap();
            fs::write(root.join(rel), "").unwrap();
        }
        // The root's `.git` file leads to a `commondir` that is a FIFO: walked without
        // exclude files. Below it, a FIFO `.gitignore`, a nested worktree whose `.git` leads
        // to the same FIFO, and a FIFO exclude file: those directories are not walked.
        fs::write(root.join(".git"), format!("gitdir: {}\n", gitdir.path().display())).unwrap();
        mkfifo(&gitdir.path().join("commondir"));
        fs::remove_file(root.join("ignored/.gitignore")).unwrap();
        mkfifo(&root.join("ignored/.gitignore"));
        fs::write(root.join("repo/.git"), format!("gitdir: {}\n", gitdir.path().display())).unwrap();
        fs::remove_file(root.join("excluded/.git/info/x")).unwrap();
        mkfifo(&root.join("excluded/.git/info/exclude"));
        assert_eq!(walked_within(&root, Duration::from_secs(20)), ["a.txt"]);
        // A walk that starts below a FIFO `.gitignore` walks nothing.
        assert!(walked_within(&root.join("ignored"), Duration::from_secs(20)).is_empty());
        // Checking one path at a time reads only regular files, so it does not block either.
        let rules = Rules::new();
        assert_eq!(rules.excluded(&root, &root.join("ignored/b.txt")), None);
        assert_eq!(rules.excluded(&root, &root.join("repo/c.txt")), None);
    }

    #[test]
    fn a_walk_stops_at_its_deadline() {
        let dir = tempfile::TempDir::new().unwrap();
        fs::write(dir.path().join("a.txt"), "").unwrap();
        let walked = |deadline| walker_until(dir.path(), Vec::new(), deadline).build().filter_map(served_entry).count();
        assert_eq!(walked(Instant::now() + MAX_WALK_TIME), 2, "the directory and its file");
        assert_eq!(walked(Instant::now()), 1, "the directory alone: nothing below it once out of time");
    }
}
