//! Watching the roots: a `notify` watcher feeds a thread of ours, which gathers a burst of
//! events (until [`QUIET`] passes without one, or [`LONGEST`] after the first), brings the
//! listing up to date for the paths they name and nothing else, and raises what changed:
//! each listed file written (or renamed over) as `ResourceUpdated`, for its subscribers,
//! and one `ResourcesChanged` for the whole burst when files appeared or went away.
//!
//! A path is looked at as it is now: a file the listing lacks is added, a listed path that
//! is gone is removed (with everything under it), and a directory that appeared (or was
//! renamed into place) is walked and listed, its directories watched. Events under hidden
//! paths (such as `.git/`) and under paths the ignore files leave out are dropped on that
//! check alone: a build writing into `target/` costs nothing more (and ignored directories
//! are not even watched). An edited `.gitignore` or `.ignore` re-lists its directory. Only
//! a watcher that lost track of events re-lists every root, a rescan.
//!
//! Skills (`skills.rs`) live in places that may be hidden (`.claude/skills`): those places,
//! and the folders on the way to them, are watched too, and a change there finds the
//! skills again (a look at a few folders), raising `ResourcesChanged` when the skills
//! listed changed.
//!
//! Which directories are watched is `watches.rs`'s. Dropping the [`Watcher`] drops the
//! `notify` watcher and with it the sending end of the channel; the thread sees the
//! channel close and ends.

use super::listing::Dir;
use super::watches::{self, Watches};
use super::{Shared, WorkspaceError, skills, uri};
use duet::layer::{Change, ChangeFeed};
use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{Event, EventKind};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// A burst ends when no event came for this long.
const QUIET: Duration = Duration::from_millis(200);
/// A burst that goes on is handled this long after its first event, and the next begins.
const LONGEST: Duration = Duration::from_secs(2);

/// The files whose edits change which files are listed.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// A running watch of the roots; dropping it stops the watch.
pub(crate) struct Watcher {
    _watches: Arc<Mutex<Watches>>,
}

impl Watcher {
    /// Starts the watch: the directories listed so far are watched when this returns (and
    /// those the first walk lists later, as it lists them).
    pub(crate) fn start(shared: Arc<Shared>, feed: Arc<ChangeFeed>) -> Result<Watcher, WorkspaceError> {
        let failed = |e: &dyn std::fmt::Display| WorkspaceError::Watch(e.to_string());
        let (events, received) = std::sync::mpsc::channel();
        let watches = Watches::new(move |event| {
            // The receiver is gone only when the thread ended; nothing is left to tell.
            let _ = events.send(event);
        })
        .map_err(|e| failed(&e))?;
        let watches = Arc::new(Mutex::new(watches));
        let held = Arc::downgrade(&watches);
        watches::watch_all(&watches, skills::dirs(&shared.roots));
        let listed = {
            let mut state = shared.lock();
            state.watches = Some(held.clone());
            state.listing.as_ref().map(|listing| listing.dirs(&shared.roots))
        };
        if let Some(dirs) = listed {
            watches::watch_all(&watches, dirs);
        }
        std::thread::Builder::new()
            .name("duet-workspace-watch".into())
            .spawn(move || run(&received, &shared, &feed, &held))
            .map_err(|e| failed(&e))?;
        Ok(Watcher { _watches: watches })
    }
}

/// What happened to one path in a burst.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    /// Its contents were written.
    written: bool,
    /// It was made, removed or renamed.
    named: bool,
}

/// The paths of one burst of events, the directories whose ignore files changed, whether
/// anything changed where skills live, and whether the watcher lost track (then every root
/// is listed again).
#[derive(Default)]
struct Batch {
    paths: BTreeMap<PathBuf, Seen>,
    rules: BTreeSet<PathBuf>,
    skills: bool,
    lost: bool,
}

impl Batch {
    fn add(&mut self, shared: &Shared, event: notify::Result<Event>) {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!("watching the workspace: {error}");
                self.lost = true;
                return;
            }
        };
        self.lost |= event.need_rescan();
        let seen = match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) | EventKind::Modify(ModifyKind::Data(_)) => {
                Seen { written: true, named: false }
            }
            EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_)) => return,
            EventKind::Create(_) | EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_)) => {
                Seen { written: false, named: true }
            }
            EventKind::Modify(_) | EventKind::Any | EventKind::Other => Seen { written: true, named: true },
        };
        for path in event.paths {
            self.skills |= where_skills_live(shared, &path);
            if is_ignore_file(&path) {
                if let Some(dir) = path.parent().filter(|dir| served(shared, dir)) {
                    self.rules.insert(dir.to_path_buf());
                }
            } else if served(shared, &path) {
                let at = self.paths.entry(path).or_default();
                at.written |= seen.written;
                at.named |= seen.named;
            }
        }
    }
}

fn is_ignore_file(path: &Path) -> bool {
    path.file_name().is_some_and(|name| IGNORE_FILES.map(OsStr::new).contains(&name))
}

/// Whether a walk from its root would reach `path`: it lies under a root, with no hidden
/// component below it, and the ignore files do not leave it out. The root itself counts.
fn served(shared: &Shared, path: &Path) -> bool {
    let Some(root) = shared.roots.owner(path) else { return false };
    let root = shared.roots.get(root);
    let Ok(rel) = path.strip_prefix(&root.path) else { return false };
    let hidden = |c: Component<'_>| c.as_os_str().to_string_lossy().starts_with('.');
    !rel.components().any(hidden) && root.excluded(path).is_none()
}

