//! The walk behind `find_files`: the workspace's walk on several threads (fd's way), each
//! file's path under the directory asked for matched against the glob (also where the
//! client's roots narrowed the walk to directories below it). It keeps the first
//! `limit` matching paths in walk order (by path), whatever order the threads find them in,
//! so the answer is the same every time; once it holds one more than that, it skips what
//! sorts after them.

use super::Shared;
use super::paths::Resolved;
use super::walk;
use globset::GlobSet;
use ignore::WalkState;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The paths found, as the tools write them.
pub(crate) struct Found {
    pub paths: Vec<String>,
    /// More files matched than `paths` holds.
    pub truncated: bool,
}

/// The files under `scope` the request may reach (`reachable`) whose path relative to the
/// directory `asked` for (the one of them holding it) matches `glob`: the first `limit`.
/// `None` when `cancelled` said so before the walk ended.
pub(crate) fn matching(
    shared: &Shared,
    scope: &[Resolved],
    reachable: &(dyn Fn(&Path) -> bool + Sync),
    asked: &[Resolved],
    glob: &GlobSet,
    limit: usize,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Option<Found> {
    // Where each directory searched lies: the directory asked for above it.
    let tops: Vec<&Path> = scope
        .iter()
        .map(|base| asked.iter().map(|a| a.abs.as_path()).find(|a| base.abs.starts_with(a)).unwrap_or(&base.abs))
        .collect();
    // By the index of the directory searched, then the path under the one asked for.
    let kept: Mutex<BTreeSet<(usize, PathBuf)>> = Mutex::default();
    let full = AtomicBool::new(false);
    let stopped = AtomicBool::new(false);
    let lock = || kept.lock().unwrap_or_else(|p| p.into_inner());
    for (index, base) in scope.iter().enumerate() {
        // Whether an entry sorts after the first `limit + 1` matches.
        let beyond = |rel: &Path| {
            full.load(Ordering::Acquire) && lock().last().is_some_and(|last| (index, rel) > (last.0, last.1.as_path()))
        };
        let top = tops[index];
        walk::parallel(&base.abs, walk::threads()).run(|| {
            let (beyond, lock, full, stopped) = (&beyond, &lock, &full, &stopped);
            Box::new(move |entry| {
                if cancelled() {
                    stopped.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
                let Some(entry) = walk::served_entry(entry) else { return WalkState::Continue };
                let Ok(rel) = entry.path().strip_prefix(top) else { return WalkState::Continue };
                if walk::is_dir(&entry) {
                    return if entry.depth() > 0 && beyond(rel) { WalkState::Skip } else { WalkState::Continue };
                }
                if !glob.is_match(rel) || beyond(rel) || !reachable(entry.path()) {
                    return WalkState::Continue;
                }
                let mut kept = lock();
                kept.insert((index, rel.to_path_buf()));
                if kept.len() > limit + 1 {
                    kept.pop_last();
                }
                if kept.len() > limit {
                    full.store(true, Ordering::Release);
                }
                WalkState::Continue
            })
        });
        if stopped.load(Ordering::Relaxed) {
            return None;
        }
    }
    let kept = kept.into_inner().unwrap_or_else(|p| p.into_inner());
    let truncated = kept.len() > limit;
    let paths = kept
        .into_iter()
        .take(limit)
        .map(|(index, rel)| shared.roots.display(scope[index].root, &tops[index].join(rel)))
        .collect();
    Some(Found { paths, truncated })
}
