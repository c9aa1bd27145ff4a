//! The real `duet serve --root` over stdio, serving a tree an attacker has written to:
//! FIFOs (one behind a `.git` file's `gitdir`, as git's `commondir`) never block a listing,
//! a read or shutdown; hard links to ignored files or to files outside the root are not
//! served without `--follow-hard-links`; a search pattern too large to compile is a
//! tool error, after which the server goes on answering; and globs and search patterns
//! over their length bounds are refused before they are compiled, with bounded memory.

// Shared with the stdio tests; this file uses only part of it.
#[allow(dead_code)]
mod common;

use common::{ANSWER, Duet};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use tempfile::TempDir;

const VERSION: &str = "2025-06-18";

/// A FIFO at `path`.
fn mkfifo(path: &Path) {
    let mode = rustix::fs::Mode::from_raw_mode(0o600);
    rustix::fs::mkfifoat(rustix::fs::CWD, path, mode).unwrap_or_else(|e| panic!("mkfifo {}: {e}", path.display()));
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

    duet_testing::process::signal(duet.child(), rustix::process::Signal::TERM);
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

// From the redteam review of issue 33's fixes (findings 1-3): client patterns, globs and
// search expressions, are bounded in length before anything compiles them.

/// The answer to request `id`, waiting up to `within` (debug builds compile large
/// patterns slowly, so the shared [`ANSWER`] is too short here).
fn answer_within(duet: &mut Duet, id: i64, within: Duration) -> Value {
    let deadline = std::time::Instant::now() + within;
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        if let Some(found) = duet.seen.iter().find(|m| m["id"] == json!(id)) {
            return found.clone();
        }
        duet.next_message(left);
    }
    panic!("no answer to {id} within {within:?}")
}

/// The most memory the process has held (VmHWM), in MiB.
fn peak_rss_mib(duet: &mut Duet) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", duet.child().id())).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM in /proc/PID/status");
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() / 1024
}

/// A glob alternating `n` wildcard branches: a few bytes each, but each adds states to
/// the regex globset compiles it to.
fn wide_glob(n: usize) -> String {
    let branches: Vec<String> = (0..n).map(|i| format!("*a{i}*[a-z]*")).collect();
    format!("{{{}}}", branches.join(","))
}

/// Finding 1: a glob whose regex was over globset's own limit panicked inside globset
/// (`compile_matcher` expects compilation to succeed), and the panic's message, with the
/// compiled regex and the runtime's task number, reached the client as the tool's error.
/// Now it is refused for its length, in both tools that take a glob.
#[test]
fn a_glob_too_large_to_compile_is_a_clear_tool_error() {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    let mut duet = serve(dir.path(), &[]);
    let glob = wide_glob(20_000);
    let tools = [("find_files", json!({"glob": glob})), ("search_files", json!({"pattern": "x", "glob": glob}))];
    for (id, (tool, arguments)) in (2..).zip(tools) {
        duet.request(json!(id), "tools/call", json!({"name": tool, "arguments": arguments}));
        let result = answer_within(&mut duet, id, Duration::from_secs(120))["result"].clone();
        assert_eq!(result["isError"], true, "{tool}");
        let said = text(&result);
        assert!(!said.contains("panicked") && !said.contains("task"), "{tool} told the client internals: {said:.300}");
        assert!(said.contains("too large"), "{tool} should say the glob is too large: {said:.300}");
    }
}

