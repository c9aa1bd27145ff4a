//! The real `duet serve --root` over stdio, serving a tree an attacker has written to:
//! FIFOs (one behind a `.git` file's `gitdir`, as git's `commondir`) never block a listing,
//! a read or shutdown; hard links to ignored files or to files outside the root are not
//! served without `--follow-hard-links`; and a search pattern too large to compile is a
//! tool error, after which the server goes on answering.

// Shared with the stdio tests; this file uses only part of it.
#[allow(dead_code)]
mod common;

use common::{ANSWER, Duet};
use serde_json::{Value, json};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;
use tempfile::TempDir;

const VERSION: &str = "2025-06-18";

/// A FIFO at `path`.
fn mkfifo(path: &Path) {
    let name = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path, and a mode.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

/// `duet serve --root DIR` plus `extra`, initialized.
fn serve(root: &Path, extra: &[&str]) -> Duet {
    let mut args = vec!["serve", "--root", root.to_str().unwrap()];
    args.extend_from_slice(extra);
    let mut duet = Duet::spawn(&args, VERSION);
    duet.initialize(VERSION);
    duet
}

/// The result of one request, which must come within [`ANSWER`].
fn ask(duet: &mut Duet, id: i64, method: &str, params: Value) -> Value {
    duet.request(json!(id), method, params);
    duet.response(&json!(id))
}

fn call(duet: &mut Duet, id: i64, tool: &str, arguments: Value) -> Value {
    let answer = ask(duet, id, "tools/call", json!({"name": tool, "arguments": arguments}));
    answer["result"].clone()
}

/// The text of a tool result's first block.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

fn listed_uris(duet: &mut Duet, id: i64) -> Vec<String> {
    let answer = ask(duet, id, "resources/list", json!({}));
    let resources = answer["result"]["resources"].as_array().cloned().unwrap_or_default();
    resources.iter().map(|r| r["uri"].as_str().unwrap().to_string()).collect()
}

#[test]
fn fifos_block_neither_listing_nor_reading_nor_shutdown() {
    let (dir, gitdir) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("readme.txt"), "hello\n").unwrap();
    // A worktree's `.git` file, whose gitdir's `commondir` is a FIFO nobody writes to.
    std::fs::write(root.join(".git"), format!("gitdir: {}\n", gitdir.path().display())).unwrap();
    mkfifo(&gitdir.path().join("commondir"));
    mkfifo(&root.join("pipe"));
    // A directory whose `.gitignore` is a FIFO is not walked.
    std::fs::create_dir(root.join("blocked")).unwrap();
    std::fs::write(root.join("blocked/inside.txt"), "inside\n").unwrap();
    mkfifo(&root.join("blocked/.gitignore"));

    let mut duet = serve(&root, &[]);
    let uris = listed_uris(&mut duet, 2);
    let readme = duet::file_uri::from_path(&root.join("readme.txt"));
    assert!(uris.contains(&readme), "{uris:?}");
    assert!(!uris.iter().any(|u| u.ends_with("/pipe") || u.contains("blocked")), "{uris:?}");
    assert_eq!(text(&call(&mut duet, 3, "read_file", json!({"path": "readme.txt"}))), "hello\n");
    let fifo = call(&mut duet, 4, "read_file", json!({"path": "pipe"}));
    assert_eq!(fifo["isError"], true, "{fifo}");
    assert!(text(&fifo).contains("not a regular file"), "{fifo}");
    let found = call(&mut duet, 5, "search_files", json!({"pattern": "hello|inside"}));
    assert_eq!(found["structuredContent"]["matches"].as_array().map(Vec::len), Some(1), "{found}");

    duet_testing::process::signal(duet.child(), libc::SIGTERM);
    let exited = duet_testing::process::exit_within(duet.child(), Duration::from_secs(20));
    assert_eq!(exited.expect("exits after SIGTERM").code(), Some(0));
}

/// A root with an ignored key, a file outside it, and a hard link inside it to each.
fn hard_linked() -> (TempDir, TempDir) {
    let (dir, outside) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let root = dir.path();
    std::fs::write(root.join(".gitignore"), "*.key\n").unwrap();
    std::fs::write(root.join("private.key"), "secret key\n").unwrap();
    std::fs::hard_link(root.join("private.key"), root.join("key-link.txt")).unwrap();
    std::fs::write(outside.path().join("passwords"), "secret passwords\n").unwrap();
    std::fs::hard_link(outside.path().join("passwords"), root.join("outside-link.txt")).unwrap();
    std::fs::write(root.join("plain.txt"), "no secret here\n").unwrap();
    (dir, outside)
}

#[test]
fn hard_links_are_refused_unless_followed() {
    let (dir, _outside) = hard_linked();
    let root = dir.path().canonicalize().unwrap();
    let outside_uri = duet::file_uri::from_path(&root.join("outside-link.txt"));
    let mut duet = serve(&root, &[]);
    for (id, path) in [(2, "key-link.txt"), (3, "outside-link.txt")] {
        let refused = call(&mut duet, id, "read_file", json!({"path": path}));
        assert_eq!(refused["isError"], true, "{refused}");
        assert!(text(&refused).contains("has other hard links"), "{refused}");
        assert!(text(&refused).contains("--follow-hard-links"), "{refused}");
    }
    let read = ask(&mut duet, 4, "resources/read", json!({"uri": outside_uri}));
    let message = read["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("has other hard links"), "{read}");
    assert!(!read.to_string().contains("secret passwords"), "{read}");
    let found = call(&mut duet, 5, "search_files", json!({"pattern": "secret"}));
    assert_eq!(
        found["structuredContent"]["matches"],
        json!([{"path": "plain.txt", "line": 1, "text": "no secret here"}])
    );
    let uris = listed_uris(&mut duet, 6);
    assert!(!uris.iter().any(|u| u.contains("link")), "{uris:?}");
    drop(duet);

    let mut duet = serve(&root, &["--follow-hard-links"]);
    assert_eq!(text(&call(&mut duet, 2, "read_file", json!({"path": "key-link.txt"}))), "secret key\n");
    let read = ask(&mut duet, 3, "resources/read", json!({"uri": outside_uri}));
    assert_eq!(read["result"]["contents"][0]["text"], "secret passwords\n", "{read}");
    let found = call(&mut duet, 4, "search_files", json!({"pattern": "secret"}));
    assert_eq!(found["structuredContent"]["matches"].as_array().map(Vec::len), Some(3), "{found}");
    assert_eq!(listed_uris(&mut duet, 5).iter().filter(|u| u.contains("link")).count(), 2);
}

#[test]
fn a_pattern_too_large_to_compile_is_a_tool_error() {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello 1\n").unwrap();
    let mut duet = serve(dir.path(), &[]);
    let huge = call(&mut duet, 2, "search_files", json!({"pattern": r"(?:[\w\s]{1,20}){1,100}\d"}));
    assert_eq!(huge["isError"], true, "{huge}");
    assert!(text(&huge).contains("is too large to compile"), "{huge}");
    let found = call(&mut duet, 3, "search_files", json!({"pattern": r"\w+ \d"}));
    assert_eq!(found["structuredContent"]["matches"][0]["text"], "hello 1", "{found}");
    let done = duet.finish(ANSWER);
    done.assert_success();
}
