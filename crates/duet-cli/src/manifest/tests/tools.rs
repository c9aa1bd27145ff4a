//! Command tools: arguments as argv elements, the generated input schema, failures,
//! timeouts and cancellation killing the whole process group, output limits, JSON output,
//! the environment, the working directory and roles.

use super::*;
use std::time::{Duration, Instant};

#[tokio::test]
async fn arguments_become_argv_elements() {
    let r = registry(
        r#"
[[tool]]
name = "show"
description = "prints its arguments"
command = ["printf", "[%s]", "{text}", "--n={count}", "{flag}"]
[tool.args.text]
type = "string"
required = true
[tool.args.count]
type = "integer"
required = true
[tool.args.flag]
type = "boolean"
required = true
"#,
    );
    // Spaces, quotes and shell syntax stay inside their one element.
    let out = ok(call(&r, "show", json!({"text": "a b; echo 'x' $(id)", "count": 3, "flag": true})).await);
    assert_eq!(out, "[a b; echo 'x' $(id)][--n=3][true]");
}

#[tokio::test]
async fn array_items_become_one_element_each() {
    let r = registry(
        r#"
[[tool]]
name = "each"
description = "prints each item"
command = ["printf", "<%s>", "{items}"]
[tool.args.items]
type = "array"
required = true
"#,
    );
    assert_eq!(ok(call(&r, "each", json!({"items": ["a", "b c", ""]})).await), "<a><b c><>");
    let schema = &r.tools(&Principal::local())[0].input_schema;
    assert_eq!(schema["properties"]["items"], json!({"type": "array", "items": {"type": "string"}}));
}

#[tokio::test]
async fn defaults_fill_in_and_absent_optional_elements_drop() {
    let r = registry(
        r#"
[[tool]]
name = "log"
description = "a log-like command"
command = ["printf", "%s.", "-n", "{count}", "{path}"]
[tool.args.count]
type = "integer"
default = 10
[tool.args.path]
type = "string"

[[tool]]
name = "inside"
description = "an optional argument inside a longer element"
command = ["printf", "%s", "--path={path}"]
[tool.args.path]
type = "string"
"#,
    );
    assert_eq!(ok(call(&r, "log", json!({})).await), "-n.10.");
    assert_eq!(ok(call(&r, "log", json!({"count": 2, "path": "src"})).await), "-n.2.src.");
    assert_eq!(ok(call(&r, "inside", json!({"path": "x"})).await), "--path=x");
    let message = failed(call(&r, "inside", json!({})).await);
    assert!(message.contains("argument path has no value") && message.contains("--path={path}"), "{message}");
}

#[tokio::test]
async fn a_value_is_never_read_as_an_option() {
    let r = registry(
        r#"
[[tool]]
name = "show"
description = "prints its operands"
command = ["printf", "[%s]", "{path}", "{paths}", "{stem}.txt", "--in={path}"]
[tool.args.path]
type = "string"
default = "a"
[tool.args.paths]
type = "array"
[tool.args.stem]
type = "string"
default = "s"

[[tool]]
name = "operands"
description = "after --, every value is an operand"
command = ["printf", "[%s]", "--", "{path}"]
[tool.args.path]
type = "string"
required = true

[[tool]]
name = "head"
description = "a negative count is an option's value here"
command = ["printf", "[%s]", "-n", "{count}"]
[tool.args.count]
type = "integer"
required = true
allow_leading_dash = true
"#,
    );
    let refused = |arg: &str| {
        format!("Tool show: argument {arg} cannot start with \"-\": the command would read it as an option")
    };
    assert_eq!(failed(call(&r, "show", json!({"path": "--help"})).await), refused("path"));
    assert_eq!(failed(call(&r, "show", json!({"paths": ["x", "-R"]})).await), refused("paths"));
    assert_eq!(failed(call(&r, "show", json!({"stem": "-R"})).await), refused("stem"));
    // Inside an element, after text, a dash is only text.
    assert_eq!(ok(call(&r, "show", json!({"path": "a-b", "paths": ["x-"]})).await), "[a-b][x-][s.txt][--in=a-b]");
    assert_eq!(ok(call(&r, "operands", json!({"path": "-R"})).await), "[--][-R]");
    assert_eq!(ok(call(&r, "head", json!({"count": -5})).await), "[-n][-5]");
}

