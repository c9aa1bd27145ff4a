//! `duet serve` behind a real authorization server, through its command line: the
//! `--oauth-*` and `--scope-map` options, the environment's introspection credentials, and
//! the start-up errors (exit 2, with the reason) of configurations that cannot work.
//!
//! Runs the `duet` binary: `DUET_BIN`, else `target/debug/duet` (build it first with
//! `cargo build -p duet-cli`; `scripts/oauth-tests.sh` and `test.sh` do).

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
    let args = ["--oauth-issuer", &provider.issuer, "--scope-map", map.to_str().expect("utf-8 path")];
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

    let without_issuer = refused(&["--oauth-audience", "https://mcp.example.com/mcp"], &[]).await;
    assert!(without_issuer.contains("--oauth-issuer"), "{without_issuer}");

    provider.stop().await;
    let _ = std::fs::remove_file(&keys);
    let _ = std::fs::remove_file(&bad_map);
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
