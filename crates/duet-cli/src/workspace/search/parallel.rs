//! The search over the workspace's parallel walk: a few threads walk and search at once
//! (ripgrep's way), share what they find through [`Kept`] so the result does not depend on
//! which thread got which file, report progress in order, and all stop as soon as the
//! request is cancelled. The caller's thread waits for them; it must not be an async one.

use super::super::Shared;
use super::super::paths::Resolved;
use super::super::walk;
use super::file::FileSearcher;
use super::kept::Kept;
use super::{Found, PROGRESS_EVERY, Query};
use ignore::WalkState;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The most threads one search walks with.
const MAX_THREADS: usize = 8;

/// How a search reports and learns it should stop; both are called from the walk's threads.
pub struct Feedback<'a> {
    pub cancelled: &'a (dyn Fn() -> bool + Sync),
    /// Files scanned and matching lines found so far, in increasing order, never once the
    /// search is cancelled.
    pub progress: &'a (dyn Fn(usize, usize) + Sync),
}

/// What the threads share.
struct Progress {
    kept: Kept,
    files_scanned: usize,
    /// Matching lines found, kept or not.
    matched: usize,
    last_report: Option<Instant>,
    reported: usize,
}

/// Searches the files under `scope` on up to [`MAX_THREADS`] threads (fewer when the
/// machine has fewer cores): progress on the first file, then at most every
/// [`PROGRESS_EVERY`], and once more at the end; a look at `cancelled` before every entry
/// and every read.
pub fn search(shared: &Shared, scope: &[Resolved], query: &Query, feedback: &Feedback<'_>) -> Found {
    let threads = std::thread::available_parallelism().map_or(1, NonZeroUsize::get).min(MAX_THREADS);
    let state = Mutex::new(Progress {
        kept: Kept::new(query.max_results),
        files_scanned: 0,
        matched: 0,
        last_report: None,
        reported: 0,
    });
    let stopped = AtomicBool::new(false);
    let cancelled = || {
        let now = stopped.load(Ordering::Relaxed) || (feedback.cancelled)();
        if now {
            stopped.store(true, Ordering::Relaxed);
        }
        now
    };
    let lock = || state.lock().unwrap_or_else(|p| p.into_inner());
    // Whether a file or directory sorts after every match the result can still keep.
    let beyond = |name: &str| lock().kept.cutoff().is_some_and(|last| Path::new(name) > last);
    for base in scope {
        let root = shared.roots.get(base.root);
        walk::parallel(&base.abs, threads).run(|| {
            let (lock, cancelled, beyond) = (&lock, &cancelled, &beyond);
            let mut searcher = FileSearcher::new(query);
            Box::new(move |entry| {
                if cancelled() {
                    return WalkState::Quit;
                }
                let Some(entry) = walk::served_entry(entry) else { return WalkState::Continue };
                let name = shared.roots.display(base.root, entry.path());
                if walk::is_dir(&entry) {
                    return if entry.depth() > 0 && beyond(&name) { WalkState::Skip } else { WalkState::Continue };
                }
                let rel = entry.path().strip_prefix(&base.abs).ok().filter(|r| !r.as_os_str().is_empty());
                let rel = rel.unwrap_or_else(|| entry.path().file_name().map_or(entry.path(), Path::new));
                if query.glob.as_ref().is_some_and(|g| !g.is_match(rel)) || beyond(&name) {
                    return WalkState::Continue;
                }
                let file = match searcher.search(entry.path(), root, &name, query, cancelled) {
                    Ok(Some(file)) => file,
                    Ok(None) => return WalkState::Continue,
                    Err(_) => return WalkState::Quit,
                };
                let mut state = lock();
                state.files_scanned += 1;
                state.matched += file.matches.len() + usize::from(file.more);
                state.kept.add(&name, file);
                if !cancelled() && state.last_report.is_none_or(|at| at.elapsed() >= PROGRESS_EVERY) {
                    (feedback.progress)(state.files_scanned, state.matched);
                    (state.last_report, state.reported) = (Some(Instant::now()), state.files_scanned);
                }
                WalkState::Continue
            })
        });
        if cancelled() {
            break;
        }
    }
    let state = state.into_inner().unwrap_or_else(|p| p.into_inner());
    let cancelled = stopped.load(Ordering::Relaxed);
    if !cancelled && state.reported < state.files_scanned {
        (feedback.progress)(state.files_scanned, state.matched);
    }
    let (matches, truncated) = state.kept.into_matches();
    Found { matches, files_scanned: state.files_scanned, truncated, cancelled }
}
