//! duet as an OAuth 2.1 resource server, against a real authorization server
//! (`oidc-provider` on 127.0.0.1): tokens minted with the client-credentials grant and the
//! `resource` parameter are accepted when they are for duet, and every way a token can be
//! wrong is refused with 401 `invalid_token` and the reason. Also the Protected Resource
//! Metadata, the 401 challenge, and 403 `insufficient_scope` with the full scope list.

mod oauth_support;

use base64::Engine;
use oauth_support::*;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

struct Setup {
    provider: Provider,
    duet: Duet,
    keys: std::path::PathBuf,
}

impl Setup {
    async fn new() -> Setup {
        let keys = scratch("keys.json");
        let provider = Provider::start(&keys).await;
        let duet = start_duet(oauth_config(&provider)).await;
        Setup { provider, duet, keys }
    }

    async fn token(&self, client: &str, scope: &str) -> String {
        self.provider.token(client, &self.duet.url, scope).await
    }

    /// Asserts that a call of `echo` with `token` is refused: 401 `invalid_token` with `reason`.
    async fn assert_echo_refused(&self, token: &str, reason: &str) {
        let answer = call_tool(&self.duet.url, Some(token), "echo", json!({})).await;
        assert_refused(&answer, reason, &self.duet);
    }

    async fn stop(self) {
        self.duet.stop().await;
        self.provider.stop().await;
        let _ = std::fs::remove_file(&self.keys);
    }
}

fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(&B64.decode(payload).expect("base64url")).expect("JSON claims")
}

fn header(token: &str) -> Value {
    let head = token.split('.').next().expect("a JWT");
    serde_json::from_slice(&B64.decode(head).expect("base64url")).expect("JSON header")
}

/// 401 with `error="invalid_token"`, the reason, and the metadata URL.
fn assert_refused(answer: &Answer, reason: &str, duet: &Duet) {
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{answer:?}");
    let params = answer.challenge_params();
    assert_eq!(param(&params, "error"), Some("invalid_token"), "{}", answer.challenge());
    assert_eq!(param(&params, "error_description"), Some(reason), "{}", answer.challenge());
    assert_eq!(param(&params, "resource_metadata"), Some(duet.resource().metadata_url().as_str()));
}

#[tokio::test]
async fn tokens_for_duet_are_accepted_in_every_algorithm() {
    let s = Setup::new().await;
    for (client, alg) in [("duet-test", "RS256"), ("es256-client", "ES256"), ("eddsa-client", "EdDSA")] {
        let token = s.token(client, "mcp:tools files:read").await;
        assert_eq!(header(&token)["alg"], alg, "the provider signs {client}'s tokens with {alg}");
        assert_eq!(claims(&token)["aud"], json!(s.duet.url), "the token names duet (resource indicator)");
        let answer = call_tool(&s.duet.url, Some(&token), "echo", json!({"text": "hi"})).await;
        assert_eq!(text(answer.result()), "hi", "{client}");
        let whoami = call_tool(&s.duet.url, Some(&token), "whoami", json!({})).await;
        let who = &whoami.result()["structuredContent"];
        let subject = format!("oauth:{}#{client}", s.provider.issuer);
        assert_eq!(who["id"], json!(subject), "the principal is the token's subject, qualified by its issuer");
        assert_eq!(who["attributes"]["scopes"], json!(["files:read", "mcp:tools"]));
        assert_eq!(who["attributes"]["auth"], "oauth");
        assert_eq!(who["attributes"]["token_format"], "jwt");
        assert!(!who.to_string().contains(&token), "the principal never holds the token");
    }
    s.stop().await;
}

#[tokio::test]
async fn an_expired_token_is_refused() {
    let s = Setup::new().await;
    let token = s.token("short-lived", "mcp:tools").await;
    let c = claims(&token);
    assert!(c["exp"].as_u64() <= c["iat"].as_u64().map(|iat| iat + 1), "a 1 s token: {c}");
    // Not tried while fresh: on a loaded machine that could race the 1 s lifetime. The
    // reason checked below tells expiry apart from every other rejection.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    s.assert_echo_refused(&token, "token has expired").await;
    s.stop().await;
}

#[tokio::test]
async fn a_token_for_another_resource_is_refused() {
    let s = Setup::new().await;
    let other = s.provider.token("duet-test", "http://127.0.0.1:1/other-mcp", "mcp:tools").await;
    assert_eq!(claims(&other)["aud"], "http://127.0.0.1:1/other-mcp");
    s.assert_echo_refused(&other, "token audience is not this resource").await;
    let opaque = s.provider.token("opaque-client", "http://127.0.0.1:1/other-mcp", "mcp:tools").await;
    s.assert_echo_refused(&opaque, "token audience is not this resource").await;
    s.stop().await;
}

#[tokio::test]
async fn a_token_of_another_issuer_is_refused() {
    let s = Setup::new().await;
    // Same keys, so the signature verifies: only the issuer differs.
    let impostor = Provider::start(&s.keys).await;
    assert_ne!(impostor.issuer, s.provider.issuer);
    let token = impostor.token("duet-test", &s.duet.url, "mcp:tools").await;
    s.assert_echo_refused(&token, "token issuer is not trusted").await;
    impostor.stop().await;
    s.stop().await;
}

