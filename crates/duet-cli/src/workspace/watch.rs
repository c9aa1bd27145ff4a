//! Watching the roots: a `notify` watcher feeds a thread of ours, which coalesces events
//! for [`DEBOUNCE`], brings the listing up to date and raises what changed: a changed file
//! as `ResourceUpdated`, a file that appeared or went away as `ResourcesChanged`. Events
//! under hidden paths (such as `.git/`) are dropped at once, except for edits of
//! `.gitignore` and `.ignore` files, which change what is listed, and so are events under
//! paths the ignore files leave out (a build writing into `target/` costs the check of its
//! path, no rescan); any other event that does not name a listed file leads to a rescan,
//! and only a difference from the last listing is raised.
//!
//! Skills are found with each listing (`skills.rs`); the places they live are watched too,
//! hidden or not. Which directories are watched is `watches.rs`'s. Dropping the [`Watcher`] drops the
//! `notify` watcher and with it the sending end of the channel; the thread sees the
//! channel close and ends.

use super::listing::{Snapshot, Stamp};
use super::watches::Watches;
use super::{Shared, WorkspaceError, skills, uri};
use duet::layer::{Change, ChangeFeed};
use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{Event, EventKind};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Events this close together are handled as one batch.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// A running watch of the roots; dropping it stops the watch.
pub struct Watcher {
    _watches: Arc<Mutex<Watches>>,
}

impl Watcher {
    /// Starts the watch: every served directory is watched when this returns.
    pub fn start(shared: Arc<Shared>, feed: Arc<ChangeFeed>) -> Result<Watcher, WorkspaceError> {
        let failed = |e: &dyn std::fmt::Display| WorkspaceError::Watch(e.to_string());
        let (events, received) = std::sync::mpsc::channel();
        let watcher = notify::recommended_watcher(move |event| {
            // The receiver is gone only when the thread ended; nothing is left to tell.
            let _ = events.send(event);
        })
        .map_err(|e| failed(&e))?;
        let watches = Arc::new(Mutex::new(Watches::new(watcher)));
        let held = Arc::downgrade(&watches);
        grow(&held, trees(&shared).iter().map(PathBuf::as_path), false);
        std::thread::Builder::new()
            .name("duet-workspace-watch".into())
            .spawn(move || run(&received, &shared, &feed, &held))
            .map_err(|e| failed(&e))?;
        Ok(Watcher { _watches: watches })
    }
}

/// Watches the served directories under `dirs` not watched yet (and, after a rescan,
/// forgets those that are gone), while the watch lives.
fn grow<'a>(watches: &Weak<Mutex<Watches>>, dirs: impl Iterator<Item = &'a Path>, rescanned: bool) {
    let Some(watches) = watches.upgrade() else { return };
    let mut watches = watches.lock().unwrap_or_else(|p| p.into_inner());
    if rescanned {
        watches.forget_gone();
    }
    for dir in dirs {
        watches.add_tree(dir);
    }
}

/// The paths of one batch of events: whether each one's contents were written, and
/// whether the watcher lost track (then everything is rescanned).
#[derive(Default)]
struct Batch {
    paths: BTreeMap<PathBuf, bool>,
    rescan: bool,
}

impl Batch {
    fn add(&mut self, shared: &Shared, event: notify::Result<Event>) {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!("watching the workspace: {error}");
                self.rescan = true;
                return;
            }
        };
        self.rescan |= event.need_rescan();
        let written = match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            // Reads, including the server's own, change nothing.
            EventKind::Access(_) => return,
            EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any) => true,
            _ => false,
        };
        for path in event.paths.into_iter().filter(|p| visible(shared, p)) {
            *self.paths.entry(path).or_default() |= written;
        }
    }
}

/// Whether a path lies under a root, below it, with no hidden component in between, or is
/// an ignore file in such a place (its rules decide what is listed), or lies where skills
/// live (or on the way there); and whether the ignore files let a walk reach it.
fn visible(shared: &Shared, path: &Path) -> bool {
    let Some(root) = shared.roots.owner(path) else { return false };
    let root = shared.roots.get(root);
    let Ok(rel) = path.strip_prefix(&root.path) else { return false };
    let hidden = |c: &Component<'_>| c.as_os_str().to_string_lossy().starts_with('.');
    let parts: Vec<_> = rel.components().collect();
    let Some((last, dirs)) = parts.split_last() else { return false };
    let served = dirs.iter().all(|c| !hidden(c))
        && (!hidden(last) || [".gitignore", ".ignore"].map(OsStr::new).contains(&last.as_os_str()));
    (served || skills::on_the_way(rel)) && root.excluded(path).is_none()
}

/// The trees the watch covers: the roots, and the places skills live in them (which may be
/// hidden, like `.claude/skills`).
fn trees(shared: &Shared) -> Vec<PathBuf> {
    let places = shared.roots.iter().flat_map(|root| skills::PLACES.map(|place| root.path.join(place)));
    shared.roots.iter().map(|root| root.path.clone()).chain(places.filter(|p| p.is_dir())).collect()
}

fn run(events: &Receiver<notify::Result<Event>>, shared: &Shared, feed: &ChangeFeed, watches: &Weak<Mutex<Watches>>) {
    while let Ok(first) = events.recv() {
        let mut batch = Batch::default();
        batch.add(shared, first);
        let deadline = Instant::now() + DEBOUNCE;
        loop {
            match events.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(event) => batch.add(shared, event),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        if batch.rescan || !batch.paths.is_empty() {
            for change in apply(shared, &batch) {
                feed.notify(change);
            }
        }
        // Directories that appeared (or, after a lost track, any not watched) join.
        if batch.rescan {
            grow(watches, trees(shared).iter().map(PathBuf::as_path), true);
        } else {
            grow(watches, batch.paths.keys().map(PathBuf::as_path).filter(|p| p.is_dir()), false);
        }
    }
}

/// Updates the listing for one batch and says what changed. Files known to the listing
/// are re-stamped; anything else rescans the roots.
fn apply(shared: &Shared, batch: &Batch) -> Vec<Change> {
    let current = shared.snapshot();
    let mut rescan = batch.rescan;
    let mut stamps = Vec::new();
    let mut updated = BTreeSet::new();
    for (path, written) in &batch.paths {
        match (current.stamp(path), std::fs::symlink_metadata(path)) {
            (Some(old), Ok(meta)) if meta.is_file() => {
                let new = Stamp::of(&meta);
                if new != old || *written {
                    updated.insert(path.clone());
                }
                if new != old {
                    stamps.push((path.clone(), new));
                }
            }
            _ => rescan = true,
        }
    }
    let mut changes = Vec::new();
    if rescan {
        tracing::debug!(events = batch.paths.len(), "rescanning the workspace");
        let next = Snapshot::scan(&shared.roots);
        let diff = current.diff(&next);
        updated.extend(diff.modified);
        updated.retain(|path| next.stamp(path).is_some());
        if diff.membership {
            changes.push(Change::ResourcesChanged);
        }
        shared.replace(next);
    } else if !stamps.is_empty() {
        shared.replace(current.restamped(&shared.roots, &stamps));
    }
    changes.extend(updated.iter().map(|path| Change::ResourceUpdated(uri::from_path(path))));
    changes
}
