//! The in-process commands of the `duet` binary: listings equal the wire listings, `call`
//! and `read` print results and use exit codes 0 / 1 / 2, and `config` prints a snippet
//! each client accepts; `serve` says where it listens, which address it could not take,
//! and, run in a terminal, what it waits for.

use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn duet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_duet")).args(args).output().expect("duet runs")
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// The whole listing of a list method, as a real `duet serve` sends it over stdio at
/// 2026-07-28 without paging.
fn wire_listing(method: &str, key: &str) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["serve", "--fixtures", "testkit", "--page-size", "0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("duet runs");
    let envelope = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": envelope}});
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{request}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let response: Value = serde_json::from_slice(&out.stdout).expect("one JSON response");
    duet_testing::Schemas::get().assert_result("2026-07-28", method, &response["result"]);
    response["result"][key].as_array().cloned().expect("a listing")
}

#[test]
fn tools_json_equals_the_wire_listing() {
    let out = duet(&["tools", "--fixtures", "testkit", "--json"]);
    assert!(out.status.success());
    assert_eq!(stdout_json(&out), Value::Array(wire_listing("tools/list", "tools")));
}

#[test]
fn prompts_and_resources_json_equal_the_wire_listings() {
    let prompts = duet(&["prompts", "--fixtures", "testkit", "--json"]);
    assert_eq!(stdout_json(&prompts), Value::Array(wire_listing("prompts/list", "prompts")));
    let resources = stdout_json(&duet(&["resources", "--fixtures", "testkit", "--json"]));
    assert_eq!(resources["resources"], Value::Array(wire_listing("resources/list", "resources")));
    assert_eq!(
        resources["resourceTemplates"],
        Value::Array(wire_listing("resources/templates/list", "resourceTemplates"))
    );
}

