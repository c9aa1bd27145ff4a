//! JWT access tokens (RFC 9068) checked locally: the signature against the authorization
//! server's keys (RS*, PS*, ES256/384, EdDSA; never `none` or a shared secret), `iss`
//! exactly the configured issuer, `exp` and `nbf` within a small leeway, and `aud` naming
//! this server's canonical URI (RFC 8707). The crypto is `jsonwebtoken`'s.

use super::jwks::Jwks;
use crate::auth::AuthError;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation, decode, decode_header};
use serde_json::{Map, Value};
use std::time::Duration;
use url::Url;

/// What a token must satisfy.
pub(crate) struct Expectations<'a> {
    pub issuer: &'a str,
    pub resource: &'a str,
    pub leeway: Duration,
    pub algorithms: &'a [Algorithm],
}

/// Whether `token` has the shape of a JWS compact serialization with a JSON header.
pub(crate) fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3 && decode_header(token).is_ok()
}

fn reason(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "token has expired".into(),
        ErrorKind::ImmatureSignature => "token is not valid yet".into(),
        ErrorKind::InvalidIssuer => "token issuer is not trusted".into(),
        ErrorKind::InvalidSignature => "invalid token signature".into(),
        ErrorKind::InvalidAlgorithm => "token algorithm does not match its key".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("token has no {claim} claim"),
        ErrorKind::InvalidAudience => "token audience is not this resource".into(),
        ErrorKind::Base64(_) | ErrorKind::Json(_) | ErrorKind::Utf8(_) | ErrorKind::InvalidToken => {
            "malformed token".into()
        }
        _ => "invalid token".into(),
    }
}

/// Whether the `aud` claim (a string or an array) names `resource`.
pub(crate) fn audience_matches(aud: Option<&Value>, resource: &str) -> bool {
    match aud {
        Some(Value::String(one)) => same_resource(one, resource),
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).any(|a| same_resource(a, resource)),
        _ => false,
    }
}

/// Verifies `token` and returns its claims.
pub(crate) async fn verify(
    jwks: &Jwks,
    token: &str,
    expect: &Expectations<'_>,
) -> Result<Map<String, Value>, AuthError> {
    let header = decode_header(token).map_err(|_| AuthError::invalid("malformed token"))?;
    if !expect.algorithms.contains(&header.alg) {
        return Err(AuthError::invalid(format!("token algorithm {:?} is not accepted", header.alg)));
    }
    let keys = jwks.candidates(header.kid.as_deref(), header.alg).await?;
    let mut validation = Validation::new(header.alg);
    validation.leeway = expect.leeway.as_secs();
    validation.validate_nbf = true;
    validation.validate_aud = false; // checked below, canonically
    validation.set_issuer(&[expect.issuer]);
    validation.set_required_spec_claims(&["exp", "iss"]);
    let mut last = AuthError::invalid("invalid token signature");
    for key in keys {
        match decode::<Map<String, Value>>(token, &key.key, &validation) {
            Ok(data) => {
                if !data.claims.contains_key("aud") {
                    return Err(AuthError::invalid("token has no aud claim"));
                }
                if !audience_matches(data.claims.get("aud"), expect.resource) {
                    return Err(AuthError::invalid("token audience is not this resource"));
                }
                return Ok(data.claims);
            }
            // Without a kid several keys may fit: try the next one.
            Err(e) if matches!(e.kind(), ErrorKind::InvalidSignature) => last = AuthError::invalid(reason(e.kind())),
            Err(e) => return Err(AuthError::invalid(reason(e.kind()))),
        }
    }
    Err(last)
}

