//! The layer on its own: the listing, reads, the tools and the prompts, called through the
//! `Layer` trait.

use super::*;
use duet::layer::{CompletionArg, CompletionRef, ContentKind, ResourceBody};
use std::collections::BTreeMap;

fn names(f: &Fixture) -> Vec<String> {
    f.ws.resources(&Principal::local()).iter().map(|r| r.name.clone()).collect()
}

#[tokio::test]
async fn files_are_listed_with_their_metadata() {
    let f = Fixture::new();
    // .gitignore is hidden; target/, *.log and .hidden/ are left out.
    assert_eq!(names(&f), ["README.md", "data/blob.bin", "notes/über café.txt", "src/lib.rs", "src/main.rs"]);
    let listing = f.ws.resources(&Principal::local());
    let readme = &listing[0];
    assert_eq!(readme.uri, f.uri("README.md"));
    assert!(readme.uri.starts_with("file:///"), "{}", readme.uri);
    assert_eq!(readme.mime_type.as_deref(), Some("text/markdown"));
    assert_eq!(readme.size, Some(19));
    let modified = readme.annotations.as_ref().and_then(|a| a.last_modified.clone()).unwrap();
    assert!(modified.len() == 20 && modified.ends_with('Z') && modified.as_bytes()[10] == b'T', "{modified}");
    let notes = &listing[2];
    assert!(notes.uri.ends_with("/notes/%C3%BCber%20caf%C3%A9.txt"), "{}", notes.uri);
    assert_eq!(listing[3].mime_type.as_deref(), Some("text/x-rust"));
}

#[tokio::test]
async fn text_and_binary_files_are_read() {
    let f = Fixture::new();
    let readme = f.read(&f.uri("README.md")).await.unwrap();
    assert_eq!(readme[0].body, ResourceBody::Text("# Demo\nhello world\n".into()));
    assert_eq!(readme[0].mime_type.as_deref(), Some("text/markdown"));
    assert_eq!(readme[0].uri, f.uri("README.md"));

    let blob = f.read(&f.uri("data/blob.bin")).await.unwrap();
    assert_eq!(blob[0].body, ResourceContents::blob("x", "y", BLOB).body);
    assert_eq!(blob[0].mime_type.as_deref(), Some("application/octet-stream"));

    let notes = f.read(&f.uri("notes/über café.txt")).await.unwrap();
    assert_eq!(notes[0].body, ResourceBody::Text("accents and spaces\n".into()));
    // Invalid UTF-8 is binary too, and a text MIME type then gives way.
    write(&f.root, "latin1.txt", b"caf\xe9\n");
    let latin1 = f.read(&f.uri("latin1.txt")).await.unwrap();
    assert!(matches!(latin1[0].body, ResourceBody::Blob(_)));
    assert_eq!(latin1[0].mime_type.as_deref(), Some("application/octet-stream"));
}

#[tokio::test]
async fn templates_reach_files_the_listing_leaves_out() {
    let f = Fixture::new();
    let templates = f.ws.templates(&Principal::local());
    assert_eq!(templates.len(), 1);
    let template = &templates[0].uri_template;
    assert_eq!(template, &format!("{}/{{+path}}", duet::file_uri::from_path(&f.root)));
    // Hidden files are not listed but are served by name; ignored ones are not served.
    let hidden = f.read(&template.replace("{+path}", ".hidden/secret.txt")).await.unwrap();
    assert_eq!(hidden[0].body, ResourceBody::Text("hello from a hidden directory\n".into()));
    let ignored = f.read(&template.replace("{+path}", "target/out.txt")).await.unwrap_err();
    assert!(ignored.to_string().contains("is excluded by .gitignore and is not served"), "{ignored}");
    let other = f.read("test://elsewhere").await.unwrap_err();
    assert_eq!(other, LayerError::NotFound("Unknown resource: test://elsewhere".into()));
    let missing = f.read(&f.uri("nope.txt")).await.unwrap_err();
    assert!(matches!(missing, LayerError::NotFound(ref m) if m.contains("does not exist")), "{missing:?}");
    let dir = f.read(&f.uri("src")).await.unwrap_err();
    assert!(dir.to_string().contains("is a directory"), "{dir}");

    // The template's path completes from the listing.
    let of = CompletionRef::Resource { uri: template.clone() };
    let arg = CompletionArg { name: "path".into(), value: "src/".into(), context: BTreeMap::new() };
    let completion = f.ws.complete(of, arg, cx()).await.unwrap();
    assert_eq!(completion.values, ["src/lib.rs", "src/main.rs"]);
}