#[tokio::test]
async fn a_bad_signature_is_refused() {
    let s = Setup::new().await;
    let token = s.token("duet-test", "mcp:tools").await;
    let (signed, signature) = token.rsplit_once('.').expect("a JWT");
    let mut bytes = B64.decode(signature).expect("base64url");
    bytes[7] ^= 0x01;
    let flipped = format!("{signed}.{}", B64.encode(&bytes));
    s.assert_echo_refused(&flipped, "invalid token signature").await;
    // Claims changed after signing (a wider scope) fail the same way.
    let mut widened = claims(&token);
    widened["scope"] = json!(ALL_SCOPES);
    let head = token.split('.').next().expect("a JWT");
    let forged = format!("{head}.{}.{signature}", B64.encode(widened.to_string()));
    let answer = call_tool(&s.duet.url, Some(&forged), "admin_reset", json!({})).await;
    assert_refused(&answer, "invalid token signature", &s.duet);
    s.stop().await;
}

#[tokio::test]
async fn rotated_keys_are_fetched_once_and_unknown_kids_cannot_force_fetches() {
    let s = Setup::new().await;
    let before = s.provider.jwks_downloads().await;
    assert_eq!(before, 1, "duet loaded the keys once at start");
    let kids = s.provider.rotate().await;
    let token = s.token("duet-test", "mcp:tools").await;
    assert!(kids.contains(&header(&token)["kid"].as_str().unwrap_or_default().to_owned()), "signed with a new key");
    // Past the least refresh interval (1 s here), the unknown kid makes duet refetch.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let answer = call_tool(&s.duet.url, Some(&token), "echo", json!({"text": "rotated"})).await;
    assert_eq!(text(answer.result()), "rotated");
    assert_eq!(s.provider.jwks_downloads().await, 2, "one refresh for the new kid");
    // Tokens naming kids nobody has: refused, and together they cause at most one fetch.
    let (_, rest) = token.split_once('.').expect("a JWT");
    let mut answers = Vec::new();
    for n in 0..5 {
        let mut h = header(&token);
        h["kid"] = json!(format!("forged-{n}"));
        let forged = format!("{}.{rest}", B64.encode(h.to_string()));
        answers.push(call_tool(&s.duet.url, Some(&forged), "echo", json!({})).await);
    }
    for answer in &answers {
        assert_refused(answer, "unknown signing key", &s.duet);
    }
    let after = s.provider.jwks_downloads().await;
    assert!(after <= 3, "five unknown kids caused {} fetches", after - 2);
    s.stop().await;
}

#[tokio::test]
async fn a_missing_scope_is_403_naming_every_scope_the_call_needs() {
    let s = Setup::new().await;
    let token = s.token("duet-test", "mcp:tools").await;
    let listed = call(&s.duet.url, Some(&token), "tools/list", None, json!({})).await;
    let names: Vec<&str> =
        listed.result()["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["echo", "whoami"], "admin_reset is not listed without mcp:admin");
    let answer = call_tool(&s.duet.url, Some(&token), "admin_reset", json!({})).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{answer:?}");
    let params = answer.challenge_params();
    assert_eq!(param(&params, "error"), Some("insufficient_scope"));
    assert_eq!(param(&params, "scope"), Some("mcp:tools mcp:admin"), "every scope, in one challenge");
    assert_eq!(param(&params, "resource_metadata"), Some(s.duet.resource().metadata_url().as_str()));
    assert!(answer.challenge().starts_with("Bearer error=\"insufficient_scope\""), "{}", answer.challenge());
    // Resources too: by URI pattern.
    let secret = read_resource(&s.duet.url, Some(&token), "file:///secret/key").await;
    assert_eq!(secret.status, StatusCode::FORBIDDEN);
    assert_eq!(param(&secret.challenge_params(), "scope"), Some("mcp:admin"));
    let readme = read_resource(&s.duet.url, Some(&token), "file:///public/readme").await;
    assert_eq!(param(&readme.challenge_params(), "scope"), Some("files:read"));
    // A prompt that needs nothing is open to any valid token.
    let greet = call(&s.duet.url, Some(&token), "prompts/get", Some("greet"), json!({"name": "greet"})).await;
    assert_eq!(greet.result()["messages"][0]["content"]["text"], "hello");
    // With the scopes granted, the same calls go through.
    let admin = s.token("duet-test", "mcp:tools mcp:admin files:read").await;
    assert_eq!(text(call_tool(&s.duet.url, Some(&admin), "admin_reset", json!({})).await.result()), "reset");
    let listed = call(&s.duet.url, Some(&admin), "resources/list", None, json!({})).await;
    assert_eq!(listed.result()["resources"].as_array().map(Vec::len), Some(2));
    s.stop().await;
}

#[tokio::test]
async fn an_opaque_token_is_introspected() {
    let s = Setup::new().await;
    let token = s.token("opaque-client", "mcp:tools").await;
    assert_eq!(token.split('.').count(), 1, "an opaque token, not a JWT: {token}");
    let whoami = call_tool(&s.duet.url, Some(&token), "whoami", json!({})).await;
    let who = &whoami.result()["structuredContent"];
    // The provider's introspection names the client and no subject: a client acting for itself.
    assert_eq!(who["id"], json!(format!("oauth-client:{}#opaque-client", s.provider.issuer)));
    assert_eq!(who["attributes"]["token_format"], "opaque");
    assert_eq!(who["attributes"]["scopes"], json!(["mcp:tools"]));
    s.assert_echo_refused("not-a-token-the-provider-issued", "token is not active").await;
    s.stop().await;
}

#[tokio::test]
async fn protected_resource_metadata_names_the_resource_its_server_and_scopes() {
    let s = Setup::new().await;
    let base = s.duet.url.trim_end_matches("/mcp").to_owned();
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let response = reqwest::get(format!("{base}{path}")).await.expect("metadata");
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.headers()["content-type"], "application/json");
        let doc: Value = response.json().await.expect("JSON");
        assert_eq!(
            doc,
            json!({
                "resource": s.duet.url,
                "authorization_servers": [s.provider.issuer],
                "scopes_supported": ["mcp:tools", "files:read"],
                "bearer_methods_supported": ["header"],
            }),
            "{path}"
        );
    }
    assert_eq!(s.duet.resource().metadata_url(), format!("{base}/.well-known/oauth-protected-resource/mcp"));
    s.stop().await;
}

