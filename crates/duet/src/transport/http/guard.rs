//! The DNS-rebinding guard every HTTP flavor runs first. A web page can make a browser
//! talk to a server on the user's machine by rebinding its own name to 127.0.0.1; the
//! browser then sends the attacker's name in `Host` and the attacker's page in `Origin`.
//! [`OriginHostGuard`] refuses both before anything else about the request is read:
//! a `Host` outside the allow-list gets 421, a foreign `Origin` gets 403.
//!
//! Both headers are read strictly before they are matched: one `Host`, an authority (a
//! name or address and an optional port, nothing else: no `user@`, no path), else 400; at
//! most one `Origin`, ASCII, `scheme://authority` or `null`, else 403. Patterns then see
//! only well-formed values, so `localhost:*` cannot match `localhost:1@evil.example`. As
//! RFC 9112 §3.2 has it, an HTTP/1.1 request without `Host` is 400, and a target in absolute
//! form (`GET http://evil.example/mcp`, or HTTP/2's `:authority`) names the authority
//! checked instead of `Host`.
//!
//! Allow-lists are `fnmatch` patterns (`*`, `?`, `[...]`), compared case-insensitively.
// Its `pub` items are the fuzz targets' (`crate::fuzzing`, feature `fuzzing`); without
// that feature nothing outside the crate reaches them.
#![cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]

use glob::{MatchOptions, Pattern};
use http::{HeaderMap, header};
use std::net::{IpAddr, Ipv6Addr};

/// Why a request was refused: the status and the message to answer with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The HTTP status.
    pub status: u16,
    /// The body, as text.
    pub message: &'static str,
}

impl Rejection {
    /// `Host` missing or not allowed.
    pub const INVALID_HOST: Rejection = Rejection { status: 421, message: "Invalid Host header" };
    /// `Host` is not an authority (`host[:port]`).
    pub const MALFORMED_HOST: Rejection = Rejection { status: 400, message: "Bad Request: malformed Host header" };
    /// An HTTP/1.1 request without `Host`.
    pub const MISSING_HOST: Rejection = Rejection { status: 400, message: "Bad Request: missing Host header" };
    /// More than one `Host` header.
    pub const REPEATED_HOST: Rejection = Rejection { status: 400, message: "Bad Request: more than one Host header" };
    /// `Origin` present, not allowed and not same-origin.
    pub const INVALID_ORIGIN: Rejection = Rejection { status: 403, message: "Forbidden: invalid Origin" };
    /// `Origin` is not ASCII `scheme://host[:port]` (or `null`).
    pub const MALFORMED_ORIGIN: Rejection = Rejection { status: 403, message: "Forbidden: malformed Origin" };
    /// More than one `Origin` header.
    pub const REPEATED_ORIGIN: Rejection = Rejection { status: 403, message: "Forbidden: more than one Origin header" };
}

/// The names a loopback server answers to, as they appear in `Host` and in origins.
pub(super) const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

const MATCH_OPTIONS: MatchOptions =
    MatchOptions { case_sensitive: false, require_literal_separator: false, require_literal_leading_dot: false };

/// One allow-list entry, compared case-insensitively: literal text, a literal prefix (a
/// pattern whose only wildcard is a trailing `*`, like `localhost:*`), or any other
/// `fnmatch` pattern. A pattern that does not compile is literal text. The first two are
/// what nearly every list holds, and they are checked without the glob machinery.
#[derive(Debug, Clone)]
enum Matcher {
    Literal(String),
    Prefix(String),
    Glob(Pattern),
}

