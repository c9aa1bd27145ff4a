//! Reading one file: how much one read may return, whether bytes are text or binary, which
//! MIME type a file has, line ranges of files too large to read whole (its last lines read
//! backwards from the end), and file times as RFC 3339.
//!
//! Every file the workspace reads is opened here ([`open_regular`]): only a regular file is
//! ever opened, and never in a way that can block (a FIFO, a device or a socket is refused
//! before and after opening, and the open itself does not wait). A file served to a client
//! ([`open`]) is also re-checked to lie under its root, not to be excluded, and to have no
//! other hard link unless the workspace follows hard links: a hard link is another name of
//! the same file, possibly outside the root or ignored, that confinement cannot see.

use super::paths::Root;
use crate::counted::count;
use rustix::fs::{Mode, OFlags};
use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// The most bytes one read returns: a whole file, or a range of its lines.
pub(crate) const MAX_READ_BYTES: u64 = 1024 * 1024;
/// How much of a file decides whether it is binary.
pub(crate) const SNIFF_BYTES: usize = 8 * 1024;
/// How far past a requested range lines are still counted, to report a file's total.
const COUNT_LIMIT_BYTES: u64 = 64 * 1024 * 1024;
/// How much a tail read takes at a time, going backwards from the end.
const TAIL_BLOCK_BYTES: u64 = 64 * 1024;

/// A whole file's contents.
pub(crate) enum Body {
    Text(String),
    Binary(Vec<u8>),
}

/// Why a read returned nothing.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The whole file is over [`MAX_READ_BYTES`].
    TooLarge {
        size: u64,
    },
    /// The requested lines are over [`MAX_READ_BYTES`].
    RangeTooLarge {
        first: usize,
        last: usize,
    },
    /// The last `count` lines are over [`MAX_READ_BYTES`].
    TailTooLarge {
        count: usize,
    },
    /// The range starts after the last line.
    PastEnd {
        start: usize,
        total: usize,
    },
    /// Lines were asked of a binary file.
    Binary {
        size: u64,
    },
    Io(io::Error),
}

impl From<io::Error> for ReadError {
    fn from(error: io::Error) -> Self {
        ReadError::Io(error)
    }
}

impl ReadError {
    /// The refusal, for a file the client knows as `name`.
    pub(crate) fn message(&self, name: &str) -> String {
        let limit = format!("{} ({MAX_READ_BYTES} bytes)", human_size(MAX_READ_BYTES));
        match self {
            ReadError::TooLarge { size } => format!(
                "{name} is {} ({size} bytes), over the {limit} limit of one read; \
                 read it in parts with the read_file tool's start_line and end_line",
                human_size(*size)
            ),
            ReadError::RangeTooLarge { first, last } => format!(
                "lines {first} to {last} of {name} are already over the {limit} limit of one read; ask for fewer lines"
            ),
            ReadError::TailTooLarge { count: 1 } => {
                format!("the last line of {name} is already over the {limit} limit of one read")
            }
            ReadError::TailTooLarge { count } => {
                format!(
                    "the last {count} lines of {name} are already over the {limit} limit of one read; ask for fewer lines"
                )
            }
            ReadError::PastEnd { start, total } => {
                format!("{name} has {}, so there is no line {start}", count(*total, "line"))
            }
            ReadError::Binary { size } => format!(
                "{name} is a binary file ({}); read it as a resource to get its bytes in base64",
                human_size(*size)
            ),
            ReadError::Io(error) => format!("cannot read {name}: {error}"),
        }
    }
}

/// Opens `path` for reading if it is a regular file (links followed). Its type is looked at
/// before opening, so a device is never opened; the open does not wait (`O_NONBLOCK`), so a
/// FIFO swapped in since cannot block it; and what was opened is looked at again.
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    let not_regular = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file (devices, FIFOs and sockets are never read)",
        )
    };
    if !std::fs::metadata(path)?.is_file() {
        return Err(not_regular());
    }
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let file = File::from(rustix::fs::open(path, flags, Mode::empty())?);
    if !file.metadata()?.is_file() {
        return Err(not_regular());
    }
    Ok(file)
}

/// Refuses a regular file with other hard links, unless `root` follows them.
pub(crate) fn check_hard_links(meta: &Metadata, root: &Root) -> io::Result<()> {
    if meta.nlink() > 1 && !root.follows_hard_links() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "it has other hard links, which may lead outside the workspace or to ignored files; start duet \
             with --follow-hard-links to serve such files",
        ));
    }
    Ok(())
}

