//! The manifest layer end to end: manifests parsed from text, tools run as real child
//! processes through the `Layer` trait, and every load-time check failing with the file,
//! line and field in its message.

use super::{ManifestError, load, parse};
use duet::layer::{
    CompletionArg, CompletionRef, ContentKind, Layer, LayerError, Principal, Registry, Reply, RequestCx, ResourceBody,
    ToolResult,
};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SERVER: &str = "[server]\nname = \"test\"\nversion = \"1.0.0\"\n";

fn manifest(body: &str) -> String {
    format!("{SERVER}{body}")
}

fn registry(body: &str) -> Registry {
    registry_in(Path::new("."), body)
}

/// A registry whose manifest sits in `dir` (for `cwd` and `file`).
fn registry_in(dir: &Path, body: &str) -> Registry {
    parse(&manifest(body), &dir.join("duet.toml")).unwrap_or_else(|e| panic!("the manifest should load: {e}"))
}

/// The error for a manifest, and the line of the first occurrence of `at` in it.
fn error(body: &str, at: &str) -> (String, usize) {
    error_in(Path::new("."), body, at)
}

fn error_in(dir: &Path, body: &str, at: &str) -> (String, usize) {
    let text = manifest(body);
    let line = text.lines().position(|l| l.contains(at)).map(|i| i + 1);
    let line = line.unwrap_or_else(|| panic!("{at:?} is not in the manifest"));
    match parse(&text, &dir.join("duet.toml")) {
        Ok(_) => panic!("the manifest should be rejected:\n{text}"),
        Err(e) => (e.to_string(), line),
    }
}

/// Asserts the error names `duet.toml:LINE:` (LINE: where `at` is written) and each of `says`.
fn assert_rejected(body: &str, at: &str, says: &[&str]) {
    let (message, line) = error(body, at);
    assert_located(&message, line, says);
}

fn assert_located(message: &str, line: usize, says: &[&str]) {
    assert!(message.contains(&format!("duet.toml:{line}:")), "{message:?} should point at line {line}");
    for s in says {
        assert!(message.contains(s), "{message:?} should say {s:?}");
    }
}

fn cx() -> RequestCx {
    RequestCx::builder(Principal::local()).build()
}

fn cx_with(capabilities: Value, inputs: Value) -> RequestCx {
    let inputs = inputs.as_object().cloned().unwrap_or_default();
    RequestCx::builder(Principal::local()).client_capabilities(capabilities).input_responses(inputs).build()
}

fn object(args: Value) -> Map<String, Value> {
    args.as_object().cloned().unwrap_or_else(|| panic!("arguments must be an object: {args}"))
}

async fn call_with(r: &Registry, tool: &str, args: Value, cx: &RequestCx) -> ToolResult {
    match r.call_tool(tool, object(args), cx).await {
        Ok(Reply::Complete(result)) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

async fn call(r: &Registry, tool: &str, args: Value) -> ToolResult {
    call_with(r, tool, args, &cx()).await
}

fn text(result: &ToolResult) -> String {
    result
        .content
        .iter()
        .map(|c| match &c.kind {
            ContentKind::Text { text } => text.as_str(),
            _ => "",
        })
        .collect()
}

/// The text of a successful result.
fn ok(result: ToolResult) -> String {
    assert!(!result.is_error, "the tool failed: {}", text(&result));
    text(&result)
}

/// The text of a tool error.
fn failed(result: ToolResult) -> String {
    assert!(result.is_error, "the tool should have failed, it printed {:?}", text(&result));
    text(&result)
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/manifests")
}

// ---- tools -----------------------------------------------------------------------------

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
    assert_eq!(tool.title.as_deref(), Some("Pick"));
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
        while !dir.path().join("grandchild.pid").exists() {
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
async fn gone(pid: &str) -> bool {
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
    let hidden = r.call_tool("admin_only", Map::new(), &cx()).await;
    assert!(matches!(hidden, Err(LayerError::NotFound(_))));
}

// ---- confirmation ----------------------------------------------------------------------

const CONFIRMED: &str = r#"
[[tool]]
name = "remove"
description = "creates a marker after confirmation"
command = ["touch", "--", "{path}"]
cwd = "."
confirm = "Really touch {path}?"
[tool.args.path]
type = "string"
required = true
"#;

#[tokio::test]
async fn confirmation_asks_first() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry_in(dir.path(), CONFIRMED);
    let elicitation = json!({"elicitation": {}});
    let asked = r.call_tool("remove", object(json!({"path": "m"})), &cx_with(elicitation, json!({}))).await;
    let Ok(Reply::InputRequired(input)) = asked else { panic!("expected an input request, got {asked:?}") };
    assert_eq!(
        input.requests["confirm"],
        json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Really touch m?",
                "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            },
        })
    );
    assert!(!dir.path().join("m").exists(), "nothing runs before the answer");
}

