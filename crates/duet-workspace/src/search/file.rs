//! One file searched with ripgrep's searcher: the workspace's own binary check on the
//! file's head first (a NUL byte or invalid UTF-8 there, as everywhere else in the
//! workspace), then a line-oriented search that keeps a file's first matches, the lines
//! around them, and whether there were more. A small file takes one read; a bigger one's
//! reads stop as soon as the search is cancelled, even in the middle of it.
//!
//! A file is opened where the walk found it, and served when it is the very file the walk
//! saw: the same inode on the root's device (the walk, which follows no link, found it in
//! a served directory). Anything else (a path swapped for a link since, a file on another
//! file system mounted under the root) goes through the workspace's full check of where
//! an opened file really is (`files::open`), which costs a look in `/proc` per file. Either
//! way only a regular file is opened, and one with other hard links is skipped unless the
//! workspace follows them.

use super::super::files;
use super::super::paths::Root;
use super::{Line, MAX_LINE_CHARS, MAX_SEARCHED_BYTES, Match, Query};
use grep_searcher::{Searcher, Sink, SinkContext, SinkMatch};
use ignore::DirEntry;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;

/// What one file holds for the search.
#[derive(Debug, Default)]
pub(super) struct FileMatches {
    /// Its first matches (at most the query's `max_results`), in line order.
    pub matches: Vec<Match>,
    /// Whether it has matches past those.
    pub more: bool,
}

/// Why a file's search ended early.
#[derive(Debug)]
pub(super) struct Cancelled;

/// A thread's searcher, used file after file so its buffers are made once.
pub(super) struct FileSearcher {
    searcher: Searcher,
    /// The head of the file in hand: all of it, when it is small.
    head: Vec<u8>,
}

impl FileSearcher {
    pub(super) fn new(query: &Query) -> FileSearcher {
        FileSearcher { searcher: query.searcher(), head: Vec::with_capacity(files::SNIFF_BYTES) }
    }

    /// Searches the file the walk found as `entry` under `root` (whose device is
    /// `root_dev`), naming its matches `name()`; `None` when it is over
    /// [`MAX_SEARCHED_BYTES`] and not searched. A file that cannot be opened or read, or
    /// that looks binary, holds no matches.
    pub(super) fn search(
        &mut self,
        entry: &DirEntry,
        root: &Root,
        root_dev: u64,
        name: &dyn Fn() -> String,
        query: &Query,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Option<FileMatches>, Cancelled> {
        let Ok((size, mut file)) = open(entry, root, root_dev) else { return Ok(Some(FileMatches::default())) };
        if size > MAX_SEARCHED_BYTES {
            return Ok(None);
        }
        self.head.clear();
        let head = size.min(files::SNIFF_BYTES as u64);
        if (&mut file).take(head).read_to_end(&mut self.head).is_err() || files::looks_binary(&self.head) {
            return Ok(Some(FileMatches::default()));
        }
        let mut sink = Collect { query, lines: Vec::new(), seen: 0, last_needed: None, more: false };
        // A small file is read whole already; a bigger one is read on as it is searched.
        let searched = if self.head.len() as u64 >= size {
            self.searcher.search_slice(&query.matcher, &self.head, &mut sink)
        } else {
            let reader = Cancellable { inner: io::Cursor::new(&self.head[..]).chain(file), cancelled };
            self.searcher.search_reader(&query.matcher, reader, &mut sink)
        };
        match searched {
            Ok(()) => Ok(Some(sink.finish(name))),
            Err(_) if cancelled() => Err(Cancelled),
            Err(error) => {
                tracing::debug!("search_files stops reading {}: {error}", name());
                Ok(Some(sink.finish(name)))
            }
        }
    }
}

/// The file the walk found, opened, and its size. A file with other hard links is not
/// searched unless the root follows them.
fn open(entry: &DirEntry, root: &Root, root_dev: u64) -> io::Result<(u64, File)> {
    let file = files::open_regular(entry.path())?;
    let meta = file.metadata()?;
    if Some(meta.ino()) == entry.ino() && meta.dev() == root_dev {
        files::check_hard_links(&meta, root)?;
        return Ok((meta.len(), file));
    }
    let file = files::open(entry.path(), root)?;
    Ok((file.metadata()?.len(), file))
}

/// A reader that fails once the search is cancelled, so the searcher stops at its next read.
struct Cancellable<'a, R> {
    inner: R,
    cancelled: &'a (dyn Fn() -> bool + Sync),
}

impl<R: Read> Read for Cancellable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if (self.cancelled)() {
            return Err(io::Error::other("the search was cancelled"));
        }
        self.inner.read(buf)
    }
}

/// A line the searcher reported: a match or a line of context.
struct Seen {
    number: usize,
    text: String,
    matched: bool,
}

/// Keeps the lines the searcher reports until the file has given `max_results` matches
/// and the context after the last of them, then stops it once it knows whether more
/// matches follow.
struct Collect<'q> {
    query: &'q Query,
    lines: Vec<Seen>,
    /// Matches reported so far.
    seen: usize,
    /// Once the file has given `max_results` matches: the last line its context needs.
    last_needed: Option<usize>,
    more: bool,
}

impl Collect<'_> {
    /// Takes one reported line; whether the searcher should go on.
    fn take(&mut self, number: Option<u64>, bytes: &[u8], matched: bool) -> bool {
        let number = number.map_or(0, |n| n as usize);
        if matched {
            self.seen += 1;
        }
        let wanted = match self.last_needed {
            None => true,
            Some(last) => number <= last,
        };
        if wanted {
            self.lines.push(Seen { number, text: line_text(bytes), matched });
        }
        if matched && self.seen > self.query.max_results {
            self.more = true;
        }
        if matched && self.seen == self.query.max_results {
            self.last_needed = Some(number + self.query.after);
        }
        // Done when nothing more can be kept and whether more matches follow is known.
        !(self.more && self.last_needed.is_some_and(|last| number >= last))
    }

    /// The kept matches, each with the lines around it.
    fn finish(self, name: &dyn Fn() -> String) -> FileMatches {
        let Collect { query, lines, more, .. } = self;
        if lines.is_empty() {
            return FileMatches { matches: Vec::new(), more };
        }
        let name = name();
        let around = |from: usize, to: usize| -> Vec<Line> {
            let start = lines.partition_point(|l| l.number < from);
            let end = lines.partition_point(|l| l.number <= to);
            lines[start..end].iter().map(|l| Line { line: l.number, text: l.text.clone() }).collect()
        };
        let context = query.before > 0 || query.after > 0;
        let matches = lines
            .iter()
            .filter(|l| l.matched)
            .take(query.max_results)
            .map(|l| Match {
                path: name.clone(),
                line: l.number,
                text: l.text.clone(),
                before: context.then(|| around(l.number.saturating_sub(query.before), l.number - 1)),
                after: context.then(|| around(l.number + 1, l.number + query.after)),
            })
            .collect();
        FileMatches { matches, more }
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        Ok(self.take(found.line_number(), found.bytes(), true))
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        Ok(self.take(context.line_number(), context.bytes(), false))
    }
}

/// A reported line as text: its terminator dropped, invalid UTF-8 replaced, and cut to
/// [`MAX_LINE_CHARS`] characters.
fn line_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
