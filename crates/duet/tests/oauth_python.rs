//! The official Python SDK client (PyPI `mcp` 2.3.0) finds its way to a token on its own:
//! its client-credentials OAuth provider makes the discovery a real client makes (401 →
//! Protected Resource Metadata → authorization server metadata → token with the `resource`
//! parameter → retry) against `duet serve` behind `oidc-provider`, calls a tool, and steps
//! up its scopes after a 403 `insufficient_scope` — in both protocol eras.
//!
//! Needs the SDK's virtual environment (`scripts/oauth-tests.sh` makes it and runs this
//! with `--include-ignored`): `DUET_OAUTH_PYTHON`, else `target/python-interop/bin/python`.

mod oauth_support;

use oauth_support::cli::{Started, serve};
use oauth_support::*;
use serde_json::{Value, json};
use std::path::PathBuf;

fn python() -> PathBuf {
    let python = std::env::var("DUET_OAUTH_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("target/python-interop/bin/python"));
    assert!(python.exists(), "{} is missing: run scripts/oauth-tests.sh", python.display());
    python
}

#[tokio::test]
#[ignore = "needs the Python SDK's virtual environment: scripts/oauth-tests.sh runs it"]
async fn the_python_sdk_client_discovers_authenticates_and_steps_up() {
    let keys = scratch("keys.json");
    let provider = Provider::start(&keys).await;
    let map = scratch("scopes.toml");
    std::fs::write(&map, CLI_SCOPE_MAP).expect("scope map written");
    let args = ["--oauth-issuer", &provider.issuer, "--scope-map", map.to_str().expect("utf-8 path")];
    let Started::Listening { child, url } = serve(&args, &[]).await else { panic!("duet did not start") };

    let script = repo_root().join("tests/oauth/python_client.py");
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(90),
        tokio::process::Command::new(python()).arg(&script).arg(&url).arg(&provider.issuer).output(),
    )
    .await
    .expect("the Python client finishes within 90 s")
    .expect("the Python client runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the Python client failed:\n{stderr}");
    let runs: Vec<Value> = serde_json::from_slice(&output.stdout).expect("one JSON document");
    assert_eq!(runs.len(), 2);

    let base = url.trim_end_matches("/mcp");
    for run in &runs {
        let mode = run["mode"].as_str().unwrap_or_default();
        assert!(run["tools"].as_array().is_some_and(|t| t.contains(&json!("echo")) && !t.contains(&json!("linked"))));
        assert_eq!(run["echo"], json!({"text": format!("hello over {mode}")}), "{mode}");
        assert_eq!(run["linked_error"], json!(false), "{mode}: {run}");
        assert_eq!(run["linked"][0]["text"], "see the link", "{mode}");
        assert!(run["tools_after_step_up"].as_array().is_some_and(|t| t.contains(&json!("linked"))), "{mode}");

        // The discovery, request by request.
        let requests = run["requests"].as_array().expect("the request log");
        let steps: Vec<(String, String, u64)> = requests
            .iter()
            .map(|r| {
                let u = r["url"].as_str().unwrap_or_default();
                (r["method"].as_str().unwrap_or_default().to_owned(), u.to_owned(), r["status"].as_u64().unwrap_or(0))
            })
            .collect();
        let prm = format!("{base}/.well-known/oauth-protected-resource/mcp");
        let asm = format!("{}/.well-known/oauth-authorization-server", provider.issuer);
        let token = format!("{}/token", provider.issuer);
        let expected_start = [
            ("POST", url.as_str(), 401),
            ("GET", prm.as_str(), 200),
            ("GET", asm.as_str(), 200),
            ("POST", token.as_str(), 200),
            ("POST", url.as_str(), 200),
        ];
        for (i, (method, at, status)) in expected_start.iter().enumerate() {
            let step = &steps[i];
            assert_eq!(
                (step.0.as_str(), step.1.as_str(), step.2),
                (*method, *at, *status),
                "{mode} step {i}: {steps:?}"
            );
        }
        let tokens: Vec<&Value> = requests.iter().filter(|r| r["url"] == json!(token)).map(|r| &r["form"]).collect();
        assert_eq!(tokens.len(), 2, "a first token and a stepped-up one: {steps:?}");
        for form in &tokens {
            assert_eq!(form["grant_type"], "client_credentials");
            assert_eq!(form["resource"], json!(url), "RFC 8707: the token is asked for duet");
        }
        assert_eq!(tokens[0]["scope"], "mcp:tools", "the 401 challenge's scope");
        assert_eq!(tokens[1]["scope"], "mcp:tools mcp:admin", "the union after insufficient_scope");
        let forbidden = steps.iter().filter(|s| s.2 == 403).count();
        assert_eq!(forbidden, 1, "one 403 step-up: {steps:?}");
    }

    drop(child);
    provider.stop().await;
    let _ = std::fs::remove_file(&keys);
    let _ = std::fs::remove_file(&map);
}
