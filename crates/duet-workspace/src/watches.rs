//! Which directories the workspace watches: each served directory on its own, not whole
//! trees, so `.git`, hidden and ignored directories cost no watch (on Linux each watched
//! directory takes one of the user's inotify watches, which every program shares). The
//! listing's walks say which directories those are, as they read them. Only changes are
//! asked for (files made, removed, renamed or written), never opens or reads: a search that
//! reads every file costs the watcher nothing. When the system has no watch left, duet says
//! so once and keeps watching what it has.

use notify::event::EventKindMask;
use notify::{Config, EventHandler, RecommendedWatcher, RecursiveMode, Watcher as _};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The events asked for: what changes the listing or a file's contents.
const CHANGES: EventKindMask = EventKindMask::CREATE
    .union(EventKindMask::REMOVE)
    .union(EventKindMask::MODIFY_DATA)
    .union(EventKindMask::MODIFY_NAME)
    .union(EventKindMask::ACCESS_CLOSE);

pub(crate) struct Watches {
    watcher: RecommendedWatcher,
    watched: HashSet<PathBuf>,
    exhausted: bool,
}

impl Watches {
    /// A watcher that hands its events to `handler`, watching nothing yet.
    pub(crate) fn new(handler: impl EventHandler) -> notify::Result<Watches> {
        let watcher = RecommendedWatcher::new(handler, Config::default().with_event_kinds(CHANGES))?;
        Ok(Watches { watcher, watched: HashSet::new(), exhausted: false })
    }

    /// Watches `dir` (not what is under it), unless it is already.
    pub(crate) fn add(&mut self, dir: &Path) {
        if self.exhausted || self.watched.contains(dir) {
            return;
        }
        match self.watcher.watch(dir, RecursiveMode::NonRecursive) {
            Ok(()) => {
                self.watched.insert(dir.to_path_buf());
            }
            Err(e) if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) => {
                tracing::warn!(
                    watched = self.watched.len(),
                    "the system has no file watch left (fs.inotify.max_user_watches on Linux): changes in \
                     directories beyond these are not seen"
                );
                self.exhausted = true;
            }
            Err(e) => tracing::debug!(dir = %dir.display(), "cannot watch a directory: {e}"),
        }
    }

    /// Stops watching `dir` and the directories under it, but those `keep` names.
    pub(crate) fn forget_under(&mut self, dir: &Path, keep: impl Fn(&Path) -> bool) {
        let gone: Vec<PathBuf> = self.watched.iter().filter(|d| d.starts_with(dir) && !keep(d)).cloned().collect();
        for path in gone {
            // A directory deleted took its watch with it; one moved away or now ignored
            // still has it.
            let _ = self.watcher.unwatch(&path);
            self.watched.remove(&path);
        }
    }
}

/// Watches each of `dirs` (those watched already cost a look-up), taking the lock for a
/// few at a time.
pub(crate) fn watch_all(watches: &Arc<Mutex<Watches>>, dirs: Vec<PathBuf>) {
    for some in dirs.chunks(256) {
        let mut watches = watches.lock().unwrap_or_else(|p| p.into_inner());
        for dir in some {
            watches.add(dir);
        }
    }
}
