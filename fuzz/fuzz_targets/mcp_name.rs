//! The `Mcp-Name` header of a 2026 request. Input: a header value's bytes, also taken as a
//! name when it is UTF-8. Any value reads as a name or as none; a value not written as
//! `=?base64?…?=` reads as itself, trimmed; and any name a client encodes as
//! `=?base64?BASE64?=` reads back as exactly that name.
#![no_main]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use duet::fuzzing::mcp_name;
use http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;

fn sent(value: HeaderValue) -> Option<String> {
    let mut headers = HeaderMap::new();
    headers.insert("mcp-name", value);
    mcp_name(&headers)
}

fuzz_target!(|bytes: &[u8]| {
    if let Ok(value) = HeaderValue::from_bytes(bytes) {
        let literal = value.to_str().ok().map(|v| v.trim_ascii().to_owned());
        let read = sent(value);
        if let Some(literal) = literal.filter(|l| !(l.starts_with("=?base64?") && l.ends_with("?="))) {
            assert_eq!(read, Some(literal), "a literal name reads as itself");
        }
    }
    if let Ok(name) = std::str::from_utf8(bytes) {
        let encoded = HeaderValue::try_from(format!("=?base64?{}?=", STANDARD.encode(name))).expect("base64 is ASCII");
        assert_eq!(sent(encoded).as_deref(), Some(name), "an encoded name reads back");
    }
});
