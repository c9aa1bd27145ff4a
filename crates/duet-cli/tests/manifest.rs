//! `duet serve --manifest`: what a manifest command may do, from the real binary over
//! stdio. A client's value never becomes an option of the command (`ls {path}` with
//! `--help`), nothing a command starts outlives its call, however the call ends: the
//! command's exit, its timeout or the client's cancellation, and one confirmation runs a
//! `confirm = "…"` command once, however often it is sent.

// Shared with the stdio tests; this file uses only part of it.
#[allow(dead_code)]
mod common;

use common::{ANSWER, CAPABILITIES_KEY, Duet, VERSION_KEY};
use rustix::process::{Pid, Signal, kill_process};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

const EXIT: Duration = Duration::from_secs(20);
const VERSION: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";

/// A command that leaves `sleep 300` running (its pid in `NAME.pid`), then runs `then`.
fn spawner(name: &str, then: &str, timeout: u64) -> String {
    let script = format!("sleep 300 >/dev/null 2>&1 & echo $! > {name}.pid; {then}");
    format!(
        "[[tool]]\nname = \"{name}\"\ndescription = \"leaves a sleep behind\"\n\
         command = [\"sh\", \"-c\", \"{script}\"]\ncwd = \".\"\ntimeout = {timeout}\n"
    )
}

/// `duet serve` for a manifest of `tools`, in a folder of its own, initialized.
fn serve(tools: &str) -> (Duet, tempfile::TempDir) {
    let (mut duet, dir) = serve_at(tools, VERSION);
    duet.initialize(VERSION);
    (duet, dir)
}

/// `duet serve` for a manifest of `tools`, in a folder of its own, speaking `version`.
fn serve_at(tools: &str, version: &str) -> (Duet, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("duet.toml");
    std::fs::write(&manifest, format!("[server]\nname = \"m\"\nversion = \"1\"\n{tools}")).unwrap();
    (Duet::spawn(&["serve", "--manifest", manifest.to_str().unwrap()], version), dir)
}

/// The result of calling `tool`.
fn call(duet: &mut Duet, id: i64, tool: &str, arguments: Value) -> Value {
    duet.request(json!(id), "tools/call", json!({"name": tool, "arguments": arguments}));
    duet.response(&json!(id))["result"].clone()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("a text result: {result}"))
}