/// Calls a tool that asks for confirmation as a client would: the first run asks, the
/// second brings `answer` and the state of the question.
async fn confirm_with(r: &Registry, tool: &str, args: Value, answer: Value) -> ToolResult {
    let caps = json!({"elicitation": {}});
    let asked = r.call_tool(tool, object(args.clone()), &cx_with(caps.clone(), json!({}))).await;
    let Ok(Reply::InputRequired(input)) = asked else { panic!("expected an input request, got {asked:?}") };
    let cx = RequestCx::builder(Principal::local())
        .client_capabilities(caps)
        .input_responses(object(json!({"confirm": answer})))
        .state(input.state)
        .build();
    call_with(r, tool, args, &cx).await
}

#[tokio::test]
async fn confirmation_declined_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry_in(dir.path(), CONFIRMED);
    for (answer, says) in [
        (json!({"action": "decline"}), "the user declined"),
        (json!({"action": "cancel"}), "the user cancelled"),
        (json!({"action": "accept", "content": {"ok": false}}), "the user did not confirm"),
    ] {
        let message = failed(confirm_with(&r, "remove", json!({"path": "m"}), answer).await);
        assert_eq!(message, format!("Tool remove did not run: {says}"));
    }
    assert!(!dir.path().join("m").exists());
}

#[tokio::test]
async fn confirmation_accepted_runs() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry_in(dir.path(), CONFIRMED);
    let answer = json!({"action": "accept", "content": {"ok": true}});
    ok(confirm_with(&r, "remove", json!({"path": "m"}), answer).await);
    assert!(dir.path().join("m").exists());
}

#[tokio::test]
async fn an_answer_to_no_question_asks_again() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry_in(dir.path(), CONFIRMED);
    // A "yes" the client made up, without the state of a question the server asked.
    let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let cx = cx_with(json!({"elicitation": {}}), answer);
    let asked = r.call_tool("remove", object(json!({"path": "m"})), &cx).await;
    assert!(matches!(asked, Ok(Reply::InputRequired(_))), "{asked:?}");
    assert!(!dir.path().join("m").exists());
}

#[tokio::test]
async fn confirmation_needs_elicitation() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry_in(dir.path(), CONFIRMED);
    let message = failed(call(&r, "remove", json!({"path": "m"})).await);
    assert!(message.contains("needs the user's confirmation") && message.contains("elicitation"), "{message}");
    assert!(!dir.path().join("m").exists());
}

// ---- resources and prompts -------------------------------------------------------------

async fn read(r: &Registry, uri: &str) -> Vec<duet::layer::ResourceContents> {
    match r.read_resource(uri, &cx()).await {
        Ok(Reply::Complete(contents)) => contents,
        other => panic!("expected contents, got {other:?}"),
    }
}

