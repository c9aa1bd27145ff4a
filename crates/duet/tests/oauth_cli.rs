//! `duet serve` behind a real authorization server, through its command line: the
//! `--oauth-*` and `--scope-map` options, the environment's introspection credentials, and
//! the start-up errors (exit 2, with the reason) of configurations that cannot work.
//!
//! Runs the `duet` binary: `DUET_BIN`, else `target/debug/duet` (build it first with
//! `cargo build -p duet-cli --features fixtures`; `scripts/oauth-tests.sh` and `test.sh` do).

mod oauth_support;

use oauth_support::cli::{Started, duet_bin, serve};
use oauth_support::*;
use reqwest::StatusCode;
use serde_json::json;
use std::process::Stdio;
use tokio::process::Command;

async fn refused(args: &[&str], env: &[(&str, &str)]) -> String {
    match serve(args, env).await {
        Started::Exited { code, stderr } => {
            assert_eq!(code, Some(2), "a usage error exits 2: {stderr}");
            stderr
        }
        Started::Listening { url, .. } => panic!("duet {args:?} should refuse to start, but listens on {url}"),
    }
}

#[tokio::test]
async fn duet_serve_validates_tokens_of_the_configured_issuer() {
    let keys = scratch("keys.json");
    let provider = Provider::start(&keys).await;
    let map = scratch("scopes.toml");
    std::fs::write(&map, CLI_SCOPE_MAP).expect("scope map written");
    let env = [("DUET_OAUTH_CLIENT_ID", "duet-rs"), ("DUET_OAUTH_CLIENT_SECRET", "duet-rs-secret")];
    let args = [
        "--oauth-issuer",
        &provider.issuer,
        "--scope-map",
        map.to_str().expect("utf-8 path"),
        "--oauth-max-introspections",
        "4",
    ];
    let Started::Listening { child, url } = serve(&args, &env).await else { panic!("duet did not start") };

    // The challenge and the metadata.
    let none = call_tool(&url, None, "echo", json!({"text": "x"})).await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
    let prm_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    assert_eq!(none.challenge(), format!("Bearer scope=\"mcp:tools\", resource_metadata=\"{prm_url}\""));
    let prm: serde_json::Value = reqwest::get(&prm_url).await.expect("PRM").json().await.expect("JSON");
    assert_eq!(prm["resource"], json!(url), "the audience defaults to the URL duet listens at");
    assert_eq!(prm["authorization_servers"], json!([provider.issuer]));

    // A JWT, and an opaque token introspected with the environment's credentials.
    for client in ["duet-test", "opaque-client"] {
        let token = provider.token(client, &url, "mcp:tools").await;
        let answer = call_tool(&url, Some(&token), "echo", json!({"text": client})).await;
        assert_eq!(answer.result()["structuredContent"]["text"], client);
        let listed = call(&url, Some(&token), "tools/list", None, json!({})).await;
        let names: Vec<&str> =
            listed.result()["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
        assert!(names.contains(&"echo") && !names.contains(&"linked"), "{names:?}");
        let step_up = call_tool(&url, Some(&token), "linked", json!({})).await;
        assert_eq!(step_up.status, StatusCode::FORBIDDEN);
        assert_eq!(param(&step_up.challenge_params(), "scope"), Some("mcp:tools mcp:admin"));
    }
    let elsewhere = provider.token("duet-test", "http://127.0.0.1:1/mcp", "mcp:tools").await;
    let answer = call_tool(&url, Some(&elsewhere), "echo", json!({})).await;
    assert_eq!(param(&answer.challenge_params(), "error_description"), Some("token audience is not this resource"));

    // A token the authorization server never issued is asked about once, not on every use.
    let before = provider.introspections().await;
    for _ in 0..3 {
        let answer = call_tool(&url, Some("made-up-token"), "echo", json!({})).await;
        assert_eq!(param(&answer.challenge_params(), "error_description"), Some("token is not active"));
    }
    assert_eq!(provider.introspections().await - before, 1, "the answer \"not active\" is remembered");

    drop(child);
    provider.stop().await;
    let _ = std::fs::remove_file(&keys);
    let _ = std::fs::remove_file(&map);
}

#[tokio::test]
async fn configurations_that_cannot_work_are_refused_at_start() {
    let keys = scratch("keys.json");
    let provider = Provider::start(&keys).await;
    let iss = provider.issuer.as_str();

    let down = refused(&["--oauth-issuer", "http://127.0.0.1:9"], &[]).await;
    assert!(down.contains("Error: cannot use the authorization server http://127.0.0.1:9"), "{down}");
    assert!(down.contains("no authorization server metadata"), "{down}");

    let plain = refused(&["--oauth-issuer", "http://auth.example.com"], &[]).await;
    assert!(plain.contains("must use https"), "{plain}");

    let no_creds =
        refused(&["--oauth-issuer", iss, "--oauth-introspection-url", &format!("{iss}/token/introspection")], &[])
            .await;
    assert!(no_creds.contains("set DUET_OAUTH_CLIENT_ID and DUET_OAUTH_CLIENT_SECRET"), "{no_creds}");

    let half = refused(&["--oauth-issuer", iss], &[("DUET_OAUTH_CLIENT_ID", "duet-rs")]).await;
    assert!(half.contains("DUET_OAUTH_CLIENT_ID is set but DUET_OAUTH_CLIENT_SECRET is not"), "{half}");

    let wildcard = refused(&["--oauth-issuer", iss, "--host", "0.0.0.0"], &[]).await;
    assert!(wildcard.contains("--oauth-audience is required with --host 0.0.0.0"), "{wildcard}");

    let audience = refused(&["--oauth-issuer", iss, "--oauth-audience", "mcp.example.com"], &[]).await;
    assert!(audience.contains("--oauth-audience: \"mcp.example.com\" is not an absolute URL"), "{audience}");

    let jwks = refused(&["--oauth-issuer", iss, "--oauth-jwks-url", &format!("{iss}/no-such-jwks")], &[]).await;
    assert!(jwks.contains("cannot load the JWKS") && jwks.contains("HTTP 404"), "{jwks}");

    let map = refused(&["--scope-map", "/surely/missing/scopes.toml"], &[]).await;
    assert!(map.contains("cannot read the scope map /surely/missing/scopes.toml"), "{map}");

    let bad_map = scratch("bad.toml");
    std::fs::write(&bad_map, "[tool]\necho = []\n").expect("written");
    let bad = refused(&["--scope-map", bad_map.to_str().expect("utf-8")], &[]).await;
    assert!(bad.contains("invalid scope map") && bad.contains("unknown field `tool`"), "{bad}");

    let no_calls = refused(&["--oauth-issuer", iss, "--oauth-max-introspections", "0"], &[]).await;
    assert!(no_calls.contains("--oauth-max-introspections"), "{no_calls}");

    let without_issuer = refused(&["--oauth-audience", "https://mcp.example.com/mcp"], &[]).await;
    assert!(without_issuer.contains("--oauth-issuer"), "{without_issuer}");

    provider.stop().await;
    let _ = std::fs::remove_file(&keys);
    let _ = std::fs::remove_file(&bad_map);
}

/// A handshake-era request (2025-06-18) with `token`: `initialize` when `session` is `None`,
/// else `tools/list` in that session. The status, and the session id `initialize` made.
async fn handshake(url: &str, token: &str, session: Option<&str>) -> (StatusCode, Option<String>) {
    let version = "2025-06-18";
    let body = match session {
        None => json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        Some(_) => json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    };
    let mut request = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version)
        .json(&body);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.expect("duet answers");
    let id = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    (response.status(), id)
}

