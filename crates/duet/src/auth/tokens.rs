//! Static bearer tokens. `--auth-token TOKEN[:ROLES[:ID]]` (or `env:VAR[:ROLES[:ID]]`, so
//! the secret stays off the command line) names a secret and the principal it stands for
//! (`token:ID`, [`Principal::token`]); [`TokenAuth`] turns an `Authorization: Bearer …`
//! header back into that principal.
//!
//! Secrets are handled so they cannot leak: only their SHA-256 digests are stored, a lookup
//! compares the probe against every entry in constant time, and neither `Debug` output nor
//! error messages ever contain a token.

use crate::layer::Principal;
use sha2::{Digest, Sha256};
use std::fmt;
use subtle::{ConditionallySelectable, ConstantTimeEq};

/// A parsed `TOKEN[:ROLES[:ID]]` or `env:VAR[:ROLES[:ID]]` spec.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenSpec {
    /// The token a client presents.
    pub token: String,
    /// Who it stands for.
    pub principal: Principal,
}

impl fmt::Debug for TokenSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSpec").field("token", &"<redacted>").field("principal", &self.principal).finish()
    }
}

/// Why a token spec was refused. No message carries the token itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenSpecError {
    /// The token part of the spec is empty (`""`, `":role"`).
    #[error("Empty auth token")]
    EmptyToken,
    /// More than two `:` separate the fields: a `:` inside the token, a role or the id cannot
    /// be told from a separator (`tok:mcp:tools:alice`), so the spec is refused rather than
    /// read one way.
    #[error(
        "Auth token spec has more than three ':'-separated fields: the form is TOKEN[:ROLES[:ID]] or \
         env:VAR[:ROLES[:ID]], and neither the token, a role nor the id may contain ':' (give a token that \
         holds ':' through env:VAR)"
    )]
    Ambiguous,
    /// `env:VAR…` names a variable that is unset, empty or not UTF-8.
    #[error("Environment variable '{0}' for an auth token is empty")]
    EmptyEnvironmentVariable(String),
    /// The token has blanks at either end (a variable's trailing newline) or a character
    /// that is not visible ASCII, so no `Authorization` header could carry it.
    #[error(
        "Auth token has blanks at either end or a character that is not visible ASCII: no Authorization header can carry it"
    )]
    Unpresentable,
}

/// Parses a token spec, reading `env:VAR` tokens from the process environment.
pub fn parse_token_spec(spec: &str) -> Result<TokenSpec, TokenSpecError> {
    parse_token_spec_with(spec, |name| std::env::var(name).ok())
}

/// Parses a token spec, reading `env:VAR` tokens through `env`.
///
/// The spec is at most three fields separated by `:` (after the `env:` of the second form),
/// and a spec with more `:` is refused ([`TokenSpecError::Ambiguous`]): none of the fields
/// may hold one. ROLES is a comma list; `default` is always added. An empty ID becomes the
/// first 8 hex digits of the token's SHA-256.
pub fn parse_token_spec_with(spec: &str, env: impl Fn(&str) -> Option<String>) -> Result<TokenSpec, TokenSpecError> {
    let (token, roles, id) = match spec.strip_prefix("env:") {
        Some(rest) => {
            let (variable, roles, id) = split_spec(rest)?;
            let token = env(variable)
                .filter(|value| !value.is_empty())
                .ok_or_else(|| TokenSpecError::EmptyEnvironmentVariable(variable.to_owned()))?;
            (token, roles, id)
        }
        None => {
            let (token, roles, id) = split_spec(spec)?;
            (token.to_owned(), roles, id)
        }
    };
    if token.is_empty() {
        return Err(TokenSpecError::EmptyToken);
    }
    if !presentable(&token) {
        return Err(TokenSpecError::Unpresentable);
    }
    let id = if id.is_empty() { default_id(&token) } else { id.to_owned() };
    let roles = roles.split(',').map(str::trim).filter(|role| !role.is_empty());
    let principal = Principal::token(&id, roles).with_attribute("auth", "bearer");
    Ok(TokenSpec { token, principal })
}

/// Whether a client can send `token` as `Authorization: Bearer TOKEN`: a header is read as
/// visible ASCII, and [`bearer_token`] trims blanks from its ends.
fn presentable(token: &str) -> bool {
    token.trim_ascii() == token && token.bytes().all(|b| b.is_ascii_graphic() || b == b' ' || b == b'\t')
}

