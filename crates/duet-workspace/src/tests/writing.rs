//! The write tools (`duet serve --allow-write`): absent unless allowed; nothing changes
//! before the user confirmed through the client (a multi round-trip request), and a
//! refusal, a client that cannot ask, or a file changed in between leaves the file as it
//! was; edits need exactly one occurrence unless told otherwise; confinement refuses
//! every escape before anything is asked, and again when the answer comes; a write
//! reaches subscribers through the watcher; and both eras carry the question.

use super::*;
use duet::layer::InputRequired;

pub(super) const YES: fn() -> Value = || json!({"action": "accept", "content": {"ok": true}});

/// A context for a client that can show the confirmation form, with no answer yet.
pub(super) fn asking() -> RequestCx {
    RequestCx::builder(Principal::local()).client_capabilities(json!({"elicitation": {}})).build()
}

/// A context bringing `answer` to the question `asked`, as a client's second run does.
pub(super) fn answering(asked: &InputRequired, answer: Value) -> RequestCx {
    RequestCx::builder(Principal::local())
        .client_capabilities(json!({"elicitation": {}}))
        .input_responses(json!({"confirm": answer}).as_object().cloned().unwrap())
        .state(asked.state.clone())
        .build()
}

pub(super) async fn call(f: &Fixture, tool: &str, args: &Value, cx: &RequestCx) -> Reply<ToolResult> {
    let Value::Object(args) = args.clone() else { panic!("arguments must be an object") };
    f.ws.call_tool(tool, args, cx.clone()).await.unwrap_or_else(|e| panic!("{tool}: {e:?}"))
}

/// The first run, which must ask.
pub(super) async fn ask(f: &Fixture, tool: &str, args: &Value) -> InputRequired {
    match call(f, tool, args, &asking()).await {
        Reply::InputRequired(asked) => asked,
        Reply::Complete(result) => panic!("{tool} {args} should ask first, got {result:?}"),
    }
}

/// The second run, bringing `answer`; it must complete.
pub(super) async fn answer(f: &Fixture, tool: &str, args: &Value, asked: &InputRequired, answer: Value) -> ToolResult {
    match call(f, tool, args, &answering(asked, answer)).await {
        Reply::Complete(result) => result,
        Reply::InputRequired(again) => panic!("{tool} {args} asked again: {again:?}"),
    }
}

/// Asks, then says yes.
pub(super) async fn confirmed(f: &Fixture, tool: &str, args: Value) -> ToolResult {
    let asked = ask(f, tool, &args).await;
    answer(f, tool, &args, &asked, YES()).await
}

/// What the user is asked.
pub(super) fn question(asked: &InputRequired) -> String {
    let request = &asked.requests["confirm"];
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["requestedSchema"]["properties"]["ok"], json!({"type": "boolean"}));
    request["params"]["message"].as_str().unwrap().to_string()
}

pub(super) fn read(f: &Fixture, rel: &str) -> String {
    std::fs::read_to_string(f.root.join(rel)).unwrap()
}

pub(super) const README: &str = "# Demo\nhello world\n";

const WRITE_TOOLS: [&str; 4] = ["write_file", "edit_file", "create_directory", "move_file"];