/// Found by the security review: a static token's id and an OAuth subject were one
/// namespace, so a JWT with `sub=alice` used the session of the static token
/// `statictok:admin:alice`. Each kind of credential (and each issuer) has its own ids now,
/// and a token that names no subject is refused rather than pooled under a shared id.
#[tokio::test]
async fn principals_of_different_credentials_never_share_state() {
    let keys = scratch("keys.json");
    let provider = Provider::start(&keys).await;
    let args = ["--auth-token", "statictok:admin:alice", "--oauth-issuer", &provider.issuer];
    let Started::Listening { child, url } = serve(&args, &[]).await else { panic!("duet did not start") };

    let (status, session) = handshake(&url, "statictok", None).await;
    assert_eq!(status, StatusCode::OK);
    let session = session.expect("a session id");
    assert_eq!(handshake(&url, "statictok", Some(&session)).await.0, StatusCode::OK, "the token's own session");
    let alice = provider.token("alice", &url, "mcp:tools").await;
    let claims =
        alice.split('.').nth(1).map(|c| base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, c));
    let claims: serde_json::Value = serde_json::from_slice(&claims.expect("a JWT").expect("base64url")).expect("JSON");
    assert_eq!(claims["sub"], "alice", "the provider's token for the client alice names the subject alice");
    assert_eq!(
        handshake(&url, &alice, Some(&session)).await.0,
        StatusCode::NOT_FOUND,
        "not the static token's session"
    );
    assert_eq!(handshake(&url, &alice, None).await.0, StatusCode::OK, "the subject alice has sessions of its own");

    // A token that names no subject stands for nobody; one that names only a client is
    // that client, and no one else either.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs();
    let minted = |extra: serde_json::Value| {
        let mut claims =
            json!({"iss": provider.issuer, "aud": url, "iat": now, "exp": now + 300, "scope": "mcp:tools"});
        claims.as_object_mut().expect("object").extend(extra.as_object().cloned().unwrap_or_default());
        provider.sign(claims)
    };
    let nobody = minted(json!({})).await;
    let answer = call_tool(&url, Some(&nobody), "echo", json!({"text": "x"})).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{answer:?}");
    let reason = "token names no subject: it has neither sub nor client_id";
    assert_eq!(param(&answer.challenge_params(), "error_description"), Some(reason));
    let client = minted(json!({"client_id": "alice"})).await;
    let answer = call_tool(&url, Some(&client), "echo", json!({"text": "c"})).await;
    assert_eq!(answer.result()["structuredContent"]["text"], "c");
    assert_eq!(handshake(&url, &client, Some(&session)).await.0, StatusCode::NOT_FOUND);

    drop(child);
    provider.stop().await;
    let _ = std::fs::remove_file(&keys);
}