/// `TOKEN[:ROLES[:ID]]`; missing fields are empty, and more than three are refused.
fn split_spec(spec: &str) -> Result<(&str, &str, &str), TokenSpecError> {
    let mut fields = spec.split(':');
    let (token, roles, id) = (fields.next().unwrap_or_default(), fields.next(), fields.next());
    if fields.next().is_some() {
        return Err(TokenSpecError::Ambiguous);
    }
    Ok((token, roles.unwrap_or_default(), id.unwrap_or_default()))
}

/// The first 8 hex digits of SHA-256(token): stable, and useless for recovering the token.
fn default_id(token: &str) -> String {
    let digest = digest(token);
    hex::encode(&digest[..4])
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The configured bearer tokens.
///
/// Stores SHA-256 digests only; lookup compares against every entry in constant time
/// ([`subtle::ConstantTimeEq`]), last match wins, and returns a clone.
#[derive(Clone, Default)]
pub struct TokenAuth {
    entries: Vec<([u8; 32], Principal)>,
}

impl fmt::Debug for TokenAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenAuth").field("tokens", &self.entries.len()).finish()
    }
}

impl TokenAuth {
    /// Accepts `token` for `principal`, which is used exactly as given.
    pub fn add(&mut self, token: &str, principal: Principal) {
        self.entries.push((digest(token), principal));
    }

    /// Builds the table from `--auth-token` specs; the first bad spec is the error.
    pub fn from_specs<I: IntoIterator<Item = S>, S: AsRef<str>>(specs: I) -> Result<Self, TokenSpecError> {
        let mut auth = Self::default();
        for spec in specs {
            let TokenSpec { token, principal } = parse_token_spec(spec.as_ref())?;
            auth.add(&token, principal);
        }
        Ok(auth)
    }

    /// The principal `token` stands for. Every entry is compared, whatever matches, so the
    /// time taken says nothing about which entry (if any) matched.
    pub fn lookup(&self, token: &str) -> Option<Principal> {
        let probe = digest(token);
        // 0 = no match, otherwise index + 1 of the last matching entry.
        let mut found = 0u64;
        for (index, (stored, _)) in self.entries.iter().enumerate() {
            let candidate = index as u64 + 1;
            found = u64::conditional_select(&found, &candidate, stored.ct_eq(&probe));
        }
        let index = usize::try_from(found).ok()?.checked_sub(1)?;
        self.entries.get(index).map(|(_, principal)| principal.clone())
    }

    /// From an `Authorization` header value: only `Bearer <token>` (scheme
    /// case-insensitive, token trimmed).
    pub fn authenticate(&self, authorization: Option<&str>) -> Option<Principal> {
        self.lookup(bearer_token(authorization?)?)
    }

    /// How many tokens it knows.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it knows none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[async_trait::async_trait]
impl super::Authenticator for TokenAuth {
    /// Static tokens stand for their principal wherever they are presented.
    async fn authenticate(&self, token: &str, _resource: Option<&str>) -> Result<Principal, super::AuthError> {
        self.lookup(token).ok_or_else(|| super::AuthError::invalid("unknown token"))
    }
}

/// The token of a `Bearer <token>` header value; `None` for any other scheme or an empty
/// token.
pub fn bearer_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.trim_start().split_once(|c: char| c.is_ascii_whitespace())?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn parse(spec: &str) -> TokenSpec {
        parse_token_spec_with(spec, |name| (name == "CLOUDG_MCP_TOKEN" || name == "VAR").then(|| "from-env".to_owned()))
            .unwrap_or_else(|error| panic!("{spec:?} should parse: {error}"))
    }

    fn roles(spec: &TokenSpec) -> Vec<&str> {
        spec.principal.roles.iter().map(String::as_str).collect()
    }

    fn assert_parses(spec: &str, token: &str, id: &str, expected_roles: &[&str]) {
        let parsed = parse(spec);
        assert_eq!(parsed.token, token, "token of {spec:?}");
        assert_eq!(parsed.principal.id, id, "id of {spec:?}");
        assert_eq!(roles(&parsed), expected_roles, "roles of {spec:?}");
        assert_eq!(
            parsed.principal.attributes.get("auth"),
            Some(&serde_json::json!("bearer")),
            "attributes of {spec:?}"
        );
    }

    #[test]
    fn default_ids_are_sha256_prefixes() {
        assert_eq!(default_id("s3cret"), "1ec1c26b");
        assert_eq!(default_id("abc"), "ba7816bf");
    }

