//! Resource-template matching. Input: a template, then (lines 2 and on) a URI and values
//! for its variables. Parsing and matching any text never panics; a template without
//! variables matches exactly its own text; and a URI made from a template by putting
//! values (percent-encoded) in its variables matches it, with values that make the same URI
//! again (a match may split the URI differently, but never loses or mangles part of it).
#![no_main]

use duet::layer::UriTemplate;
use libfuzzer_sys::fuzz_target;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use std::collections::BTreeMap;

/// The template's text with each `{…}` replaced by the next value, percent-encoded.
fn expand(template: &str, mut value: impl FnMut(&str) -> String) -> String {
    let mut uri = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = open + rest[open..].find('}').expect("a parsed template closes its braces");
        uri.push_str(&rest[..open]);
        let name = rest[open + 1..close].trim_start_matches('+').trim_end_matches('*');
        uri.extend(utf8_percent_encode(&value(name), NON_ALPHANUMERIC));
        rest = &rest[close + 1..];
    }
    uri + rest
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let mut lines = text.split('\n');
    let source = lines.next().unwrap_or_default();
    let uri = lines.next().unwrap_or_default();
    let values: Vec<&str> = lines.filter(|v| !v.is_empty()).collect();
    let Ok(template) = UriTemplate::parse(source) else { return };
    let matched = template.matches(uri);
    if !source.contains('{') {
        assert_eq!(matched.is_some(), uri == source, "a template without variables is literal");
        assert_eq!(template.matches(source), Some(BTreeMap::new()));
        return;
    }
    if values.is_empty() {
        return;
    }
    let mut next = values.iter().cycle();
    let made = expand(source, |_| next.next().map(|v| v.to_string()).unwrap_or_default());
    let Some(vars) = template.matches(&made) else { panic!("{made:?} was made from {source:?}") };
    let again = expand(source, |name| vars.get(name).cloned().unwrap_or_default());
    assert_eq!(again, made, "the values matched in {made:?} make it again");
});