#[test]
fn tables_list_names() {
    let out = duet(&["prompts", "--fixtures", "testkit"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("greet(name*, style)"), "{text}");
    let tools = String::from_utf8_lossy(&duet(&["tools", "--fixtures", "testkit"]).stdout).into_owned();
    assert!(tools.lines().next().is_some_and(|l| l.starts_with("echo ")), "{tools}");
}

#[test]
fn call_prints_the_result_and_sets_the_exit_code() {
    let ok = duet(&["call", "echo", "--args", r#"{"text":"ab","times":2}"#, "--fixtures", "testkit"]);
    assert_eq!((ok.status.code(), stdout_json(&ok)), (Some(0), json!({"text": "abab"})));
    let raw = duet(&["call", "echo", "--args", r#"{"text":"ab"}"#, "--raw", "--fixtures", "testkit"]);
    assert_eq!(stdout_json(&raw)["isError"], false);
    let failed = duet(&["call", "fail", "--fixtures", "testkit"]);
    assert_eq!((failed.status.code(), String::from_utf8_lossy(&failed.stdout).trim()), (Some(1), "boom"));
    let unknown = duet(&["call", "nope", "--fixtures", "testkit"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(unknown.stdout.is_empty());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("Error: Unknown tool: nope"));
    let bad_args = duet(&["call", "echo", "--args", "[1]", "--fixtures", "testkit"]);
    assert_eq!(bad_args.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_args.stderr).contains("--args must be a JSON object"));
    let invalid = duet(&["call", "echo", "--args", r#"{"times":9}"#, "--fixtures", "testkit"]);
    assert_eq!(invalid.status.code(), Some(1), "schema violations are tool errors");
}

#[test]
fn call_shows_a_tools_progress_on_stderr() {
    let out = duet(&["call", "slow", "--args", r#"{"steps":3}"#, "--fixtures", "testkit"]);
    assert_eq!((out.status.code(), stdout_json(&out)), (Some(0), json!({"done": 3})));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("progress ")).collect();
    assert_eq!(lines, ["progress 1/3: step 1", "progress 2/3: step 2", "progress 3/3: step 3"], "{stderr}");
}

#[test]
fn call_reads_arguments_from_a_file_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("args.json");
    std::fs::write(&file, r#"{"text":"file"}"#).unwrap();
    let at_file = format!("@{}", file.display());
    let out = duet(&["call", "echo", "--args", &at_file, "--fixtures", "testkit"]);
    assert_eq!(stdout_json(&out), json!({"text": "file"}));
    let mut child = Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["call", "echo", "--args", "-", "--fixtures", "testkit"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(br#"{"text":"stdin"}"#).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(stdout_json(&out), json!({"text": "stdin"}));
}

#[test]
fn read_prints_contents() {
    let out = duet(&["read", "test://items/beta", "--fixtures", "testkit"]);
    assert_eq!((out.status.code(), stdout_json(&out)), (Some(0), json!({"name": "beta", "index": 1})));
    let missing = duet(&["read", "test://items/zeta", "--fixtures", "testkit"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("No item zeta"));
}

#[test]
fn read_takes_a_path_relative_to_the_first_root() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/notes.txt"), "hello from notes\n").unwrap();
    let root = dir.path().to_str().unwrap();
    let out = duet(&["read", "docs/notes.txt", "--root", root]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), "hello from notes");
    let missing = duet(&["read", "docs/none.txt", "--root", root]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("docs/none.txt"), "{missing:?}");
    let outside = duet(&["read", "../", "--root", &format!("{root}/docs")]);
    assert_eq!(outside.status.code(), Some(1), "a path outside the root is refused: {outside:?}");
}

#[test]
fn config_explains_a_missing_folder() {
    let out = duet(&["config", "--client", "cursor", "--root", "/no/such/dir"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--root /no/such/dir: there is no such folder; the client would start duet"), "{stderr}");
}

#[test]
fn config_snippets_for_every_client() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().display().to_string();
    let expect_stdio = |entry: &Value| {
        assert_eq!(entry["args"], json!(["serve", "--root", root]));
        assert!(entry["command"].as_str().unwrap().ends_with("duet"));
    };
    for (client, key) in [("claude-desktop", "mcpServers"), ("claude-code", "mcpServers"), ("cursor", "mcpServers")] {
        let out = duet(&["config", "--client", client, "--root", &root]);
        assert!(out.status.success(), "{client}");
        expect_stdio(&stdout_json(&out)[key]["duet"]);
        assert!(!out.stderr.is_empty(), "a paste hint goes to stderr");
    }
    let vscode = stdout_json(&duet(&["config", "--client", "vscode", "--root", &root, "--name", "files"]));
    assert_eq!(vscode["servers"]["files"]["type"], "stdio");
    expect_stdio(&vscode["servers"]["files"]);
    let http = stdout_json(&duet(&[
        "config",
        "--client",
        "claude-code",
        "--transport",
        "http",
        "--url",
        "http://127.0.0.1:9/mcp",
    ]));
    assert_eq!(http["mcpServers"]["duet"], json!({"type": "http", "url": "http://127.0.0.1:9/mcp"}));
    let missing = duet(&["config", "--client", "cursor", "--root", "/no/such/dir"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn config_over_http_keeps_the_folders_and_reads_the_token_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().display().to_string();
    let exe = env!("CARGO_BIN_EXE_duet");
    let config = |client: &str, url: &str, extra: &[&str]| {
        let mut args = vec!["config", "--client", client, "--transport", "http", "--url", url];
        args.extend(extra);
        // The token is in the environment; nothing duet prints may show it.
        let out = Command::new(exe).args(&args).env("DUET_TOKEN", "s3cret-token-value").output().unwrap();
        let shown = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!shown.contains("s3cret-token-value"), "{args:?} shows the token: {shown}");
        out
    };
    let with_token = ["--token-env", "DUET_TOKEN", "--root", root.as_str()];
    let serve = format!("{exe} serve --transport http --port 9 --root {root} --auth-token env:DUET_TOKEN");
    for (client, expected) in [
        (
            "claude-code",
            json!({"mcpServers": {"duet": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                                            "headers": {"Authorization": "Bearer ${DUET_TOKEN}"}}}}),
        ),
        (
            "cursor",
            json!({"mcpServers": {"duet": {"url": "http://127.0.0.1:9/mcp",
                                            "headers": {"Authorization": "Bearer ${env:DUET_TOKEN}"}}}}),
        ),
        (
            "vscode",
            json!({"servers": {"duet": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                                         "headers": {"Authorization": "Bearer ${input:duet-token}"}}},
                   "inputs": [{"type": "promptString", "id": "duet-token", "password": true,
                               "description": "The bearer token of duet (what $DUET_TOKEN holds where it runs)"}]}),
        ),
    ] {
        let out = config(client, "http://127.0.0.1:9/mcp", &with_token);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{client}: {stderr}");
        assert_eq!(stdout_json(&out), expected, "{client}");
        assert!(stderr.contains(&format!("start duet there first:\n  {serve}\n")), "{client}: {stderr}");
    }

    // Without a token, no header; another path and an address are kept in the command.
    let out = config("cursor", "http://10.1.2.3:8000/tools", &["--root", &root, "--allow-write"]);
    assert_eq!(stdout_json(&out), json!({"mcpServers": {"duet": {"url": "http://10.1.2.3:8000/tools"}}}));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let started =
        format!("{exe} serve --transport http --host 10.1.2.3 --port 8000 --path /tools --root {root} --allow-write");
    assert!(stderr.contains(&started), "{stderr}");

    // What cannot be written without the token, or names no variable, or no folder.
    for (client, extra, why) in [
        ("claude-desktop", &with_token[..], "claude_desktop_config.json; use --transport stdio"),
        ("cursor", &["--token-env", "1-BAD"][..], "name an environment variable"),
        ("cursor", &["--root", "/no/such/dir"][..], "--root /no/such/dir: there is no such folder"),
    ] {
        let out = config(client, "http://127.0.0.1:9/mcp", extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{client} {extra:?}: {stderr}");
        assert!(stderr.contains(why), "{client} {extra:?}: {stderr}");
    }
    let stdio = duet(&["config", "--client", "cursor", "--token-env", "DUET_TOKEN", "--root", &root]);
    assert_eq!(stdio.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&stdio.stderr).contains("--token-env applies to --transport http"));
}

#[test]
fn counts_of_one_read_in_the_singular() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x").unwrap();
    std::fs::write(dir.path().join("b.txt"), "y\n").unwrap();
    let root = dir.path().to_str().unwrap();
    let said = |tool: &str, args: &str| {
        let out = duet(&["call", tool, "--args", args, "--raw", "--root", root]);
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    for (tool, args, expected) in [
        ("search_files", r#"{"pattern":"x"}"#, "(1 matching line in 2 files scanned)"),
        ("search_files", r#"{"pattern":"x","glob":"a.txt"}"#, "(1 matching line in 1 file scanned)"),
        ("find_files", r#"{"glob":"*.txt","limit":1}"#, "(only the first 1 match; narrow"),
        ("directory_tree", r#"{"limit":1}"#, "(the tree stops at 1 entry: there are more"),
        ("describe_file", r#"{"path":"a.txt"}"#, "size: 1 byte (1 byte)"),
        ("read_file", r#"{"path":"b.txt","start_line":3}"#, "b.txt has 1 line, so there is no line 3"),
    ] {
        let shown = said(tool, args);
        assert!(shown.contains(expected), "{tool} {args}: {shown}");
    }
}

/// The tool names `duet tools --json` lists with these arguments.
fn tool_names(args: &[&str]) -> Vec<String> {
    let out = duet(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let tools = stdout_json(&out);
    tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn allow_write_adds_the_write_tools_to_a_workspace_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    let root = dir.path().to_str().unwrap();
    let read_only = tool_names(&["tools", "--root", root, "--json"]);
    assert!(read_only.contains(&"read_file".to_string()), "{read_only:?}");
    let write_tools = ["write_file", "edit_file", "create_directory", "move_file"];
    assert!(!read_only.iter().any(|n| write_tools.contains(&n.as_str())), "{read_only:?}");
    let writable = tool_names(&["tools", "--root", root, "--allow-write", "--json"]);
    for name in write_tools {
        assert!(writable.contains(&name.to_string()), "{name} missing from {writable:?}");
    }
    let table = String::from_utf8_lossy(&duet(&["tools", "--root", root, "--allow-write"]).stdout).into_owned();
    assert!(table.lines().any(|l| l.starts_with("write_file ")), "{table}");

    // Another layer has no files to write: a usage error, before anything starts.
    for args in
        [["serve", "--fixtures", "testkit", "--allow-write"], ["tools", "--manifest", "duet.toml", "--allow-write"]]
    {
        let out = duet(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-write"), "{args:?}");
    }
    // Nor does the manifest picked up from the working directory.
    let manifest_dir = tempfile::tempdir().unwrap();
    std::fs::write(manifest_dir.path().join("duet.toml"), "[server]\nname = \"m\"\nversion = \"1\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["tools", "--allow-write"])
        .current_dir(manifest_dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("add --root ."), "{}", String::from_utf8_lossy(&out.stderr));

    // `call` has no client to ask the user: a tool error, and nothing is written.
    let args = r#"{"path":"b.txt","content":"x"}"#;
    let out = duet(&["call", "write_file", "--args", args, "--root", root, "--allow-write"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("cannot ask the user"), "{out:?}");
    assert!(!dir.path().join("b.txt").exists());

    // The snippet for a client passes the option on.
    let snippet = stdout_json(&duet(&["config", "--client", "cursor", "--root", root, "--allow-write"]));
    let argv = snippet["mcpServers"]["duet"]["args"].as_array().unwrap().clone();
    assert_eq!(argv.last(), Some(&json!("--allow-write")), "{argv:?}");
}

/// `duet serve` over HTTP takes every descriptor the process may have: a soft open-files
/// limit below the hard one is raised at start.
#[test]
fn serving_http_raises_the_open_files_limit() {
    let script = r#"ulimit -Sn 256 && exec "$0" serve --fixtures testkit --transport http --port 0"#;
    let mut child = Command::new("sh")
        .args(["-c", script, env!("CARGO_BIN_EXE_duet")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn duet serve");
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening on") {
        line.clear();
        let read = std::io::BufRead::read_line(&mut stderr, &mut line).expect("stderr");
        assert!(read > 0, "duet serve ended before listening");
    }
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id())).expect("limits");
    child.kill().expect("stop duet serve");
    child.wait().expect("reaped");
    let open_files = limits.lines().find(|l| l.starts_with("Max open files")).expect("an open-files line");
    let values: Vec<&str> = open_files.split_whitespace().skip(3).take(2).collect();
    assert_eq!(values[0], values[1], "soft raised to hard: {open_files}");
    assert_ne!(values[0], "256", "{open_files}");
}

#[test]
fn an_address_in_use_is_named() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("bound").port().to_string();
    let out = duet(&["serve", "--fixtures", "testkit", "--transport", "http", "--host", "127.0.0.1", "--port", &port]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("cannot listen on 127.0.0.1:{port}: ")), "{stderr}");
    assert!(stderr.contains("in use"), "{stderr}");
}

#[test]
fn the_sse_transport_announces_its_legacy_endpoint() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["serve", "--fixtures", "testkit", "--transport", "sse", "--host", "127.0.0.1", "--port", "0"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("duet starts");
    let mut lines = Vec::new();
    for line in BufReader::new(child.stderr.take().expect("stderr")).lines().map_while(Result::ok) {
        let last = line.contains("legacy HTTP+SSE endpoint");
        lines.push(line);
        if last {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let url = lines.iter().find_map(|l| l.split("listening on ").nth(1)).expect("the MCP endpoint line");
    let base = url.strip_suffix("/mcp").unwrap_or_else(|| panic!("an /mcp URL: {url}"));
    let legacy = lines.last().expect("a line");
    assert!(legacy.ends_with(&format!(": {base}/sse")), "{lines:?}");
}

#[test]
fn serve_on_a_terminal_says_what_it_waits_for() {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    // A pseudo-terminal for stdin, as when someone types `duet serve` in a shell.
    let (mut leader, mut follower) = (0, 0);
    // SAFETY: openpty fills two descriptors it opened; each is owned by one File below.
    let opened =
        unsafe { libc::openpty(&mut leader, &mut follower, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(opened, 0, "openpty");
    let (leader, follower) = unsafe { (std::fs::File::from_raw_fd(leader), std::fs::File::from_raw_fd(follower)) };
    let mut child = Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["serve", "--fixtures", "testkit"])
        .stdin(follower)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("duet starts");
    let mut stderr = child.stderr.take().expect("stderr");
    let mut seen = String::new();
    let mut chunk = [0u8; 512];
    while !seen.contains("Ctrl-D ends") {
        let n = stderr.read(&mut chunk).expect("stderr reads");
        assert!(n > 0, "duet closed stderr without saying what it waits for: {seen}");
        seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
    }
    let _ = child.kill();
    let _ = child.wait();
    drop(leader);
    assert!(seen.contains("waiting for an MCP client's JSON-RPC messages on stdin"), "{seen}");
    // Piped, as a client runs it, it says nothing of the kind.
    let piped = Command::new(env!("CARGO_BIN_EXE_duet")).args(["serve", "--fixtures", "testkit"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&piped.stderr).contains("waiting for"), "{piped:?}");
}
