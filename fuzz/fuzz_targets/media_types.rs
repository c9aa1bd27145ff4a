//! `Content-Type` and `Accept` of a POST. Input: the `Content-Type` value (first line), then
//! one `Accept` value a line. A body is let in as JSON exactly when its media type, before
//! any `;` parameters and without surrounding blanks, is `application/json` (any case),
//! whatever bytes the parameters hold: never `application/json-seq`, `text/json` or `application/jsonx`. What `Accept` accepts
//! does not depend on how the entries are spread over header lines, nor on their order,
//! nor on their parameters; JSON is accepted exactly when an entry is `application/json`,
//! `application/*` or `*/*`, SSE when one is `text/event-stream`, `text/*` or `*/*`, and
//! both when no entry names a type.
#![no_main]

use duet::fuzzing::{accepts, content_is_json};
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;

fn headers<'a>(name: http::HeaderName, values: impl IntoIterator<Item = &'a str>) -> Option<HeaderMap> {
    let mut map = HeaderMap::new();
    for value in values {
        map.append(&name, HeaderValue::from_str(value).ok()?);
    }
    Some(map)
}

fn accepted(values: &[&str]) -> Option<(bool, bool)> {
    headers(ACCEPT, values.iter().copied()).map(|h| accepts(&h))
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let mut lines = text.split('\n');
    let content_type = lines.next().unwrap_or_default();
    if let Some(h) = headers(CONTENT_TYPE, [content_type]) {
        let media_type = content_type.split(';').next().unwrap_or_default().trim_matches([' ', '\t']);
        // The parameters may hold bytes past ASCII (HTTP's obs-text, in a quoted string).
        let json = media_type.eq_ignore_ascii_case("application/json");
        assert_eq!(content_is_json(&h), json, "Content-Type {content_type:?}");
    }

    let lines: Vec<&str> = lines.collect();
    if lines.iter().any(|l| !l.is_ascii()) {
        return;
    }
    let Some(accept) = accepted(&lines) else { return };
    let entries: Vec<&str> = lines.iter().flat_map(|l| l.split(',')).collect();
    let joined = entries.join(",");
    assert_eq!(accepted(&[joined.as_str()]), Some(accept), "one line or several");
    let reversed: Vec<&str> = entries.iter().rev().copied().collect();
    assert_eq!(accepted(&reversed), Some(accept), "in any order");
    let with_parameters: Vec<String> = entries
        .iter()
        .map(|e| if e.trim().is_empty() || e.contains(';') { e.to_string() } else { format!("{e};q=0.5") })
        .collect();
    let with_parameters: Vec<&str> = with_parameters.iter().map(String::as_str).collect();
    assert_eq!(accepted(&with_parameters), Some(accept), "parameters do not matter");

    let names: Vec<String> =
        entries.iter().map(|e| e.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()).collect();
    let named = |any: &[&str]| names.iter().any(|n| any.contains(&n.as_str()));
    if names.iter().any(|n| !n.is_empty()) {
        assert_eq!(accept.0, named(&["application/json", "application/*", "*/*"]), "JSON for {lines:?}");
        assert_eq!(accept.1, named(&["text/event-stream", "text/*", "*/*"]), "SSE for {lines:?}");
    } else {
        assert_eq!(accept, (true, true), "an Accept naming nothing accepts both");
    }
});
