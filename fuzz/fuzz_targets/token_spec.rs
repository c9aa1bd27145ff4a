//! `--auth-token TOKEN[:ROLES[:ID]]` and `env:VAR[:ROLES[:ID]]`. Input: the spec, then
//! (second line, optional) the value every environment variable has. A spec is refused or
//! names a non-empty token and a principal with a non-empty id and the `default` role,
//! whose roles are trimmed, non-empty and free of commas; and the token is one a client can
//! present: `Authorization: Bearer TOKEN` authenticates as that principal.
#![no_main]

use duet::auth::{TokenAuth, parse_token_spec_with};
use http::HeaderValue;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let (spec, env) = match text.split_once('\n') {
        Some((spec, env)) => (spec, Some(env)),
        None => (text, None),
    };
    let Ok(spec) = parse_token_spec_with(spec, |_| env.map(str::to_owned)) else { return };
    let principal = &spec.principal;
    assert!(!spec.token.is_empty() && !principal.id.is_empty());
    assert!(principal.has_role("default"));
    for role in &principal.roles {
        assert!(!role.is_empty() && role.trim() == role && !role.contains(','), "role {role:?}");
    }
    let mut auth = TokenAuth::default();
    auth.add(&spec.token, principal.clone());
    let header = HeaderValue::from_str(&format!("Bearer {}", spec.token)).expect("a token fits in a header");
    let presented = header.to_str().expect("a token is visible ASCII");
    assert_eq!(auth.authenticate(Some(presented)).as_ref(), Some(principal), "the token authenticates");
});
