//! The MCP headers of an HTTP request, and how the transport reads a header: the engine's
//! [`Hints`] (what the headers say beside the body: for the 2026 ladder in
//! `protocol/admission.rs`, and the session a handshake-era message names) read from a
//! request's header map.

use crate::protocol::admission::{Hints, Param};
use duet_wire::headers;
use http::HeaderMap;
use http::header::{AsHeaderName, HeaderName, HeaderValue};
use std::borrow::Cow;

pub(crate) static PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static(headers::PROTOCOL_VERSION);
pub(crate) static METHOD_HEADER: HeaderName = HeaderName::from_static(headers::METHOD);
pub(crate) static NAME_HEADER: HeaderName = HeaderName::from_static(headers::NAME);
pub(crate) static SESSION_HEADER: HeaderName = HeaderName::from_static(headers::SESSION_ID);

/// A header's value as the request gives it: all its lines joined by `, ` (RFC 9110 §5.3),
/// trimmed, each byte that is not visible ASCII shown as U+FFFD; `None` when absent. So a
/// header that may appear once (`Mcp-Session-Id`, `MCP-Protocol-Version`, `Mcp-Method`,
/// `Mcp-Name`, `Authorization`) is never read from its first line alone, and one that holds
/// bytes no client may send is refused for its value rather than taken for absent.
pub(crate) fn header<K: AsHeaderName>(headers: &HeaderMap, name: K) -> Option<Cow<'_, str>> {
    let mut lines = headers.get_all(name).into_iter();
    let first = shown(lines.next()?);
    let Some(second) = lines.next() else { return Some(first) };
    let mut joined = first.into_owned();
    for line in std::iter::once(second).chain(lines) {
        joined.push_str(", ");
        joined.push_str(&shown(line));
    }
    Some(Cow::Owned(joined))
}

fn shown(value: &HeaderValue) -> Cow<'_, str> {
    match value.to_str() {
        Ok(text) => Cow::Borrowed(text.trim_ascii()),
        Err(_) => {
            let visible = |&b: &u8| if b == b'\t' || (0x20..0x7f).contains(&b) { b as char } else { '\u{fffd}' };
            Cow::Owned(value.as_bytes().iter().map(visible).collect::<String>().trim_ascii().to_owned())
        }
    }
}

/// A request's headers as the engine reads them, with `MCP-Protocol-Version` as the POST
/// already read it (to tell the era).
pub(crate) struct HeaderHints<'a> {
    pub headers: &'a HeaderMap,
    pub version: Option<&'a str>,
}

impl Hints for HeaderHints<'_> {
    fn version(&self) -> Option<Cow<'_, str>> {
        self.version.map(Cow::Borrowed)
    }

    fn method(&self) -> Option<Cow<'_, str>> {
        header(self.headers, &METHOD_HEADER)
    }

    fn name(&self) -> Option<Cow<'_, str>> {
        header(self.headers, &NAME_HEADER)
    }

    fn session(&self) -> Option<Cow<'_, str>> {
        header(self.headers, &SESSION_HEADER)
    }

    fn param(&self, name: &str) -> Param<'_> {
        let mut lines = self.headers.get_all(name).into_iter();
        match (lines.next(), lines.next()) {
            (None, _) => Param::Absent,
            (Some(line), None) => line.to_str().map_or(Param::Unreadable, Param::Sent),
            (Some(_), Some(_)) => Param::Repeated,
        }
    }
}