/// The pid a spawner wrote, once it is whole (the shell creates the file before `echo`).
fn pid_in(dir: &Path, name: &str) -> i32 {
    let file = dir.join(format!("{name}.pid"));
    let deadline = Instant::now() + ANSWER;
    loop {
        if let Some(pid) = std::fs::read_to_string(&file).ok().filter(|p| p.ends_with('\n')) {
            return pid.trim().parse().expect("a pid");
        }
        assert!(Instant::now() < deadline, "{name} wrote no pid");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is still the spawner's `sleep 300`, not dead (or a zombie nobody reaped yet).
fn sleeping(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let zombie = stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z'));
    !stat.is_empty() && !zombie && cmdline.starts_with(b"sleep\x00300")
}

/// Asserts the `sleep` a call left behind ends (waiting up to [`ANSWER`] for its kill to
/// land), and stops it if it survived.
fn assert_ended(pid: i32, how: &str) {
    let deadline = Instant::now() + ANSWER;
    while sleeping(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if sleeping(pid) {
        let _ = Pid::from_raw(pid).map(|pid| kill_process(pid, Signal::KILL));
        panic!("the sleep {pid} a command started survived its {how}");
    }
}

#[test]
fn a_value_that_would_be_an_option_is_refused() {
    let tools = "[[tool]]\nname = \"ls\"\ndescription = \"lists\"\ncommand = [\"ls\", \"{path}\"]\ncwd = \".\"\n\
                 [tool.args.path]\ntype = \"string\"\nrequired = true\n";
    let (mut duet, dir) = serve(tools);
    std::fs::write(dir.path().join("listed.txt"), "").unwrap();
    for (id, option) in [(1, "--help"), (2, "-R")] {
        let result = call(&mut duet, id, "ls", json!({"path": option}));
        assert_eq!(result["isError"], true, "{result}");
        let refusal = r#"Tool ls: argument path cannot start with "-": the command would read it as an option"#;
        assert_eq!(text(&result), refusal);
    }
    // The server goes on serving the same tool.
    let result = call(&mut duet, 3, "ls", json!({"path": "listed.txt"}));
    assert_eq!((text(&result), &result["isError"]), ("listed.txt\n", &json!(false)), "{result}");
    duet.finish(EXIT).assert_success();
}

#[test]
fn nothing_a_command_started_outlives_its_exit() {
    // The second holds duet's pipe open through its sleep: the call answers at the shell's
    // exit all the same, long before its timeout.
    let held = "[[tool]]\nname = \"held\"\ndescription = \"keeps stdout\"\n\
                command = [\"sh\", \"-c\", \"sleep 300 & echo $! > held.pid; echo started\"]\ncwd = \".\"\ntimeout = 300\n";
    let (mut duet, dir) = serve(&format!("{}{held}", spawner("detached", "echo started", 300)));
    for (id, tool) in [(1, "detached"), (2, "held")] {
        let result = call(&mut duet, id, tool, json!({}));
        assert_eq!((text(&result), &result["isError"]), ("started\n", &json!(false)), "{result}");
        assert_ended(pid_in(dir.path(), tool), "command's exit");
    }
    duet.finish(EXIT).assert_success();
}

#[test]
fn nothing_a_command_started_outlives_its_timeout_or_cancellation() {
    let (mut duet, dir) = serve(&format!("{}{}", spawner("slow", "sleep 300", 1), spawner("waits", "sleep 300", 300)));
    let result = call(&mut duet, 1, "slow", json!({}));
    assert_eq!(text(&result), "Tool slow timed out after 1 s");
    assert_ended(pid_in(dir.path(), "slow"), "command's timeout");

    duet.request(json!(2), "tools/call", json!({"name": "waits", "arguments": {}}));
    let pid = pid_in(dir.path(), "waits");
    duet.notify("notifications/cancelled", json!({"requestId": 2}));
    assert_ended(pid, "call's cancellation");
    // The server answers on (a cancelled request gets no response).
    let result = call(&mut duet, 3, "slow", json!({}));
    assert_eq!(text(&result), "Tool slow timed out after 1 s");
    duet.finish(EXIT).assert_success();
}

#[test]
fn one_confirmation_runs_a_confirmed_command_once() {
    // Each run appends a line and answers how many lines there are.
    let tools = "[[tool]]\nname = \"stamp\"\ndescription = \"appends a line\"\n\
                 command = [\"sh\", \"-c\", \"echo ran >> ran.log; wc -l < ran.log\"]\ncwd = \".\"\n\
                 confirm = \"Append a line?\"\n";
    let (mut duet, dir) = serve_at(tools, MODERN);
    let stamp = |extra: Value| {
        let meta = json!({VERSION_KEY: MODERN, CAPABILITIES_KEY: {"elicitation": {}}});
        let mut params = json!({"name": "stamp", "arguments": {}, "_meta": meta});
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        params
    };
    duet.request(json!(1), "tools/call", stamp(json!({})));
    let asked = duet.response(&json!(1))["result"].clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let confirmed = stamp(json!({
        "requestState": asked["requestState"],
        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}}
    }));
    let mut answers = Vec::new();
    for id in 2..=4 {
        duet.request(json!(id), "tools/call", confirmed.clone());
        answers.push(duet.response(&json!(id))["result"].clone());
    }
    assert_eq!((text(&answers[0]), &answers[0]["isError"]), ("1\n", &json!(false)), "{}", answers[0]);
    assert!(answers.iter().all(|a| a == &answers[0]), "each replay gets the first run's answer: {answers:?}");
    let ran = std::fs::read_to_string(dir.path().join("ran.log")).unwrap();
    assert_eq!(ran, "ran\n", "the command ran once");
    duet.finish(EXIT).assert_success();
}
