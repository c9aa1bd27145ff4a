//! The HTTP headers MCP defines, by name, and MCP's spelling of a header value that plain
//! visible ASCII cannot carry (`Mcp-Name`, `Mcp-Param-*`): `=?base64?…?=` around the base64
//! of its UTF-8 text. Any other value is literal. A server decodes, a client encodes.

use base64::Engine as _;
use std::borrow::Cow;

/// The protocol revision a request is made in (both eras; required in 2026).
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// A 2026 request's method, mirrored from its body.
pub const METHOD: &str = "mcp-method";
/// The tool, prompt, resource or task a 2026 request names, mirrored from its body.
pub const NAME: &str = "mcp-name";
/// A handshake-era session.
pub const SESSION_ID: &str = "mcp-session-id";
/// The prefix of the headers that mirror a tool's arguments (`x-mcp-header`).
pub const PARAM_PREFIX: &str = "Mcp-Param-";

/// The text a header value stands for; `None` when it is `=?base64?…?=` around base64 that
/// is invalid or not UTF-8.
pub fn decode(raw: &str) -> Option<Cow<'_, str>> {
    match raw.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) {
        None => Some(Cow::Borrowed(raw)),
        Some(b64) => {
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64).ok()?).ok().map(Cow::Owned)
        }
    }
}

/// How a client sends `value` in a header: as it is when it is plain visible ASCII (spaces
/// and tabs inside it allowed) that does not itself look like `=?base64?…?=`, else
/// `=?base64?…?=` around the base64 of its UTF-8 text; [`decode`] reads either back.
pub fn encode(value: &str) -> Cow<'_, str> {
    let plain = value.bytes().all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_or_base64() {
        assert_eq!(decode("echo").as_deref(), Some("echo"));
        assert_eq!(decode("=?base64?ZWNobw==?=").as_deref(), Some("echo"));
        assert_eq!(decode("=?base64?***?="), None);
        assert_eq!(decode("=?base64?/w==?="), None, "not UTF-8");
    }

    #[test]
    fn encoded_only_when_plain_ascii_cannot_carry_it() {
        assert_eq!(encode("file:///a b.txt"), "file:///a b.txt");
        for value in ["héllo", " padded", "line\nbreak", "=?base64?ZWNobw==?="] {
            let sent = encode(value);
            assert!(sent.starts_with("=?base64?"), "{value:?}");
            assert_eq!(decode(&sent).as_deref(), Some(value));
        }
    }
}