impl Matcher {
    fn new(pattern: &str) -> Self {
        // fnmatch treats `**` like `*`; the glob crate gives it path meaning or refuses it.
        let mut collapsed = String::with_capacity(pattern.len());
        for c in pattern.chars() {
            if c != '*' || !collapsed.ends_with('*') {
                collapsed.push(c);
            }
        }
        let is_literal = |text: &str| !text.contains(['*', '?', '[']);
        if is_literal(&collapsed) {
            return Matcher::Literal(collapsed);
        }
        if let Some(prefix) = collapsed.strip_suffix('*').filter(|p| is_literal(p)) {
            return Matcher::Prefix(prefix.to_owned());
        }
        match Pattern::new(&collapsed) {
            Ok(glob) => Matcher::Glob(glob),
            Err(_) => Matcher::Literal(pattern.to_owned()),
        }
    }

    fn matches(&self, value: &str) -> bool {
        match self {
            Matcher::Literal(text) => text.eq_ignore_ascii_case(value),
            Matcher::Prefix(prefix) => {
                value.len() >= prefix.len() && value.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
            }
            Matcher::Glob(glob) => glob.matches_with(value, MATCH_OPTIONS),
        }
    }
}

fn matchers(patterns: &[String]) -> impl Iterator<Item = Matcher> + '_ {
    patterns.iter().map(|pattern| Matcher::new(pattern))
}

fn matches_any(list: &[Matcher], value: &str) -> bool {
    list.iter().any(|matcher| matcher.matches(value))
}

/// `name` and `name:` followed by any port, for every loopback name, each `prefix`ed.
fn loopback_patterns(prefix: &str) -> impl Iterator<Item = Matcher> + '_ {
    LOOPBACK_NAMES.into_iter().flat_map(move |name| {
        [Matcher::Literal(format!("{prefix}{name}")), Matcher::Prefix(format!("{prefix}{name}:"))]
    })
}

/// The Host/Origin check shared by Streamable HTTP and legacy HTTP+SSE.
#[derive(Debug, Clone)]
pub struct OriginHostGuard {
    origins: Vec<Matcher>,
    /// `None`: Host is not checked (non-loopback bind without `--allowed-host`).
    hosts: Option<Vec<Matcher>>,
}

impl OriginHostGuard {
    /// `allowed_origins` None = the loopback defaults; Some(list) replaces them.
    /// `extra_origins` (the CORS origins) are appended.
    /// `allowed_hosts` None = the loopback names when `bind_host` is loopback, else no
    /// Host check. An empty list counts as not given.
    pub fn new(
        bind_host: &str,
        allowed_origins: Option<&[String]>,
        allowed_hosts: Option<&[String]>,
        extra_origins: &[String],
    ) -> Self {
        let mut origins: Vec<Matcher> = match allowed_origins.filter(|list| !list.is_empty()) {
            Some(list) => matchers(list).collect(),
            None => loopback_patterns("http://").chain(loopback_patterns("https://")).collect(),
        };
        origins.extend(matchers(extra_origins));
        let hosts = match allowed_hosts.filter(|list| !list.is_empty()) {
            Some(list) => Some(matchers(list).collect()),
            None if is_loopback(bind_host) => Some(loopback_patterns("").collect()),
            None => None,
        };
        OriginHostGuard { origins, hosts }
    }

    /// The guard over a request's head: a repeated `Host` or `Origin`, or one that is not
    /// text, is refused before [`check`](Self::check) matches them, and so is an HTTP/1.1
    /// request without `Host`; a target in absolute form names the authority checked, and
    /// so, before either, does the host a trusted proxy `forwarded`.
    pub fn check_head(&self, head: &http::request::Parts, forwarded: Option<&str>) -> Result<(), Rejection> {
        let headers = &head.headers;
        let host = only_one(headers, header::HOST, Rejection::REPEATED_HOST, Rejection::MALFORMED_HOST)?;
        if host.is_none() && head.version == http::Version::HTTP_11 {
            return Err(Rejection::MISSING_HOST);
        }
        let origin = only_one(headers, header::ORIGIN, Rejection::REPEATED_ORIGIN, Rejection::MALFORMED_ORIGIN)?;
        let target = head.uri.scheme().and(head.uri.authority()).map(|authority| authority.as_str());
        self.check(forwarded.or(target).or(host), origin)
    }

