//! URI templates as resource templates use them: `{var}` matches one path segment,
//! `{+var}` (or `{var*}`) the rest of a path. Matched values are percent-decoded.
//!
//! A template compiles to a regular expression, so matching takes time linear in the URI
//! whatever the template: a backtracking matcher spent minutes on a 12 KB URI against three
//! `{+var}`s, and the URI is what a client sends. A value is made of whole characters: it
//! never ends inside a `%XX` escape, nor between the escapes of one UTF-8 character, and a
//! `%` that starts no escape (not a URI character, RFC 3986 §2.1) matches nothing.

use regex::Regex;
use std::collections::BTreeMap;
use std::fmt;

/// A parsed template that matches URIs and yields their variables.
#[derive(Debug, Clone)]
pub struct UriTemplate {
    source: String,
    /// Anchored; one group per variable, in order.
    pattern: Regex,
    names: Vec<String>,
}

/// A URI template that does not parse, or that this implementation does not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template {template:?}: {reason}")]
pub struct TemplateError {
    /// The template as given.
    pub template: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl UriTemplate {
    /// Parses an RFC 6570 template.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let err = |reason| TemplateError { template: template.to_string(), reason };
        // Longest match first (greedy groups), so a `{+path}` takes as much as the template
        // allows.
        let mut pattern = String::from("^");
        let mut names: Vec<String> = Vec::new();
        let mut rest = template;
        let mut after_var = false;
        while let Some(open) = rest.find('{') {
            check_literal(&rest[..open]).map_err(err)?;
            pattern.push_str(&regex::escape(&rest[..open]));
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
            if after_var && open == 0 {
                return Err(err("two variables need a literal between them"));
            }
            if names.iter().any(|seen| seen == name) {
                return Err(err("each variable appears once"));
            }
            pattern.push('(');
            pattern.push_str(&value_pattern(if multi { "[^%]" } else { "[^%/?]" }));
            pattern.push(')');
            names.push(name.to_string());
            after_var = true;
            rest = &rest[close + 1..];
        }
        check_literal(rest).map_err(err)?;
        pattern.push_str(&regex::escape(rest));
        pattern.push('$');
        let pattern = Regex::new(&pattern).map_err(|_| err("too large to match"))?;
        Ok(UriTemplate { source: template.to_string(), pattern, names })
    }

    /// The template as given.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The decoded variables when `uri` matches, else `None`.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let captures = self.pattern.captures(uri)?;
        let values = captures.iter().skip(1).map(|m| m.map_or("", |m| m.as_str()));
        let decoded = values.map(|v| percent_encoding::percent_decode_str(v).decode_utf8_lossy().into_owned());
        Some(self.names.iter().cloned().zip(decoded).collect())
    }
}

impl PartialEq for UriTemplate {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for UriTemplate {}

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
    let hex = |b: &u8| b.is_ascii_hexdigit();
    let escapes =
        text.match_indices('%').all(|(at, _)| matches!(text.as_bytes()[at..], [_, x, y, ..] if hex(&x) && hex(&y)));
    if escapes { Ok(()) } else { Err("a '%' in a literal starts a %XX escape") }
}

