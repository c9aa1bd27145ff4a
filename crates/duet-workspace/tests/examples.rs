//! The example servers work as processes over real stdio: `examples/serve_folder.rs`
//! initializes, lists the read-only tools with their schemas, and reads a file of the folder
//! it serves while refusing one `.gitignore` leaves out; `examples/folder_and_tools.rs`
//! serves the folder's tools and its own typed tool side by side.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Builds the example `name` (cargo runs this test, and says where its cargo is) and returns
/// its path: built here, so that running this test alone never runs a stale binary. Built with
/// the whole workspace's features, as `cargo test --workspace` builds everything: what that
/// built is reused, not built again with other features.
fn example(name: &str) -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--quiet", "--message-format=json", "--workspace", "--example", name])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "the example does not build");
    let messages = String::from_utf8(out.stdout).expect("cargo writes UTF-8");
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo names the example's executable")
}

/// Kills the example when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Serves `folder` with the example `name`, sends `messages` as JSON lines, closes stdin,
/// and returns the answers in the order of their ids.
fn exchange(name: &str, folder: &Path, messages: &[Value]) -> Vec<Value> {
    let command = Command::new(example(name)).arg(folder).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn();
    let mut child = Running(command.expect("the example starts"));
    let mut stdin = child.0.stdin.take().unwrap();
    for message in messages {
        writeln!(stdin, "{message}").unwrap();
    }
    drop(stdin);
    let out = BufReader::new(child.0.stdout.take().unwrap());
    let mut answers: Vec<Value> = out
        .lines()
        .map(|line| serde_json::from_str(&line.unwrap()).unwrap())
        .filter(|m: &Value| m.get("id").is_some())
        .collect();
    answers.sort_by_key(|a| a["id"].as_i64());
    answers
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// `initialize` (id 1) at 2025-11-25, and `notifications/initialized`.
fn initialize() -> [Value; 2] {
    [
        request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        ),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

/// The name of every tool a `tools/list` result lists.
fn tool_names(listed: &Value) -> Vec<&str> {
    let tools = listed["tools"].as_array().expect("a tool list");
    tools.iter().filter_map(|t| t["name"].as_str()).collect()
}

#[test]
fn the_example_serves_a_folder_over_stdio() {
    let folder = tempfile::TempDir::new().unwrap();
    std::fs::write(folder.path().join("hello.txt"), "hello from the folder\n").unwrap();
    std::fs::write(folder.path().join(".gitignore"), "secret.txt\n").unwrap();
    std::fs::write(folder.path().join("secret.txt"), "not served\n").unwrap();
    let read = |id, path| request(id, "tools/call", json!({"name": "read_file", "arguments": {"path": path}}));
    let [initialize, initialized] = initialize();
    let answers = exchange(
        "serve_folder",
        folder.path(),
        &[initialize, initialized, request(2, "tools/list", json!({})), read(3, "hello.txt"), read(4, "secret.txt")],
    );
    assert_eq!(answers.len(), 4, "{answers:?}");
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "duet", "{}", answers[0]);

    let names = tool_names(&answers[1]["result"]);
    for name in ["list_directory", "find_files", "search_files", "read_file", "read_multiple_files"] {
        assert!(names.contains(&name), "{name} is served: {names:?}");
    }
    assert!(!names.contains(&"write_file"), "read-only: {names:?}");
    let tools = answers[1]["result"]["tools"].as_array().expect("a tool list");
    let list = tools.iter().find(|t| t["name"] == "list_directory").unwrap();
    assert_eq!(
        list["inputSchema"]["properties"]["limit"],
        json!({"type": "integer", "minimum": 1, "maximum": 1000, "default": 200, "description": "The most entries one page holds."}),
        "the arguments' type gives the schema"
    );

    let hello = &answers[2]["result"];
    assert_ne!(hello["isError"], true, "{hello}");
    assert_eq!(hello["content"][0]["text"], "hello from the folder\n");
    let secret = &answers[3]["result"];
    assert_eq!(secret["isError"], true, "{secret}");
}

#[test]
fn the_example_serves_a_folder_and_its_own_tool_as_one() {
    let folder = tempfile::TempDir::new().unwrap();
    std::fs::write(folder.path().join("hello.txt"), "hello from the folder\n").unwrap();
    let call = |id, name, arguments| request(id, "tools/call", json!({"name": name, "arguments": arguments}));
    let [initialize, initialized] = initialize();
    let answers = exchange(
        "folder_and_tools",
        folder.path(),
        &[
            initialize,
            initialized,
            request(2, "tools/list", json!({})),
            call(3, "shout", json!({"text": "hi"})),
            call(4, "read_file", json!({"path": "hello.txt"})),
        ],
    );
    assert_eq!(answers.len(), 4, "{answers:?}");
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "duet", "the workspace's info: {}", answers[0]);
    let names = tool_names(&answers[1]["result"]);
    assert!(names.contains(&"read_file") && names.last() == Some(&"shout"), "{names:?}");
    assert_eq!(answers[2]["result"]["content"][0]["text"], "HI", "{}", answers[2]);
    assert_eq!(answers[3]["result"]["content"][0]["text"], "hello from the folder\n", "{}", answers[3]);
}
