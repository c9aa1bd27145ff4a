//! A protected server's `WWW-Authenticate: Bearer …` (or `DPoP …`) challenge (RFC 6750 §3,
//! RFC 9728 §5.1, RFC 9449 §7.1): where its Protected Resource Metadata is, the scope it
//! asks for, and why it refused.

/// What a 401 or 403 answer's `Bearer` or `DPoP` challenge says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// `resource_metadata`: the URL of the server's Protected Resource Metadata.
    pub(crate) resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated.
    pub(crate) scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`...
    pub(crate) error: Option<String>,
    /// Whether the server challenged with the `DPoP` scheme (it accepts DPoP-bound tokens).
    pub(crate) dpop: bool,
}

impl Challenge {
    /// The `Bearer` or `DPoP` challenge among `headers`' `WWW-Authenticate` values, or an
    /// empty one.
    pub(crate) fn of(headers: &reqwest::header::HeaderMap) -> Challenge {
        let values = || headers.get_all(reqwest::header::WWW_AUTHENTICATE).into_iter().filter_map(|v| v.to_str().ok());
        let mut challenge = values().find_map(Challenge::parse).unwrap_or_default();
        challenge.dpop =
            values().any(|value| value.split_whitespace().next().is_some_and(|s| s.eq_ignore_ascii_case("dpop")));
        challenge
    }

    /// The challenge in one header value (`Bearer k="v", k2=v2`), if it is a `Bearer` or a
    /// `DPoP` one.
    pub(crate) fn parse(value: &str) -> Option<Challenge> {
        let value = value.trim_start();
        let (scheme, rest) = value.split_once(char::is_whitespace).unwrap_or((value, ""));
        if !scheme.eq_ignore_ascii_case("bearer") && !scheme.eq_ignore_ascii_case("dpop") {
            return None;
        }
        let mut challenge = Challenge::default();
        for (name, value) in Params(rest) {
            let slot = match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => &mut challenge.resource_metadata,
                "scope" => &mut challenge.scope,
                "error" => &mut challenge.error,
                _ => continue,
            };
            *slot = Some(value);
        }
        Some(challenge)
    }

    /// Whether the server refused for want of scope (a 403 to step up from).
    pub(crate) fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The `name=value` parameters of a challenge, each value a token or a quoted string.
struct Params<'a>(&'a str);

impl Iterator for Params<'_> {
    type Item = (String, String);

    fn next(&mut self) -> Option<(String, String)> {
        let rest = self.0.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
        let (name, rest) = rest.split_once('=')?;
        let rest = rest.trim_start();
        let (value, rest) = match rest.strip_prefix('"') {
            Some(quoted) => {
                let mut value = String::new();
                let mut chars = quoted.char_indices();
                let mut end = quoted.len();
                while let Some((at, c)) = chars.next() {
                    match c {
                        '\\' => value.extend(chars.next().map(|(_, escaped)| escaped)),
                        '"' => {
                            end = at + 1;
                            break;
                        }
                        c => value.push(c),
                    }
                }
                (value, &quoted[end..])
            }
            None => {
                let end = rest.find(',').unwrap_or(rest.len());
                (rest[..end].trim().to_owned(), &rest[end..])
            }
        };
        self.0 = rest;
        Some((name.trim().to_owned(), value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_gives_its_parameters() {
        let challenge = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", error_description="a \"quoted\" word""#,
        )
        .unwrap();
        assert_eq!(challenge.scope.as_deref(), Some("mcp:read mcp:write"));
        assert_eq!(challenge.resource_metadata.as_deref(), Some("http://h/.well-known/oauth-protected-resource/mcp"));
        assert!(challenge.insufficient_scope());
    }

    #[test]
    fn tokens_and_case_are_read_too() {
        let challenge = Challenge::parse("bearer realm=mcp,error=invalid_token").unwrap();
        assert_eq!(challenge.error.as_deref(), Some("invalid_token"));
        assert_eq!(challenge.scope, None);
        assert!(!challenge.insufficient_scope());
    }

    #[test]
    fn a_dpop_challenge_among_several_is_noticed() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.append(reqwest::header::WWW_AUTHENTICATE, r#"Bearer scope="a""#.parse().unwrap());
        headers.append(reqwest::header::WWW_AUTHENTICATE, r#"DPoP algs="ES256""#.parse().unwrap());
        let challenge = Challenge::of(&headers);
        assert_eq!(challenge.scope.as_deref(), Some("a"));
        assert!(challenge.dpop);
        assert!(!Challenge::of(&reqwest::header::HeaderMap::new()).dpop);
    }

    #[test]
    fn another_scheme_is_no_bearer_challenge() {
        assert_eq!(Challenge::parse(r#"Basic realm="x""#), None);
        assert_eq!(Challenge::parse("Bearer"), Some(Challenge::default()));
        assert_eq!(
            Challenge::parse(r#"DPoP error="use_dpop_nonce""#).unwrap().error.as_deref(),
            Some("use_dpop_nonce")
        );
    }
}