#[tokio::test]
async fn the_write_tools_are_there_only_when_allowed() {
    let names = |f: &Fixture| f.ws.tools(&Principal::local()).iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    let read_only = Fixture::new();
    assert!(!names(&read_only).iter().any(|n| WRITE_TOOLS.contains(&n.as_str())), "{:?}", names(&read_only));
    for (tool, args) in [
        ("write_file", json!({"path": "new.txt", "content": "x"})),
        ("edit_file", json!({"path": "README.md", "old_text": "hello", "new_text": "bye"})),
        ("create_directory", json!({"path": "new"})),
        ("move_file", json!({"source": "README.md", "destination": "new.txt"})),
    ] {
        let Value::Object(args) = args else { unreachable!() };
        let error = read_only.ws.call_tool(tool, args, asking()).await.unwrap_err();
        assert!(matches!(error, LayerError::NotFound(_)), "{tool}: {error:?}");
    }
    assert!(!read_only.root.join("new.txt").exists() && !read_only.root.join("new").exists());
    assert!(read_only.ws.info().instructions.as_deref().unwrap().starts_with("Read-only access"));

    let f = Fixture::writable();
    let tools = f.ws.tools(&Principal::local());
    for name in WRITE_TOOLS {
        let tool = tools.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name} is not listed"));
        let hints = tool.annotations.as_ref().unwrap();
        let destructive = name != "create_directory";
        assert_eq!((hints.read_only_hint, hints.destructive_hint), (Some(false), Some(destructive)), "{name}");
        let schema = &tool.input_schema;
        assert_eq!(schema["additionalProperties"], false, "{name}: {schema}");
        assert!(!schema.to_string().contains("$ref"), "{name}: {schema}");
        assert!(tool.output_schema.is_some(), "{name}");
    }
    assert!(f.ws.info().instructions.as_deref().unwrap().contains("the user must confirm each change"));
    // The read-only tools stay read-only.
    let read_file = tools.iter().find(|t| t.name == "read_file").unwrap();
    assert_eq!(read_file.annotations.as_ref().unwrap().read_only_hint, Some(true));
}

#[tokio::test]
async fn write_file_asks_first_and_writes_only_after_yes() {
    let f = Fixture::writable();
    let args = json!({"path": "docs/new/guide.md", "content": "# Guide\nStep one.\n"});
    let asked = ask(&f, "write_file", &args).await;
    assert_eq!(question(&asked), "Create docs/new/guide.md (18 bytes, 2 lines)?\n\n+ # Guide\n+ Step one.");
    assert!(!f.root.join("docs").exists(), "nothing is written, not even a directory, before the answer");

    let result = answer(&f, "write_file", &args, &asked, YES()).await;
    assert!(!result.is_error, "{}", text(&result));
    assert_eq!(text(&result), "Created docs/new/guide.md (18 bytes, 2 lines)");
    assert_eq!(
        result.structured_content.unwrap(),
        json!({"path": "docs/new/guide.md", "uri": f.uri("docs/new/guide.md"), "created": true, "size": 18})
    );
    assert_eq!(read(&f, "docs/new/guide.md"), "# Guide\nStep one.\n");
    // What was written is served at once.
    assert_eq!(text(&f.tool("read_file", json!({"path": "docs/new/guide.md"})).await), "# Guide\nStep one.\n");
}

#[tokio::test]
async fn a_refusal_writes_nothing() {
    let f = Fixture::writable();
    let args = json!({"path": "README.md", "content": "replaced\n"});
    for (answer_given, why) in [
        (json!({"action": "decline"}), "the user declined"),
        (json!({"action": "cancel"}), "the user cancelled"),
        (json!({"action": "accept", "content": {"ok": false}}), "the user did not confirm"),
    ] {
        let asked = ask(&f, "write_file", &args).await;
        let result = answer(&f, "write_file", &args, &asked, answer_given).await;
        assert_eq!(
            tool_error(&result),
            format!("Tool write_file did not run: {why}; nothing was written to README.md")
        );
        assert_eq!(read(&f, "README.md"), README);
    }
    let new = json!({"path": "fresh/new.txt", "content": "x"});
    let asked = ask(&f, "write_file", &new).await;
    answer(&f, "write_file", &new, &asked, json!({"action": "decline"})).await;
    assert!(!f.root.join("fresh").exists());
}

#[tokio::test]
async fn a_client_that_cannot_ask_gets_an_error_and_nothing_changes() {
    let f = Fixture::writable();
    for (tool, args) in [
        ("write_file", json!({"path": "README.md", "content": "replaced\n"})),
        ("edit_file", json!({"path": "README.md", "old_text": "hello", "new_text": "bye"})),
    ] {
        let message = tool_error(&f.tool(tool, args).await);
        assert!(message.contains("needs the user's confirmation") && message.contains("elicitation"), "{message}");
        assert!(message.ends_with("nothing was written to README.md"), "{message}");
    }
    assert_eq!(read(&f, "README.md"), README);
}

