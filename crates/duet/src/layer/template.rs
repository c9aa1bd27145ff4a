//! URI templates as resource templates use them: `{var}` matches one path segment,
//! `{+var}` (or `{var*}`) the rest of a path. Matched values are percent-decoded, and a
//! value never ends inside a `%XX` escape, nor between the escapes of one character.

use std::collections::BTreeMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var { name: String, rest: bool },
}

/// A parsed template that matches URIs and yields their variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template {template:?}: {reason}")]
pub struct TemplateError {
    pub template: String,
    pub reason: &'static str,
}

impl UriTemplate {
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let err = |reason| TemplateError { template: template.to_string(), reason };
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_string()));
            }
            let close = rest[open..].find('}').ok_or_else(|| err("unclosed '{'"))? + open;
            let mut name = &rest[open + 1..close];
            let mut multi = false;
            if let Some(n) = name.strip_prefix('+') {
                (name, multi) = (n, true);
            } else if let Some(n) = name.strip_suffix('*') {
                (name, multi) = (n, true);
            }
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(err("variable names are letters, digits and '_'"));
            }
            if matches!(parts.last(), Some(Part::Var { .. })) {
                return Err(err("two variables need a literal between them"));
            }
            if parts.iter().any(|p| matches!(p, Part::Var { name: seen, .. } if seen == name)) {
                return Err(err("each variable appears once"));
            }
            parts.push(Part::Var { name: name.to_string(), rest: multi });
            rest = &rest[close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_string()));
        }
        for part in &parts {
            if let Part::Literal(text) = part {
                check_literal(text).map_err(err)?;
            }
        }
        Ok(UriTemplate { source: template.to_string(), parts })
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The decoded variables when `uri` matches, else `None`.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        match_parts(&self.parts, uri, &mut vars).then_some(vars)
    }
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// A literal holds no `}`, and each `%` in it starts a `%XX` escape.
fn check_literal(text: &str) -> Result<(), &'static str> {
    if text.contains('}') {
        return Err("unmatched '}'");
    }
    let escapes = text.match_indices('%').all(|(at, _)| starts_escape(&text.as_bytes()[at..]));
    if escapes { Ok(()) } else { Err("a '%' in a literal starts a %XX escape") }
}

/// Whether `bytes` start with a `%XX` escape.
fn starts_escape(bytes: &[u8]) -> bool {
    matches!(bytes, [b'%', x, y, ..] if x.is_ascii_hexdigit() && y.is_ascii_hexdigit())
}

/// Whether `at` falls inside a `%XX` escape of `input`, where a value must not end.
fn inside_escape(input: &str, at: usize) -> bool {
    (1..=2).any(|back| at >= back && starts_escape(&input.as_bytes()[at - back..]))
}

/// Whether the value `raw` stops partway through a character whose UTF-8 bytes its last
/// escapes begin.
fn ends_inside_character(raw: &str) -> bool {
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(raw).collect();
    // The last chunk's invalid bytes are cut short (not merely invalid) when the decoder wants more.
    let last = bytes.utf8_chunks().last().map(|chunk| chunk.invalid()).unwrap_or_default();
    std::str::from_utf8(last).is_err_and(|e| e.error_len().is_none())
}