#[tokio::test]
async fn too_large_files_are_refused_with_the_way_out() {
    let f = Fixture::new();
    let line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
    write(&f.root, "big.txt", line.repeat(16 * 1024 + 1));
    let error = f.read(&f.uri("big.txt")).await.unwrap_err();
    let LayerError::InvalidArguments { message, .. } = &error else { panic!("{error:?}") };
    assert!(message.contains("1.0 MiB (1048640 bytes)"), "{message}");
    assert!(message.contains("over the 1.0 MiB (1048576 bytes) limit"), "{message}");
    assert!(message.contains("read_file") && message.contains("start_line"), "{message}");

    let whole = f.tool("read_file", json!({"path": "big.txt"})).await;
    assert!(tool_error(&whole).contains("1048576 bytes"));
    let part = f.tool("read_file", json!({"path": "big.txt", "start_line": 16385})).await;
    assert_eq!(part.content.len(), 2);
    assert_eq!(text(&part), format!("{line}\n[big.txt: lines 16385 to 16385 of 16385]"));
    let wide = f.tool("read_file", json!({"path": "big.txt", "start_line": 1, "end_line": 20000})).await;
    assert!(tool_error(&wide).contains("ask for fewer lines"));
}

#[tokio::test]
async fn read_file_reads_whole_files_and_line_ranges() {
    let f = Fixture::new();
    let whole = f.tool("read_file", json!({"path": "src/main.rs"})).await;
    assert!(!whole.is_error);
    assert_eq!(text(&whole), "fn main() {\n    println!(\"Hello, workspace\");\n}\n");
    let middle = f.tool("read_file", json!({"path": "src/main.rs", "start_line": 2, "end_line": 2})).await;
    assert_eq!(text(&middle), "    println!(\"Hello, workspace\");\n\n[src/main.rs: lines 2 to 2 of 3]");
    let past = f.tool("read_file", json!({"path": "src/main.rs", "start_line": 9})).await;
    assert_eq!(tool_error(&past), "src/main.rs has 3 lines, so there is no line 9");
    let backwards = f.tool("read_file", json!({"path": "src/main.rs", "start_line": 3, "end_line": 2})).await;
    assert_eq!(tool_error(&backwards), "end_line 2 is before start_line 3");
    let binary = f.tool("read_file", json!({"path": "data/blob.bin"})).await;
    let message = tool_error(&binary);
    assert!(message.contains("binary") && message.contains(&f.uri("data/blob.bin")), "{message}");
    let zero = f.tool("read_file", json!({"path": "src/main.rs", "start_line": 0})).await;
    assert!(tool_error(&zero).starts_with("Invalid arguments"));
    let dir = f.tool("read_file", json!({"path": "src"})).await;
    assert_eq!(tool_error(&dir), "src is a directory; list it with list_directory");
}