/// Opens a regular file under `root` ([`open_regular`]). The path was checked before, but
/// may have been swapped for a link since: what was actually opened is checked again, both
/// that it lies under the root and, when it is not the file the path named, that it is not
/// excluded; and it must have no other hard links ([`check_hard_links`]).
pub(crate) fn open(path: &Path, root: &Root) -> io::Result<File> {
    let file = open_regular(path)?;
    check_hard_links(&file.metadata()?, root)?;
    let refuse = |why: &str| Err(io::Error::new(io::ErrorKind::PermissionDenied, why.to_string()));
    match opened_path(&file, path) {
        Some(opened) if !opened.starts_with(&root.path) => refuse("it leads outside the workspace"),
        Some(opened) if opened != path && root.excluded(&opened).is_some() => {
            refuse("it leads to a file excluded by ignore rules, which is not served")
        }
        Some(_) => Ok(file),
        None => refuse("it leads outside the workspace"),
    }
}

/// Where the file opened from `path` really is, if that can be told.
pub(crate) fn opened_path(file: &File, path: &Path) -> Option<std::path::PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // The kernel's name for the open file itself, whatever happened to the path.
        if let Ok(opened) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            return Some(opened);
        }
    }
    // Elsewhere (or without /proc): where the path leads now, if that is the same file.
    path.canonicalize().ok().filter(|p| same_file(file, p))
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), path.metadata()) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &File, _: &Path) -> bool {
    true
}

/// Binary means a NUL byte or invalid UTF-8 in `head` (a sequence cut off at its end is
/// not invalid: the head may end mid-character).
pub(crate) fn looks_binary(head: &[u8]) -> bool {
    let head = &head[..head.len().min(SNIFF_BYTES)];
    head.contains(&0) || std::str::from_utf8(head).is_err_and(|e| e.error_len().is_some())
}

/// A whole file under `root`: text if it is valid UTF-8 and its head looks like text,
/// else bytes.
pub(crate) fn read_whole(path: &Path, root: &Root) -> Result<Body, ReadError> {
    let file = open(path, root)?;
    let size = file.metadata()?.len();
    if size > MAX_READ_BYTES {
        return Err(ReadError::TooLarge { size });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(MAX_READ_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        // It grew while being read.
        return Err(ReadError::TooLarge { size: bytes.len() as u64 });
    }
    if looks_binary(&bytes) {
        return Ok(Body::Binary(bytes));
    }
    Ok(String::from_utf8(bytes).map_or_else(|e| Body::Binary(e.into_bytes()), Body::Text))
}

/// Lines `first..=last` (1-based) of a text file.
pub(crate) struct Lines {
    pub text: String,
    pub first: usize,
    /// The last line returned.
    pub last: usize,
    /// Lines in the file, when counting them stayed cheap.
    pub total: Option<usize>,
}

/// Lines `start..=end` of a text file (to its end without `end`), at most
/// [`MAX_READ_BYTES`] of them, from files of any size.
pub(crate) fn read_lines(path: &Path, root: &Root, start: usize, end: Option<usize>) -> Result<Lines, ReadError> {
    let file = open(path, root)?;
    let size = file.metadata()?.len();
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    if looks_binary(reader.fill_buf()?) {
        return Err(ReadError::Binary { size });
    }
    let scan = scan_lines(&mut reader, Some((start, end)))?;
    let Some(last) = scan.last_selected else {
        return Err(ReadError::PastEnd { start, total: scan.total.unwrap_or(0) });
    };
    let text = String::from_utf8(scan.selected).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok(Lines { text, first: start, last, total: scan.total })
}

/// The last lines of a text file.
pub(crate) struct Tail {
    pub text: String,
    /// How many lines `text` holds.
    pub lines: usize,
    /// Lines in the file, when it is small enough to count them all.
    pub total: Option<usize>,
}

/// The last `count` lines of a text file, at most [`MAX_READ_BYTES`] of them, read
/// backwards from its end a block at a time: a file of any size costs only what those
/// lines hold. A final line break ends the last line; it does not start another.
pub(crate) fn read_tail(path: &Path, root: &Root, count: usize) -> Result<Tail, ReadError> {
    let mut file = open(path, root)?;
    let size = file.metadata()?.len();
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file).take(SNIFF_BYTES as u64).read_to_end(&mut head)?;
    if looks_binary(&head) {
        return Err(ReadError::Binary { size });
    }
    // Blocks from the end, last first, until `count` line breaks before the last line's.
    let (mut blocks, mut pos, mut start, mut needed) = (Vec::new(), size, None, count);
    while pos > 0 && start.is_none() && needed > 0 {
        if size - pos > MAX_READ_BYTES {
            return Err(ReadError::TailTooLarge { count });
        }
        let len = TAIL_BLOCK_BYTES.min(pos);
        pos -= len;
        let mut block = vec![0; len as usize];
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(&mut block)?;
        for (i, byte) in block.iter().enumerate().rev() {
            let at = pos + i as u64;
            if *byte == b'\n' && at + 1 != size {
                needed -= 1;
                if needed == 0 {
                    start = Some(at + 1);
                    break;
                }
            }
        }
        blocks.push(block);
    }
    let start = if count == 0 { size } else { start.unwrap_or(0) };
    if size - start > MAX_READ_BYTES {
        return Err(ReadError::TailTooLarge { count });
    }
    let mut bytes: Vec<u8> = blocks.into_iter().rev().flatten().collect();
    bytes.drain(..(start - pos) as usize);
    let breaks = bytes.iter().filter(|b| **b == b'\n').count();
    let lines = breaks + usize::from(bytes.last().is_some_and(|b| *b != b'\n'));
    let total = if size <= MAX_READ_BYTES {
        let mut before = Vec::new();
        file.seek(SeekFrom::Start(0))?;
        file.take(start).read_to_end(&mut before)?;
        Some(before.iter().filter(|b| **b == b'\n').count() + lines)
    } else {
        None
    };
    let text = String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok(Tail { text, lines, total })
}

