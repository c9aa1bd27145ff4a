//! `duet serve` as a child process, for the tests of the command line.

use super::repo_root;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The binary under test: `DUET_BIN`, else `target/debug/duet`, built with the `fixtures`
/// feature it serves them with.
pub(crate) fn duet_bin() -> PathBuf {
    let bin = std::env::var("DUET_BIN").map(PathBuf::from).unwrap_or_else(|_| repo_root().join("target/debug/duet"));
    assert!(bin.exists(), "{} is missing: run `cargo build -p duet-cli --features fixtures` first", bin.display());
    bin
}

/// A `duet serve` that listens, or how it ended: exit code and stderr.
pub(crate) enum Started {
    Listening { child: Child, url: String },
    Exited { code: Option<i32>, stderr: String },
}

pub(crate) async fn serve(args: &[&str], env: &[(&str, &str)]) -> Started {
    serve_fixtures("testkit", args, env).await
}

/// [`serve`] with the built-in registry `fixtures` instead of the test registry.
pub(crate) async fn serve_fixtures(fixtures: &str, args: &[&str], env: &[(&str, &str)]) -> Started {
    let mut command = Command::new(duet_bin());
    command
        .args(["serve", "--fixtures", fixtures, "--transport", "http", "--port", "0"])
        .args(args)
        .env_remove("DUET_OAUTH_CLIENT_ID")
        .env_remove("DUET_OAUTH_CLIENT_SECRET")
        .env_remove("DUET_AUTH_TOKENS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("duet starts");
    let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let mut stderr = String::new();
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(at) = line.find("listening on ") {
                return Some(line[at + "listening on ".len()..].trim().to_owned());
            }
            stderr.push_str(&line);
            stderr.push('\n');
        }
        None
    })
    .await
    .expect("duet listens or exits within 30 s");
    match found {
        Some(url) => {
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            Started::Listening { child, url }
        }
        None => {
            let status = child.wait().await.expect("exit status");
            Started::Exited { code: status.code(), stderr }
        }
    }
}