/// The regular expression of one variable's value, whose unescaped characters are `plain`:
/// whole units, each a character, a `%XX` of a byte that starts no UTF-8 sequence (ASCII, a
/// stray continuation byte, F8–FF), or a lead byte's escape with all its continuation
/// escapes. A lead byte with too few continuations (a broken character, decoded as U+FFFD)
/// is let in only before another unit of the value that is not a continuation: a value never
/// ends with one, so it never stops partway through a character the escapes after it complete.
fn value_pattern(plain: &str) -> String {
    const CONT: &str = "%[89ABab][0-9A-Fa-f]";
    let lone = "%(?:[0-7][0-9A-Fa-f]|[89ABab][0-9A-Fa-f]|[Ff][89A-Fa-f])";
    let starts = "%(?:[0-7][0-9A-Fa-f]|[Ff][89A-Fa-f])";
    let whole = format!("%[CDcd][0-9A-Fa-f]{CONT}|%[Ee][0-9A-Fa-f](?:{CONT}){{2}}|%[Ff][0-7](?:{CONT}){{3}}");
    let broken = format!("%[CDcd][0-9A-Fa-f]|%[Ee][0-9A-Fa-f](?:{CONT})?|%[Ff][0-7](?:{CONT}){{0,2}}");
    format!("(?:{plain}|{lone}|{whole}|(?:{broken})+(?:{plain}|{starts}|{whole}))+")
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

    /// What a client puts in a URI for `value`: percent-encoded, and for a one-segment
    /// variable with `/` and `?` encoded too.
    fn encoded(value: &str, rest: bool) -> String {
        use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
        const PATH: &AsciiSet = &CONTROLS.add(b' ').add(b'%').add(b'{').add(b'}').add(b'#');
        const SEGMENT: &AsciiSet = &PATH.add(b'/').add(b'?');
        utf8_percent_encode(value, if rest { PATH } else { SEGMENT }).to_string()
    }

    #[test]
    fn matching_is_linear_in_the_uri() {
        // A 3.6 KB URI: backtracking took about 12 s of CPU on it, a regular expression
        // takes well under a millisecond; the bound only tells a hang from an answer.
        let t = UriTemplate::parse("x://{+a}/b/{+c}/d/{+e}/f").unwrap();
        let hostile = format!("x://{}z", "/b//d/".repeat(600));
        let started = std::time::Instant::now();
        assert_eq!(t.matches(&hostile), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
        assert_eq!(vars("x://{+a}/b/{+c}/d/{+e}/f", "x://1/b/2/d/3/f").map(|v| v.len()), Some(3));
    }

    proptest::proptest! {
        /// A URI made from a template and values matches the template, giving the values back.
        #[test]
        fn expanded_templates_match_their_values(
            id in "[^\\x00]{1,12}",
            path in "[a-z0-9/._-]{1,30}",
        ) {
            let template = UriTemplate::parse("test://items/{id}/files/{+path}").unwrap();
            let uri = format!("test://items/{}/files/{}", encoded(&id, false), encoded(&path, true));
            let vars = template.matches(&uri);
            let want = BTreeMap::from([("id".to_string(), id), ("path".to_string(), path)]);
            proptest::prop_assert_eq!(vars, Some(want), "{}", uri);
        }

        /// Parsing any text gives a template or an error, and matching any URI an answer.
        #[test]
        fn any_template_and_uri(template in ".{0,30}", uri in ".{0,60}") {
            if let Ok(t) = UriTemplate::parse(&template) {
                let _ = t.matches(&uri);
            }
        }
    }

    /// Found by fuzzing (the uri_template target): a variable written twice matched two
    /// different values and kept one, so `x://{id}/copy/{id}` matched `x://1/copy/2`.
    #[test]
    fn a_variable_appears_once() {
        for t in ["x://{id}/copy/{id}", "x://{id}/{+id}", "x://{p*}?{p}"] {
            let error = UriTemplate::parse(t).unwrap_err();
            assert_eq!(error.reason, "each variable appears once", "{t}");
        }
    }

    /// Found by fuzzing (the uri_template target): a value could end inside a `%XX` escape,
    /// so `x://{a}2{b}` matched `x://p2%262` (made from a = `p`, b = `&2`) as a = `p2%`,
    /// b = `62`; and a literal's stray `%` made such splits from any values.
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
        // A `%` that starts no escape is not a URI character.
        assert_eq!(vars("x://{+a}", "x://100%.txt"), None);
    }

    /// Found by fuzzing (the uri_template target): a value could end between the escapes of
    /// one character, so `x://{a}%82{b}` split `x://%E2%82%AC%82%E2%82%AC` (made from
    /// a = b = `€`) into broken characters on both sides.
    #[test]
    fn values_never_end_inside_a_character() {
        let both = Some(vec![("a".into(), "€".into()), ("b".into(), "€".into())]);
        assert_eq!(vars("x://{a}%82{b}", "x://%E2%82%AC%82%E2%82%AC"), both);
        // Escapes that are not UTF-8 still match, decoded lossily; a broken character only
        // where something other than a continuation follows it.
        assert_eq!(vars("x://{a}", "x://%FF%80"), Some(vec![("a".into(), "\u{fffd}\u{fffd}".into())]));
        assert_eq!(vars("x://{a}", "x://%E2%82z"), Some(vec![("a".into(), "\u{fffd}z".into())]));
        assert_eq!(vars("x://{a}/b", "x://%E2%82/b"), None);
    }
}
