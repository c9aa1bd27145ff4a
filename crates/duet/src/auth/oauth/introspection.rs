//! Opaque access tokens checked by asking the authorization server (RFC 7662). duet
//! authenticates as its own OAuth client (never with the caller's token), and remembers each
//! answer for a short while, keyed by the token's SHA-256 so the cache holds no token.
//! An active token must be an access token for this resource (`aud`), from the configured
//! issuer (`iss`, when given), and within its lifetime.

use super::discovery::{json_body, without_url};
use super::jwt::audience_matches;
use crate::auth::AuthError;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Client;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The most answers remembered; past it, expired ones are dropped, then all.
const CACHE_LIMIT: usize = 10_000;

type Answer = Result<Map<String, Value>, AuthError>;

/// Calls one introspection endpoint.
pub(crate) struct Introspector {
    endpoint: String,
    client_id: String,
    client_secret: String,
    client: Client,
    ttl: Duration,
    cache: Mutex<HashMap<[u8; 32], (Instant, Answer)>>,
}

impl fmt::Debug for Introspector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Introspector").field("endpoint", &self.endpoint).field("client_id", &self.client_id).finish()
    }
}

pub(crate) struct Expectations<'a> {
    pub issuer: &'a str,
    pub resource: &'a str,
    pub leeway: Duration,
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

/// RFC 6749 §2.3.1: client id and secret are form-encoded before Basic authentication.
fn basic_credentials(id: &str, secret: &str) -> (String, String) {
    (utf8_percent_encode(id, NON_ALPHANUMERIC).to_string(), utf8_percent_encode(secret, NON_ALPHANUMERIC).to_string())
}

/// Checks an introspection response against what this resource accepts.
pub(crate) fn judge(response: Map<String, Value>, expect: &Expectations<'_>) -> Answer {
    if response.get("active") != Some(&Value::Bool(true)) {
        return Err(AuthError::invalid("token is not active"));
    }
    if let Some(kind) = response.get("token_type").and_then(Value::as_str)
        && kind.eq_ignore_ascii_case("refresh_token")
    {
        return Err(AuthError::invalid("a refresh token is not an access token"));
    }
    if let Some(iss) = response.get("iss").and_then(Value::as_str)
        && iss != expect.issuer
    {
        return Err(AuthError::invalid("token issuer is not trusted"));
    }
    if !audience_matches(response.get("aud"), expect.resource) {
        return Err(AuthError::invalid("token audience is not this resource"));
    }
    let now = now_secs();
    let leeway = expect.leeway.as_secs();
    if response.get("exp").and_then(Value::as_u64).is_some_and(|exp| exp + leeway <= now) {
        return Err(AuthError::invalid("token has expired"));
    }
    if response.get("nbf").and_then(Value::as_u64).is_some_and(|nbf| nbf > now + leeway) {
        return Err(AuthError::invalid("token is not valid yet"));
    }
    Ok(response)
}

impl Introspector {
    pub fn new(endpoint: String, client_id: String, client_secret: String, client: Client, ttl: Duration) -> Self {
        Introspector { endpoint, client_id, client_secret, client, ttl, cache: Mutex::new(HashMap::new()) }
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn cached(&self, key: &[u8; 32]) -> Option<Answer> {
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.get(key).filter(|(until, _)| Instant::now() < *until).map(|(_, answer)| answer.clone())
    }

    fn remember(&self, key: [u8; 32], answer: &Answer) {
        let mut ttl = self.ttl;
        if let Ok(claims) = answer
            && let Some(exp) = claims.get("exp").and_then(Value::as_u64)
        {
            ttl = ttl.min(Duration::from_secs(exp.saturating_sub(now_secs())));
        }
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= CACHE_LIMIT {
            let now = Instant::now();
            cache.retain(|_, (until, _)| now < *until);
            if cache.len() >= CACHE_LIMIT {
                cache.clear();
            }
        }
        cache.insert(key, (Instant::now() + ttl, answer.clone()));
    }

    /// Introspects `token` (or recalls a recent answer) and judges it.
    pub async fn check(&self, token: &str, expect: &Expectations<'_>) -> Answer {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(answer) = self.cached(&key) {
            return answer;
        }
        let response = self.ask(token).await?;
        let answer = judge(response, expect);
        self.remember(key, &answer);
        answer
    }

    async fn ask(&self, token: &str) -> Result<Map<String, Value>, AuthError> {
        let (id, secret) = basic_credentials(&self.client_id, &self.client_secret);
        let sent = self
            .client
            .post(&self.endpoint)
            .basic_auth(id, Some(secret))
            .header(reqwest::header::ACCEPT, "application/json")
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .send()
            .await;
        let unavailable = |why: String| {
            tracing::warn!("token introspection failed: {why}");
            AuthError::unavailable("the authorization server could not check the token")
        };
        let response = sent.map_err(|e| unavailable(format!("cannot reach {}: {}", self.endpoint, without_url(&e))))?;
        match json_body(&self.endpoint, response).await.map_err(unavailable)? {
            Value::Object(map) => Ok(map),
            _ => Err(unavailable(format!("{} did not answer a JSON object", self.endpoint))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn judged(response: Value) -> Result<(), AuthError> {
        let expect = Expectations {
            issuer: "https://as.example.com",
            resource: "https://mcp.example.com/mcp",
            leeway: Duration::from_secs(5),
        };
        judge(response.as_object().cloned().unwrap_or_default(), &expect).map(|_| ())
    }

    #[test]
    fn introspection_answers_are_judged() {
        let exp = now_secs() + 60;
        let good = json!({"active": true, "aud": "https://mcp.example.com/mcp", "iss": "https://as.example.com",
                          "exp": exp, "scope": "mcp:tools", "token_type": "Bearer"});
        assert_eq!(judged(good.clone()), Ok(()));
        let with = |k: &str, v: Value| {
            let mut r = good.clone();
            r[k] = v;
            judged(r)
        };
        assert_eq!(judged(json!({"active": false})), Err(AuthError::invalid("token is not active")));
        assert_eq!(
            with("aud", json!("https://other/mcp")),
            Err(AuthError::invalid("token audience is not this resource"))
        );
        assert_eq!(with("iss", json!("https://evil")), Err(AuthError::invalid("token issuer is not trusted")));
        assert_eq!(with("exp", json!(now_secs() - 60)), Err(AuthError::invalid("token has expired")));
        assert!(with("token_type", json!("refresh_token")).is_err());
        let mut no_aud = good.clone();
        no_aud.as_object_mut().map(|r| r.remove("aud"));
        assert_eq!(judged(no_aud), Err(AuthError::invalid("token audience is not this resource")));
    }

    #[test]
    fn credentials_are_form_encoded() {
        assert_eq!(basic_credentials("duet rs", "s3:cr%t"), ("duet%20rs".into(), "s3%3Acr%25t".into()));
    }
}
