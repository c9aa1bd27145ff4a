//! The real `duet serve --root` over stdio, answering 2025-03-26 batches whose answers are
//! large: a batch's answer is held whole until it is written, so its bytes are bounded
//! (`--max-batch-answer-bytes`), the requests past the bound get a clear error instead of
//! running, and the server goes on answering.

// Shared with the stdio tests; this file uses only part of it.
#[allow(dead_code)]
mod common;

use common::{ANSWER, Duet};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tempfile::TempDir;

const VERSION: &str = "2025-03-26";

/// The most memory the process has held (VmHWM), in MiB.
fn peak_rss_mib(duet: &mut Duet) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", duet.child().id())).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM in /proc/PID/status");
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() / 1024
}

/// A red-team finding: one ~16 KB batch of 100 `read_multiple_files` calls (each answer
/// within the tool's 4 MiB cap) was answered as one array built in memory, 849 MiB over
/// stdio. Now the answers stop at the bound, the other requests are told why, and the
/// process stays far below that.
#[test]
fn a_small_batch_cannot_make_a_gigabyte_answer() {
    let dir = TempDir::new().unwrap();
    let line = format!("{}\n", "x".repeat(1023));
    for i in 0..4 {
        std::fs::write(dir.path().join(format!("f{i}.txt")), line.repeat(1023)).unwrap();
    }
    let mut duet = Duet::spawn(&["serve", "--root", dir.path().to_str().unwrap()], VERSION);
    duet.initialize(VERSION);
    let paths: Vec<String> = (0..4).map(|i| format!("f{i}.txt")).collect();
    let batch: Vec<Value> = (1..=100)
        .map(|id| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "read_multiple_files", "arguments": {"paths": paths}}})
        })
        .collect();
    duet.send(&Value::from(batch));
    let deadline = Instant::now() + Duration::from_secs(300);
    while !duet.seen.iter().any(Value::is_array) && Instant::now() < deadline {
        duet.next_message(Duration::from_secs(5));
    }
    let peak = peak_rss_mib(&mut duet);
    assert!(peak < 512, "one batch of 100 reads took the server to {peak} MiB");
    let answers = duet.seen.iter().find_map(Value::as_array).expect("the batch's answer").clone();
    assert_eq!(answers.len(), 100, "every request of the batch is answered");
    let read = answers.iter().filter(|a| a["result"]["isError"] == false).count();
    assert!((1..=4).contains(&read), "{read} answers of ~4 MiB fit the default 16 MiB");
    let refused: Vec<&Value> = answers.iter().filter(|a| a.get("error").is_some()).collect();
    assert_eq!(read + refused.len(), 100);
    for error in refused {
        assert_eq!(error["error"]["code"], -32029);
        assert_eq!(
            error["error"]["message"],
            "the batch's answer reached 16777216 bytes; send fewer or smaller requests"
        );
    }
    // The server goes on serving.
    duet.request(json!("after"), "ping", json!({}));
    assert_eq!(duet.response(&json!("after"))["result"], json!({}));
    duet.finish(ANSWER).assert_success();
}

/// `--max-batch-answer-bytes` sets the bound: a batch of small answers within it is
/// answered whole, one past it is cut short with the bound named.
#[test]
fn the_bound_is_the_flags() {
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x".repeat(1000)).unwrap();
    let read = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "read_file", "arguments": {"path": "a.txt"}}})
    };
    let args = ["serve", "--root", dir.path().to_str().unwrap(), "--max-batch-answer-bytes", "20000"];
    let mut duet = Duet::spawn(&args, VERSION);
    duet.initialize(VERSION);
    duet.send(&Value::from((1..=3).map(read).collect::<Vec<_>>()));
    let within = duet.wait_for("the first batch's answer", Value::is_array).as_array().unwrap().clone();
    assert!(within.iter().all(|a| a["result"]["isError"] == false), "{within:?}");
    duet.send(&Value::from((11..=40).map(read).collect::<Vec<_>>()));
    let past = duet.wait_for("the second batch's answer", |m| m.is_array() && m[0]["id"] == 11);
    let errors: Vec<&Value> = past.as_array().unwrap().iter().filter_map(|a| a.get("error")).collect();
    assert!(!errors.is_empty() && errors.len() < 30, "{} of 30 refused", errors.len());
    assert_eq!(errors[0]["message"], "the batch's answer reached 20000 bytes; send fewer or smaller requests");
    duet.finish(ANSWER).assert_success();
}