fn match_parts(parts: &[Part], input: &str, vars: &mut BTreeMap<String, String>) -> bool {
    let Some((first, tail)) = parts.split_first() else {
        return input.is_empty();
    };
    match first {
        Part::Literal(lit) => input.strip_prefix(lit.as_str()).is_some_and(|r| match_parts(tail, r, vars)),
        Part::Var { name, rest } => {
            // Longest match first, so a `{+path}` takes as much as the template allows.
            let limit = if *rest { input.len() } else { input.find(['/', '?']).unwrap_or(input.len()) };
            let ends = (1..=limit).rev().filter(|&e| input.is_char_boundary(e) && !inside_escape(input, e));
            for end in ends.filter(|&e| !ends_inside_character(&input[..e])) {
                if match_parts(tail, &input[end..], vars) {
                    let decoded = percent_encoding::percent_decode_str(&input[..end]).decode_utf8_lossy();
                    vars.insert(name.clone(), decoded.into_owned());
                    return true;
                }
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(t: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(t).unwrap().matches(uri).map(|m| m.into_iter().collect())
    }

    #[test]
    fn one_segment_variables() {
        assert_eq!(vars("test://items/{id}", "test://items/beta"), Some(vec![("id".into(), "beta".into())]));
        assert_eq!(vars("test://items/{id}", "test://items/a/b"), None);
        assert_eq!(vars("test://items/{id}", "test://items/"), None);
        assert_eq!(
            vars("test://template/{id}/data", "test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
    }

    #[test]
    fn rest_of_path_and_decoding() {
        assert_eq!(vars("file:///{+path}", "file:///a/b%20c.txt"), Some(vec![("path".into(), "a/b c.txt".into())]));
        assert_eq!(vars("x://{p*}", "x://q/r"), Some(vec![("p".into(), "q/r".into())]));
        assert_eq!(vars("x://{a}/{+b}", "x://1/2/3"), Some(vec![("a".into(), "1".into()), ("b".into(), "2/3".into())]));
    }

    #[test]
    fn bad_templates() {
        for t in ["x://{a", "x://{}", "x://{a}{b}", "x://a}", "x://a}{b}"] {
            assert!(UriTemplate::parse(t).is_err(), "{t}");
        }
    }

    /// Found by fuzzing (`fuzz/fuzz_targets/uri_template.rs`): a variable written twice
    /// matched two different values and kept only one, so `x://1/copy/2` matched
    /// `x://{id}/copy/{id}` as `id = 1`.
    /// Found by fuzzing (`fuzz/fuzz_targets/uri_template.rs`): a value could end inside a
    /// `%XX` escape, so `x://{a}2{b}` matched `x://p2%262` (made from a = `p`, b = `&2`)
    /// as a = `p2%`, b = `62`; and a literal's stray `%` made such splits from any values.
    #[test]
    fn values_never_end_inside_an_escape() {
        assert_eq!(vars("x://{a}2{b}", "x://p2%262"), Some(vec![("a".into(), "p".into()), ("b".into(), "&2".into())]));
        assert_eq!(
            vars("x://{a}%41{b}", "x://1%41%412"),
            Some(vec![("a".into(), "1A".into()), ("b".into(), "2".into())])
        );
        for t in ["x://{a}%2{b}", "x://{a}%", "x://100%/{a}", "x://%zz{a}"] {
            let error = UriTemplate::parse(t).unwrap_err();
            assert_eq!(error.reason, "a '%' in a literal starts a %XX escape", "{t}");
        }
    }

    /// Found by fuzzing (`fuzz/fuzz_targets/uri_template.rs`): a value could end between the
    /// escapes of one character, so `x://{a}%82{b}` split `x://%E2%82%AC%82%E2%82%AC` (made
    /// from a = b = `€`) as a = `€` and a broken character, b = a broken character.
    #[test]
    fn values_never_end_inside_a_character() {
        let both = Some(vec![("a".into(), "€".into()), ("b".into(), "€".into())]);
        assert_eq!(vars("x://{a}%82{b}", "x://%E2%82%AC%82%E2%82%AC"), both);
        // A URI whose escapes are not UTF-8 still matches, decoded lossily as before.
        assert_eq!(vars("x://{a}", "x://%FF"), Some(vec![("a".into(), "\u{fffd}".into())]));
    }

    #[test]
    fn a_variable_appears_once() {
        for t in ["x://{id}/copy/{id}", "x://{id}/{+id}", "x://{p*}?{p}"] {
            let error = UriTemplate::parse(t).unwrap_err();
            assert_eq!(error.reason, "each variable appears once", "{t}");
        }
    }
}
