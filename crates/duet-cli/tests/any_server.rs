//! `duet call`, `duet read` and the listings on another server, as its client: a
//! `duet serve` over Streamable HTTP (each era pinned, and negotiated) and one spawned over
//! stdio after `--`, printing what the in-process commands print; and what they say when
//! the server cannot be reached, or the command line mixes a server with duet's own layers.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

const DUET: &str = env!("CARGO_BIN_EXE_duet");

fn duet(args: &[&str]) -> Output {
    Command::new(DUET).args(args).output().expect("duet runs")
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A `duet serve --fixtures testkit` over HTTP, killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start() -> HttpServer {
        let mut child = Command::new(DUET)
            .args(["serve", "--fixtures", "testkit", "--transport", "http", "--host", "127.0.0.1", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("duet serve starts");
        let stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let url = stderr
            .lines()
            .map_while(Result::ok)
            .find_map(|line| line.split("listening on ").nth(1).map(str::to_owned))
            .expect("duet serve says where it listens");
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The names in a `--json` listing.
fn names(listing: &Value, key: &str) -> Vec<String> {
    listing.as_array().expect("a listing").iter().map(|item| item[key].as_str().expect("a name").to_owned()).collect()
}

/// Which server a command line names, and how.
struct Server<'a> {
    /// Its URL, or none for a command.
    url: Option<&'a str>,
    /// `--protocol-version`, if pinned.
    version: Option<&'a str>,
    /// The command after `--`, or none for a URL.
    command: &'a [&'a str],
}

impl Server<'_> {
    /// `duet COMMAND [URL] WORDS… [--protocol-version V] [-- SERVER…]`.
    fn run(&self, command: &str, words: &[&str]) -> Output {
        let mut args = vec![command];
        args.extend(self.url);
        args.extend(words);
        if let Some(version) = self.version {
            args.extend(["--protocol-version", version]);
        }
        if !self.command.is_empty() {
            args.push("--");
            args.extend(self.command);
        }
        duet(&args)
    }
}

/// Calls, reads and lists through `server`, checked against what the same commands print
/// in process.
fn talks_to(server: &Server<'_>) {
    let called = server.run("call", &["echo", "text=ab", "times:=2"]);
    assert_eq!((called.status.code(), stdout_json(&called)), (Some(0), json!({"text": "abab"})));
    let raw = server.run("call", &["echo", "text=ab", "--json"]);
    let raw = stdout_json(&raw);
    assert_eq!(raw["isError"], false, "{raw}");
    assert!(raw["content"].as_array().is_some_and(|content| !content.is_empty()), "{raw}");
    let failed = server.run("call", &["fail"]);
    assert_eq!((failed.status.code(), String::from_utf8_lossy(&failed.stdout).trim()), (Some(1), "boom"));
    let unknown = server.run("call", &["nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("Error: Unknown tool: nope"), "{unknown:?}");

    let slow = server.run("call", &["slow", "steps:=3"]);
    assert_eq!((slow.status.code(), stdout_json(&slow)), (Some(0), json!({"done": 3})));
    let stderr = String::from_utf8_lossy(&slow.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("progress ")).collect();
    assert_eq!(lines, ["progress 1/3: step 1", "progress 2/3: step 2", "progress 3/3: step 3"], "{stderr}");

    let read = server.run("read", &["test://items/beta"]);
    assert_eq!((read.status.code(), stdout_json(&read)), (Some(0), json!({"name": "beta", "index": 1})));
    let missing = server.run("read", &["test://items/zeta"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("No item zeta"), "{missing:?}");

    let listed = |what: &str| stdout_json(&server.run(what, &["--json"]));
    let in_process = |what: &str| stdout_json(&duet(&[what, "--json", "--fixtures", "testkit"]));
    assert_eq!(names(&listed("tools"), "name"), names(&in_process("tools"), "name"));
    assert_eq!(names(&listed("prompts"), "name"), names(&in_process("prompts"), "name"));
    let (resources, expected) = (listed("resources"), in_process("resources"));
    assert_eq!(names(&resources["resources"], "uri"), names(&expected["resources"], "uri"));
    assert_eq!(
        names(&resources["resourceTemplates"], "uriTemplate"),
        names(&expected["resourceTemplates"], "uriTemplate")
    );
    let table = server.run("prompts", &[]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("greet(name*, style)"), "{table:?}");
}

#[test]
fn over_http_in_each_era() {
    let server = HttpServer::start();
    for version in [Some("2026-07-28"), Some("2025-11-25"), Some("2025-03-26"), None] {
        talks_to(&Server { url: Some(&server.url), version, command: &[] });
    }
}

#[test]
fn over_a_command_after_the_double_dash() {
    let command = [DUET, "serve", "--fixtures", "testkit"];
    for version in [Some("2026-07-28"), Some("2025-06-18"), None] {
        talks_to(&Server { url: None, version, command: &command });
    }
}

#[test]
fn a_server_out_of_reach_or_mixed_with_layers_is_named() {
    let unreachable = duet(&["call", "http://127.0.0.1:1/mcp", "echo"]);
    let stderr = String::from_utf8_lossy(&unreachable.stderr);
    assert_eq!(unreachable.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("Error: cannot connect to http://127.0.0.1:1/mcp: transport: "), "{stderr}");
    assert!(stderr.contains("Connection refused"), "{stderr}");

    let missing = duet(&["tools", "--", "/nonexistent/mcp-server"]);
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("Error: /nonexistent/mcp-server: transport: spawning the server: "), "{stderr}");

    let exited = duet(&["tools", "--", "false"]);
    let stderr = String::from_utf8_lossy(&exited.stderr);
    assert_eq!(exited.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("Error: cannot connect to false: it exited before it answered"), "{stderr}");

    let mixed = duet(&["call", "http://127.0.0.1:1/mcp", "echo", "--fixtures", "testkit"]);
    assert_eq!(mixed.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&mixed.stderr)
            .contains("Error: --fixtures applies to duet's own layers, not to a server")
    );
    let pinned = duet(&["tools", "--fixtures", "testkit", "--protocol-version", "2025-11-25"]);
    assert_eq!(pinned.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&pinned.stderr).contains("--protocol-version applies to a server"));
    let unknown = duet(&["tools", "http://127.0.0.1:1/mcp", "--protocol-version", "2024-01-01"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("--protocol-version 2024-01-01: not a revision duet speaks")
    );
    let bad_word = duet(&["call", "echo", "text", "--fixtures", "testkit"]);
    assert_eq!(bad_word.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_word.stderr).contains("text: an argument is NAME=VALUE or NAME:=JSON"));
}