/// What one look at a file tells: binary or not, and how many lines text has.
pub(crate) struct Sniffed {
    pub binary: bool,
    pub lines: Option<usize>,
}

pub(crate) fn sniff(path: &Path, root: &Root) -> Result<Sniffed, ReadError> {
    let mut reader = BufReader::with_capacity(64 * 1024, open(path, root)?);
    if looks_binary(reader.fill_buf()?) {
        return Ok(Sniffed { binary: true, lines: None });
    }
    Ok(Sniffed { binary: false, lines: scan_lines(&mut reader, None)?.total })
}

struct Scan {
    selected: Vec<u8>,
    last_selected: Option<usize>,
    total: Option<usize>,
}

/// Streams through lines in fixed memory, keeping those in `range` (1-based, inclusive)
/// and counting all of them while that stays cheap.
fn scan_lines(reader: &mut impl BufRead, range: Option<(usize, Option<usize>)>) -> Result<Scan, ReadError> {
    let wanted = |line: usize| range.is_some_and(|(start, end)| line >= start && end.is_none_or(|e| line <= e));
    let mut scan = Scan { selected: Vec::new(), last_selected: None, total: None };
    let (mut line, mut scanned, mut ends_with_newline) = (1usize, 0u64, true);
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        let mut pos = 0;
        while pos < chunk.len() {
            let newline = chunk[pos..].iter().position(|b| *b == b'\n');
            let piece_end = newline.map_or(chunk.len(), |i| pos + i + 1);
            if wanted(line) {
                if (scan.selected.len() + piece_end - pos) as u64 > MAX_READ_BYTES {
                    let first = range.map_or(1, |(start, _)| start);
                    return Err(ReadError::RangeTooLarge { first, last: line });
                }
                scan.selected.extend_from_slice(&chunk[pos..piece_end]);
                scan.last_selected = Some(line);
            }
            if newline.is_some() {
                line += 1;
            }
            pos = piece_end;
        }
        ends_with_newline = chunk.last() == Some(&b'\n');
        let len = chunk.len();
        reader.consume(len);
        scanned += len as u64;
        let past_range = range.and_then(|(_, end)| end).is_some_and(|end| line > end);
        if past_range && scanned > COUNT_LIMIT_BYTES {
            return Ok(scan);
        }
    }
    let total = if scanned == 0 || ends_with_newline { line - 1 } else { line };
    scan.total = Some(total);
    Ok(scan)
}

/// The MIME type of a file, from its name and, when known, whether its contents are text.
pub(crate) fn mime_type(path: &Path, text: Option<bool>) -> String {
    let extension = path.extension().and_then(OsStr::to_str).map(str::to_ascii_lowercase);
    let guess = match extension.as_deref() {
        // mime_guess says MPEG transport stream; in a source tree it is TypeScript.
        Some("ts" | "tsx" | "mts" | "cts") => Some("text/x-typescript".to_string()),
        Some(_) => mime_guess::from_path(path).first().map(|m| m.essence_str().to_string()),
        None => None,
    };
    match (guess, text) {
        (Some(guess), Some(true)) if !textual(&guess) => "text/plain".into(),
        (Some(guess), Some(false)) if textual(&guess) => "application/octet-stream".into(),
        (Some(guess), _) => guess,
        (None, Some(false)) => "application/octet-stream".into(),
        // README, LICENSE, Makefile, Dockerfile: names without an extension are mostly text.
        (None, _) if extension.is_none() || text == Some(true) => "text/plain".into(),
        (None, _) => "application/octet-stream".into(),
    }
}

fn textual(mime: &str) -> bool {
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-sh"
                | "application/toml"
                | "application/yaml"
                | "application/x-yaml"
                | "application/sql"
        )
}

