//! `duet call` and the listings on a protected server: a duet that takes the tokens of a
//! real authorization server (`oidc-provider` on 127.0.0.1, the one the OAuth tests use).
//! A machine gets its token with its client credentials (the secret from the environment),
//! steps up when a tool needs more scope, and keeps the token in a file of mode 0600 that a
//! second run uses without any credentials. A person authorizes with no option: duet
//! registers, prints the authorization URL and waits on 127.0.0.1, while the test plays the
//! browser (the provider logs `alice` in and consents for her). And the OAuth options a
//! server URL alone takes are refused elsewhere.

#[path = "../../duet/tests/oauth_support/mod.rs"]
mod oauth_support;

use oauth_support::{Provider, oauth_config, scratch, start_duet};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::process::{Output, Stdio};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const DUET: &str = env!("CARGO_BIN_EXE_duet");

/// `duet ARGS` with `secret` (if any) as the client's secret; its output.
async fn duet(args: &[&str], secret: Option<&str>) -> Output {
    let mut command = Command::new(DUET);
    command.args(args).env_remove("DUET_CLIENT_SECRET").kill_on_drop(true);
    if let Some(secret) = secret {
        command.env("DUET_CLIENT_SECRET", secret);
    }
    // A run that fell back to a person's authorization would wait for a browser forever.
    tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .unwrap_or_else(|_| panic!("duet {args:?} ended within 60 s"))
        .expect("duet runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The access token the file keeps.
fn kept_token(path: &std::path::Path) -> String {
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(path).expect("the token file")).unwrap();
    kept["tokens"]["access_token"].as_str().expect("an access token").to_owned()
}

#[tokio::test]
async fn a_machine_calls_a_protected_server_and_a_second_run_reuses_its_token() {
    let keys = scratch("keys.json");
    let provider = Provider::start(&keys).await;
    let server = start_duet(oauth_config(&provider)).await;
    let tokens = scratch("tokens.json");
    let token_file = tokens.to_str().expect("a UTF-8 path");
    let machine = ["--client-id", "duet-test", "--client-credentials", "--token-file", token_file];

    let called =
        duet(&[&["call", &server.url, "echo", "text=hi"], &machine[..]].concat(), Some("duet-test-secret")).await;
    assert_eq!((called.status.code(), stdout(&called)), (Some(0), "hi".to_owned()), "{called:?}");
    let mode = std::fs::metadata(&tokens).expect("the token file").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the token file is its owner's alone");
    // admin_reset needs mcp:admin: the 403 names it, and the client asks for it too.
    let reset = duet(&[&["call", &server.url, "admin_reset"], &machine[..]].concat(), Some("duet-test-secret")).await;
    assert_eq!((reset.status.code(), stdout(&reset)), (Some(0), "reset".to_owned()), "{reset:?}");
    let token = kept_token(&tokens);

    // No credentials now: the token in the file is all the second run has.
    let again = duet(&["call", &server.url, "echo", "text=again", "--token-file", token_file], None).await;
    assert_eq!((again.status.code(), stdout(&again)), (Some(0), "again".to_owned()), "{again:?}");
    let listed = duet(&["tools", &server.url, "--json", "--token-file", token_file], None).await;
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("a JSON listing");
    let names: Vec<&str> = listed.as_array().into_iter().flatten().filter_map(|tool| tool["name"].as_str()).collect();
    assert_eq!(names, ["echo", "admin_reset", "whoami"], "the stepped-up token lists mcp:admin's tool too");
    assert_eq!(kept_token(&tokens), token, "the token was used, not replaced");
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(!stderr.contains("Open this URL"), "no person was asked: {stderr}");

    server.stop().await;
    provider.stop().await;
    let _ = std::fs::remove_file(&keys);
    let _ = std::fs::remove_file(&tokens);
}

/// A person's browser at `start`: it follows the redirects, keeping the cookies the servers
/// set, until a page answers; that page's status.
async fn browse(start: &str) -> reqwest::StatusCode {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("a client");
    let mut cookies = BTreeMap::new();
    let mut url = reqwest::Url::parse(start).expect("an authorization URL");
    for _ in 0..10 {
        let cookie: Vec<String> = cookies.iter().map(|(name, value)| format!("{name}={value}")).collect();
        let response = http.get(url.clone()).header("cookie", cookie.join("; ")).send().await.expect("an answer");
        for set in response.headers().get_all("set-cookie") {
            let pair = set.to_str().unwrap_or_default().split(';').next().unwrap_or_default();
            match pair.split_once('=') {
                Some((name, "")) => cookies.remove(name),
                Some((name, value)) => cookies.insert(name.to_owned(), value.to_owned()),
                None => None,
            };
        }
        let Some(location) = response.headers().get("location") else { return response.status() };
        url = url.join(location.to_str().expect("a location")).expect("a URL to go to");
    }
    panic!("more than 10 redirects from {start}");
}

#[tokio::test]
async fn a_person_authorizes_in_the_browser_while_duet_waits_on_the_loopback() {
    let keys = scratch("keys.json");
    let provider = Provider::start(&keys).await;
    let server = start_duet(oauth_config(&provider)).await;
    let mut child = Command::new(DUET)
        .args(["call", &server.url, "whoami"])
        .env_remove("DUET_CLIENT_SECRET")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("duet runs");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped")).lines();
    let authorize = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = stderr.next_line().await {
            if line.starts_with("http") {
                return line;
            }
        }
        panic!("duet ended without printing the authorization URL");
    })
    .await
    .expect("the authorization URL within 30 s");
    assert!(authorize.starts_with(&format!("{}/auth?", provider.issuer)), "{authorize}");
    assert!(authorize.contains("code_challenge_method=S256"), "{authorize}");

    assert_eq!(browse(&authorize).await, reqwest::StatusCode::OK, "the loopback took the redirect");
    let called = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("duet ends once authorized")
        .expect("its output");
    assert_eq!(called.status.code(), Some(0), "{called:?}");
    let who: serde_json::Value = serde_json::from_slice(&called.stdout).expect("whoami's JSON");
    let id = format!("oauth:{}#alice", provider.issuer);
    assert_eq!(who["id"], id.as_str(), "the token is the person's, not a client's: {who}");

    server.stop().await;
    provider.stop().await;
    let _ = std::fs::remove_file(&keys);
}

#[tokio::test]
async fn the_oauth_options_take_a_server_url_and_a_secret_from_the_environment() {
    let no_secret =
        duet(&["call", "http://127.0.0.1:9/mcp", "echo", "--client-id", "m", "--client-credentials"], None).await;
    assert_eq!(no_secret.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&no_secret.stderr);
    assert!(stderr.contains("--client-credentials needs the client's secret in DUET_CLIENT_SECRET"), "{stderr}");

    let no_id = duet(&["call", "http://127.0.0.1:9/mcp", "echo", "--client-credentials"], Some("s")).await;
    assert_eq!(no_id.status.code(), Some(2), "{no_id:?}");

    for args in [&["call", "echo", "--token-file", "t.json", "--", "true"][..], &["tools", "--client-id", "app"][..]] {
        let refused = duet(args, None).await;
        assert_eq!(refused.status.code(), Some(2), "{refused:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains("applies to a server URL"), "{stderr}");
    }
}
