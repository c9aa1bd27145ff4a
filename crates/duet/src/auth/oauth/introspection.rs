//! Opaque access tokens checked by asking the authorization server (RFC 7662). duet
//! authenticates as its own OAuth client (never with the caller's token), and remembers each
//! answer for a short while, keyed by the token's SHA-256 so the cache holds no token; an
//! answer is judged afresh on every use, since what it must satisfy (the audience: the
//! canonical URI of the request) may differ from one request to the next. Answers that a
//! token is not active are kept apart, so a flood of made-up tokens evicts only its own
//! kind, never the answers for tokens in use. An active token must be an access token for
//! this resource (`aud`), from the configured issuer (`iss`, when given), and within its
//! lifetime. At most `max_introspections` calls are made at once; a token not in the cache
//! waits its turn, so made-up tokens cannot turn duet into a load generator against the
//! authorization server.

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
use tokio::sync::Semaphore;

/// The most answers remembered of each kind (active, not active); past it, expired ones
/// are dropped, then all of that kind.
const CACHE_LIMIT: usize = 10_000;

type Answer = Result<Map<String, Value>, AuthError>;

/// Introspection answers of one kind, each until its time is up.
struct Recent {
    limit: usize,
    answers: HashMap<[u8; 32], (Instant, Map<String, Value>)>,
}

impl Recent {
    fn new(limit: usize) -> Mutex<Recent> {
        Mutex::new(Recent { limit, answers: HashMap::new() })
    }

    fn get(&self, key: &[u8; 32]) -> Option<Map<String, Value>> {
        self.answers.get(key).filter(|(until, _)| Instant::now() < *until).map(|(_, answer)| answer.clone())
    }

    fn put(&mut self, key: [u8; 32], until: Instant, answer: Map<String, Value>) {
        if self.answers.len() >= self.limit {
            let now = Instant::now();
            self.answers.retain(|_, (until, _)| now < *until);
            if self.answers.len() >= self.limit {
                self.answers.clear();
            }
        }
        self.answers.insert(key, (until, answer));
    }
}

/// Calls one introspection endpoint.
pub(crate) struct Introspector {
    endpoint: String,
    client_id: String,
    client_secret: String,
    client: Client,
    ttl: Duration,
    active: Mutex<Recent>,
    inactive: Mutex<Recent>,
    calls: Semaphore,
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

fn lock(recent: &Mutex<Recent>) -> std::sync::MutexGuard<'_, Recent> {
    recent.lock().unwrap_or_else(|p| p.into_inner())
}

impl Introspector {
    /// `bounds`: how long an answer is reused, and how many calls may be made at once.
    pub(super) fn new(
        endpoint: String,
        client_id: String,
        client_secret: String,
        client: Client,
        (ttl, calls): (Duration, usize),
    ) -> Self {
        let (active, inactive) = (Recent::new(CACHE_LIMIT), Recent::new(CACHE_LIMIT));
        let calls = Semaphore::new(calls);
        Introspector { endpoint, client_id, client_secret, client, ttl, active, inactive, calls }
    }

    pub(super) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// A recent answer about the token whose digest is `key`.
    fn recalled(&self, key: &[u8; 32]) -> Option<Map<String, Value>> {
        lock(&self.active).get(key).or_else(|| lock(&self.inactive).get(key))
    }

    /// Remembers an answer for the cache's time, never past the token's `exp`.
    fn remember(&self, key: [u8; 32], answer: &Map<String, Value>) {
        let mut ttl = self.ttl;
        if let Some(exp) = answer.get("exp").and_then(Value::as_u64) {
            ttl = ttl.min(Duration::from_secs(exp.saturating_sub(now_secs())));
        }
        let kind = if answer.get("active") == Some(&Value::Bool(true)) { &self.active } else { &self.inactive };
        lock(kind).put(key, Instant::now() + ttl, answer.clone());
    }