#[tokio::test]
async fn an_answer_counts_only_for_the_question_asked() {
    let f = Fixture::writable();
    let args = json!({"path": "README.md", "content": "mine\n"});
    // A yes without the state of a question: asked properly instead.
    let cx = RequestCx::builder(Principal::local())
        .client_capabilities(json!({"elicitation": {}}))
        .input_responses(json!({"confirm": YES()}).as_object().cloned().unwrap())
        .build();
    assert!(matches!(call(&f, "write_file", &args, &cx).await, Reply::InputRequired(_)));
    // The file changes after the question: the yes was for the old file, so it is asked again.
    let asked = ask(&f, "write_file", &args).await;
    write(&f.root, "README.md", "# Demo\nedited by someone else\n");
    let again = match call(&f, "write_file", &args, &answering(&asked, YES())).await {
        Reply::InputRequired(again) => again,
        Reply::Complete(result) => panic!("a yes to an old question wrote: {result:?}"),
    };
    assert_eq!(read(&f, "README.md"), "# Demo\nedited by someone else\n");
    assert!(question(&again).contains("- edited by someone else"), "{}", question(&again));
    assert!(!answer(&f, "write_file", &args, &again, YES()).await.is_error);
    assert_eq!(read(&f, "README.md"), "mine\n");
}

#[cfg(unix)]
#[tokio::test]
async fn overwriting_shows_the_change_and_keeps_the_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::writable();
    let script = f.root.join("src/main.rs");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    let args = json!({"path": "src/main.rs", "content": "fn main() {\n    println!(\"Bye\");\n}\n"});
    let asked = ask(&f, "write_file", &args).await;
    assert_eq!(
        question(&asked),
        "Overwrite src/main.rs (48 bytes) with 35 bytes, 3 lines? Line 2 becomes 1 line.\n\n\
         -     println!(\"Hello, workspace\");\n+     println!(\"Bye\");"
    );
    let result = answer(&f, "write_file", &args, &asked, YES()).await;
    assert_eq!(result.structured_content.unwrap()["created"], false);
    assert_eq!(read(&f, "src/main.rs"), "fn main() {\n    println!(\"Bye\");\n}\n");
    assert_eq!(script.metadata().unwrap().permissions().mode() & 0o7777, 0o750);

    // create_only refuses before asking.
    let refused = f.tool("write_file", json!({"path": "README.md", "content": "x", "create_only": true})).await;
    assert_eq!(tool_error(&refused), "README.md already exists and create_only is set; nothing was written");
    // So does a read-only file.
    std::fs::set_permissions(f.root.join("README.md"), std::fs::Permissions::from_mode(0o444)).unwrap();
    let refused = f.tool("write_file", json!({"path": "README.md", "content": "x"})).await;
    assert_eq!(tool_error(&refused), "README.md is read-only; nothing was written");
    assert_eq!(read(&f, "README.md"), README);
}

#[tokio::test]
async fn edit_file_replaces_exactly_one_occurrence() {
    let f = Fixture::writable();
    let args = json!({"path": "src/lib.rs", "old_text": "a + b", "new_text": "a.saturating_add(b)"});
    let asked = ask(&f, "edit_file", &args).await;
    assert_eq!(question(&asked), "Replace 1 occurrence in src/lib.rs (at line 2)?\n\n- a + b\n+ a.saturating_add(b)");
    assert_eq!(read(&f, "src/lib.rs"), "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n");
    let result = answer(&f, "edit_file", &args, &asked, YES()).await;
    assert_eq!(text(&result), "Replaced 1 occurrence in src/lib.rs (at line 2)");
    let size = "pub fn add(a: i32, b: i32) -> i32 {\n    a.saturating_add(b)\n}\n".len();
    assert_eq!(
        result.structured_content.unwrap(),
        json!({
            "path": "src/lib.rs",
            "uri": f.uri("src/lib.rs"),
            "replacements": 1,
            "lines": [2],
            "edits": [{"replacements": 1, "lines": [2], "whitespaceIgnored": false}],
            "size": size,
            "dryRun": false,
        })
    );
    assert_eq!(read(&f, "src/lib.rs"), "pub fn add(a: i32, b: i32) -> i32 {\n    a.saturating_add(b)\n}\n");
}

