//! `file://` URIs: the names the workspace's resources go by. A path becomes an absolute,
//! percent-encoded URI; a URI a client sends becomes a path again, or a clear reason why
//! it cannot (another host, a query, a bad escape). Confinement happens later, on the path.

use std::path::{Path, PathBuf};

const SCHEME: &str = "file://";
const HEX: &[u8; 16] = b"0123456789ABCDEF";

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

/// Whether `text` is a `file://` URI rather than a path.
pub fn is_file_uri(text: &str) -> bool {
    text.get(..SCHEME.len()).is_some_and(|s| s.eq_ignore_ascii_case(SCHEME))
}

/// The absolute path a `file://` URI names (`file:///p` or `file://localhost/p`).
pub fn to_path(uri: &str) -> Result<PathBuf, String> {
    if !is_file_uri(uri) {
        return Err("not a file:// URI".into());
    }
    let rest = &uri[SCHEME.len()..];
    let slash = rest.find('/').unwrap_or(rest.len());
    let (host, path) = rest.split_at(slash);
    if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
        return Err(format!("file URIs on another host ({host}) are not served"));
    }
    if path.is_empty() {
        return Err("the URI names no path".into());
    }
    if path.contains(['?', '#']) {
        return Err("file URIs take no query or fragment (escape '?' and '#' in names as %3F and %23)".into());
    }
    let bytes = decode(path)?;
    let text = String::from_utf8(bytes).map_err(|_| "the path is not valid UTF-8 once decoded".to_string())?;
    Ok(PathBuf::from(text))
}

fn decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let byte = hex.and_then(|h| u8::from_str_radix(h, 16).ok());
            let Some(byte) = byte else {
                return Err(format!("bad percent-escape at byte {i} of the path"));
            };
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let path = Path::new("/home/me/über café/a#b?.txt");
        let uri = from_path(path);
        assert_eq!(uri, "file:///home/me/%C3%BCber%20caf%C3%A9/a%23b%3F.txt");
        assert_eq!(to_path(&uri).unwrap(), path);
        assert_eq!(to_path("file://localhost/x/y").unwrap(), Path::new("/x/y"));
    }

    #[test]
    fn refusals() {
        assert!(to_path("file://example.com/etc/passwd").unwrap_err().contains("another host"));
        assert!(to_path("file:///a?b").unwrap_err().contains("query"));
        assert!(to_path("file:///a%zz").unwrap_err().contains("percent-escape"));
        assert!(to_path("file:///a%ff").unwrap_err().contains("UTF-8"));
        assert!(to_path("file://").unwrap_err().contains("no path"));
        assert!(to_path("http://x/y").is_err());
    }
}