#[tokio::test]
async fn the_input_schema_is_generated_and_enforced() {
    let r = registry(
        r#"
[[tool]]
name = "pick"
title = "Pick"
description = "picks"
command = ["printf", "%s %s %s", "{mode}", "{n}", "{ratio}"]
annotations = { read_only = true, destructive = false, idempotent = true, open_world = false }
[tool.args.mode]
type = "string"
description = "how"
enum = ["fast", "slow"]
required = true
[tool.args.n]
type = "integer"
minimum = 1
maximum = 5
default = 2
[tool.args.ratio]
type = "number"
default = 0.5
"#,
    );
    let tool = r.tools(&Principal::local())[0].clone();
    assert_eq!(
        tool.input_schema,
        json!({
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["fast", "slow"], "description": "how"},
                "n": {"type": "integer", "minimum": 1, "maximum": 5, "default": 2},
                "ratio": {"type": "number", "default": 0.5},
            },
            "additionalProperties": false,
            "required": ["mode"],
        })
    );
    // Declaration order, not alphabetical.
    let order: Vec<&String> =
        tool.input_schema["properties"].as_object().map(|p| p.keys().collect()).unwrap_or_default();
    assert_eq!(order, ["mode", "n", "ratio"]);
    assert_eq!(tool.about.title.as_deref(), Some("Pick"));
    let hints = tool.annotations.unwrap_or_default();
    assert_eq!(
        (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint),
        (Some(true), Some(false), Some(true), Some(false))
    );

    assert_eq!(ok(call(&r, "pick", json!({"mode": "fast"})).await), "fast 2 0.5");
    for bad in [
        json!({"mode": "fast", "n": "three"}),
        json!({"mode": "medium"}),
        json!({"mode": "fast", "n": 9}),
        json!({"n": 2}),
        json!({"mode": "fast", "extra": 1}),
    ] {
        let message = failed(call(&r, "pick", bad.clone()).await);
        assert!(message.starts_with("Invalid arguments"), "{bad}: {message}");
    }
}

#[tokio::test]
async fn a_failing_command_reports_its_exit_code_and_stderr() {
    let r = registry(
        r#"
[[tool]]
name = "fail"
description = "fails"
command = ["sh", "-c", "echo partial; echo 'it broke' >&2; exit 3"]

[[tool]]
name = "noisy"
description = "fails with a lot of stderr"
command = ["sh", "-c", "head -c 20000 /dev/zero | tr '\\0' x >&2; exit 1"]

[[tool]]
name = "missing"
description = "a program that does not exist"
command = ["duet-no-such-program"]
"#,
    );
    let message = failed(call(&r, "fail", json!({})).await);
    assert!(message.contains("exited with code 3") && message.contains("it broke"), "{message}");
    assert!(!message.contains("partial"), "stdout is not shown when stderr explains: {message}");
    let message = failed(call(&r, "noisy", json!({})).await);
    assert!(message.contains("[output truncated: 8192 of 20000 bytes shown]"), "{}", &message[message.len() - 80..]);
    assert!(message.len() < 9000);
    let message = failed(call(&r, "missing", json!({})).await);
    assert!(message.contains("cannot start duet-no-such-program"), "{message}");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry_in(
        dir.path(),
        r#"
[[tool]]
name = "slow"
description = "sleeps"
command = ["sleep", "5"]
timeout = 1

[[tool]]
name = "spawner"
description = "leaves a grandchild behind"
command = ["sh", "-c", "sleep 30 & echo $! > grandchild.pid; wait"]
cwd = "."
timeout = 1
"#,
    );
    let started = Instant::now();
    let message = failed(call(&r, "slow", json!({})).await);
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
    assert_eq!(message, "Tool slow timed out after 1 s");

    let started = Instant::now();
    failed(call(&r, "spawner", json!({})).await);
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
    let pid = std::fs::read_to_string(dir.path().join("grandchild.pid")).unwrap();
    assert!(gone(pid.trim()).await, "the grandchild {} survived the timeout", pid.trim());
}

