//! `file://` URIs, both ways: the names a server gives the files it serves, and the paths a
//! client means by the URIs it sends (a resource it reads, the roots it lists). Parsing is
//! the `url` crate's (the WHATWG rules browsers and editors follow: `localhost`, `C|`,
//! unescaped spaces); this module adds what a file URI means on a file system: the
//! percent-decoded path, a Windows drive (`file:///C:/…`, or `file:///c%3A/…` as VS Code
//! writes it), a UNC share (`file://server/share/…`, or `file:////server/share/…`), and a
//! clear reason for anything that names no local path.

use percent_encoding::percent_decode_str;
use std::path::{Path, PathBuf};
use url::Url;

const SCHEME: &str = "file://";
const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Why a URI names no local path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileUriError {
    /// It is not a `file:` URI.
    #[error("not a file:// URI")]
    NotFile,
    /// It does not parse as a URI.
    #[error("not a valid URI: {0}")]
    Invalid(String),
    /// It has a query or a fragment.
    #[error("file URIs take no query or fragment (escape '?' and '#' in names as %3F and %23)")]
    QueryOrFragment,
    /// A `%` starts no valid escape.
    #[error("bad percent-escape in the path")]
    BadEscape,
    /// A segment is `..`.
    #[error("'..' is not allowed in a file URI")]
    Parent,
    /// The decoded path is not UTF-8.
    #[error("the path is not valid UTF-8 once decoded")]
    NotUtf8,
    /// A name holds an escaped `/`, `\` or NUL.
    #[error("a name in the path holds an escaped separator or NUL (%2F, %5C or %00)")]
    EscapedSeparator,
    /// It names another host.
    #[error("it names a file on another host ({0}), which this system cannot open")]
    OtherHost(String),
    /// It names a Windows drive on a system without drives.
    #[error("it names a Windows drive ({0}), which this system does not have")]
    WindowsDrive(String),
    /// On Windows: it names no drive and no share.
    #[error("it names neither a drive nor a share, which a Windows path needs (file:///C:/… or file://server/share/…)")]
    NoDrive,
    /// On Windows: it names a server but no share.
    #[error("it names a server but no share (file://server/share/…)")]
    NoShare,
}

/// How the local system writes paths: what a URI's path becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Unix,
    Windows,
}

impl Style {
    const LOCAL: Style = if cfg!(windows) { Style::Windows } else { Style::Unix };
}

/// `file://` and the percent-encoded absolute path. Bytes other than unreserved ASCII and
/// `/` are escaped, so a file name never reads as URI syntax.
pub fn from_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut uri = String::with_capacity(SCHEME.len() + text.len());
    uri.push_str(SCHEME);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push('%');
            uri.push(char::from(HEX[usize::from(byte >> 4)]));
            uri.push(char::from(HEX[usize::from(byte & 0xF)]));
        }
    }
    uri
}

/// Whether `text` is a `file:` URI rather than a path.
pub fn is_file_uri(text: &str) -> bool {
    text.get(..5).is_some_and(|s| s.eq_ignore_ascii_case("file:"))
}

/// The local path a `file:` URI names, percent-decoded, or why it names none here.
pub fn to_path(uri: &str) -> Result<PathBuf, FileUriError> {
    local_path(uri, Style::LOCAL).map(PathBuf::from)
}

