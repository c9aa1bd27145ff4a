//! The search over the workspace's parallel walk: a few threads walk and search at once
//! (ripgrep's way), share what they find through [`Kept`] so the result does not depend on
//! which thread got which file, report progress in order, and all stop as soon as the
//! request is cancelled. The caller's thread waits for them; it must not be an async one.
//!
//! A file without matches costs the threads no lock: the counts are atomic, progress takes
//! the lock only when a report is due, and the walk asks whether an entry sorts after the
//! kept matches only once enough matches are known for that to matter.

use super::super::Shared;
use super::super::paths::Resolved;
use super::super::walk;
use super::file::FileSearcher;
use super::kept::Kept;
use super::{Found, PROGRESS_EVERY, Query};
use ignore::WalkState;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// How a search reports and learns it should stop; both are called from the walk's threads.
pub(crate) struct Feedback<'a> {
    pub cancelled: &'a (dyn Fn() -> bool + Sync),
    /// Files scanned and matching lines found so far, in increasing order, never once the
    /// search is cancelled.
    pub progress: &'a (dyn Fn(usize, usize) + Sync),
}

/// What the threads share.
struct Progress {
    started: Instant,
    files_scanned: AtomicUsize,
    /// Matching lines found, kept or not.
    matched: AtomicUsize,
    /// When the next report is due, in nanoseconds after `started`.
    next_report: AtomicU64,
    /// Files scanned at the last report.
    reported: Mutex<usize>,
}

impl Progress {
    /// Reports, if a report is due, says more than the last, and the search goes on (asked
    /// under the lock, so no report follows one during which the search was cancelled).
    fn report(&self, feedback: &Feedback<'_>, cancelled: &dyn Fn() -> bool) {
        let now = self.started.elapsed().as_nanos() as u64;
        if now < self.next_report.load(Ordering::Relaxed) {
            return;
        }
        let mut reported = self.reported.lock().unwrap_or_else(|p| p.into_inner());
        if cancelled() {
            return;
        }
        // Read under the lock: each report sees counts at least as large as the last.
        let (files, matched) = (self.files_scanned.load(Ordering::SeqCst), self.matched.load(Ordering::SeqCst));
        if files > *reported {
            (feedback.progress)(files, matched);
            *reported = files;
            self.next_report.store(now + PROGRESS_EVERY.as_nanos() as u64, Ordering::Relaxed);
        }
    }
}

/// Searches the files under `scope` that the request may reach (`reachable`) on the walk's threads (one per core, up to 8): progress on the first file, then at most every
/// [`PROGRESS_EVERY`], and once more at the end; a look at `cancelled` before every entry
/// and every read.
pub(crate) fn search(
    shared: &Shared,
    scope: &[Resolved],
    reachable: &(dyn Fn(&Path) -> bool + Sync),
    query: &Query,
    feedback: &Feedback<'_>,
) -> Found {
    let kept = Mutex::new(Kept::new(query.max_results));
    // Whether `kept` names a cutoff yet.
    let full = AtomicBool::new(false);
    let progress = Progress {
        started: Instant::now(),
        files_scanned: AtomicUsize::new(0),
        matched: AtomicUsize::new(0),
        next_report: AtomicU64::new(0),
        reported: Mutex::new(0),
    };
    let stopped = AtomicBool::new(false);
    let cancelled = || {
        let now = stopped.load(Ordering::Relaxed) || (feedback.cancelled)();
        if now {
            stopped.store(true, Ordering::Relaxed);
        }
        now
    };
    let lock = || kept.lock().unwrap_or_else(|p| p.into_inner());
    // Whether a file or directory sorts after every match the result can still keep.
    let beyond = |name: &dyn Fn() -> String| {
        full.load(Ordering::Acquire) && lock().cutoff().is_some_and(|last| Path::new(&name()) > last)
    };
    for base in scope {
        let root = shared.roots.get(base.root);
        let root_dev = root.path.metadata().map_or(u64::MAX, |m| m.dev());
        walk::parallel(&base.abs, walk::threads()).run(|| {
            let (cancelled, beyond, lock, full, progress) = (&cancelled, &beyond, &lock, &full, &progress);
            let mut searcher = FileSearcher::new(query);
            Box::new(move |entry| {
                if cancelled() {
                    return WalkState::Quit;
                }
                let Some(entry) = walk::served_entry(entry) else { return WalkState::Continue };
                let name = || shared.roots.display(base.root, entry.path());
                if walk::is_dir(&entry) {
                    return if entry.depth() > 0 && beyond(&name) { WalkState::Skip } else { WalkState::Continue };
                }
                let rel = entry.path().strip_prefix(&base.abs).ok().filter(|r| !r.as_os_str().is_empty());
                let rel = rel.unwrap_or_else(|| entry.path().file_name().map_or(entry.path(), Path::new));
                if query.glob.as_ref().is_some_and(|g| !g.is_match(rel)) || beyond(&name) || !reachable(entry.path()) {
                    return WalkState::Continue;
                }
                let file = match searcher.search(&entry, root, root_dev, &name, query, cancelled) {
                    Ok(Some(file)) => file,
                    Ok(None) => return WalkState::Continue,
                    Err(_) => return WalkState::Quit,
                };
                progress.files_scanned.fetch_add(1, Ordering::SeqCst);
                let found = file.matches.len() + usize::from(file.more);
                if found > 0 {
                    progress.matched.fetch_add(found, Ordering::SeqCst);
                    let mut kept = lock();
                    kept.add(&name(), file);
                    if kept.cutoff().is_some() {
                        full.store(true, Ordering::Release);
                    }
                }
                progress.report(feedback, cancelled);
                WalkState::Continue
            })
        });
        if cancelled() {
            break;
        }
    }
    progress.next_report.store(0, Ordering::Relaxed);
    progress.report(feedback, &cancelled);
    let cancelled = stopped.load(Ordering::Relaxed);
    let files_scanned = progress.files_scanned.load(Ordering::SeqCst);
    let (matches, truncated) = kept.into_inner().unwrap_or_else(|p| p.into_inner()).into_matches();
    Found { matches, files_scanned, truncated, cancelled }
}