#[tokio::test]
async fn describe_file_tells_what_a_path_is() {
    let f = Fixture::new();
    let main = f.tool("describe_file", json!({"path": "src/main.rs"})).await;
    let d = main.structured_content.unwrap();
    assert_eq!(
        (&d["path"], &d["type"], &d["size"], &d["mimeType"], &d["isBinary"], &d["lineCount"]),
        (&json!("src/main.rs"), &json!("file"), &json!(48), &json!("text/x-rust"), &json!(false), &json!(3))
    );
    assert_eq!(d["uri"], f.uri("src/main.rs"));
    assert!(d["modified"].as_str().unwrap().ends_with('Z'));
    let blob = f.tool("describe_file", json!({"path": "data/blob.bin"})).await.structured_content.unwrap();
    assert_eq!((&blob["isBinary"], blob.get("lineCount")), (&json!(true), None));
    let dir = f.tool("describe_file", json!({"path": "."})).await.structured_content.unwrap();
    assert_eq!((&dir["path"], &dir["type"], dir.get("size")), (&json!("."), &json!("directory"), None));
}

#[tokio::test]
async fn list_directory_pages_with_an_opaque_cursor() {
    let f = Fixture::new();
    for name in ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"] {
        write(&f.root, &format!("many/{name}"), name);
    }
    write(&f.root, "many/sub/x.txt", "x");
    write(&f.root, "many/skipped.log", "ignored");
    let mut seen = Vec::new();
    let mut args = json!({"path": "many", "limit": 2});
    for _ in 0..5 {
        let page = f.tool("list_directory", args.clone()).await.structured_content.unwrap();
        assert_eq!(page["path"], "many");
        assert!(page["entries"].as_array().unwrap().len() <= 2);
        seen.extend(page["entries"].as_array().unwrap().iter().map(|e| (e["path"].clone(), e["type"].clone())));
        match page.get("nextCursor") {
            Some(cursor) => args["cursor"] = cursor.clone(),
            None => break,
        }
    }
    let expected: Vec<(Value, Value)> = ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"]
        .iter()
        .map(|n| (json!(format!("many/{n}")), json!("file")))
        .chain([(json!("many/sub"), json!("directory"))])
        .collect();
    assert_eq!(seen, expected);

    let top = f.tool("list_directory", json!({})).await;
    assert_eq!(text(&top), "README.md (19 bytes)\ndata/\nmany/\nnotes/\nsrc/");
    let forged = f.tool("list_directory", json!({"path": "many", "cursor": "bm9wZQ"})).await;
    assert!(tool_error(&forged).starts_with("invalid cursor"));
    let other_dir = f.tool("list_directory", json!({"path": "src", "cursor": args["cursor"]})).await;
    assert!(tool_error(&other_dir).starts_with("invalid cursor"));
    let file = f.tool("list_directory", json!({"path": "README.md"})).await;
    assert!(tool_error(&file).contains("is a file"));
}

#[tokio::test]
async fn find_files_matches_globs_and_respects_gitignore() {
    let f = Fixture::new();
    let found = |r: ToolResult| r.structured_content.unwrap();
    let rust = found(f.tool("find_files", json!({"glob": "*.rs"})).await);
    assert_eq!(rust, json!({"files": ["src/lib.rs", "src/main.rs"], "truncated": false}));
    let txt = found(f.tool("find_files", json!({"glob": "**/*.txt"})).await);
    assert_eq!(txt["files"], json!(["notes/über café.txt"]), "target/ is ignored, .hidden/ is hidden");
    let under = found(f.tool("find_files", json!({"glob": "main.*", "path": "src"})).await);
    assert_eq!(under["files"], json!(["src/main.rs"]));
    let limited = found(f.tool("find_files", json!({"glob": "*", "limit": 2})).await);
    assert_eq!(limited, json!({"files": ["README.md", "data/blob.bin"], "truncated": true}));
    let none = f.tool("find_files", json!({"glob": "*.log"})).await;
    assert_eq!(text(&none), "No files match \"*.log\"");
    let bad = f.tool("find_files", json!({"glob": "a[b"})).await;
    assert!(tool_error(&bad).starts_with("invalid glob"));
}

