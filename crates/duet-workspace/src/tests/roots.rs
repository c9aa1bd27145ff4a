//! A client's roots narrow the workspace: every tool, the resources, the prompts and the
//! completions serve only what lies under the client's roots within the workspace's, and
//! refusals name the roots in force. A client root above the workspace keeps it whole; one
//! outside it, a file, an ignored directory or a URI naming no local directory adds
//! nothing. Through the engine, a session that declares roots is asked for them and
//! narrowed from then on.

use super::*;
use duet::layer::{ClientRoot, ClientRoots, CompletionArg, CompletionRef};
use std::collections::BTreeMap;

/// A context whose client listed `uris` as its roots (and can confirm writes).
fn rooted(uris: &[String]) -> RequestCx {
    let roots: Vec<ClientRoot> = uris.iter().map(|uri| ClientRoot { uri: uri.clone(), name: None }).collect();
    RequestCx::builder(Principal::local())
        .client_capabilities(json!({"elicitation": {}}))
        .client_roots(ClientRoots::Listed(roots.into()))
        .build()
}

async fn tool(f: &Fixture, cx: &RequestCx, name: &str, args: Value) -> ToolResult {
    call_tool(&f.ws, name, args, cx).await
}

/// The paths a structured result lists under `key` (entries' or matches' `path`, or
/// plain strings).
fn paths(result: &ToolResult, key: &str) -> Vec<String> {
    let listed = result.structured_content.as_ref().unwrap()[key].as_array().unwrap().clone();
    listed.iter().map(|e| e.as_str().or(e["path"].as_str()).unwrap().to_string()).collect()
}

#[tokio::test]
async fn a_client_narrows_every_tool_resource_and_prompt_to_its_roots() {
    let f = Fixture::new();
    let cx = rooted(&[f.uri("src"), f.uri("notes")]);
    let in_force =
        format!("the roots in force (the client's, within the workspace) are {0}/notes, {0}/src", f.root.display());

    for (name, args) in [
        ("read_file", json!({"path": "README.md"})),
        ("read_file", json!({"path": "README.md", "tail": 1})),
        ("describe_file", json!({"path": "data/blob.bin"})),
        ("list_directory", json!({"path": "data"})),
        ("directory_tree", json!({"path": "data"})),
        ("find_files", json!({"glob": "*", "path": "data"})),
        ("search_files", json!({"pattern": "hello", "path": f.root.join("README.md").to_str().unwrap()})),
    ] {
        let message = tool_error(&tool(&f, &cx, name, args.clone()).await);
        assert!(message.contains("is outside the roots the client gave"), "{name} {args}: {message}");
        assert!(message.contains(&in_force), "{name} {args}: {message}");
    }
    let read = tool(&f, &cx, "read_file", json!({"path": "src/main.rs"})).await;
    assert!(text(&read).contains("Hello, workspace"), "{read:?}");
    let several = tool(&f, &cx, "read_multiple_files", json!({"paths": ["src/lib.rs", "README.md"]})).await;
    let files = &several.structured_content.as_ref().unwrap()["files"];
    assert_eq!(files[0]["path"], "src/lib.rs");
    assert!(files[1]["error"].as_str().unwrap().contains(&in_force), "{files}");

    // Without a path, a listing, a tree, a find and a search cover the client's roots only.
    assert_eq!(paths(&tool(&f, &cx, "list_directory", json!({})).await, "entries"), ["notes", "src"]);
    let tree = text(&tool(&f, &cx, "directory_tree", json!({})).await);
    assert!(tree.contains("src/main.rs") && tree.contains("notes/über café.txt"), "{tree}");
    assert!(!tree.contains("README") && !tree.contains("data"), "{tree}");
    let found = paths(&tool(&f, &cx, "find_files", json!({"glob": "*"})).await, "files");
    assert_eq!(found, ["notes/über café.txt", "src/lib.rs", "src/main.rs"]);
    let glob = paths(&tool(&f, &cx, "find_files", json!({"glob": "src/*.rs"})).await, "files");
    assert_eq!(glob, ["src/lib.rs", "src/main.rs"], "the glob reads paths from the directory asked for");
    let search = tool(&f, &cx, "search_files", json!({"pattern": "hello", "case_insensitive": true})).await;
    assert_eq!(paths(&search, "matches"), ["src/main.rs"], "README.md says hello too, outside the roots");

    // Resources: the listing within the roots, reads refused outside them.
    assert_eq!(listed(&f, &cx, 0).await, ["notes/über café.txt", "src/lib.rs", "src/main.rs"]);
    assert_eq!(listed(&f, &cx, 2).await, ["notes/über café.txt", "src/lib.rs"], "pages are full");
    let refused = f.ws.read_resource(&f.uri("README.md"), cx.clone()).await.unwrap_err();
    assert!(refused.to_string().contains(&in_force), "{refused}");
    assert!(f.ws.read_resource(&f.uri("src/lib.rs"), cx.clone()).await.is_ok());

    // Prompts and their completions.
    let review = |path: &str| BTreeMap::from([("path".to_string(), path.to_string())]);
    let refused = f.ws.get_prompt("review_file", review("README.md"), cx.clone()).await.unwrap_err();
    assert!(refused.to_string().contains(&in_force), "{refused}");
    let Reply::Complete(summary) = f.ws.get_prompt("summarize_directory", BTreeMap::new(), cx.clone()).await.unwrap()
    else {
        panic!("the summary asked for input")
    };
    let summary = format!("{summary:?}");
    assert!(summary.contains("src/main.rs") && !summary.contains("README"), "{summary}");
    let complete = |of: CompletionRef, value: &str| {
        let arg = CompletionArg { name: "path".into(), value: value.into(), context: BTreeMap::new() };
        let (ws, cx) = (f.ws.clone(), cx.clone());
        async move { ws.complete(of, arg, cx).await.unwrap().values }
    };
    let files = complete(CompletionRef::Prompt { name: "review_file".into() }, "").await;
    assert_eq!(files, ["notes/über café.txt", "src/lib.rs", "src/main.rs"]);
    let template = f.ws.templates(&Principal::local())[0].uri_template.clone();
    assert_eq!(complete(CompletionRef::Resource { uri: template }, "").await.len(), 3);
}