    /// `Ok` when the request may proceed; otherwise the status and message to answer with
    /// (the connection is then closed).
    pub fn check(&self, host: Option<&str>, origin: Option<&str>) -> Result<(), Rejection> {
        if host.is_some_and(|host| !is_authority(host)) {
            return Err(Rejection::MALFORMED_HOST);
        }
        if let Some(hosts) = &self.hosts
            && !host.is_some_and(|host| matches_any(hosts, host))
        {
            return Err(Rejection::INVALID_HOST);
        }
        let Some(origin) = origin else {
            return Ok(());
        };
        let authority = match origin_authority(origin) {
            Some(authority) => Some(authority),
            None if origin == "null" => None,
            None => return Err(Rejection::MALFORMED_ORIGIN),
        };
        if matches_any(&self.origins, origin) {
            return Ok(());
        }
        // Same-origin is only trusted when Host itself was validated: on an unpinned
        // public bind a rebound name controls both headers.
        let same_origin = self.checks_host()
            && host.zip(authority).is_some_and(|(host, authority)| authority.eq_ignore_ascii_case(host));
        if same_origin { Ok(()) } else { Err(Rejection::INVALID_ORIGIN) }
    }

    /// Whether Host is validated (loopback bind or explicit allowed hosts).
    pub(crate) fn checks_host(&self) -> bool {
        self.hosts.is_some()
    }
}

/// The one value of header `name`, as text: `repeated` when it appears more than once,
/// `malformed` when it is not visible ASCII.
fn only_one(
    headers: &HeaderMap,
    name: header::HeaderName,
    repeated: Rejection,
    malformed: Rejection,
) -> Result<Option<&str>, Rejection> {
    let mut values = headers.get_all(name).into_iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(repeated);
    }
    value.to_str().map(Some).map_err(|_| malformed)
}

/// Whether `text` is an authority as `Host` carries it (RFC 9110 §7.2): a name or IPv4
/// address of letters, digits, `-`, `.`, `_` and `~`, or a bracketed IPv6 address, then
/// optionally `:` and a port of up to five digits. Nothing else: no user information, no
/// path, no second colon.
fn is_authority(text: &str) -> bool {
    let (host_ok, port) = match text.strip_prefix('[') {
        Some(bracketed) => match bracketed.split_once(']') {
            Some((ip, port)) => (ip.parse::<Ipv6Addr>().is_ok(), port),
            None => return false,
        },
        None => {
            let (name, port) = text.find(':').map_or((text, ""), |colon| text.split_at(colon));
            let name_byte = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
            (!name.is_empty() && name.bytes().all(name_byte), port)
        }
    };
    let port_ok = match port.strip_prefix(':') {
        Some(digits) => (1..=5).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()),
        None => port.is_empty(),
    };
    host_ok && port_ok
}

/// The `AUTHORITY` of an origin, `scheme://AUTHORITY` (RFC 6454: nothing after it but an
/// optional `/`); `None` when the origin is not of that form (`null`, `file://`,
/// `http://user@host`...).
fn origin_authority(origin: &str) -> Option<&str> {
    let (scheme, rest) = origin.split_once("://")?;
    let valid_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    (valid_scheme && is_authority(authority)).then_some(authority)
}