    /// The forms of `--auth-token`: (spec, token, principal id, roles).
    #[test]
    fn the_table_of_token_specs() {
        for (spec, token, id, roles) in [
            ("s3cret", "s3cret", "token:1ec1c26b", &["default"][..]),
            ("s3cret:analyst", "s3cret", "token:1ec1c26b", &["analyst", "default"]),
            ("s3cret:analyst,admin:alice", "s3cret", "token:alice", &["admin", "analyst", "default"]),
            ("s3cret::alice", "s3cret", "token:alice", &["default"]),
            ("env:CLOUDG_MCP_TOKEN:analyst:ci-bot", "from-env", "token:ci-bot", &["analyst", "default"]),
            ("abc:def", "abc", "token:ba7816bf", &["def", "default"]),
            ("abc:def:", "abc", "token:ba7816bf", &["def", "default"]),
            ("env:VAR::bot", "from-env", "token:bot", &["default"]),
        ] {
            assert_parses(spec, token, id, roles);
        }
    }

    /// Found by the security review: `tok:mcp:tools:alice` became the token `tok:mcp` with
    /// the role `tools`. A spec with a `:` the fields cannot hold is refused, whatever the
    /// `:` was meant to be part of, and the message names the form without the token.
    #[test]
    fn a_spec_read_more_than_one_way_is_refused() {
        for spec in ["tok:mcp:tools:alice", "abc:def::", "a:b:c:analyst:svc", "env:VAR:a:b:c", "tok:::"] {
            let error = parse_token_spec_with(spec, |_| Some("from-env".into())).err();
            assert_eq!(error, Some(TokenSpecError::Ambiguous), "{spec:?}");
        }
        let message = TokenSpecError::Ambiguous.to_string();
        assert!(message.contains("TOKEN[:ROLES[:ID]]") && message.contains("env:VAR[:ROLES[:ID]]"), "{message}");
    }

    #[test]
    fn env_default_id_hashes_the_value_not_the_name() {
        let parsed = parse("env:VAR");
        assert_eq!(parsed.principal.id, format!("token:{}", default_id("from-env")));
    }

    #[test]
    fn roles_are_trimmed_and_empties_dropped() {
        assert_parses("tok: analyst , ,admin,:id", "tok", "token:id", &["admin", "analyst", "default"]);
    }

    #[test]
    fn empty_token_is_refused() {
        for spec in [":role", "", "::id", ":a:b"] {
            let error = parse_token_spec_with(spec, |_| None).err();
            assert_eq!(error, Some(TokenSpecError::EmptyToken), "{spec:?}");
        }
        assert_eq!(TokenSpecError::EmptyToken.to_string(), "Empty auth token");
    }

    #[test]
    fn unset_or_empty_env_var_is_refused() {
        let unset = parse_token_spec_with("env:MISSING:analyst", |_| None).err();
        assert_eq!(unset, Some(TokenSpecError::EmptyEnvironmentVariable("MISSING".into())));
        let empty = parse_token_spec_with("env:EMPTY", |_| Some(String::new())).err();
        let message = empty.map(|error| error.to_string());
        assert_eq!(message.as_deref(), Some("Environment variable 'EMPTY' for an auth token is empty"));
    }

    /// Found by fuzzing (the token_spec target): a token no client could send
    /// (a variable's trailing newline, blanks at either end, non-ASCII) was accepted, and
    /// then every request was refused with 401.
    #[test]
    fn a_token_no_header_can_carry_is_refused() {
        let refused = |spec: &str, env: &str| {
            let error = parse_token_spec_with(spec, |_| Some(env.to_owned())).err();
            assert_eq!(error, Some(TokenSpecError::Unpresentable), "{spec:?} with {env:?}");
        };
        refused("env:TOKEN", "s3cret\n");
        refused("env:TOKEN:analyst", " s3cret");
        refused(" s3cret", "");
        refused("s3cret\t:analyst", "");
        refused("p\u{e4}ss:admin", "");
        refused("nul\0:admin", "");
        assert_parses("two words:analyst", "two words", "token:a03f1d61", &["analyst", "default"]);
        let error = parse_token_spec_with("env:TOKEN", |_| Some("s3cret\n".into())).err().map(|e| e.to_string());
        assert!(error.is_some_and(|e| !e.contains("s3cret")), "the message never shows the token");
    }

