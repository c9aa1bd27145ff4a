//! Which directories the workspace watches: each served directory on its own, not whole
//! trees, so `.git`, hidden and ignored directories cost no watch (on Linux each watched
//! directory takes one of the user's inotify watches, which every program shares). New
//! directories join as they appear. When the system has no watch left, duet says so once
//! and keeps watching what it has.

use super::walk;
use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub struct Watches {
    watcher: RecommendedWatcher,
    watched: HashSet<PathBuf>,
    exhausted: bool,
}

impl Watches {
    pub fn new(watcher: RecommendedWatcher) -> Watches {
        Watches { watcher, watched: HashSet::new(), exhausted: false }
    }

    /// Watches `dir` and every directory a walk from it serves that is not watched yet.
    pub fn add_tree(&mut self, dir: &Path) {
        let dirs = walk::walker(dir).build().filter_map(walk::served_entry).filter(walk::is_dir);
        for path in dirs.map(ignore::DirEntry::into_path) {
            if self.exhausted {
                return;
            }
            if self.watched.contains(&path) {
                continue;
            }
            match self.watcher.watch(&path, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.watched.insert(path);
                }
                Err(e) if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) => {
                    tracing::warn!(
                        watched = self.watched.len(),
                        "the system has no file watch left (fs.inotify.max_user_watches on Linux): changes in \
                         directories beyond these are not seen until a rescan"
                    );
                    self.exhausted = true;
                }
                Err(e) => tracing::debug!(dir = %path.display(), "cannot watch a directory: {e}"),
            }
        }
    }

    /// Forgets the directories that are gone; their watches went with them.
    pub fn forget_gone(&mut self) {
        self.watched.retain(|dir| dir.is_dir());
    }
}