/// The path `uri` names, written the way `style` writes paths.
fn local_path(uri: &str, style: Style) -> Result<String, FileUriError> {
    if !is_file_uri(uri) {
        return Err(FileUriError::NotFile);
    }
    // `url` would resolve `..` (escaped or not) away; a name that goes up is refused
    // instead, as paths refuse it.
    let written = uri[5..].split(['?', '#']).next().unwrap_or_default();
    if written.split(['/', '\\']).any(|raw| percent_decode_str(raw).eq(*b"..")) {
        return Err(FileUriError::Parent);
    }
    let url = Url::parse(uri).map_err(|e| FileUriError::Invalid(e.to_string()))?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(FileUriError::QueryOrFragment);
    }
    // `url` keeps a bad escape as it is; decoding would take it for text.
    let path = url.path();
    let bytes = path.as_bytes();
    let bad_escape = bytes
        .iter()
        .enumerate()
        .any(|(i, b)| *b == b'%' && !bytes.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)));
    if bad_escape {
        return Err(FileUriError::BadEscape);
    }
    let mut names = Vec::new();
    for raw in path.split('/').skip(1) {
        let name = percent_decode_str(raw).decode_utf8().map_err(|_| FileUriError::NotUtf8)?;
        if name.contains(['/', '\\', '\0']) {
            return Err(FileUriError::EscapedSeparator);
        }
        names.push(name.into_owned());
    }
    // `file:////server/share/…` names the server in the path, which `url` makes `/server/…`.
    let host = match url.host_str() {
        Some(host) => Some(host.to_string()),
        None if uri[5..].starts_with("////") && !names.is_empty() => Some(names.remove(0)),
        None => None,
    };
    let drive = match names.first_mut() {
        Some(name) if is_drive(name) => {
            name.replace_range(1..2, ":");
            Some(name.clone())
        }
        _ => None,
    };
    match (style, host, drive) {
        (Style::Unix, Some(host), _) => Err(FileUriError::OtherHost(host)),
        (Style::Unix, None, Some(drive)) => Err(FileUriError::WindowsDrive(drive)),
        (Style::Unix, None, None) => Ok(format!("/{}", names.join("/"))),
        (Style::Windows, Some(host), _) => match names.first().filter(|share| !share.is_empty()) {
            Some(_) => Ok(format!(r"\\{host}\{}", names.join(r"\"))),
            None => Err(FileUriError::NoShare),
        },
        (Style::Windows, None, Some(_)) if names.len() == 1 => Ok(format!(r"{}\", names[0])),
        (Style::Windows, None, Some(_)) => Ok(names.join(r"\")),
        (Style::Windows, None, None) => Err(FileUriError::NoDrive),
    }
}

/// `C:`, or `C|` as old URIs write it.
fn is_drive(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() == 2 && b[0].is_ascii_alphabetic() && (b[1] == b':' || b[1] == b'|')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unix(uri: &str) -> Result<String, FileUriError> {
        local_path(uri, Style::Unix)
    }

    fn windows(uri: &str) -> Result<String, FileUriError> {
        local_path(uri, Style::Windows)
    }

    #[test]
    fn a_path_goes_there_and_back() {
        let path = Path::new("/home/me/über café/a#b?.txt");
        let uri = from_path(path);
        assert_eq!(uri, "file:///home/me/%C3%BCber%20caf%C3%A9/a%23b%3F.txt");
        assert_eq!(to_path(&uri).unwrap(), path);
    }

    #[test]
    fn unix_forms() {
        for (uri, path) in [
            ("file:///x/y", "/x/y"),
            ("file://localhost/x/y", "/x/y"),
            ("FILE:///x", "/x"),
            ("file:/x/y", "/x/y"),
            ("file:///home/me/my file.txt", "/home/me/my file.txt"),
            ("file:///a/%5Bb%5D", "/a/[b]"),
            ("file:///a/b/", "/a/b/"),
            ("file:///", "/"),
        ] {
            assert_eq!(unix(uri).as_deref(), Ok(path), "{uri}");
        }
    }

    #[test]
    fn windows_forms() {
        for (uri, path) in [
            ("file:///C:/Users/me/My%20Docs", r"C:\Users\me\My Docs"),
            ("file:///c%3A/Users/me", r"c:\Users\me"),
            ("file:///C|/x", r"C:\x"),
            ("file:/C:/x", r"C:\x"),
            ("file:C:/x", r"C:\x"),
            ("file://localhost/C:/x", r"C:\x"),
            ("file:///C:", r"C:\"),
            ("file:///C:/", r"C:\"),
            ("file://server/share/dir/f.txt", r"\\server\share\dir\f.txt"),
            ("file:////server/share/dir", r"\\server\share\dir"),
        ] {
            assert_eq!(windows(uri).as_deref(), Ok(path), "{uri}");
        }
        assert_eq!(windows("file:///x/y"), Err(FileUriError::NoDrive));
        assert_eq!(windows("file://server/"), Err(FileUriError::NoShare));
        assert_eq!(windows("file:///C:/a%5Cb"), Err(FileUriError::EscapedSeparator));
    }

    #[test]
    fn what_names_no_local_path_here_says_why() {
        assert_eq!(unix("file:///C:/Users/me"), Err(FileUriError::WindowsDrive("C:".into())));
        assert_eq!(unix("file:///c%3A/Users/me"), Err(FileUriError::WindowsDrive("c:".into())));
        assert_eq!(unix("file://server/share/x"), Err(FileUriError::OtherHost("server".into())));
        assert_eq!(unix("file:////server/share/x"), Err(FileUriError::OtherHost("server".into())));
        assert_eq!(unix("file:///a?b"), Err(FileUriError::QueryOrFragment));
        assert_eq!(unix("file:///a#b"), Err(FileUriError::QueryOrFragment));
        assert_eq!(unix("file:///a%zz"), Err(FileUriError::BadEscape));
        assert_eq!(unix("file:///a%f"), Err(FileUriError::BadEscape));
        assert_eq!(unix("file:///a%ff"), Err(FileUriError::NotUtf8));
        assert_eq!(unix("file:///a%2Fb"), Err(FileUriError::EscapedSeparator));
        assert_eq!(unix("file:///a%00b"), Err(FileUriError::EscapedSeparator));
        assert_eq!(unix("file:///a/../etc/passwd"), Err(FileUriError::Parent));
        assert_eq!(unix("file:///a/%2E%2e/etc"), Err(FileUriError::Parent));
        assert_eq!(unix("file:///a/.."), Err(FileUriError::Parent));
        assert_eq!(unix("file:///a/..b/./c"), Ok("/a/..b/c".into()));
        assert_eq!(unix("http://x/y"), Err(FileUriError::NotFile));
        assert!(matches!(unix("file://exa mple/x"), Err(FileUriError::Invalid(_))));
        assert!(unix("file:///C:/x").unwrap_err().to_string().contains("Windows drive (C:)"));
    }
}