    /// Introspects `token` (or recalls a recent answer) and judges it.
    pub(super) async fn check(&self, token: &str, expect: &Expectations<'_>) -> Answer {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let response = match self.recalled(&key) {
            Some(response) => response,
            None => self.fetch(token, key).await?,
        };
        judge(response, expect)
    }

    /// Asks about `token` when its turn comes, and remembers the answer.
    async fn fetch(&self, token: &str, key: [u8; 32]) -> Result<Map<String, Value>, AuthError> {
        let _turn = self.calls.acquire().await.map_err(|_| AuthError::unavailable("shutting down"))?;
        // Someone ahead in the queue may have asked about the same token.
        if let Some(response) = self.recalled(&key) {
            return Ok(response);
        }
        let response = self.ask(token).await?;
        self.remember(key, &response);
        Ok(response)
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
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

    /// A flood of made-up tokens fills the cache of answers that a token is not active, and
    /// leaves the answers for tokens in use where they are.
    #[test]
    fn made_up_tokens_never_evict_tokens_in_use() {
        let client = Client::new();
        let introspector = Introspector::new(
            "http://127.0.0.1:1/i".into(),
            "rs".into(),
            "s".into(),
            client,
            (Duration::from_secs(60), 1),
        );
        let key = |n: usize| -> [u8; 32] { Sha256::digest(n.to_string().as_bytes()).into() };
        let active = json!({"active": true, "aud": "x"}).as_object().cloned().unwrap_or_default();
        introspector.remember(key(0), &active);
        let inactive = json!({"active": false}).as_object().cloned().unwrap_or_default();
        for n in 1..=CACHE_LIMIT + 1 {
            introspector.remember(key(n), &inactive);
        }
        assert_eq!(introspector.recalled(&key(0)), Some(active));
        assert_eq!(introspector.recalled(&key(CACHE_LIMIT + 1)), Some(inactive), "not active, remembered too");
    }

    /// An introspection endpoint on a free loopback port that answers every token "not
    /// active" after holding the request a moment, and counts the calls it holds at once.
    async fn endpoint() -> (String, Arc<(AtomicUsize, AtomicUsize, AtomicUsize)>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let url = format!("http://{}/introspect", listener.local_addr().expect("bound"));
        let counts = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0)));
        let held = counts.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let counts = held.clone();
                tokio::spawn(async move {
                    let (now, most, calls) = (&counts.0, &counts.1, &counts.2);
                    let mut request = Vec::new();
                    let mut buffer = [0u8; 4096];
                    while !request.ends_with(b"token_type_hint=access_token") {
                        match stream.read(&mut buffer).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buffer[..n]),
                        }
                    }
                    calls.fetch_add(1, Ordering::SeqCst);
                    most.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    now.fetch_sub(1, Ordering::SeqCst);
                    let body = r#"{"active":false}"#;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(format!("{head}{body}").as_bytes()).await;
                });
            }
        });
        (url, counts)
    }

    /// Found by the security review: every made-up token was a call to the authorization
    /// server, as many at once as clients sent. At most `max_introspections` are made at a
    /// time, each token is asked about once, and the answer is remembered.
    #[tokio::test]
    async fn calls_to_the_authorization_server_are_bounded() {
        let (url, counts) = endpoint().await;
        let client = Client::new();
        let introspector =
            Arc::new(Introspector::new(url, "rs".into(), "s".into(), client, (Duration::from_secs(60), 2)));
        let expect = || Expectations { issuer: "https://as", resource: "https://mcp/mcp", leeway: Duration::ZERO };
        let checks: Vec<_> = (0..12)
            .map(|n| {
                let introspector = introspector.clone();
                tokio::spawn(async move { introspector.check(&format!("made-up-{}", n % 6), &expect()).await })
            })
            .collect();
        for check in checks {
            assert_eq!(check.await.expect("joined"), Err(AuthError::invalid("token is not active")));
        }
        assert_eq!(counts.2.load(Ordering::SeqCst), 6, "each token asked about once");
        assert!(counts.1.load(Ordering::SeqCst) <= 2, "at most 2 at once: {}", counts.1.load(Ordering::SeqCst));
        assert_eq!(introspector.check("made-up-0", &expect()).await, Err(AuthError::invalid("token is not active")));
        assert_eq!(counts.2.load(Ordering::SeqCst), 6, "the answer is remembered");
    }

    #[test]
    fn credentials_are_form_encoded() {
        assert_eq!(basic_credentials("duet rs", "s3:cr%t"), ("duet%20rs".into(), "s3%3Acr%25t".into()));
    }
}