#[tokio::test]
async fn find_files_keeps_the_first_paths_whatever_the_threads_did() {
    // Directories sorting after each other's files, searched on several threads.
    let names = (0..400).map(|n| (format!("d{}/f{:03}.txt", n % 7, n), "x"));
    let f = Fixture::with_files(names.chain([("d1-x/a.txt".to_string(), "x")]));
    let first = |limit: usize| {
        let f = &f;
        async move { f.tool("find_files", json!({"glob": "*.txt", "limit": limit})).await.structured_content.unwrap() }
    };
    let all = first(1000).await;
    let every: Vec<&str> = all["files"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert_eq!(every.len(), 402, "with notes/über café.txt");
    assert_eq!(every[..3], ["d0/f000.txt", "d0/f007.txt", "d0/f014.txt"]);
    assert!(every.windows(2).all(|w| std::path::Path::new(w[0]) < std::path::Path::new(w[1])), "walk order");
    assert_eq!(all["truncated"], false);
    for _ in 0..5 {
        let some = first(60).await;
        assert_eq!(some["files"].as_array().unwrap()[..], all["files"].as_array().unwrap()[..60]);
        assert_eq!(some["truncated"], true);
    }
}

#[tokio::test]
async fn prompts_embed_files_and_complete_paths() {
    let f = Fixture::new();
    let args = |path: &str| BTreeMap::from([("path".to_string(), path.to_string())]);
    let Reply::Complete(review) = f.ws.get_prompt("review_file", args("src/lib.rs"), cx()).await.unwrap() else {
        panic!()
    };
    let ContentKind::Resource { resource } = &review.messages[0].content.kind else { panic!("{review:?}") };
    assert_eq!(resource.uri, f.uri("src/lib.rs"));
    assert!(matches!(&resource.body, ResourceBody::Text(t) if t.starts_with("pub fn add")));
    let ContentKind::Text { text } = &review.messages[1].content.kind else { panic!() };
    assert!(text.starts_with("Review src/lib.rs"), "{text}");

    let missing = f.ws.get_prompt("review_file", BTreeMap::new(), cx()).await.unwrap_err();
    assert!(missing.to_string().contains("path"), "{missing}");
    let outside = f.ws.get_prompt("review_file", args("../x"), cx()).await.unwrap_err();
    assert!(matches!(outside, LayerError::InvalidArguments { .. }), "{outside:?}");
    let dir = f.ws.get_prompt("review_file", args("src"), cx()).await.unwrap_err();
    assert!(dir.to_string().contains("is a directory"));

    let Reply::Complete(summary) = f.ws.get_prompt("summarize_directory", BTreeMap::new(), cx()).await.unwrap() else {
        panic!()
    };
    let ContentKind::Text { text: tree } = &summary.messages[0].content.kind else { panic!() };
    assert!(tree.contains("  src/\n    src/lib.rs (") && !tree.contains("target"), "{tree}");

    let ws = &f.ws;
    let complete = |prompt: &str, value: &str| {
        let of = CompletionRef::Prompt { name: prompt.into() };
        let arg = CompletionArg { name: "path".into(), value: value.into(), context: BTreeMap::new() };
        async move { ws.complete(of, arg, cx()).await.unwrap().values }
    };
    assert_eq!(complete("review_file", "src/m").await, ["src/main.rs"]);
    assert_eq!(complete("review_file", "").await.len(), 5);
    assert_eq!(complete("summarize_directory", "").await, ["data", "notes", "src"]);
    assert_eq!(complete("summarize_directory", "n").await, ["notes"]);
    assert!(complete("review_file", "target/").await.is_empty(), "ignored files are not offered");
}

#[tokio::test]
async fn completions_stop_at_a_hundred() {
    let f = Fixture::with_files((0..150).map(|i| (format!("gen/{i:03}.txt"), "x")));
    let of = CompletionRef::Prompt { name: "review_file".into() };
    let arg = CompletionArg { name: "path".into(), value: "gen/".into(), context: BTreeMap::new() };
    let completion = f.ws.complete(of, arg, cx()).await.unwrap();
    assert_eq!((completion.values.len(), completion.total, completion.has_more), (100, Some(150), Some(true)));
}

#[tokio::test]
async fn several_roots_are_named_and_kept_apart() {
    let (one, two) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let (a, b) = (one.path().join("app"), two.path().join("app"));
    write(&a, "main.rs", "fn main() {}\n");
    write(&b, "lib.rs", "pub fn lib() {}\n");
    let ws = Workspace::open(vec![a.clone(), b.clone(), a.clone()], Access::ReadOnly).unwrap();
    let listing = ws.resources(&Principal::local());
    let names: Vec<_> = listing.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&"app/main.rs") && names.contains(&"app-2/lib.rs"), "{names:?}");
    assert!(listing.iter().all(|r| r.uri.starts_with("file:///")));
    assert_eq!(ws.templates(&Principal::local()).len(), 2);

    let top = call_tool(&ws, "list_directory", json!({}), &cx()).await;
    assert_eq!(text(&top), "app/\napp-2/");
    let found = call_tool(&ws, "find_files", json!({"glob": "*.rs"}), &cx()).await;
    assert_eq!(found.structured_content.unwrap()["files"], json!(["app/main.rs", "app-2/lib.rs"]));
    let read = call_tool(&ws, "read_file", json!({"path": "app-2/lib.rs"}), &cx()).await;
    assert_eq!(text(&read), "pub fn lib() {}\n");
    let absolute = call_tool(&ws, "read_file", json!({"path": b.join("lib.rs")}), &cx()).await;
    assert_eq!(text(&absolute), "pub fn lib() {}\n");
    let unknown = call_tool(&ws, "read_file", json!({"path": "other/lib.rs"}), &cx()).await;
    assert!(tool_error(&unknown).contains("starts with one of their names: app, app-2"));
    let all = call_tool(&ws, "read_file", json!({"path": "."}), &cx()).await;
    assert!(tool_error(&all).contains("names every root"));
}