/// Whether `path` is, lies in, or leads to a place skills live, and is not ignored.
fn where_skills_live(shared: &Shared, path: &Path) -> bool {
    let Some(root) = shared.roots.owner(path) else { return false };
    let root = shared.roots.get(root);
    path.strip_prefix(&root.path).is_ok_and(skills::on_the_way) && root.excluded(path).is_none()
}

fn run(events: &Receiver<notify::Result<Event>>, shared: &Shared, feed: &ChangeFeed, watches: &Weak<Mutex<Watches>>) {
    while let Ok(first) = events.recv() {
        let mut batch = Batch::default();
        batch.add(shared, first);
        let longest = Instant::now() + LONGEST;
        loop {
            let wait = QUIET.min(longest.saturating_duration_since(Instant::now()));
            match events.recv_timeout(wait) {
                Ok(event) => batch.add(shared, event),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        for change in apply(shared, &batch, watches) {
            feed.notify(change);
        }
    }
}

/// Brings the listing up to date with one batch and says what changed.
fn apply(shared: &Shared, batch: &Batch, watches: &Weak<Mutex<Watches>>) -> Vec<Change> {
    let mut changed = false;
    let mut updated = Vec::new();
    let relisted: Vec<&Path> = if batch.lost {
        tracing::debug!("rescanning the workspace: the watcher lost track of events");
        shared.roots.iter().map(|root| root.path.as_path()).collect()
    } else {
        outermost(batch.rules.iter().map(PathBuf::as_path))
    };
    for dir in &relisted {
        if !batch.lost {
            tracing::debug!(dir = %dir.display(), "listing a directory again: its ignore rules changed");
        }
        changed |= relist(shared, dir, watches);
    }
    for (path, seen) in &batch.paths {
        if relisted.iter().any(|dir| path.starts_with(dir)) {
            continue;
        }
        let Some((root, rel)) = locate(shared, path) else { continue };
        let now = std::fs::symlink_metadata(path).ok();
        let mut listing = shared.listing();
        match now {
            Some(meta) if meta.is_file() => {
                if listing.is_file(root, rel) {
                    if seen.written || seen.named {
                        updated.push(uri::from_path(path));
                    }
                } else {
                    changed |= listing.add_file(root, rel);
                }
            }
            Some(meta) if meta.is_dir() => {
                if seen.named || !listing.is_dir(root, rel) {
                    drop(listing);
                    changed |= relist(shared, path, watches);
                }
            }
            // Gone, or no longer a file or a directory (a link is not followed).
            _ => {
                let was_dir = listing.is_dir(root, rel);
                changed |= listing.remove(root, rel) > 0;
                drop(listing);
                if was_dir {
                    forget(watches, path, |_| false);
                }
            }
        }
    }
    if batch.skills || batch.lost {
        if let Some(watches) = watches.upgrade() {
            watches::watch_all(&watches, skills::dirs(&shared.roots));
        }
        changed |= shared.rescan_skills();
    }
    let mut changes: Vec<Change> = updated.into_iter().map(Change::ResourceUpdated).collect();
    if changed || batch.lost {
        changes.push(Change::ResourcesChanged);
    }
    changes
}

/// The root a path lies under (the innermost) and the path relative to it.
fn locate<'a>(shared: &Shared, path: &'a Path) -> Option<(usize, &'a str)> {
    let root = shared.roots.owner(path)?;
    let rel = path.strip_prefix(&shared.roots.get(root).path).ok()?.to_str()?;
    Some((root, rel))
}

/// Walks `dir` again and puts what it serves in the listing in its place, watching its
/// directories and forgetting those no longer served; whether the files listed changed.
fn relist(shared: &Shared, dir: &Path, watches: &Weak<Mutex<Watches>>) -> bool {
    let Some((root, rel)) = locate(shared, dir) else { return false };
    let roots: Vec<&Path> = shared.roots.iter().map(|r| r.path.as_path()).collect();
    let mut served = HashSet::new();
    let fresh = Dir::scan(dir, &roots, &mut |found| {
        shared.watch_dir(found);
        served.insert(found.to_path_buf());
    });
    forget(watches, dir, |d| served.contains(d));
    shared.listing().put_dir(root, rel, fresh)
}

/// Stops watching the directories under `dir` but those `keep` names.
fn forget(watches: &Weak<Mutex<Watches>>, dir: &Path, keep: impl Fn(&Path) -> bool) {
    if let Some(watches) = watches.upgrade() {
        watches.lock().unwrap_or_else(|p| p.into_inner()).forget_under(dir, keep);
    }
}

/// The directories of `dirs` that lie in none of the others.
fn outermost<'a>(dirs: impl Iterator<Item = &'a Path>) -> Vec<&'a Path> {
    let mut kept: Vec<&Path> = Vec::new();
    // In sorted order a directory comes before those inside it.
    for dir in dirs {
        if !kept.iter().any(|k| dir.starts_with(k)) {
            kept.push(dir);
        }
    }
    kept
}