/// Whether a bind address only accepts local connections: `localhost`, the empty host,
/// or a loopback IP (IPv4 127/8, `::1`, bracketed or not, and IPv4-mapped loopback).
pub fn is_loopback(host: &str) -> bool {
    if host.is_empty() || host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let bare = host.strip_prefix('[').and_then(|inner| inner.strip_suffix(']')).unwrap_or(host);
    match bare.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => ip.is_loopback(),
        Ok(IpAddr::V6(ip)) => ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|ip| ip.is_loopback()),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: Result<(), Rejection> = Err(Rejection::INVALID_HOST);
    const ORIGIN: Result<(), Rejection> = Err(Rejection::INVALID_ORIGIN);

    /// A guard bound to `bind` whose host allow-list is `hosts`.
    fn hosts_guard(bind: &str, hosts: &[&str]) -> OriginHostGuard {
        OriginHostGuard::new(bind, None, Some(&strings(hosts)), &[])
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn loopback() -> OriginHostGuard {
        OriginHostGuard::new("127.0.0.1", None, None, &[])
    }

    fn public() -> OriginHostGuard {
        OriginHostGuard::new("0.0.0.0", None, None, &[])
    }

    #[test]
    fn rejection_texts() {
        assert_eq!((Rejection::INVALID_HOST.status, Rejection::INVALID_HOST.message), (421, "Invalid Host header"));
        assert_eq!(
            (Rejection::INVALID_ORIGIN.status, Rejection::INVALID_ORIGIN.message),
            (403, "Forbidden: invalid Origin")
        );
    }

    #[test]
    fn loopback_bind_accepts_loopback_hosts() {
        let guard = loopback();
        assert!(guard.checks_host());
        for host in
            ["127.0.0.1:8765", "127.0.0.1", "localhost", "localhost:3000", "[::1]", "[::1]:8765", "LocalHost:8765"]
        {
            assert_eq!(guard.check(Some(host), None), Ok(()), "{host}");
        }
    }

    #[test]
    fn loopback_bind_rejects_foreign_hosts() {
        let guard = loopback();
        assert_eq!(guard.check(Some("evil.example"), None), HOST);
        assert_eq!(guard.check(Some("evil.example:80"), None), HOST);
        assert_eq!(guard.check(Some("localhost.evil.example"), None), HOST);
        assert_eq!(guard.check(Some(":"), None), Err(Rejection::MALFORMED_HOST));
        // An fnmatch `[::1]` would be a character class matching one ':' or '1'.
        assert_eq!(guard.check(Some("1"), None), HOST);
    }

    #[test]
    fn loopback_bind_refuses_a_missing_host() {
        assert_eq!(loopback().check(None, None), HOST);
        assert_eq!(loopback().check(None, Some("http://localhost:8765")), HOST);
    }

    #[test]
    fn host_is_checked_before_origin() {
        assert_eq!(loopback().check(Some("evil.example"), Some("https://evil.example")), HOST);
    }

    #[test]
    fn loopback_bind_rejects_foreign_origin() {
        let guard = loopback();
        assert_eq!(guard.check(Some("127.0.0.1:8765"), Some("https://evil.example")), ORIGIN);
        assert_eq!(guard.check(Some("127.0.0.1:8765"), Some("null")), ORIGIN);
    }

    #[test]
    fn loopback_bind_accepts_loopback_origins() {
        let guard = loopback();
        for origin in [
            "http://localhost:3000",
            "http://localhost",
            "https://localhost:8443",
            "http://127.0.0.1:8765",
            "https://127.0.0.1",
            "http://[::1]:8765",
            "https://[::1]",
        ] {
            assert_eq!(guard.check(Some("127.0.0.1:8765"), Some(origin)), Ok(()), "{origin}");
        }
    }

    #[test]
    fn patterns_are_case_insensitive() {
        assert_eq!(loopback().check(Some("LOCALHOST:8765"), Some("HTTP://LOCALHOST:8765")), Ok(()));
        let guard = OriginHostGuard::new(
            "0.0.0.0",
            Some(&strings(&["https://*.Example.COM"])),
            Some(&strings(&["MCP.example.com"])),
            &[],
        );
        assert_eq!(guard.check(Some("mcp.EXAMPLE.com"), Some("HTTPS://app.example.com")), Ok(()));
    }

    #[test]
    fn absent_and_own_origins_pass() {
        assert_eq!(loopback().check(Some("localhost:8765"), None), Ok(()));
        // A loopback bind also takes its own host as the origin, whatever the scheme.
        assert_eq!(loopback().check(Some("localhost:8765"), Some("chrome-extension://localhost:8765")), Ok(()));
        assert_eq!(public().check(None, None), Ok(()));
    }

    #[test]
    fn a_public_bind_checks_origins_only() {
        let guard = public();
        assert!(!guard.checks_host());
        assert_eq!(guard.check(Some("evil.example"), None), Ok(()));
        assert_eq!(guard.check(Some("mcp.example.com:443"), None), Ok(()));
        assert_eq!(guard.check(None, None), Ok(()));
        assert_eq!(guard.check(Some("mcp.example.com"), Some("https://evil.example")), ORIGIN, "foreign origin");
        let same_origin = guard.check(Some("attacker.example:8765"), Some("http://attacker.example:8765"));
        assert_eq!(same_origin, ORIGIN, "same origin is not enough");
        let loopback = guard.check(Some("attacker.example:8765"), Some("http://localhost:8765"));
        assert_eq!(loopback, Ok(()), "a loopback origin");
    }

    #[test]
    fn pinned_hosts_accept_same_origin() {
        let guard = hosts_guard("0.0.0.0", &["mcp.example.com"]);
        assert!(guard.checks_host());
        assert_eq!(guard.check(Some("mcp.example.com"), Some("https://mcp.example.com")), Ok(()));
        assert_eq!(guard.check(Some("MCP.example.com"), Some("https://mcp.EXAMPLE.com/")), Ok(()));
        assert_eq!(guard.check(Some("mcp.example.com"), Some("https://evil.example")), ORIGIN);
        assert_eq!(guard.check(Some("evil.example"), Some("https://evil.example")), HOST);
        assert_eq!(guard.check(None, None), HOST);
    }

    #[test]
    fn allowed_hosts_replace_the_loopback_names() {
        let guard = hosts_guard("127.0.0.1", &["*.example.com:*"]);
        assert_eq!(guard.check(Some("mcp.example.com:8443"), None), Ok(()));
        assert_eq!(guard.check(Some("localhost:8765"), None), HOST);
    }

    #[test]
    fn allowed_origins_replace_the_defaults() {
        let origins = strings(&["https://app.example.com"]);
        let guard = OriginHostGuard::new("127.0.0.1", Some(&origins), None, &[]);
        assert_eq!(guard.check(Some("localhost:8765"), Some("https://app.example.com")), Ok(()));
        assert_eq!(guard.check(Some("localhost:8765"), Some("http://localhost:3000")), ORIGIN);
        assert_eq!(guard.check(Some("localhost:8765"), Some("https://evil.example")), ORIGIN);
    }

    #[test]
    fn empty_lists_count_as_not_given() {
        let guard = OriginHostGuard::new("127.0.0.1", Some(&[]), Some(&[]), &[]);
        assert_eq!(guard.check(Some("localhost:8765"), Some("http://localhost:3000")), Ok(()));
        assert_eq!(guard.check(Some("evil.example"), None), HOST);
    }

    #[test]
    fn cors_origins_are_appended() {
        let cors = strings(&["https://app.example.com"]);
        let guard = OriginHostGuard::new("127.0.0.1", None, None, &cors);
        assert_eq!(guard.check(Some("localhost:8765"), Some("https://app.example.com")), Ok(()));
        assert_eq!(guard.check(Some("localhost:8765"), Some("http://localhost:3000")), Ok(()));
        let origins = strings(&["https://other.example"]);
        let replaced = OriginHostGuard::new("127.0.0.1", Some(&origins), None, &cors);
        assert_eq!(replaced.check(Some("localhost:8765"), Some("https://app.example.com")), Ok(()));
        assert_eq!(replaced.check(Some("localhost:8765"), Some("https://other.example")), Ok(()));
    }

    #[test]
    fn fnmatch_wildcards() {
        let origins = strings(&["https://app?.example.com", "https://[ab]x.example.com", "*"]);
        let guard = OriginHostGuard::new("0.0.0.0", Some(&origins[..2]), None, &[]);
        assert_eq!(guard.check(None, Some("https://app1.example.com")), Ok(()));
        assert_eq!(guard.check(None, Some("https://bx.example.com")), Ok(()));
        assert_eq!(guard.check(None, Some("https://cx.example.com")), ORIGIN);
        assert_eq!(guard.check(None, Some("https://app12.example.com")), ORIGIN);
        let any = OriginHostGuard::new("0.0.0.0", Some(&origins[2..]), None, &[]);
        assert_eq!(any.check(None, Some("https://anything.example")), Ok(()));
        let double = OriginHostGuard::new("0.0.0.0", Some(&strings(&["https://**.example"])), None, &[]);
        assert_eq!(double.check(None, Some("https://a.b.example")), Ok(()));
    }

    #[test]
    fn invalid_patterns_match_only_themselves() {
        let broken = Matcher::new("https://[broken.example");
        assert!(broken.matches("HTTPS://[BROKEN.example"));
        assert!(!broken.matches("https://b"));
        // Such a value is no origin, so a guard refuses it before any pattern sees it.
        let guard = OriginHostGuard::new("0.0.0.0", Some(&strings(&["https://[broken.example"])), None, &[]);
        assert_eq!(guard.check(None, Some("https://[broken.example")), Err(Rejection::MALFORMED_ORIGIN));
        assert_eq!(guard.check(None, Some("https://b")), ORIGIN);
    }

    #[test]
    fn origin_authorities() {
        assert_eq!(origin_authority("https://a.example:8443"), Some("a.example:8443"));
        assert_eq!(origin_authority("http://a.example/"), Some("a.example"));
        assert_eq!(origin_authority("http://[::1]:80"), Some("[::1]:80"));
        for not_an_origin in [
            "null",
            "file://",
            "://host",
            "1http://host",
            "http://a.example/path",
            "http://a.example?q",
            "http://user@a.example",
            "http://a.example:80:80",
        ] {
            assert_eq!(origin_authority(not_an_origin), None, "{not_an_origin}");
        }
    }

    #[test]
    fn authorities() {
        for good in ["localhost", "localhost:8765", "127.0.0.1:1", "[::1]", "[::1]:65535", "a-b.c_d~e", "x:00080"] {
            assert!(is_authority(good), "{good}");
        }
        for bad in [
            "",
            ":80",
            "localhost:",
            "localhost:123456",
            "localhost:80x",
            "localhost:8765.evil.example",
            "127.0.0.1:8765@evil.example",
            "user@localhost",
            "localhost/path",
            "[::1",
            "[::1]x",
            "[::1]:",
            "[evil.example]",
            "local host",
            "localhost:80:80",
        ] {
            assert!(!is_authority(bad), "{bad:?}");
        }
    }

    #[test]
    fn loopback_patterns_see_only_authorities() {
        let guard = loopback();
        for host in ["127.0.0.1:8765@evil.example", "localhost:8765.evil.example", "localhost:8765/x", "[::1]:1@e.x"] {
            assert_eq!(guard.check(Some(host), None), Err(Rejection::MALFORMED_HOST), "{host}");
        }
        for origin in ["http://localhost:1@evil.example", "http://localhost:1.evil.example", "http://localhost/x"] {
            let refused = guard.check(Some("localhost:8765"), Some(origin));
            assert_eq!(refused, Err(Rejection::MALFORMED_ORIGIN), "{origin}");
        }
        // A public bind checks no Host allow-list, yet a malformed Host is still refused.
        assert_eq!(public().check(Some("a@b"), None), Err(Rejection::MALFORMED_HOST));
    }

    #[test]
    fn one_host_and_one_ascii_origin() {
        let head = |target: &str, version: http::Version, pairs: &[(&str, &[u8])]| {
            let mut request = http::Request::builder().uri(target).version(version);
            for (name, value) in pairs {
                request = request.header(*name, http::HeaderValue::from_bytes(value).unwrap());
            }
            request.body(()).unwrap().into_parts().0
        };
        let at = |pairs: &[(&str, &[u8])]| head("/mcp", http::Version::HTTP_11, pairs);
        let guard = loopback();
        let ok = at(&[("host", b"localhost:1"), ("origin", b"http://localhost:2")]);
        assert_eq!(guard.check_head(&ok, None), Ok(()));
        let two_hosts = at(&[("host", b"localhost:1"), ("host", b"evil.example")]);
        assert_eq!(guard.check_head(&two_hosts, None), Err(Rejection::REPEATED_HOST));
        // Even where the first would be refused: the count is checked first.
        let two_hosts = at(&[("host", b"evil.example"), ("host", b"localhost:1")]);
        assert_eq!(guard.check_head(&two_hosts, None), Err(Rejection::REPEATED_HOST));
        let two_origins = at(&[("host", b"localhost:1"), ("origin", b"http://localhost:2"), ("origin", b"null")]);
        assert_eq!(guard.check_head(&two_origins, None), Err(Rejection::REPEATED_ORIGIN));
        let not_ascii = at(&[("host", b"localhost:1"), ("origin", "http://l\u{f6}calhost".as_bytes())]);
        assert_eq!(guard.check_head(&not_ascii, None), Err(Rejection::MALFORMED_ORIGIN));
        let host_not_ascii = at(&[("host", "l\u{f6}calhost".as_bytes())]);
        assert_eq!(guard.check_head(&host_not_ascii, None), Err(Rejection::MALFORMED_HOST));
        // HTTP/1.1 needs a Host; HTTP/1.0 on a public bind does not.
        assert_eq!(public().check_head(&at(&[]), None), Err(Rejection::MISSING_HOST));
        assert_eq!(public().check_head(&head("/mcp", http::Version::HTTP_10, &[]), None), Ok(()));
        // A target in absolute form names the authority, whatever Host says.
        let absolute = |target: &str| head(target, http::Version::HTTP_11, &[("host", b"localhost:1")]);
        assert_eq!(guard.check_head(&absolute("http://evil.example/mcp"), None), Err(Rejection::INVALID_HOST));
        assert_eq!(guard.check_head(&absolute("http://u@localhost:1/mcp"), None), Err(Rejection::MALFORMED_HOST));
        assert_eq!(guard.check_head(&absolute("http://localhost:1/mcp"), None), Ok(()));
        let http2 = head("http://localhost:1/mcp", http::Version::HTTP_2, &[]);
        assert_eq!(guard.check_head(&http2, None), Ok(()), "HTTP/2 carries the authority in the target");
        // A trusted proxy's forwarded host is what is checked, and what same-origin means.
        let public_name = hosts_guard("127.0.0.1", &["mcp.example.com"]);
        let proxied = at(&[("host", b"127.0.0.1:9001"), ("origin", b"https://mcp.example.com")]);
        assert_eq!(public_name.check_head(&proxied, None), Err(Rejection::INVALID_HOST));
        assert_eq!(public_name.check_head(&proxied, Some("mcp.example.com")), Ok(()));
        assert_eq!(public_name.check_head(&ok, Some("evil.example")), Err(Rejection::INVALID_HOST));
    }

    #[test]
    fn loopback_binds() {
        for host in ["localhost", "LOCALHOST", "", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "::ffff:127.0.0.1"] {
            assert!(is_loopback(host), "{host:?}");
        }
        for host in ["0.0.0.0", "::", "[::]", "192.168.1.10", "example.com", "[127.0.0.1]x"] {
            assert!(!is_loopback(host), "{host:?}");
        }
    }
}