/// The names of the files of the first resources page (of `limit`; 0: all) for a request
/// with `cx`.
async fn listed(f: &Fixture, cx: &RequestCx, limit: usize) -> Vec<String> {
    let page = f.ws.resource_page(None, limit, cx.clone()).await.expect("the workspace pages").expect("a page");
    page.resources.into_iter().map(|r| r.name).collect()
}

#[tokio::test]
async fn what_a_client_root_adds() {
    let f = Fixture::new();
    let parent = f.root.parent().unwrap();
    let elsewhere = TempDir::new().unwrap();
    let elsewhere = duet::file_uri::from_path(&elsewhere.path().canonicalize().unwrap());

    // Above the workspace: all of it.
    let whole = rooted(&[duet::file_uri::from_path(parent)]);
    assert!(!tool(&f, &whole, "read_file", json!({"path": "README.md"})).await.is_error);
    let everything = paths(&tool(&f, &cx(), "list_directory", json!({})).await, "entries");
    assert_eq!(paths(&tool(&f, &whole, "list_directory", json!({})).await, "entries"), everything);

    // Nothing in force: outside the workspace, an ignored directory, a file, a missing
    // directory, another host, a Windows drive, or no roots at all.
    for (uris, why) in [
        (vec![elsewhere.clone()], format!("the client's roots ({elsewhere}) lie outside the workspace")),
        (vec![f.uri("target"), f.uri("README.md"), f.uri("gone")], "lie outside the workspace".to_string()),
        (vec!["file://nas/share".to_string(), "file:///C:/Users".to_string()], "lie outside".to_string()),
        (vec![], "the client listed no roots".to_string()),
    ] {
        let cx = rooted(&uris);
        for (name, args) in [("read_file", json!({"path": "src/main.rs"})), ("list_directory", json!({}))] {
            let message = tool_error(&tool(&f, &cx, name, args).await);
            assert!(message.contains("no root is in force") && message.contains(&why), "{uris:?} {name}: {message}");
        }
        assert!(listed(&f, &cx, 0).await.is_empty());
    }

    // Several roots: each counts for itself, a nested one once.
    let both = rooted(&[f.uri("src"), f.uri(""), elsewhere]);
    assert!(!tool(&f, &both, "read_file", json!({"path": "README.md"})).await.is_error);
}

#[tokio::test]
async fn writes_stay_within_the_client_roots() {
    let f = Fixture::writable();
    let cx = rooted(&[f.uri("src")]);
    for (name, args) in [
        ("write_file", json!({"path": "notes/new.txt", "content": "x"})),
        ("edit_file", json!({"path": "README.md", "old_text": "hello", "new_text": "bye"})),
        ("create_directory", json!({"path": "data/more"})),
        ("move_file", json!({"source": "src/lib.rs", "destination": "notes/lib.rs"})),
        ("move_file", json!({"source": "README.md", "destination": "src/README.md"})),
    ] {
        let Value::Object(args) = args else { unreachable!() };
        let Ok(Reply::Complete(result)) = f.ws.call_tool(name, args, cx.clone()).await else {
            panic!("{name} asked to confirm a write outside the roots")
        };
        let message = tool_error(&result);
        assert!(message.contains("is outside the roots the client gave"), "{name}: {message}");
    }
    // Within them, the write goes as far as asking the user.
    let Value::Object(args) = json!({"path": "src/new.rs", "content": "x"}) else { unreachable!() };
    assert!(matches!(f.ws.call_tool("write_file", args, cx).await, Ok(Reply::InputRequired(_))));
}

#[tokio::test]
async fn a_session_that_declares_roots_is_asked_and_narrowed() {
    let f = Fixture::new();
    let options = ServerOptions { client_roots: true, ..ServerOptions::default() };
    let server = Server::new(f.ws.clone(), options);
    let sent = Recorder::new(Version::V2025_11_25.as_str());
    let session = server.connect(sent.sink(), Principal::local());
    let client = Client::over(session, Version::V2025_11_25, sent);
    let params = json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {"listChanged": true}},
                        "clientInfo": {"name": "workspace-tests", "version": "1"}});
    client.request("initialize", params).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(client.session.handle(initialized, None, None).await, None);
    let asked = client.sent.wait_for("roots/list").await;
    let answer = json!({"jsonrpc": "2.0", "id": asked[0]["id"], "result": {"roots": [{"uri": f.uri("src")}]}});
    assert_eq!(client.session.handle(answer, None, None).await, None);

    let listed = client.list_all("resources/list", "resources").await;
    let names: Vec<&str> = listed.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["src/lib.rs", "src/main.rs"]);
    let read = client.request("tools/call", json!({"name": "read_file", "arguments": {"path": "README.md"}})).await;
    assert_eq!(read["isError"], true);
    assert!(read["content"][0]["text"].as_str().unwrap().contains("the roots in force"), "{read}");
}
