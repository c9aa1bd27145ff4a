//! The Host/Origin guard against DNS rebinding. Input: the bind address (first line), the
//! allowed hosts and the allowed origins (lines 2 and 3: space-separated patterns, none for
//! the defaults), then request headers, one `name: value` a line, of an HTTP/1.1 request
//! for `/`. A missing `Host` is refused as such, and so is a repeated `Host` or `Origin`; a request let in carries at most one of each, a `Host` that
//! is a bare authority (no user, path, blank or second colon), and an `Origin` that is
//! `null` or `scheme://authority`. With the defaults on a loopback bind, only a loopback
//! name gets in as the `Host`, and only a loopback origin or the request's own host as the
//! `Origin`; a public bind without allowed origins lets in no foreign `Origin` at all.
#![no_main]

use duet::fuzzing::{OriginHostGuard, Rejection, is_loopback};
use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;

const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

fn patterns(line: &[u8]) -> Option<Vec<String>> {
    let line = std::str::from_utf8(line).ok()?;
    let list: Vec<String> = line.split(' ').filter(|p| !p.is_empty()).map(str::to_owned).collect();
    (!list.is_empty()).then_some(list)
}

/// `host[:port]` split at the port's colon: after a `]` for an IPv6 literal, else the first.
fn name_of(authority: &str) -> &str {
    match authority.strip_prefix('[') {
        Some(_) => authority.find(']').map_or(authority, |end| &authority[..=end]),
        None => authority.split(':').next().unwrap_or_default(),
    }
}

/// Only what an authority may hold, and at most one colon outside an IPv6 literal.
fn is_bare_authority(text: &str) -> bool {
    let outside = text.rsplit(']').next().unwrap_or_default();
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~:[]".contains(&b))
        && outside.matches(':').count() <= 1
}

fn is_loopback_name(authority: &str) -> bool {
    LOOPBACK.iter().any(|name| name.eq_ignore_ascii_case(name_of(authority)))
}

fuzz_target!(|bytes: &[u8]| {
    let mut lines = bytes.split(|b| *b == b'\n');
    let bind = std::str::from_utf8(lines.next().unwrap_or_default()).unwrap_or_default();
    let hosts = patterns(lines.next().unwrap_or_default());
    let origins = patterns(lines.next().unwrap_or_default());
    let guard = OriginHostGuard::new(bind, origins.as_deref(), hosts.as_deref(), &[]);
    let mut headers = HeaderMap::new();
    for line in lines {
        let Some(colon) = line.iter().position(|b| *b == b':') else { continue };
        let (Ok(name), Ok(value)) =
            (HeaderName::from_bytes(&line[..colon]), HeaderValue::from_bytes(line[colon + 1..].trim_ascii()))
        else {
            continue;
        };
        headers.append(name, value);
    }
    let count = |name: HeaderName| headers.get_all(name).iter().count();
    // An HTTP/1.1 request for `/` with these headers.
    let (mut head, ()) = http::Request::new(()).into_parts();
    head.headers = headers.clone();
    let verdict = guard.check_head(&head, None);
    match count(http::header::HOST) {
        0 => assert_eq!(verdict, Err(Rejection::MISSING_HOST)),
        1 => {}
        _ => assert_eq!(verdict, Err(Rejection::REPEATED_HOST)),
    }
    if verdict.is_err() {
        return;
    }
    assert!(count(http::header::ORIGIN) <= 1, "a repeated Origin was let in");
    let text = |name: HeaderName| headers.get(name).map(|v| v.to_str().expect("let in as text"));
    let (host, origin) = (text(http::header::HOST), text(http::header::ORIGIN));
    assert!(host.is_none_or(is_bare_authority), "Host {host:?} was let in");
    let origin_authority = origin.filter(|o| *o != "null").map(|o| {
        let (scheme, rest) = o.split_once("://").expect("an origin is scheme://authority");
        assert!(scheme.starts_with(|c: char| c.is_ascii_alphabetic()), "Origin {o:?}");
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        assert!(is_bare_authority(authority), "Origin {o:?} was let in");
        authority
    });
    let loopback_bind = is_loopback(bind);
    if hosts.is_none() && loopback_bind {
        assert!(host.is_some_and(is_loopback_name), "Host {host:?} on a loopback bind");
    }
    if origins.is_none()
        && let Some(authority) = origin_authority
    {
        let own = hosts.is_some() || loopback_bind;
        let same_origin = own && host.is_some_and(|h| h.eq_ignore_ascii_case(authority));
        let scheme = origin.unwrap_or_default().split("://").next().unwrap_or_default().to_ascii_lowercase();
        let loopback_origin = ["http", "https"].contains(&scheme.as_str()) && is_loopback_name(authority);
        assert!(loopback_origin || same_origin, "Origin {origin:?} with Host {host:?}");
    }
    assert!(origins.is_some() || origin != Some("null"), "a null Origin without an allow-list naming it");
});