/// Finding 2: `find_files` globs were not bounded as search patterns are: each compiled to
/// up to 10 MiB of NFA plus a 10 MiB lazy-DFA cache per walking thread, and `find_files`
/// ran without the searches' concurrency bound. Sixteen calls at once with a 170 KB glob
/// each took the process past 1 GiB. Now such a glob is refused for its length, here one
/// of 110 KB, which globset itself would compile (16 of them, 4 at a time, ~290 MiB).
#[test]
fn find_files_globs_are_bounded_like_search_patterns() {
    let dir = TempDir::new().unwrap();
    for d in 0..30 {
        let sub = dir.path().join(format!("d{d}"));
        std::fs::create_dir(&sub).unwrap();
        for f in 0..30 {
            std::fs::write(sub.join(format!("file{f}_abcdefghijklmnop.txt")), "x\n").unwrap();
        }
    }
    let mut duet = serve(dir.path(), &[]);
    let glob = wide_glob(8_000);
    let ids: Vec<i64> = (2..18).collect();
    for &id in &ids {
        duet.request(json!(id), "tools/call", json!({"name": "find_files", "arguments": {"glob": glob}}));
    }
    for &id in &ids {
        let result = answer_within(&mut duet, id, Duration::from_secs(300))["result"].clone();
        assert_eq!(result["isError"], true, "a glob over the length bound is refused: {:.300}", text(&result));
        assert!(text(&result).starts_with("the glob is too large: "), "{:.300}", text(&result));
    }
    let peak = peak_rss_mib(&mut duet);
    assert!(peak < 150, "sixteen find_files calls took the server to {peak} MiB");
}

/// `count` words of `length` letters from `letters`, joined by `|`: a regular expression
/// that is only an alternation of literals. Made without a random number generator.
fn alternation(count: u64, length: usize, letters: &[u8]) -> String {
    let base = letters.len() as u64;
    let words: Vec<String> = (0..count)
        .map(|i| {
            let mut n = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            (0..length)
                .map(|_| {
                    let c = char::from(letters[(n % base) as usize]);
                    n /= base;
                    c
                })
                .collect()
        })
        .collect();
    words.join("|")
}

/// Finding 3: a pattern that is only an alternation of literals is compiled by
/// regex-automata into an Aho-Corasick automaton without building the NFA the 10 MiB
/// `size_limit` bounds: a 3.8 MB alternation (within the 4 MiB message cap) was searched,
/// at ~500 MiB, instead of being refused as too large. Now its length refuses it.
#[test]
fn a_literal_alternation_is_bounded_like_any_pattern() {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello world\n").unwrap();
    let mut duet = serve(dir.path(), &[]);
    let pattern = alternation(380_000, 9, b"abcdefghijklmnopqrstuvwxyz");
    duet.request(json!(2), "tools/call", json!({"name": "search_files", "arguments": {"pattern": pattern}}));
    let result = answer_within(&mut duet, 2, Duration::from_secs(300))["result"].clone();
    let peak = peak_rss_mib(&mut duet);
    assert!(peak < 200, "one search took the server to {peak} MiB");
    assert_eq!(result["isError"], true, "a pattern over the size limit is refused");
}

/// The longest pattern accepted (16 KiB) in its costliest shape measured, an alternation
/// of words of `k` and `s` searched case-insensitively (Unicode folds each to three
/// forms), as many at once as searches may run: the server stays within tens of MiB each.
/// One byte longer is refused.
#[test]
fn patterns_at_the_length_bound_cost_tens_of_mib() {
    const MAX_PATTERN_BYTES: usize = 16 * 1024;
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello world\n").unwrap();
    let mut duet = serve(dir.path(), &[]);
    let mut pattern = alternation(MAX_PATTERN_BYTES as u64 / 13, 12, b"ks");
    pattern.push_str(&"k".repeat(MAX_PATTERN_BYTES - pattern.len()));
    let ids: Vec<i64> = (2..6).collect();
    for &id in &ids {
        let arguments = json!({"pattern": pattern, "case_insensitive": true});
        duet.request(json!(id), "tools/call", json!({"name": "search_files", "arguments": arguments}));
    }
    for &id in &ids {
        let result = answer_within(&mut duet, id, Duration::from_secs(120))["result"].clone();
        assert_ne!(result["isError"], true, "a pattern at the bound is searched: {:.300}", text(&result));
    }
    let peak = peak_rss_mib(&mut duet);
    assert!(peak < 300, "four searches at the bound took the server to {peak} MiB");
    pattern.push('k');
    let refused = call(&mut duet, 6, "search_files", json!({"pattern": pattern}));
    assert_eq!(refused["isError"], true);
    assert!(
        text(&refused).starts_with("the regular expression is too large: 16.0 KiB (16385 bytes)"),
        "{}",
        text(&refused)
    );
}