#[tokio::test]
async fn a_request_without_a_valid_token_gets_the_challenge() {
    let s = Setup::new().await;
    let metadata = s.duet.resource().metadata_url();
    let expected = format!("Bearer scope=\"mcp:tools files:read\", resource_metadata=\"{metadata}\"");
    let none = call_tool(&s.duet.url, None, "echo", json!({})).await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
    assert_eq!(none.challenge(), expected, "no error code when no token was sent");
    let basic =
        call_with(&s.duet.url, None, "tools/list", None, json!({}), &[("authorization", "Basic ZHVldDp4")]).await;
    assert_eq!(basic.challenge(), expected);
    s.assert_echo_refused("a.b.c", "token is not active").await;
    let get = reqwest::get(&s.duet.url).await.expect("GET");
    assert_eq!(get.status(), StatusCode::UNAUTHORIZED, "every method of the endpoint needs a token");
    s.stop().await;
}

/// The discovery a real client makes, step by step: 401 → Protected Resource Metadata →
/// authorization server metadata → token with the `resource` parameter → retry.
#[tokio::test]
async fn a_client_discovers_everything_from_the_401() {
    let s = Setup::new().await;
    let http = reqwest::Client::new();
    // 1. The first call, without a token.
    let first = call_tool(&s.duet.url, None, "echo", json!({"text": "discovered"})).await;
    assert_eq!(first.status, StatusCode::UNAUTHORIZED);
    let challenge = first.challenge_params();
    let prm_url = param(&challenge, "resource_metadata").expect("resource_metadata in the challenge").to_owned();
    let scope = param(&challenge, "scope").expect("scope in the challenge").to_owned();
    // 2. The Protected Resource Metadata; its resource must be the server the client called.
    let prm: Value = http.get(&prm_url).send().await.expect("PRM").json().await.expect("PRM JSON");
    assert_eq!(prm["resource"], json!(s.duet.url));
    let issuer = prm["authorization_servers"][0].as_str().expect("an authorization server").to_owned();
    // 3. The authorization server's metadata: RFC 8414 first, then OpenID Connect.
    let mut metadata = Value::Null;
    for url in [
        format!("{issuer}/.well-known/oauth-authorization-server"),
        format!("{issuer}/.well-known/openid-configuration"),
    ] {
        let response = http.get(&url).send().await.expect("AS metadata");
        if response.status() == StatusCode::OK {
            metadata = response.json().await.expect("AS metadata JSON");
            break;
        }
    }
    assert_eq!(metadata["issuer"], json!(issuer), "RFC 8414 §3.3: the metadata names its issuer");
    let token_endpoint = metadata["token_endpoint"].as_str().expect("token_endpoint");
    // 4. A token for exactly this resource, with the scopes the challenge asked for.
    let token: Value = http
        .post(token_endpoint)
        .basic_auth("duet-test", Some("duet-test-secret"))
        .form(&[
            ("grant_type", "client_credentials"),
            ("resource", prm["resource"].as_str().unwrap_or_default()),
            ("scope", &scope),
        ])
        .send()
        .await
        .expect("token")
        .json()
        .await
        .expect("token JSON");
    assert_eq!(token["scope"], json!(scope));
    let access = token["access_token"].as_str().expect("an access token");
    // 5. The retry.
    let retry = call_tool(&s.duet.url, Some(access), "echo", json!({"text": "discovered"})).await;
    assert_eq!(text(retry.result()), "discovered");
    s.stop().await;
}