/// The authority (`host:port`) of an `http://…/mcp` URL.
fn authority(url: &str) -> &str {
    url.trim_start_matches("http://").trim_end_matches("/mcp")
}

/// The Protected Resource Metadata of the server at `url` with `headers`: its `resource`,
/// and its `Cache-Control` and `Vary`.
async fn metadata(url: &str, headers: &[(&str, &str)]) -> (String, String, String) {
    let mut request = reqwest::Client::new().get(url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"));
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.expect("PRM");
    assert_eq!(response.status(), StatusCode::OK);
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let (cache, vary) = (header("cache-control"), header("vary"));
    let doc: serde_json::Value = response.json().await.expect("JSON");
    (doc["resource"].as_str().unwrap_or_default().to_owned(), cache, vary)
}

/// Found by the security review: behind `--trusted-proxy` without `--oauth-audience`, a
/// client chose the audience: its own `Forwarded` beat the proxy's `X-Forwarded-Host`, and
/// any loopback host and port would do, so a token minted for `http://127.0.0.1:9999/mcp`
/// was accepted, and the metadata named that host under `Cache-Control: public`. Only the
/// header the proxy sets is read, only hosts the operator named (by default the bound host
/// and port) make the audience, and metadata that follows a proxy is not cached.
#[tokio::test]
async fn behind_a_proxy_the_client_cannot_choose_the_audience() {
    let keys = scratch("keys.json");
    let provider = Provider::start(&keys).await;
    let env = [("DUET_OAUTH_CLIENT_ID", "duet-rs"), ("DUET_OAUTH_CLIENT_SECRET", "duet-rs-secret")];
    let args = ["--oauth-issuer", &provider.issuer, "--trusted-proxy", "127.0.0.1"];
    let Started::Listening { child, url } = serve(&args, &env).await else { panic!("duet did not start") };
    let bound = authority(&url).to_owned();

    let elsewhere = provider.token("duet-test", "http://127.0.0.1:9999/mcp", "mcp:tools").await;
    for forged in [
        [("x-forwarded-host", "127.0.0.1:9999")],
        [("forwarded", "for=192.0.2.1;host=127.0.0.1:9999")],
        [("x-forwarded-host", "localhost:9999")],
    ] {
        let answer = call_with(&url, Some(&elsewhere), "tools/list", None, json!({}), &forged).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{forged:?}: {answer:?}");
        let why = param(&answer.challenge_params(), "error_description").map(str::to_owned);
        assert_eq!(why.as_deref(), Some("token audience is not this resource"), "{forged:?}");
        let (resource, cache, vary) = metadata(&url, &forged).await;
        assert_eq!(resource, url, "{forged:?}: the metadata names the bound URL");
        assert!(!cache.contains("public") && cache.contains("no-store"), "{forged:?}: {cache}");
        assert!(vary.contains("X-Forwarded-Host"), "{vary}");
    }
    // The way a proxy that overwrites X-Forwarded-Host works: the bound host and port, or
    // another loopback name at that port, makes the canonical URL.
    let token = provider.token("duet-test", &url, "mcp:tools").await;
    for headers in [&[][..], &[("x-forwarded-host", bound.as_str())][..]] {
        let answer = call_with(&url, Some(&token), "tools/list", None, json!({}), headers).await;
        assert_eq!(answer.status, StatusCode::OK, "{headers:?}: {answer:?}");
    }
    let localhost = format!("localhost:{}", bound.rsplit(':').next().unwrap_or_default());
    let named = provider.token("duet-test", &format!("http://{localhost}/mcp"), "mcp:tools").await;
    let answer =
        call_with(&url, Some(&named), "tools/list", None, json!({}), &[("x-forwarded-host", &localhost)]).await;
    assert_eq!(answer.status, StatusCode::OK, "{answer:?}");
    assert_eq!(metadata(&url, &[("x-forwarded-host", &localhost)]).await.0, format!("http://{localhost}/mcp"));

    // An introspection answer is judged for each request's canonical URL, not reused for
    // another: the opaque token for the bound http URL, accepted there, is refused when the
    // proxy says the client came over https.
    let opaque = provider.token("opaque-client", &url, "mcp:tools").await;
    let plain = call_with(&url, Some(&opaque), "tools/list", None, json!({}), &[]).await;
    assert_eq!(plain.status, StatusCode::OK, "{plain:?}");
    let https = [("x-forwarded-host", bound.as_str()), ("x-forwarded-proto", "https")];
    let answer = call_with(&url, Some(&opaque), "tools/list", None, json!({}), &https).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{answer:?}");

    drop(child);
    provider.stop().await;
    let _ = std::fs::remove_file(&keys);
}

#[tokio::test]
async fn oauth_options_need_an_http_transport() {
    let output = Command::new(duet_bin())
        .args(["serve", "--fixtures", "testkit", "--oauth-issuer", "https://auth.example.com"])
        .stdin(Stdio::null())
        .output()
        .await
        .expect("duet runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--oauth-issuer applies to the HTTP transports"), "{stderr}");
}