#[test]
fn opening_needs_existing_directories() {
    let dir = TempDir::new().unwrap();
    write(dir.path(), "file.txt", "x");
    let err = |roots: Vec<PathBuf>| Workspace::open(roots, Access::ReadOnly).err().unwrap().to_string();
    assert_eq!(err(vec![]), "a workspace needs at least one root directory");
    assert!(err(vec![dir.path().join("missing")]).contains("missing"));
    assert!(err(vec![dir.path().join("file.txt")]).ends_with("not a directory"));
}

#[tokio::test]
async fn tools_and_prompts_are_described() {
    let f = Fixture::new();
    let tools = f.ws.tools(&Principal::local());
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "list_directory",
            "directory_tree",
            "find_files",
            "describe_file",
            "read_file",
            "read_multiple_files",
            "search_files"
        ]
    );
    for tool in tools.iter() {
        assert!(tool.about.description.as_ref().is_some_and(|d| !d.is_empty()), "{}", tool.name);
        assert_eq!(tool.input_schema["type"], "object");
        let hints = tool.annotations.as_ref().unwrap();
        assert_eq!((hints.read_only_hint, hints.destructive_hint), (Some(true), Some(false)), "{}", tool.name);
    }
    let prompts = f.ws.prompts(&Principal::local());
    let names: Vec<_> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["review_file", "summarize_directory"]);
    assert!(f.ws.info().instructions.as_ref().unwrap().contains(&f.root.display().to_string()));
}

/// File work that panics tells the client only that the server failed, never the panic's
/// text (here standing for a compiled pattern, a path or the runtime's task number).
#[tokio::test]
async fn a_panic_in_file_work_reaches_the_client_as_a_generic_error() {
    let failed = crate::blocking::<()>(|| panic!("internal detail /secret/path")).await.unwrap_err();
    assert_eq!(failed, "internal error: the server could not finish this request");
}