#[tokio::test]
async fn edit_file_refuses_none_or_several_occurrences_unless_told() {
    let f = Fixture::writable();
    write(&f.root, "notes.txt", "todo: one\ndone\ntodo: two\ntodo: three\n");
    let edit =
        |old: &str, all: bool| json!({"path": "notes.txt", "old_text": old, "new_text": "DONE", "replace_all": all});

    let missing = tool_error(&f.tool("edit_file", edit("nowhere", false)).await);
    assert_eq!(
        missing,
        "old_text was not found in notes.txt, neither exactly nor with whitespace ignored; nothing was changed"
    );
    let several = tool_error(&f.call_with_elicitation("edit_file", edit("todo", false)).await);
    assert!(several.starts_with("old_text occurs 3 times in notes.txt (at lines 1, 3, 4);"), "{several}");
    assert!(several.contains("set replace_all") && several.ends_with("nothing was changed"), "{several}");
    assert_eq!(read(&f, "notes.txt"), "todo: one\ndone\ntodo: two\ntodo: three\n");

    let all = edit("todo", true);
    let asked = ask(&f, "edit_file", &all).await;
    assert!(question(&asked).starts_with("Replace 3 occurrences in notes.txt (at lines 1, 3, 4)?"));
    let result = answer(&f, "edit_file", &all, &asked, YES()).await;
    assert_eq!(result.structured_content.unwrap()["replacements"], 3);
    assert_eq!(read(&f, "notes.txt"), "DONE: one\ndone\nDONE: two\nDONE: three\n");

    // Neither a binary file, nor a missing one, nor a change to the same text.
    let binary = json!({"path": "data/blob.bin", "old_text": "hello", "new_text": "bye"});
    assert_eq!(
        tool_error(&f.tool("edit_file", binary).await),
        "data/blob.bin is not UTF-8 text; edit_file edits text files only"
    );
    let absent = json!({"path": "nope.txt", "old_text": "a", "new_text": "b"});
    assert!(tool_error(&f.tool("edit_file", absent).await).contains("create it with write_file"));
    let same = json!({"path": "notes.txt", "old_text": "done", "new_text": "done"});
    assert!(tool_error(&f.tool("edit_file", same).await).contains("nothing to change"));
}

impl Fixture {
    /// A call by a client that can ask the user; it must complete (a refusal before asking).
    pub(crate) async fn call_with_elicitation(&self, tool: &str, args: Value) -> ToolResult {
        match call(self, tool, &args, &asking()).await {
            Reply::Complete(result) => result,
            Reply::InputRequired(asked) => panic!("{tool} {args} asked {asked:?} instead of refusing"),
        }
    }
}

pub(super) const SECRET: &str = "TOP SECRET outside the workspace";

/// Every write tool refuses `path` before asking anything, saying `why`; nothing changes.
/// `move_file` refuses it as the source and as the destination.
pub(super) async fn refused(f: &Fixture, path: &str, why: &str) {
    for (tool, args) in [
        ("write_file", json!({"path": path, "content": "written"})),
        ("edit_file", json!({"path": path, "old_text": "SECRET", "new_text": "written"})),
        ("edit_file", json!({"path": path, "edits": [{"old_text": "SECRET", "new_text": "written"}], "dry_run": true})),
        ("move_file", json!({"source": path, "destination": "moved.txt"})),
        ("move_file", json!({"source": "README.md", "destination": path, "overwrite": true})),
    ] {
        let message = tool_error(&f.call_with_elicitation(tool, args.clone()).await);
        assert!(message.contains(why), "{tool} {args}: {message}");
        assert!(!message.contains("TOP SECRET"), "{tool} {args} leaked: {message}");
    }
    // A directory that exists is no refusal for create_directory: it is there already.
    if !why.contains("is a directory") {
        let message = tool_error(&f.call_with_elicitation("create_directory", json!({"path": path})).await);
        assert!(message.contains(why), "create_directory {path:?}: {message}");
    }
    assert!(!f.root.join("moved.txt").exists(), "{path:?} was moved");
}

