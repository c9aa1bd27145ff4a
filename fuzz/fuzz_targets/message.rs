//! Decoding what a client sends, as stdio (a line) and the HTTP endpoints (a POST body) do.
//! Any text that is a JSON value decodes (the framing rules turn what breaks them into an
//! error to answer, never a parse failure), and to the same messages as that `Value` does:
//! the rules run while the text is parsed, so both paths must agree. Nothing decodes that
//! is not JSON (a number too large for `f64` is JSON, and decodes where it is ignored). An array is a batch of as many
//! messages; a request keeps its method; an invalid message is answered with a JSON-RPC
//! error (-32600 or -32602) that encodes as one line of JSON. A POST body is let in exactly
//! when it is UTF-8 JSON whose first character is `{` or `[`, as that same message, and is
//! refused with 400 otherwise.
#![no_main]

use duet::fuzzing::post_body;
use duet::wire::message::{Incoming, Message, Request};
use libfuzzer_sys::fuzz_target;
use serde::de::IgnoredAny;
use serde_json::Value;

fuzz_target!(|bytes: &[u8]| {
    let text = std::str::from_utf8(bytes).ok();
    let value = text.and_then(|t| serde_json::from_str::<Value>(t).ok());
    let decoded = text.and_then(|t| serde_json::from_str::<Message>(t).ok());
    assert!(value.is_none() || decoded.is_some(), "a JSON value decodes");
    let json = text.is_some_and(|t| serde_json::from_str::<IgnoredAny>(t).is_ok());
    assert!(json || decoded.is_none(), "only JSON decodes");
    if let (Some(decoded), Some(value)) = (&decoded, value) {
        assert_eq!(decoded, &Message::from(value.clone()), "the text and its value decode alike");
        match (&value, decoded) {
            (Value::Array(items), Message::Batch(messages)) => assert_eq!(items.len(), messages.len()),
            (Value::Array(_), Message::One(_)) => panic!("an array is a batch"),
            (_, Message::Batch(_)) => panic!("only an array is a batch"),
            (sent, Message::One(Incoming::Request(Request { method, .. }))) => {
                assert_eq!(sent["method"], method.as_str(), "a request keeps its method");
            }
            (_, Message::One(_)) => {}
        }
        for invalid in decoded.items().iter().filter_map(|m| match m {
            Incoming::Invalid(response) => Some(response),
            _ => None,
        }) {
            assert!(matches!(invalid.error_code(), Some(-32600 | -32602)), "{invalid:?}");
            let line = invalid.to_line();
            assert!(!line.contains('\n'), "one line: {line:?}");
            let answer: Value = serde_json::from_str(&line).expect("the answer is JSON");
            assert_eq!(answer["jsonrpc"], "2.0");
        }
    }
    let opens = bytes.iter().find(|b| !b.is_ascii_whitespace()).is_some_and(|b| matches!(b, b'{' | b'['));
    match post_body(bytes) {
        Ok(message) => assert!(opens && Some(message) == decoded, "a POST body decodes as the text does"),
        Err(status) => assert!(status == 400 && !(opens && decoded.is_some()), "refused with {status}"),
    }
});
