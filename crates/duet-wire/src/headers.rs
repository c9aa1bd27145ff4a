//! The HTTP headers MCP defines, by name, and MCP's spelling of a header value that plain
//! visible ASCII cannot carry (`Mcp-Name`, `Mcp-Param-*`): `=?base64?…?=` around the base64
//! of its UTF-8 text. Any other value is literal.

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
}