#[tokio::test]
async fn writes_cannot_leave_the_workspace_or_touch_what_is_not_served() {
    let f = Fixture::writable();
    let outside = TempDir::new().unwrap();
    let secret = outside.path().canonicalize().unwrap().join("secret.txt");
    std::fs::write(&secret, SECRET).unwrap();
    write(&f.root, ".git/config", "[core]\n");

    for path in ["../x.txt", "src/../../x.txt", "./../x.txt"] {
        refused(&f, path, "'..' is not allowed").await;
    }
    for path in [secret.to_str().unwrap(), "/etc/passwd", "file:///tmp/x.txt"] {
        refused(&f, path, "is outside the workspace").await;
    }
    for path in [".git/config", ".git/hooks/post-commit", "vendor/.git/x"] {
        refused(&f, path, "is in a .git directory").await;
    }
    for path in ["target/out.txt", "target/new.txt", "debug.log", "new.log", "target/deep/er/new.txt"] {
        refused(&f, path, "is excluded by .gitignore").await;
    }
    refused(&f, "src", "is a directory").await;
    refused(&f, "src/", "is a directory").await;
    refused(&f, "README.md/inside.txt", "goes through a file").await;
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), SECRET);
    assert_eq!(read(&f, ".git/config"), "[core]\n");
    assert_eq!(read(&f, "target/out.txt"), "hello from an ignored directory\n");
    for never in ["target/new.txt", "new.log", "target/deep", ".git/hooks"] {
        assert!(!f.root.join(never).exists(), "{never} was created");
    }
}