    #[test]
    fn process_environment_is_read() {
        let parsed = parse_token_spec("plain:analyst").ok();
        assert_eq!(parsed.map(|spec| spec.token), Some("plain".to_owned()));
        let missing = parse_token_spec("env:DUET_TEST_SURELY_UNSET_VARIABLE_4711").err();
        assert!(matches!(missing, Some(TokenSpecError::EmptyEnvironmentVariable(_))));
    }

    #[test]
    fn lookup_finds_the_principal_and_refuses_wrong_tokens() {
        let auth = TokenAuth::from_specs(["s3cret:analyst:alice", "other"]).expect("valid specs");
        assert_eq!(auth.len(), 2);
        let alice = auth.lookup("s3cret");
        assert_eq!(alice.as_ref().map(|p| p.id.as_str()), Some("token:alice"));
        assert!(alice.is_some_and(|p| p.has_role("analyst") && p.has_role("default")));
        assert_eq!(auth.lookup("wrong"), None);
        assert_eq!(auth.lookup(""), None);
        assert_eq!(auth.lookup("s3cret "), None);
        assert_eq!(TokenAuth::default().lookup("s3cret"), None);
        assert!(TokenAuth::default().is_empty());
    }

    #[test]
    fn lookup_returns_a_copy_and_last_match_wins() {
        let mut auth = TokenAuth::default();
        auth.add("tok", Principal::new("first", ["a"]));
        auth.add("tok", Principal::new("second", ["b"]));
        let mut found = auth.lookup("tok");
        assert_eq!(found.as_ref().map(|p| p.id.as_str()), Some("second"));
        if let Some(principal) = found.as_mut() {
            principal.id = "mutated".into();
        }
        assert_eq!(auth.lookup("tok").map(|p| p.id), Some("second".into()));
    }

    #[test]
    fn added_principals_are_kept_as_given() {
        let mut auth = TokenAuth::default();
        let principal =
            Principal { id: "bare".into(), roles: BTreeSet::from(["only".to_owned()]), attributes: Default::default() };
        auth.add("tok", principal.clone());
        assert_eq!(auth.lookup("tok"), Some(principal));
    }

    #[test]
    fn from_specs_reports_the_first_bad_spec() {
        let error = TokenAuth::from_specs(["good", ":role"]).err();
        assert_eq!(error, Some(TokenSpecError::EmptyToken));
    }

    #[test]
    fn authenticate_accepts_only_bearer() {
        let auth = TokenAuth::from_specs(["s3cret:analyst"]).expect("valid specs");
        let id = |header: Option<&str>| auth.authenticate(header).map(|p| p.id);
        assert_eq!(id(Some("Bearer s3cret")), Some("token:1ec1c26b".into()));
        assert_eq!(id(Some("bearer  s3cret ")), Some("token:1ec1c26b".into()));
        assert_eq!(id(Some("BEARER\ts3cret")), Some("token:1ec1c26b".into()));
        assert_eq!(id(Some("Basic abc")), None);
        assert_eq!(id(Some("Basic s3cret")), None);
        assert_eq!(id(Some("s3cret")), None);
        assert_eq!(id(Some("Bearer")), None);
        assert_eq!(id(Some("Bearer ")), None);
        assert_eq!(id(Some("Bearer wrong")), None);
        assert_eq!(id(None), None);
    }

    #[test]
    fn bearer_token_extraction() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bEaReR   abc  "), Some("abc"));
        assert_eq!(bearer_token("Bearerabc"), None);
        assert_eq!(bearer_token("Token abc"), None);
        assert_eq!(bearer_token(""), None);
    }

    #[test]
    fn secrets_never_appear_in_debug_or_errors() {
        let secret = "s3cret-value";
        let spec = parse(&format!("{secret}:analyst"));
        assert!(!format!("{spec:?}").contains(secret));
        let auth = TokenAuth::from_specs([format!("{secret}:analyst")]).expect("valid specs");
        let debug = format!("{auth:?}");
        assert_eq!(debug, "TokenAuth { tokens: 1 }");
        let empty_env = parse_token_spec_with("env:VAR", |_| Some(String::new())).err();
        let errors = [
            parse_token_spec_with(&format!(":{secret}"), |_| None).err(),
            parse_token_spec_with(&format!("::{secret}"), |_| None).err(),
            empty_env,
        ];
        for error in errors.into_iter().flatten() {
            assert!(!error.to_string().contains(secret), "{error}");
            assert!(!format!("{error:?}").contains(secret), "{error:?}");
        }
    }
}