#[tokio::test]
async fn resources_serve_text_and_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("readme.md"), "# one").unwrap();
    std::fs::write(dir.path().join("logo.bin"), [0xff, 0x00, 0xfe]).unwrap();
    let r = registry_in(
        dir.path(),
        r#"
[[resource]]
uri = "test://static"
name = "static"
description = "written inline"
text = "hello"

[[resource]]
uri = "test://readme"
name = "readme"
file = "readme.md"

[[resource]]
uri = "test://logo"
name = "logo"
mime_type = "image/x-test"
file = "logo.bin"
"#,
    );
    let listed = r.resources(&Principal::local());
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0].description.as_deref(), Some("written inline"));
    assert_eq!(listed[0].mime_type.as_deref(), Some("text/plain"));
    assert_eq!(listed[1].mime_type.as_deref(), Some("text/markdown"));

    let stat = read(&r, "test://static").await;
    assert_eq!(stat[0].body, ResourceBody::Text("hello".into()));
    assert_eq!(read(&r, "test://readme").await[0].body, ResourceBody::Text("# one".into()));
    // Read on each request.
    std::fs::write(dir.path().join("readme.md"), "# two").unwrap();
    let readme = read(&r, "test://readme").await;
    assert_eq!(readme[0].body, ResourceBody::Text("# two".into()));
    assert_eq!(readme[0].mime_type.as_deref(), Some("text/markdown"));
    let logo = read(&r, "test://logo").await;
    assert_eq!(logo[0].body, ResourceBody::Blob("/wD+".into()));
    assert_eq!(logo[0].mime_type.as_deref(), Some("image/x-test"));

    std::fs::remove_file(dir.path().join("readme.md")).unwrap();
    let gone = r.read_resource("test://readme", &cx()).await;
    assert!(matches!(gone, Err(LayerError::NotFound(_))), "{gone:?}");
}

const PROMPT: &str = r#"
[[prompt]]
name = "review"
description = "Reviews a file"
template = "Review {file} focusing on {focus}."
[prompt.args.file]
description = "The file"
required = true
[prompt.args.focus]
completions = ["security", "Speed", "style"]
"#;

#[tokio::test]
async fn prompts_render_their_template() {
    let r = registry(PROMPT);
    let listed = r.prompts(&Principal::local());
    let args: Vec<(&str, bool)> = listed[0].arguments.iter().map(|a| (a.name.as_str(), a.required)).collect();
    assert_eq!(args, [("file", true), ("focus", false)]);
    assert_eq!(listed[0].description.as_deref(), Some("Reviews a file"));

    let values = BTreeMap::from([("file".to_string(), "a.rs".to_string()), ("focus".to_string(), "style".to_string())]);
    let Ok(Reply::Complete(result)) = r.get_prompt("review", values, &cx()).await else { panic!("no prompt") };
    let rendered = serde_json::to_value(&result.messages).unwrap();
    assert_eq!(
        rendered,
        json!([{"role": "user", "content": {"type": "text", "text": "Review a.rs focusing on style."}}])
    );

    let only_file = BTreeMap::from([("file".to_string(), "b.rs".to_string())]);
    let Ok(Reply::Complete(result)) = r.get_prompt("review", only_file, &cx()).await else { panic!("no prompt") };
    assert_eq!(serde_json::to_value(&result.messages[0].content).unwrap()["text"], "Review b.rs focusing on .");
    let missing = r.get_prompt("review", BTreeMap::new(), &cx()).await;
    assert!(matches!(missing, Err(LayerError::InvalidArguments { .. })), "{missing:?}");
}

#[tokio::test]
async fn prompt_arguments_complete_by_prefix() {
    let r = registry(PROMPT);
    let complete = |arg: &str, value: &str| {
        let of = CompletionRef::Prompt { name: "review".into() };
        let arg = CompletionArg { name: arg.into(), value: value.into(), context: BTreeMap::new() };
        let r = &r;
        async move { r.complete(of, arg, &cx()).await.unwrap().values }
    };
    assert_eq!(complete("focus", "s").await, ["security", "Speed", "style"]);
    assert_eq!(complete("focus", "sT").await, ["style"]);
    assert_eq!(complete("focus", "x").await, Vec::<String>::new());
    assert_eq!(complete("file", "").await, Vec::<String>::new());
}

// ---- the examples ----------------------------------------------------------------------

