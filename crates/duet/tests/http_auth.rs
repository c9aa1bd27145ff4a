//! Bearer tokens over real sockets: 401 challenges, sessions bound to the token's
//! principal, an unauthenticated health endpoint, and principal resolvers.

pub mod http_support;

use duet::auth::RequestInfo;
use duet::auth::TokenAuth;
use duet::layer::Principal;
use duet::transport::http::HttpConfig;
use http_support::*;
use reqwest::{Method, StatusCode};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::sync::{Arc, Mutex};

fn token_config() -> HttpConfig {
    let auth = TokenAuth::from_specs(["tok-a:analyst", "tok-b"]).expect("valid token specs");
    HttpConfig { auth: Some(Arc::new(auth)), ..config() }
}

/// The id of a token principal without an explicit id.
fn token_id(token: &str) -> String {
    format!("token:{}", &hex::encode(Sha256::digest(token.as_bytes()))[..8])
}

/// What a resolver was shown: the transport and the authenticated principal.
type Seen = (&'static str, Option<Principal>);

fn expect_unauthorized(exchange: &Exchange) {
    exchange.expect_http_error(StatusCode::UNAUTHORIZED, "Unauthorized");
    assert_eq!(exchange.header("www-authenticate"), Some("Bearer realm=\"duet\""));
}

#[tokio::test]
async fn requests_need_a_valid_token() {
    let ts = TestServer::start(token_config()).await;
    let anonymous = ts.client(LATEST);
    let params = json!({"protocolVersion": LATEST, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});

    expect_unauthorized(&anonymous.post("initialize", params.clone()).send().await);
    expect_unauthorized(&anonymous.clone().with_token("tok-c").post("initialize", params.clone()).send().await);
    let basic = anonymous.clone().with_header("authorization", "Basic dG9rLWE6");
    expect_unauthorized(&basic.post("initialize", params.clone()).send().await);
    expect_unauthorized(&anonymous.get().send().await);
    assert_eq!(ts.session_count(), 0);

    let health = anonymous.request(Method::GET, "/healthz").send().await;
    health.expect_status(StatusCode::OK);
    assert_eq!(health.json, Some(json!({"status": "ok"})));

    let mut a = ts.client(LATEST).with_token("tok-a");
    a.initialize().await;
    a.call("tools/list", json!({})).await;
    // Sent without the token, the session's requests are refused before anything else.
    expect_unauthorized(&a.clone().with_header("authorization", "").post("tools/list", json!({})).send().await);
    ts.stop().await;
}

#[tokio::test]
async fn sessions_are_bound_to_the_token_principal() {
    let ts = TestServer::start(token_config()).await;
    let mut a = ts.client(LATEST).with_token("tok-a");
    a.initialize().await;
    let b_on_a = a.clone().with_token("tok-b");

    b_on_a.post("tools/list", json!({})).send().await.expect_http_error(StatusCode::NOT_FOUND, "Session not found");
    b_on_a.get().send().await.expect_http_error(StatusCode::NOT_FOUND, "Session not found");
    b_on_a.delete().send().await.expect_http_error(StatusCode::NOT_FOUND, "Session not found");
    // Still the owner's.
    a.call("tools/call", json!({"name": "echo", "arguments": {"text": "mine"}})).await;
    assert_eq!(ts.session_count(), 1);

    let mut b = ts.client(LATEST).with_token("tok-b");
    b.initialize().await;
    b.call("tools/list", json!({})).await;
    a.clone().with_session(b.session_id.as_deref().unwrap()).delete().send().await.expect_status(StatusCode::NOT_FOUND);
    assert_eq!(ts.session_count(), 2);
    ts.stop().await;
}

#[tokio::test]
async fn a_resolver_sees_the_token_principal_and_declining_keeps_it() {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let record = seen.clone();
    let config = HttpConfig {
        principal_resolver: Some(Arc::new(move |info: &RequestInfo<'_>| {
            record.lock().unwrap().push((info.transport, info.principal.cloned()));
            None
        })),
        ..token_config()
    };
    let ts = TestServer::start(config).await;

    let mut a = ts.client(LATEST).with_token("tok-a");
    a.initialize().await;
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "initialize and notifications/initialized each resolve once");
        for (transport, principal) in seen.iter() {
            assert_eq!(*transport, "http");
            let principal = principal.as_ref().expect("the resolver sees the token principal");
            assert_eq!(principal.id, token_id("tok-a"));
            assert!(principal.id.starts_with("token:") && principal.id.len() == 14, "{}", principal.id);
            assert_eq!(principal.roles.iter().map(String::as_str).collect::<Vec<_>>(), ["analyst", "default"]);
            assert_eq!(principal.attributes.get("auth"), Some(&json!("bearer")));
        }
    }
    // A refused request never reaches the resolver.
    ts.client(LATEST).post("tools/list", json!({})).send().await.expect_status(StatusCode::UNAUTHORIZED);
    assert_eq!(seen.lock().unwrap().len(), 2);

    // The resolver declined, so the session stays bound to tok-a's principal.
    a.clone().with_token("tok-b").post("tools/list", json!({})).send().await.expect_status(StatusCode::NOT_FOUND);
    a.call("tools/list", json!({})).await;
    let last = seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.1.map(|p| p.id), Some(token_id("tok-a")));
    ts.stop().await;
}

#[tokio::test]
async fn a_resolver_may_replace_the_principal() {
    let config = HttpConfig {
        principal_resolver: Some(Arc::new(|info: &RequestInfo<'_>| {
            info.principal.is_some().then(|| Principal::new("team", ["analyst"]))
        })),
        ..token_config()
    };
    let ts = TestServer::start(config).await;
    let mut a = ts.client(LATEST).with_token("tok-a");
    a.initialize().await;
    // Both tokens resolve to the same principal, which owns the session.
    a.clone().with_token("tok-b").call("tools/list", json!({})).await;
    // The token is still checked first.
    a.clone().with_token("tok-z").post("tools/list", json!({})).send().await.expect_status(StatusCode::UNAUTHORIZED);
    ts.stop().await;
}