/// Whether two resource URIs name the same resource: scheme and host compare
/// case-insensitively, a default port equals its absence, and a trailing slash does not
/// count (RFC 8707 §2, RFC 3986 §6.2.3).
pub(super) fn same_resource(a: &str, b: &str) -> bool {
    match (Url::parse(a), Url::parse(b)) {
        (Ok(a), Ok(b)) => {
            a.scheme() == b.scheme()
                && a.host_str().map(str::to_ascii_lowercase) == b.host_str().map(str::to_ascii_lowercase)
                && a.port_or_known_default() == b.port_or_known_default()
                && a.path().trim_end_matches('/') == b.path().trim_end_matches('/')
                && a.query() == b.query()
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::super::jwks::{Jwks, parse_keys};
    use super::*;
    use jsonwebtoken::jwk::{Jwk, JwkSet};
    use jsonwebtoken::{EncodingKey, Header, encode, get_current_timestamp};
    use serde_json::json;

    // Throwaway keys made for these tests (`openssl genpkey`), never used anywhere else.
    const EC_P256: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg0fTa+zE4bAMFgZhw
FjFPcOMgbQxG83h5f80cl9Gsr82hRANCAARPcTh+1mqKvyF78FpX/RHQ4sqL2ECE
RoOi3vJyr8dPC5kEDfWQ36/voGaCbrsIWLimxVuw24qOhKX9+K37rUvH
-----END PRIVATE KEY-----
";
    const ED25519: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIHqf4EkysukcJViIUsFCFv9/cxca71gYtPfwe3lpqvff
-----END PRIVATE KEY-----
";

    const ISSUER: &str = "https://as.example.com";
    const RESOURCE: &str = "https://mcp.example.com/mcp";

    fn keypair(pem: &str, alg: Algorithm, kid: &str) -> (EncodingKey, Jwk) {
        let key = match alg {
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
            _ => EncodingKey::from_ec_pem(pem.as_bytes()),
        }
        .expect("test key");
        let mut jwk = Jwk::from_encoding_key(&key, alg).expect("public jwk");
        jwk.common.key_id = Some(kid.into());
        (key, jwk)
    }

    fn jwks(jwks: &[&Jwk]) -> Jwks {
        let set = JwkSet { keys: jwks.iter().map(|k| (*k).clone()).collect() };
        Jwks::fixed(parse_keys(serde_json::to_value(set).expect("jwks json")).expect("keys"))
    }

    fn token(key: &EncodingKey, alg: Algorithm, kid: &str, claims: Value) -> String {
        let mut header = Header::new(alg);
        header.kid = Some(kid.into());
        header.typ = Some("at+jwt".into());
        encode(&header, &claims, key).expect("signed")
    }

    fn claims(extra: Value) -> Value {
        let now = get_current_timestamp();
        let mut c = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "client-1", "exp": now + 60, "iat": now,
                           "scope": "mcp:tools"});
        for (k, v) in extra.as_object().into_iter().flatten() {
            c[k] = v.clone();
        }
        c
    }

    const ALL: &[Algorithm] = &[Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];

    fn expect() -> Expectations<'static> {
        Expectations { issuer: ISSUER, resource: RESOURCE, leeway: Duration::from_secs(5), algorithms: ALL }
    }

    async fn check(keys: &Jwks, token: &str) -> Result<String, AuthError> {
        verify(keys, token, &expect()).await.map(|c| c["sub"].as_str().unwrap_or_default().to_owned())
    }

    #[tokio::test]
    async fn es256_and_eddsa_tokens_verify() {
        let (ec, ec_jwk) = keypair(EC_P256, Algorithm::ES256, "ec-1");
        let (ed, ed_jwk) = keypair(ED25519, Algorithm::EdDSA, "ed-1");
        let keys = jwks(&[&ec_jwk, &ed_jwk]);
        let es = token(&ec, Algorithm::ES256, "ec-1", claims(json!({})));
        let eddsa =
            token(&ed, Algorithm::EdDSA, "ed-1", claims(json!({"aud": ["other", "https://MCP.example.com/mcp/"]})));
        assert_eq!(check(&keys, &es).await, Ok("client-1".into()));
        assert_eq!(check(&keys, &eddsa).await, Ok("client-1".into()));
        assert!(looks_like_jwt(&es) && !looks_like_jwt("opaque-token") && !looks_like_jwt("a.b.c"));
    }

    #[tokio::test]
    async fn every_claim_is_checked() {
        let (ec, ec_jwk) = keypair(EC_P256, Algorithm::ES256, "ec-1");
        let keys = jwks(&[&ec_jwk]);
        let now = get_current_timestamp();
        let cases = [
            (json!({"exp": now - 30}), "token has expired"),
            (json!({"nbf": now + 60}), "token is not valid yet"),
            (json!({"iss": "https://evil.example.com"}), "token issuer is not trusted"),
            (json!({"aud": "https://other.example.com/mcp"}), "token audience is not this resource"),
            (json!({"aud": ["https://other.example.com/mcp"]}), "token audience is not this resource"),
        ];
        for (extra, why) in cases {
            let t = token(&ec, Algorithm::ES256, "ec-1", claims(extra.clone()));
            assert_eq!(check(&keys, &t).await, Err(AuthError::invalid(why)), "{extra}");
        }
        let within_leeway = token(&ec, Algorithm::ES256, "ec-1", claims(json!({"exp": now - 2})));
        assert!(check(&keys, &within_leeway).await.is_ok());
        let mut no_aud = claims(json!({}));
        no_aud.as_object_mut().map(|c| c.remove("aud"));
        let t = token(&ec, Algorithm::ES256, "ec-1", no_aud);
        assert_eq!(check(&keys, &t).await, Err(AuthError::invalid("token has no aud claim")));
    }

    #[tokio::test]
    async fn forged_tokens_are_refused() {
        let (ec, ec_jwk) = keypair(EC_P256, Algorithm::ES256, "ec-1");
        let (ed, _) = keypair(ED25519, Algorithm::EdDSA, "ed-1");
        let keys = jwks(&[&ec_jwk]);
        let good = token(&ec, Algorithm::ES256, "ec-1", claims(json!({})));
        let (head, signature) = good.rsplit_once('.').expect("three parts");
        let mut bytes = signature.as_bytes().to_vec();
        bytes[10] = if bytes[10] == b'A' { b'B' } else { b'A' };
        let flipped = format!("{head}.{}", String::from_utf8(bytes).expect("ascii"));
        assert_eq!(check(&keys, &flipped).await, Err(AuthError::invalid("invalid token signature")));
        let unknown = token(&ed, Algorithm::EdDSA, "ed-1", claims(json!({})));
        assert_eq!(check(&keys, &unknown).await, Err(AuthError::invalid("no signing key for this token")));
        let secret = EncodingKey::from_secret(b"k").expect("hmac key");
        let hs = encode(&Header::new(Algorithm::HS256), &claims(json!({})), &secret).expect("signed");
        assert_eq!(check(&keys, &hs).await, Err(AuthError::invalid("token algorithm HS256 is not accepted")));
        let unsigned = format!("{}.e30.", base64_url(r#"{"alg":"none"}"#));
        assert!(check(&keys, &unsigned).await.is_err());
    }

    fn base64_url(text: &str) -> String {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
    }

    #[test]
    fn resource_comparison_is_canonical() {
        assert!(same_resource("https://MCP.example.com/mcp", "https://mcp.example.com/mcp/"));
        assert!(same_resource("https://mcp.example.com:443/mcp", "https://mcp.example.com/mcp"));
        assert!(!same_resource("https://mcp.example.com/mcp", "https://mcp.example.com/other"));
        assert!(!same_resource("http://mcp.example.com/mcp", "https://mcp.example.com/mcp"));
        assert!(!same_resource("https://mcp.example.com:8443/mcp", "https://mcp.example.com/mcp"));
    }
}