#[cfg(unix)]
#[tokio::test]
async fn writes_do_not_follow_links_out_or_into_ignored_files() {
    use std::os::unix::fs::symlink;
    let f = Fixture::writable();
    let outside = TempDir::new().unwrap();
    let outside_dir = outside.path().canonicalize().unwrap();
    std::fs::write(outside_dir.join("secret.txt"), SECRET).unwrap();
    symlink(outside_dir.join("secret.txt"), f.root.join("link.txt")).unwrap();
    symlink(&outside_dir, f.root.join("linkdir")).unwrap();
    symlink(f.root.join("debug.log"), f.root.join("to_ignored.txt")).unwrap();
    symlink(outside_dir.join("missing.txt"), f.root.join("dangling.txt")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(f.root.join("server.sock")).unwrap();

    let escapes = "leads outside the workspace through a symbolic link";
    refused(&f, "link.txt", escapes).await;
    refused(&f, "linkdir/secret.txt", escapes).await;
    refused(&f, "linkdir/new.txt", escapes).await;
    refused(&f, "linkdir/deeper/new.txt", escapes).await;
    refused(&f, "to_ignored.txt", "is excluded by .gitignore").await;
    refused(&f, "dangling.txt", "leads nowhere").await;
    refused(&f, "server.sock", "is not a regular file").await;
    assert_eq!(std::fs::read_dir(&outside_dir).unwrap().count(), 1, "nothing was created outside");
    assert_eq!(std::fs::read_to_string(outside_dir.join("secret.txt")).unwrap(), SECRET);

    // A link that stays inside is written through: the file it leads to changes, the link stays.
    symlink(f.root.join("README.md"), f.root.join("readme_link.md")).unwrap();
    let result = confirmed(&f, "write_file", json!({"path": "readme_link.md", "content": "via the link\n"})).await;
    assert_eq!(result.structured_content.unwrap()["path"], "README.md");
    assert_eq!(read(&f, "README.md"), "via the link\n");
    assert!(f.root.join("readme_link.md").symlink_metadata().unwrap().file_type().is_symlink());
}

#[cfg(unix)]
#[tokio::test]
async fn confinement_is_checked_again_when_the_answer_comes() {
    let f = Fixture::writable();
    let outside = TempDir::new().unwrap();
    std::fs::create_dir(f.root.join("drop")).unwrap();
    let args = json!({"path": "drop/new.txt", "content": "hello"});
    let asked = ask(&f, "write_file", &args).await;
    // Between the question and the answer, the directory becomes a link out of the root.
    std::fs::remove_dir(f.root.join("drop")).unwrap();
    std::os::unix::fs::symlink(outside.path(), f.root.join("drop")).unwrap();
    let result = answer(&f, "write_file", &args, &asked, YES()).await;
    assert!(tool_error(&result).contains("leads outside the workspace"), "{}", text(&result));
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    // And a file that became ignored meanwhile is not written either.
    let args = json!({"path": "later.txt", "content": "x"});
    let asked = ask(&f, "write_file", &args).await;
    write(&f.root, ".gitignore", "target/\n*.log\nlater.txt\n");
    let result = answer(&f, "write_file", &args, &asked, YES()).await;
    assert!(tool_error(&result).contains("is excluded by .gitignore"));
    assert!(!f.root.join("later.txt").exists());
}

#[tokio::test]
async fn a_write_reaches_subscribers() {
    let f = Fixture::writable();
    f.ws.watch().unwrap();
    f.ws.resources(&Principal::local()); // the first walk is done: every directory is watched
    let client = Client::connect(&f.ws, Version::V2025_11_25).await;
    client.request("resources/subscribe", json!({"uri": f.uri("README.md")})).await;
    confirmed(&f, "edit_file", json!({"path": "README.md", "old_text": "world", "new_text": "writer"})).await;
    let sent = client.sent.wait_for("notifications/resources/updated").await;
    let update =
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": f.uri("README.md")}});
    assert_eq!(sent, [update]);
    confirmed(&f, "write_file", json!({"path": "docs/added.md", "content": "# Added\n"})).await;
    client.sent.wait_for("notifications/resources/list_changed").await;
    assert!(f.ws.resources(&Principal::local()).iter().any(|r| r.name == "docs/added.md"));
}

#[tokio::test]
async fn the_2026_era_carries_the_question_in_sealed_state() {
    let f = Fixture::writable();
    let client = Client::connect(&f.ws, Version::V2026_07_28).await;
    let envelope = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    let call = |id: i64, extra: Value| {
        let mut params = json!({"name": "write_file", "arguments": {"path": "new.txt", "content": "sealed\n"}});
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        params["_meta"] = envelope.clone();
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    let first = client.send("tools/call", call(1, json!({})), None).await.unwrap();
    assert_eq!(first["resultType"], "input_required");
    assert_eq!(first["inputRequests"]["confirm"]["params"]["message"], "Create new.txt (7 bytes, 1 line)?\n\n+ sealed");
    let state = first["requestState"].clone();
    assert!(!f.root.join("new.txt").exists());
    let answer = json!({"inputResponses": {"confirm": YES()}, "requestState": state});
    let done = client.send("tools/call", call(2, answer), None).await.unwrap();
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(done["structuredContent"]["created"], true);
    assert_eq!(read(&f, "new.txt"), "sealed\n");
}

#[tokio::test]
async fn the_handshake_era_asks_with_a_real_request() {
    let f = Fixture::writable();
    let server = Server::new(f.ws.clone(), ServerOptions::default());
    // Nothing unprompted is expected: the request's own channel carries the question.
    let session = server.connect(Arc::new(|_| {}), Principal::local());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "writing-tests", "version": "1"},
    }});
    session.handle(init, None, None).await.expect("initialize answers");
    session.handle(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), None, None).await;

    // What duet sends on the request's channel: its elicitation/create request.
    let (asks, asked) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let sink: Sink = Arc::new(move |message| {
        let _ = asks.send(message);
    });
    let args = json!({"path": "README.md", "content": "handshake\n"});
    let request =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "write_file", "arguments": args}});
    let running = {
        let session = session.clone();
        tokio::spawn(async move { session.handle(request, Some(sink), None).await })
    };
    let mut asked = asked;
    let ask = bounded("the elicitation request", asked.recv()).await.unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    assert!(ask["params"]["message"].as_str().unwrap().starts_with("Overwrite README.md (19 bytes)"), "{ask}");
    assert_eq!(read(&f, "README.md"), README, "nothing is written while the user is asked");
    let reply = json!({"jsonrpc": "2.0", "id": ask["id"], "result": YES()});
    assert_eq!(session.handle(reply, None, None).await, None);
    let Some(Message::One(response)) = bounded("the tool's result", running).await.unwrap() else { panic!() };
    let result = response.into_value().unwrap();
    Schemas::get().assert_result("2025-06-18", "tools/call", &result);
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(read(&f, "README.md"), "handshake\n");
}