#[tokio::test]
async fn a_normal_exit_kills_what_the_command_left_running() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry_in(
        dir.path(),
        r#"
[[tool]]
name = "detached"
description = "leaves a grandchild behind, its output elsewhere"
command = ["sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $! > grandchild.pid; echo started"]
cwd = "."

[[tool]]
name = "holding"
description = "leaves a grandchild behind that holds stdout open"
command = ["sh", "-c", "sleep 30 & echo started"]
timeout = 20
"#,
    );
    assert_eq!(ok(call(&r, "detached", json!({})).await), "started\n");
    let pid = std::fs::read_to_string(dir.path().join("grandchild.pid")).unwrap();
    assert!(gone(pid.trim()).await, "the grandchild {} survived the command", pid.trim());
    // The grandchild's end closes the pipe it shares: the call answers, rather than time out.
    assert_eq!(ok(call(&r, "holding", json!({})).await), "started\n");
}

/// A context whose request the returned token cancels. (The token's type comes from a
/// crate this binary does not depend on, so it is inferred rather than named.)
fn cancellable<T: Clone + Default>(build: impl FnOnce(T) -> RequestCx) -> (RequestCx, T) {
    let token = T::default();
    (build(token.clone()), token)
}

#[tokio::test]
async fn cancellation_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry_in(
        dir.path(),
        r#"
[[tool]]
name = "spawner"
description = "leaves a grandchild behind"
command = ["sh", "-c", "sleep 30 & echo $! > grandchild.pid; wait"]
cwd = "."
"#,
    );
    let (cx, token) = cancellable(|token| RequestCx::builder(Principal::local()).cancel(token).build());
    let started = Instant::now();
    let cancel = async {
        // The whole pid, with its newline: the shell creates the file before `echo` writes it.
        while !std::fs::read_to_string(dir.path().join("grandchild.pid")).is_ok_and(|pid| pid.ends_with('\n')) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        token.cancel();
    };
    let (result, ()) = tokio::join!(call_with(&r, "spawner", json!({}), &cx), cancel);
    assert_eq!(failed(result), "Tool spawner was cancelled");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    let pid = std::fs::read_to_string(dir.path().join("grandchild.pid")).unwrap();
    assert!(gone(pid.trim()).await, "the grandchild {} survived the cancellation", pid.trim());
}

/// Whether a process has ended (it may linger as a zombie until someone reaps it).
pub(super) async fn gone(pid: &str) -> bool {
    for _ in 0..40 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) if stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')) => return true,
            Ok(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    false
}

#[tokio::test]
async fn long_output_is_cut_with_a_note() {
    let r = registry(
        r#"
[[tool]]
name = "flood"
description = "prints more than a MiB"
command = ["sh", "-c", "head -c 1100000 /dev/zero | tr '\\0' x"]

[[tool]]
name = "flood_json"
description = "prints more than a MiB, as JSON"
command = ["sh", "-c", "printf '\"'; head -c 1100000 /dev/zero | tr '\\0' x; printf '\"'"]
output = "json"
"#,
    );
    let out = ok(call(&r, "flood", json!({})).await);
    assert!(out.starts_with("xxxx"));
    assert!(out.ends_with("\n[output truncated: 1048576 of 1100000 bytes shown]"), "{}", &out[out.len() - 80..]);
    let message = failed(call(&r, "flood_json", json!({})).await);
    assert!(message.contains("too long to return as JSON"), "{message}");
}