/// `2024-05-01T12:00:00Z`; `None` before 1970.
pub(crate) fn rfc3339(time: SystemTime) -> Option<String> {
    let secs = i64::try_from(time.duration_since(UNIX_EPOCH).ok()?.as_secs()).ok()?;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    Some(format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3_600, rem % 3_600 / 60, rem % 60))
}

/// `1.5 MiB`, `12.0 KiB`, `300 bytes`.
pub(crate) fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / (1u64 << 10) as f64),
        b => count(b, "byte"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn binary_detection() {
        assert!(!looks_binary(b"plain text\n"));
        assert!(looks_binary(b"nul\0inside"));
        assert!(looks_binary(b"\xff\xfe bad utf-8"));
        // A multi-byte character cut at the end of the head is still text.
        assert!(!looks_binary("é".as_bytes().get(..1).unwrap()));
        let mut head = vec![b'a'; SNIFF_BYTES - 1];
        head.extend_from_slice("é".as_bytes());
        assert!(!looks_binary(&head));
    }

    #[test]
    fn mime_types() {
        assert_eq!(mime_type(Path::new("a/README.md"), None), "text/markdown");
        assert_eq!(mime_type(Path::new("x.ts"), None), "text/x-typescript");
        assert_eq!(mime_type(Path::new("Makefile"), None), "text/plain");
        assert_eq!(mime_type(Path::new("a.weird"), None), "application/octet-stream");
        assert_eq!(mime_type(Path::new("a.weird"), Some(true)), "text/plain");
        assert_eq!(mime_type(Path::new("a.txt"), Some(false)), "application/octet-stream");
        assert_eq!(mime_type(Path::new("a.png"), Some(false)), "image/png");
    }

    #[test]
    fn timestamps() {
        let at = |secs| rfc3339(UNIX_EPOCH + Duration::from_secs(secs)).unwrap();
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(UNIX_EPOCH - Duration::from_secs(1)), None);
    }

    #[test]
    fn line_scans() {
        let scan = |text: &str, range| scan_lines(&mut text.as_bytes(), range).unwrap();
        let s = scan("a\nb\nc", Some((2, Some(3))));
        assert_eq!((s.selected.as_slice(), s.last_selected, s.total), (b"b\nc".as_slice(), Some(3), Some(3)));
        assert_eq!(scan("a\nb\n", None).total, Some(2));
        assert_eq!(scan("", None).total, Some(0));
        assert_eq!(scan("a\n", Some((5, None))).last_selected, None);
        let long = "x".repeat(MAX_READ_BYTES as usize + 1);
        assert!(matches!(
            scan_lines(&mut long.as_bytes(), Some((1, Some(1)))),
            Err(ReadError::RangeTooLarge { first: 1, last: 1 })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn opening_checks_where_the_file_really_is() {
        let (dir, outside) = (tempfile::TempDir::new().unwrap(), tempfile::TempDir::new().unwrap());
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::fs::write(root.join("plain"), "p").unwrap();
        std::fs::write(root.join(".gitignore"), "*.key\n").unwrap();
        std::fs::write(root.join("private.key"), "k").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("private.key"), root.join("swapped")).unwrap();
        let roots = super::super::paths::Roots::new(vec![root.clone()]).unwrap();
        let served = roots.get(0);
        assert!(open(&root.join("plain"), served).is_ok());
        let error = open(&root.join("link"), served).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(open(&root, served).unwrap_err().kind(), io::ErrorKind::InvalidInput);
        // A path checked before, that now leads to an ignored file.
        let error = open(&root.join("swapped"), served).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert!(error.to_string().contains("excluded"), "{error}");
    }

    #[test]
    fn only_regular_files_without_other_links_are_opened() {
        let dir = tempfile::TempDir::new().unwrap();
        let root = dir.path().canonicalize().unwrap();
        rustix::fs::mkfifoat(rustix::fs::CWD, root.join("pipe"), Mode::from_raw_mode(0o600)).unwrap();
        std::fs::write(root.join("file"), "f").unwrap();
        std::fs::hard_link(root.join("file"), root.join("link")).unwrap();
        // Not opened at all, so nothing waits for a writer.
        let error = open_regular(&root.join("pipe")).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
        let roots = super::super::paths::Roots::new(vec![root.clone()]).unwrap();
        for name in ["file", "link"] {
            let error = open(&root.join(name), roots.get(0)).unwrap_err();
            assert!(error.to_string().contains("--follow-hard-links"), "{name}: {error}");
        }
        assert!(open(&root.join("link"), roots.follow_hard_links().get(0)).is_ok());
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(300), "300 bytes");
        assert_eq!(human_size(MAX_READ_BYTES), "1.0 MiB");
        assert_eq!(human_size(3 * 1024 * 1024 + 200 * 1024), "3.2 MiB");
    }
}