#[tokio::test]
async fn the_example_manifests_load() {
    let git = load(&examples().join("git-tools.toml")).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = git.tools(&Principal::local()).iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["git_status", "git_log", "git_show_file"]);
    let message = failed(call(&git, "git_show_file", json!({"revision": "--output=x", "path": "a"})).await);
    assert!(message.starts_with("Invalid arguments"), "{message}");

    let notes = load(&examples().join("notes.toml")).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = notes.tools(&Principal::local()).iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["list_notes", "read_note", "delete_note"]);
    let listed = ok(call(&notes, "list_notes", json!({})).await);
    assert!(listed.lines().any(|l| l == "welcome.md"), "{listed}");
    let welcome = ok(call(&notes, "read_note", json!({"name": "welcome.md"})).await);
    assert!(welcome.starts_with("# Welcome"));
    let message = failed(call(&notes, "read_note", json!({"name": "../notes.toml"})).await);
    assert!(message.starts_with("Invalid arguments"), "{message}");
    // Deleting asks first (and is not answered here).
    let asked = notes
        .call_tool("delete_note", object(json!({"name": "ideas.md"})), &cx_with(json!({"elicitation": {}}), json!({})))
        .await;
    assert!(matches!(asked, Ok(Reply::InputRequired(_))), "{asked:?}");
    let contents = read(&notes, "notes://welcome").await;
    assert!(matches!(&contents[0].body, ResourceBody::Text(t) if t.starts_with("# Welcome")));
    assert_eq!(notes.prompts(&Principal::local())[0].name, "summarize_note");
}

// ---- bad manifests ---------------------------------------------------------------------

#[test]
fn load_names_a_file_it_cannot_read() {
    let err = load(Path::new("/definitely/not/here/duet.toml")).err();
    assert!(matches!(&err, Some(ManifestError::Read { .. })), "{err:?}");
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.starts_with("cannot read /definitely/not/here/duet.toml"), "{message}");
}

#[test]
fn a_toml_syntax_error_has_a_line() {
    assert_rejected("[[tool]\nname = 1\n", "[[tool]", &[]);
}

