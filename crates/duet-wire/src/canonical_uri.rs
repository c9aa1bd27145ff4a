//! The one spelling of a URI. A client may write the same resource many ways
//! (`FILE:///x`, `file://localhost/x`, `file:/x`, `file:///%78`, `file:///a//x`,
//! `file:///a/./x`); scope rules, lookups, subscriptions and templates compare strings, so
//! every URI a client sends is rewritten here once, where it enters the engine, and nothing
//! downstream ever sees another spelling.
//!
//! The `url` crate does most of it (the WHATWG rules): it lowercases the scheme (and a
//! special scheme's host), drops `localhost` from a `file:` URI, writes `file:/x` as
//! `file:///x`, resolves dot segments (`.`, `..`, `%2E`), and escapes what must be escaped.
//! On top of that, RFC 3986 §6.2.2: escapes of unreserved characters (`ALPHA DIGIT - . _ ~`)
//! are decoded, the hex digits of the other escapes are uppercased, and a `file:` path's
//! repeated slashes collapse into one (`file:////server/share` is then `file:///server/share`).

use url::Url;

/// A URI that cannot be read as one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a valid URI: {0}")]
pub struct InvalidUri(String);

/// The canonical spelling of `uri`; canonicalizing it again changes nothing.
pub fn canonicalize(uri: &str) -> Result<String, InvalidUri> {
    let parsed = Url::parse(uri).map_err(|e| InvalidUri(e.to_string()))?;
    let normalized = normalize_escapes(parsed.as_str());
    // Decoded escapes may spell a dot segment (`.%2E`): the parser resolves it.
    let mut url = Url::parse(&normalized).map_err(|e| InvalidUri(e.to_string()))?;
    if url.scheme() == "file" && url.path().contains("//") {
        let collapsed = collapse_slashes(url.path());
        url.set_path(&collapsed);
    }
    Ok(url.into())
}

/// Decodes the escapes of unreserved characters and uppercases the hex digits of the rest.
/// A `%` that starts no escape is escaped itself (`%25`): left bare, it could start one with
/// the characters a decoded escape puts after it (`%%61` would become `%a` and then `%A`).
fn normalize_escapes(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(offset) = text[at..].find('%') {
        let start = at + offset;
        out.push_str(&text[at..start]);
        let hex = bytes.get(start + 1..start + 3).filter(|h| h.iter().all(u8::is_ascii_hexdigit));
        let Some(hex) = hex else {
            out.push_str("%25");
            at = start + 1;
            continue;
        };
        let decoded = u8::from_str_radix(std::str::from_utf8(hex).unwrap_or_default(), 16).unwrap_or_default();
        if decoded.is_ascii_alphanumeric() || b"-._~".contains(&decoded) {
            out.push(char::from(decoded));
        } else {
            out.push('%');
            out.push_str(&String::from_utf8_lossy(hex).to_ascii_uppercase());
        }
        at = start + 3;
    }
    out.push_str(&text[at..]);
    out
}

fn collapse_slashes(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if !(c == '/' && out.ends_with('/')) {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_spelling_of_a_file_has_one_form() {
        let canonical = "file:///srv/root/secret/key.txt";
        for spelling in [
            "file:///srv/root/secret/key.txt",
            "file://localhost/srv/root/secret/key.txt",
            "file://LOCALHOST/srv/root/secret/key.txt",
            "file:/srv/root/secret/key.txt",
            "FILE:///srv/root/secret/key.txt",
            "File:///srv/root/%73ecret/key.txt",
            "file:///srv/root/%73%65%63%72%65%74/%6b%65%79%2E%74%78%74",
            "file:///srv/root//secret/key.txt",
            "file:////srv///root//secret//key.txt",
            "file:///srv/root/./secret/key.txt",
            "file:///srv/root/%2E/secret/./key.txt",
            "file:///srv/root/other/../secret/key.txt",
            "file:///srv/root/other/%2e%2E/secret/key.txt",
            "file:///srv/root/other/.%2E/secret/key.txt",
        ] {
            assert_eq!(canonicalize(spelling).as_deref(), Ok(canonical), "{spelling}");
        }
    }

    #[test]
    fn reserved_and_other_escapes_stay_escaped_in_upper_case() {
        assert_eq!(canonicalize("file:///a/%c3%bcber%20x").as_deref(), Ok("file:///a/%C3%BCber%20x"));
        assert_eq!(canonicalize("file:///a/b%2fc").as_deref(), Ok("file:///a/b%2Fc"), "an escaped slash is a name");
        assert_eq!(canonicalize("file:///a/%3F%23").as_deref(), Ok("file:///a/%3F%23"));
        assert_eq!(canonicalize("file:///a/%zz%4").as_deref(), Ok("file:///a/%25zz%254"), "not an escape: escaped");
        assert_eq!(canonicalize("file:///%%610").as_deref(), Ok("file:///%25a0"), "no escape made by decoding");
        assert_eq!(canonicalize("file:///a/my file").as_deref(), Ok("file:///a/my%20file"));
    }

    #[test]
    fn other_schemes_are_canonical_too() {
        assert_eq!(canonicalize("TEST://info").as_deref(), Ok("test://info"));
        assert_eq!(canonicalize("skill://a/./b/%7Ex").as_deref(), Ok("skill://a/b/~x"));
        assert_eq!(canonicalize("HTTPS://Example.COM:443/a/../b").as_deref(), Ok("https://example.com/b"));
        assert_eq!(canonicalize("urn:isbn:0451450523").as_deref(), Ok("urn:isbn:0451450523"));
        assert_eq!(canonicalize("test://x//y").as_deref(), Ok("test://x//y"), "only file paths collapse");
    }

    #[test]
    fn what_is_no_uri_says_why() {
        let relative = canonicalize("secret/key.txt").unwrap_err().to_string();
        assert_eq!(relative, "not a valid URI: relative URL without a base");
        assert!(canonicalize("file://exa mple/x").is_err());
        assert!(canonicalize("").is_err());
    }

    proptest! {
        #[test]
        fn canonicalizing_twice_is_canonicalizing_once(
            scheme in prop::sample::select(vec!["file", "FILE", "test", "https"]),
            host in prop::sample::select(vec!["", "localhost", "example.com"]),
            path in "(/|//|\\.|\\.\\.|%2[eEfF]|%7[eE]|%[46][0-9a-fA-F]|%[cC]3|%|[a-zA-Z0-9~ ]){0,12}",
        ) {
            let uri = format!("{scheme}://{host}/{path}");
            if let Ok(once) = canonicalize(&uri) {
                prop_assert_eq!(canonicalize(&once), Ok(once.clone()), "{}", uri);
            }
        }
    }
}