#[tokio::test]
async fn json_output_becomes_structured_content() {
    let r = registry(
        r#"
[[tool]]
name = "object"
description = "prints an object"
command = ["printf", "{{\"n\": %s, \"ok\": true}}", "{n}"]
output = "json"
[tool.args.n]
type = "integer"
required = true

[[tool]]
name = "list"
description = "prints an array"
command = ["printf", "[1, 2]"]
output = "json"

[[tool]]
name = "garbage"
description = "prints no JSON"
command = ["printf", "not json"]
output = "json"
"#,
    );
    let result = call(&r, "object", json!({"n": 7})).await;
    assert!(!result.is_error);
    assert_eq!(result.structured_content, Some(json!({"n": 7, "ok": true})));
    let result = call(&r, "list", json!({})).await;
    assert_eq!(result.structured_content, Some(json!({"result": [1, 2]})));
    let message = failed(call(&r, "garbage", json!({})).await);
    assert!(message.contains("not valid JSON"), "{message}");
}

#[tokio::test]
async fn the_child_gets_only_the_allowed_environment() {
    let r = registry(
        r#"
[[tool]]
name = "env"
description = "prints its environment"
command = ["env"]
env = ["PATH", "DUET_TEST_SURELY_UNSET"]
env_set = { FIXED = "yes" }

[[tool]]
name = "bare"
description = "no environment at all"
command = ["env"]
"#,
    );
    let out = ok(call(&r, "env", json!({})).await);
    let names: Vec<&str> = out.lines().filter_map(|l| l.split_once('=')).map(|(name, _)| name).collect();
    let mut expected = vec!["FIXED"];
    if std::env::var_os("PATH").is_some() {
        expected.push("PATH");
    }
    let mut names = names;
    names.sort();
    assert_eq!(names, expected, "{out}");
    assert!(out.contains("FIXED=yes"));
    // Something from this process's environment that was not allowed is absent.
    if let Some((name, _)) = std::env::vars().find(|(n, _)| n != "PATH") {
        assert!(!out.contains(&format!("{name}=")), "{name} leaked into the child");
    }
    assert_eq!(ok(call(&r, "bare", json!({})).await), "");
}

#[tokio::test]
async fn cwd_is_relative_to_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    std::fs::write(dir.path().join("work/marker.txt"), "").unwrap();
    let r = registry_in(
        dir.path(),
        r#"
[[tool]]
name = "ls"
description = "lists"
command = ["ls"]
cwd = "work"
"#,
    );
    assert_eq!(ok(call(&r, "ls", json!({})).await), "marker.txt\n");
}

#[tokio::test]
async fn roles_hide_a_tool() {
    let r = registry(
        r#"
[[tool]]
name = "admin_only"
description = "for admins"
command = ["true"]
roles = ["admin"]
"#,
    );
    assert!(r.tools(&Principal::local()).is_empty());
    assert_eq!(r.tools(&Principal::new("root", ["admin"])).len(), 1);
    let hidden = r.call_tool("admin_only", Map::new(), cx()).await;
    assert!(matches!(hidden, Err(LayerError::NotFound(_))));
}

#[tokio::test]
async fn an_argument_can_be_mirrored_in_a_header() {
    let r = registry(
        r#"
[[tool]]
name = "deploy"
description = "deploys"
command = ["echo", "{region}", "{n}"]
[tool.args.region]
type = "string"
required = true
header = "Region"
[tool.args.n]
type = "integer"
header = "Count"
"#,
    );
    let tool = r.tools(&Principal::local())[0].clone();
    assert_eq!(tool.input_schema["properties"]["region"], json!({"type": "string", "x-mcp-header": "Region"}));
    assert_eq!(tool.input_schema["properties"]["n"]["x-mcp-header"], "Count");
    let mut mirrored: Vec<String> =
        duet::layer::mirrored_args(&tool.input_schema).unwrap().into_iter().map(|a| a.header).collect();
    mirrored.sort();
    assert_eq!(mirrored, ["Count", "Region"]);
    assert_eq!(ok(call(&r, "deploy", json!({"region": "eu", "n": 2})).await), "eu 2\n");
}