#[test]
fn unknown_keys_are_errors() {
    let body = "\n[[tool]]\nname = \"t\"\ndescription = \"d\"\ncomand = [\"ls\"]\n";
    assert_rejected(body, "comand", &[r#"tool "t": unknown field `comand`"#]);
    assert_rejected("\n[server2]\n", "[server2]", &["unknown field `server2`"]);
    let body = "\n[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"ls\", \"{a}\"]\n[tool.args.a]\ntype = \"string\"\nrequird = true\n";
    assert_rejected(body, "requird", &[r#"tool "t": unknown field `requird`"#]);
    let body = "\n[[resource]]\nuri = \"test://a\"\nname = \"a\"\nmime = \"text/plain\"\n";
    assert_rejected(body, "mime", &[r#"resource "test://a": unknown field `mime`"#]);
}

#[test]
fn a_missing_field_points_at_its_table() {
    assert_rejected(
        "\n[[tool]]\nname = \"t\"\ncommand = [\"ls\"]\n",
        "[[tool]]",
        &[r#"tool "t": missing field `description`"#],
    );
    let body = "\n[[prompt]]\nname = \"p\"\ndescription = \"d\"\ntemplate = \"x\"\n[[resource]]\nname = \"a\"\n";
    assert_rejected(body, "[[resource]]", &["resource #1: missing field `uri`"]);
}

/// A tool named `deploy` with these extra lines.
fn tool(extra: &str) -> String {
    format!("\n[[tool]]\nname = \"deploy\"\ndescription = \"ships it\"\n{extra}\n")
}

#[test]
fn unknown_placeholders_are_errors() {
    let body = tool("command = [\"git\", \"push\", \"origin\", \"{branch}\"]");
    assert_rejected(
        &body,
        "command",
        &[r#"tool "deploy": unknown argument placeholder {branch} in command (declare it under [tool.args.branch])"#],
    );
    let body =
        tool("command = [\"rm\", \"{path}\"]\nconfirm = \"Delete {paht}?\"\n[tool.args.path]\ntype = \"string\"");
    assert_rejected(&body, "confirm", &[r#"tool "deploy""#, "{paht} in confirm"]);
    let body = tool("command = [\"echo\", \"{unclosed\"]");
    assert_rejected(&body, "command", &[r#"tool "deploy""#, "unclosed placeholder {unclosed"]);
}

#[test]
fn declared_arguments_must_be_used() {
    let body = tool("command = [\"ls\"]\n[tool.args.path]\ntype = \"string\"");
    assert_rejected(
        &body,
        "[tool.args.path]",
        &[r#"tool "deploy""#, "argument path is declared but command never uses it"],
    );
}

#[test]
fn the_command_must_name_a_fixed_program() {
    assert_rejected(&tool("command = []"), "command", &[r#"tool "deploy""#, "command is empty"]);
    let body = tool("command = [\"{prog}\"]\n[tool.args.prog]\ntype = \"string\"");
    assert_rejected(&body, "command", &[r#"tool "deploy""#, "must be fixed text"]);
}

#[test]
fn tool_names_follow_the_rule_and_are_unique() {
    let body = "\n[[tool]]\nname = \"bad name\"\ndescription = \"d\"\ncommand = [\"ls\"]\n";
    assert_rejected(body, "bad name", &[r#"tool "bad name": invalid name"#]);
    let body = format!(
        "{}{}",
        tool("command = [\"ls\"]"),
        "[[tool]]\nname = \"deploy\" # again\ndescription = \"d\"\ncommand = [\"ls\"]\n"
    );
    assert_rejected(&body, "# again", &[r#"tool "deploy" is declared twice"#]);
}

#[test]
fn argument_types_are_checked() {
    let body = tool("command = [\"ls\", \"{n}\"]\n[tool.args.n]\ntype = \"int\"");
    assert_rejected(&body, "type = \"int\"", &[r#"tool "deploy": unknown variant `int`"#, "`integer`"]);
    let body = tool("command = [\"ls\", \"{n}\"]\n[tool.args.n]\ntype = \"integer\"\ndefault = \"ten\"");
    assert_rejected(&body, "default", &[r#"tool "deploy": argument n: default "ten" is not an integer"#]);
    let body = tool("command = [\"ls\", \"{n}\"]\n[tool.args.n]\ntype = \"array\"\ndefault = [1]");
    assert_rejected(&body, "default", &["argument n: default [1] is not an array of strings"]);
    let body = tool("command = [\"ls\", \"{b}\"]\n[tool.args.b]\ntype = \"boolean\"\nenum = [true]");
    assert_rejected(&body, "enum", &["argument b: enum does not apply to boolean"]);
    let body = tool("command = [\"ls\", \"{s}\"]\n[tool.args.s]\ntype = \"string\"\nminimum = 1");
    assert_rejected(&body, "minimum", &["argument s: minimum applies to integer and number arguments"]);
    let body = tool("command = [\"ls\", \"{n}\"]\n[tool.args.n]\ntype = \"integer\"\nminimum = 5\nmaximum = 1");
    assert_rejected(&body, "maximum", &["argument n: maximum 1 is below minimum 5"]);
    let body = tool("command = [\"ls\", \"{s}\"]\n[tool.args.s]\ntype = \"string\"\npattern = \"([a-z\"");
    assert_rejected(&body, "pattern", &["argument s: invalid pattern"]);
    let body = tool("command = [\"ls\", \"{s}\"]\n[tool.args.s]\ntype = \"string\"\nenum = [\"a\", 2]");
    assert_rejected(&body, "enum", &["argument s: enum value 2 is not a string"]);
    let body = tool("command = [\"ls\", \"{s}\"]\n[tool.args.s]\ntype = \"string\"\nenum = [\"a\"]\ndefault = \"b\"");
    assert_rejected(&body, "default", &["argument s: default \"b\" is not one of the enum values"]);
    let body = tool("command = [\"ls\", \"{n}\"]\n[tool.args.n]\ntype = \"integer\"\nmaximum = 3\ndefault = 4");
    assert_rejected(&body, "default", &["argument n: default 4 is above the maximum"]);
}

#[test]
fn a_required_argument_has_no_default() {
    let body = tool("command = [\"ls\", \"{n}\"]\n[tool.args.n]\ntype = \"integer\"\nrequired = true\ndefault = 3");
    assert_rejected(&body, "default", &[r#"tool "deploy": argument n: a required argument cannot have a default"#]);
}

#[test]
fn array_arguments_fill_whole_elements() {
    let body = tool("command = [\"ls\", \"--files={files}\"]\n[tool.args.files]\ntype = \"array\"");
    assert_rejected(&body, "command", &[r#"tool "deploy""#, "array argument files must be a whole command element"]);
}

#[test]
fn timeout_is_positive() {
    assert_rejected(
        &tool("command = [\"ls\"]\ntimeout = 0"),
        "timeout",
        &[r#"tool "deploy""#, "timeout must be at least 1"],
    );
    assert_rejected(&tool("command = [\"ls\"]\ntimeout = -5"), "timeout", &["invalid value"]);
}

#[test]
fn cwd_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let (message, line) = error_in(dir.path(), &tool("command = [\"ls\"]\ncwd = \"nowhere\""), "cwd");
    assert_located(&message, line, &[r#"tool "deploy""#, "cwd \"nowhere\" is not a directory"]);
}

#[test]
fn env_names_are_checked() {
    assert_rejected(
        &tool("command = [\"ls\"]\nenv = [\"A=B\"]"),
        "env",
        &[r#"tool "deploy""#, "invalid variable name \"A=B\""],
    );
}

#[test]
fn resources_need_exactly_one_source() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a").unwrap();
    let both = "\n[[resource]]\nuri = \"test://a\"\nname = \"a\"\ntext = \"x\"\nfile = \"a.txt\"\n";
    let (message, line) = error_in(dir.path(), both, "file");
    assert_located(&message, line, &[r#"resource "test://a": give either text or file, not both"#]);
    let neither = "\n[[resource]]\nuri = \"test://a\"\nname = \"a\"\n";
    assert_rejected(neither, "[[resource]]", &[r#"resource "test://a": give its contents"#]);
}

#[test]
fn file_resources_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let body = "\n[[resource]]\nuri = \"test://a\"\nname = \"a\"\nfile = \"missing.txt\"\n";
    let (message, line) = error_in(dir.path(), body, "file");
    assert_located(&message, line, &[r#"resource "test://a": file "missing.txt" is not a readable file"#]);
}

#[test]
fn resource_uris_are_checked_and_unique() {
    let body = "\n[[resource]]\nuri = \"no-scheme\"\nname = \"a\"\ntext = \"x\"\n";
    assert_rejected(body, "no-scheme", &[r#"resource "no-scheme": uri must be an absolute URI"#]);
    let one = "[[resource]]\nuri = \"test://a\"\nname = \"a\"\ntext = \"x\"\n";
    let body = format!("\n{one}{}", one.replace("uri = \"test://a\"", "uri = \"test://a\" # again"));
    assert_rejected(&body, "# again", &[r#"resource "test://a" is declared twice"#]);
}

#[test]
fn prompts_are_checked() {
    let body = "\n[[prompt]]\nname = \"p\"\ndescription = \"d\"\ntemplate = \"Hi {who}\"\n";
    assert_rejected(body, "template", &[r#"prompt "p": unknown argument placeholder {who} in template"#]);
    let body = "\n[[prompt]]\nname = \"p\"\ndescription = \"d\"\ntemplate = \"Hi\"\n[prompt.args.who]\n";
    assert_rejected(body, "[prompt.args.who]", &[r#"prompt "p": argument who is declared but template never uses it"#]);
    let one = "[[prompt]]\nname = \"p\"\ndescription = \"d\"\ntemplate = \"Hi\"\n";
    let body = format!("\n{one}{}", one.replace("name = \"p\"", "name = \"p\" # again"));
    assert_rejected(&body, "# again", &[r#"prompt "p" is declared twice"#]);
}

#[test]
fn roles_are_named() {
    assert_rejected(
        &tool("command = [\"ls\"]\nroles = [\"\"]"),
        "roles",
        &[r#"tool "deploy": roles: a role name is empty"#],
    );
}
