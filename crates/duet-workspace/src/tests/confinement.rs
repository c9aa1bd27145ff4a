//! Nothing outside the roots is served: `..`, absolute paths and URIs outside them,
//! symbolic links out of them, and anything but regular files and directories are refused
//! by every entry point, with errors that show none of the refused content. Neither is
//! what `.gitignore` leaves out, nor anything in a `.git` directory, even when named;
//! hidden files nothing ignores are served when named.

use super::*;
use std::collections::BTreeMap;

const SECRET: &str = "TOP SECRET outside the workspace";

/// A fixture plus a directory beside it holding a secret.
fn with_outside() -> (Fixture, TempDir, PathBuf) {
    let f = Fixture::new();
    let outside = TempDir::new().unwrap();
    let secret = outside.path().canonicalize().unwrap().join("secret.txt");
    std::fs::write(&secret, SECRET).unwrap();
    (f, outside, secret)
}

/// Every file tool refuses `path`, with a message containing `why` and no secret.
async fn refused_by_tools(f: &Fixture, path: &str, why: &str) {
    for (tool, args) in [
        ("read_file", json!({"path": path})),
        ("read_file", json!({"path": path, "start_line": 1})),
        ("read_file", json!({"path": path, "head": 1})),
        ("read_file", json!({"path": path, "tail": 1})),
        ("describe_file", json!({"path": path})),
        ("list_directory", json!({"path": path})),
        ("directory_tree", json!({"path": path})),
        ("find_files", json!({"glob": "*", "path": path})),
        ("search_files", json!({"pattern": "SECRET", "path": path})),
    ] {
        let result = f.tool(tool, args).await;
        let message = tool_error(&result);
        assert!(message.contains(why), "{tool} on {path:?}: {message}");
        assert!(!message.contains("TOP SECRET"), "{tool} on {path:?} leaked: {message}");
    }
    // Several files at once: the refusal stands in the file's place, beside a file that is read.
    let several = f.tool("read_multiple_files", json!({"paths": [path, "README.md"]})).await;
    assert!(!several.is_error, "read_multiple_files on {path:?}: {several:?}");
    let files = &several.structured_content.as_ref().unwrap()["files"];
    let message = files[0]["error"].as_str().unwrap_or_else(|| panic!("{path:?} was read: {files}"));
    assert!(message.contains(why), "read_multiple_files on {path:?}: {message}");
    assert_eq!(files[1], json!({"path": "README.md", "type": "text", "size": 19}));
    assert!(!format!("{several:?}").contains("TOP SECRET"), "read_multiple_files on {path:?} leaked: {several:?}");
}

/// No walk reaches what it must not: no listed resource's name is `hidden`, `search_files`
/// matches nothing for `pattern`, `find_files` finds nothing for `glob`, and no path in
/// `directory_tree` (but links, which it shows as such) is `hidden`.
async fn unseen_by_walks(f: &Fixture, hidden: impl Fn(&str) -> bool, pattern: &str, glob: &str) {
    let listed = f.ws.resources(&Principal::local());
    assert!(listed.iter().all(|r| !hidden(&r.name)), "{listed:?}");
    let search = f.tool("search_files", json!({"pattern": pattern})).await;
    assert_eq!(search.structured_content.unwrap()["matches"], json!([]));
    let found = f.tool("find_files", json!({"glob": glob})).await;
    assert_eq!(found.structured_content.unwrap()["files"], json!([]));
    // The tree shows links as links, and goes no further.
    let tree = text(&f.tool("directory_tree", json!({"depth": 20})).await);
    let walked = tree.lines().filter(|l| !l.ends_with("(symbolic link)")).map(|l| l.trim().trim_end_matches('/'));
    for path in walked {
        let path = path.split(" (").next().unwrap();
        assert!(!hidden(path), "the tree shows {path}:\n{tree}");
    }
}

#[tokio::test]
async fn parent_components_are_refused() {
    let f = Fixture::new();
    for path in ["../x", "src/../../x", "src/../README.md", "./.."] {
        refused_by_tools(&f, path, "'..' is not allowed").await;
    }
    let absolute = format!("{}/src/../README.md", f.root.display());
    refused_by_tools(&f, &absolute, "'..' is not allowed").await;
    for uri in [format!("{}/../etc/passwd", f.uri("src")), format!("{}/%2E%2E/%2e%2e/etc/passwd", f.uri("src"))] {
        let error = f.read(&uri).await.unwrap_err();
        assert!(
            matches!(&error, LayerError::InvalidArguments { message, .. } if message.contains("'..'")),
            "{uri}: {error:?}"
        );
    }
}

#[tokio::test]
async fn absolute_paths_outside_the_roots_are_refused() {
    let (f, _outside, secret) = with_outside();
    refused_by_tools(&f, secret.to_str().unwrap(), "is outside the workspace").await;
    refused_by_tools(&f, "/etc/passwd", "is outside the workspace").await;
    refused_by_tools(&f, "file:///etc/passwd", "is outside the workspace").await;
    // A sibling whose name starts with the root's is not under it.
    let sibling = PathBuf::from(format!("{}-sibling", f.root.display()));
    write(&sibling, "x.txt", SECRET);
    refused_by_tools(&f, sibling.join("x.txt").to_str().unwrap(), "is outside the workspace").await;
    std::fs::remove_dir_all(&sibling).unwrap();

    for uri in ["file:///etc/passwd".to_string(), duet::file_uri::from_path(&secret)] {
        let error = f.read(&uri).await.unwrap_err();
        let LayerError::InvalidArguments { message, .. } = &error else { panic!("{uri}: {error:?}") };
        assert!(message.contains("is outside the workspace") && !message.contains("root:"), "{message}");
    }
    let remote = f.read("file://example.com/etc/passwd").await.unwrap_err();
    assert!(remote.to_string().contains("another host"), "{remote}");
    let nul = f.tool("read_file", json!({"path": "README.md\u{0}.txt"})).await;
    assert!(tool_error(&nul).contains("NUL"));
    // Absolute paths and URIs inside the root are fine.
    let inside = f.tool("read_file", json!({"path": f.root.join("README.md")})).await;
    assert_eq!(text(&inside), "# Demo\nhello world\n");
    let by_uri = f.tool("read_file", json!({"path": f.uri("README.md")})).await;
    assert_eq!(text(&by_uri), "# Demo\nhello world\n");
}

#[cfg(unix)]
#[tokio::test]
async fn symbolic_links_out_of_the_root_are_refused() {
    use std::os::unix::fs::symlink;
    let (f, outside, secret) = with_outside();
    symlink(&secret, f.root.join("link.txt")).unwrap();
    symlink(outside.path(), f.root.join("linkdir")).unwrap();
    symlink(f.root.join("README.md"), f.root.join("inside.md")).unwrap();
    let f = f.reopened();

    refused_by_tools(&f, "link.txt", "leads outside the workspace through a symbolic link").await;
    refused_by_tools(&f, "linkdir", "leads outside the workspace through a symbolic link").await;
    refused_by_tools(&f, "linkdir/secret.txt", "leads outside the workspace through a symbolic link").await;
    for rel in ["link.txt", "linkdir/secret.txt"] {
        let error = f.read(&f.uri(rel)).await.unwrap_err();
        assert!(error.to_string().contains("symbolic link") && !error.to_string().contains("TOP SECRET"));
    }
    // Walks do not follow links: not listed, not found, not searched.
    unseen_by_walks(&f, |name| name.starts_with("link"), "SECRET", "**/secret*").await;
    // A link that stays inside is followed.
    let inside = f.tool("read_file", json!({"path": "inside.md"})).await;
    assert_eq!(text(&inside), "# Demo\nhello world\n");
    let listing = f.tool("list_directory", json!({})).await;
    assert!(text(&listing).contains("link.txt (symbolic link)"));
}

#[cfg(unix)]
#[tokio::test]
async fn only_regular_files_and_directories_are_served() {
    let f = Fixture::new();
    let _socket = std::os::unix::net::UnixListener::bind(f.root.join("server.sock")).unwrap();
    let result = f.tool("read_file", json!({"path": "server.sock"})).await;
    assert!(tool_error(&result).contains("is not a regular file or directory"));
    let error = f.read(&f.uri("server.sock")).await.unwrap_err();
    assert!(error.to_string().contains("not a regular file"), "{error}");
    let described = f.tool("describe_file", json!({"path": "server.sock"})).await;
    assert!(tool_error(&described).contains("not a regular file"));
}

#[tokio::test]
async fn the_engine_refuses_reads_outside_as_invalid_params() {
    let f = Fixture::new();
    for version in [Version::V2025_06_18, Version::V2026_07_28] {
        let client = Client::connect(&f.ws, version).await;
        let error = client.error("resources/read", json!({"uri": "file:///etc/passwd"})).await;
        assert_eq!(error.code, -32602, "{version}: {error:?}");
        assert!(error.message.contains("outside the workspace"), "{error:?}");
        let missing = client.error("resources/read", json!({"uri": f.uri("missing.txt")})).await;
        let code = if version.is_modern() { -32602 } else { -32002 };
        assert_eq!(missing.code, code, "{version}: a missing file is not found");
    }
}

/// A fixture whose `.gitignore` also lists `.env`, which holds a secret, as does a file in
/// the ignored `target/`.
fn with_ignored_secrets() -> Fixture {
    let f = Fixture::new();
    write(&f.root, ".gitignore", "target/\n*.log\n.env\n");
    write(&f.root, ".env", format!("API_KEY={SECRET}\n"));
    write(&f.root, "target/secret.txt", SECRET);
    f
}

/// A resource read of `uri` is refused as invalid, with `why` and no secret.
async fn refused_read(f: &Fixture, uri: &str, why: &str) {
    let error = f.read(uri).await.unwrap_err();
    let LayerError::InvalidArguments { message, .. } = &error else { panic!("{uri}: {error:?}") };
    assert!(message.contains(why), "{uri}: {message}");
    assert!(!message.contains("TOP SECRET"), "{uri} leaked: {message}");
}

#[tokio::test]
async fn gitignored_files_are_refused_when_named() {
    let f = with_ignored_secrets();
    let why = "is excluded by .gitignore and is not served";
    refused_by_tools(&f, ".env", why).await;
    refused_by_tools(&f, "./.env", why).await;
    refused_by_tools(&f, f.root.join(".env").to_str().unwrap(), why).await;
    refused_by_tools(&f, &f.uri(".env"), why).await;
    let message = tool_error(&f.tool("read_file", json!({"path": ".env"})).await);
    assert_eq!(message, format!("\".env\" {why}"));

    refused_read(&f, &f.uri(".env"), why).await;
    let template = f.ws.templates(&Principal::local())[0].uri_template.clone();
    refused_read(&f, &template.replace("{+path}", ".env"), why).await;
    // Percent-encoding the name changes nothing.
    refused_read(&f, &template.replace("{+path}", "%2Eenv"), why).await;

    let args = |path: &str| BTreeMap::from([("path".to_string(), path.to_string())]);
    for (prompt, path) in
        [("review_file", ".env"), ("review_file", "target/secret.txt"), ("summarize_directory", "target")]
    {
        let error = f.ws.get_prompt(prompt, args(path), cx()).await.unwrap_err();
        let LayerError::InvalidArguments { message, .. } = &error else { panic!("{prompt} {path}: {error:?}") };
        assert!(message.contains(why) && !message.contains("TOP SECRET"), "{prompt} {path}: {message}");
    }

    // Nothing else lets the secret out either.
    let search = f.tool("search_files", json!({"pattern": "TOP SECRET"})).await;
    assert_eq!(search.structured_content.unwrap()["matches"], json!([]));
    let top = f.tool("list_directory", json!({})).await;
    assert!(!text(&top).contains(".env") && !text(&top).contains("target"), "{}", text(&top));

    // The engine answers as for a path outside the workspace.
    let client = Client::connect(&f.ws, Version::V2025_11_25).await;
    let error = client.error("resources/read", json!({"uri": f.uri(".env")})).await;
    assert_eq!(error.code, -32602, "{error:?}");
    assert!(error.message.contains(why) && !error.message.contains("TOP SECRET"), "{error:?}");
    let called = client.request("tools/call", json!({"name": "read_file", "arguments": {"path": ".env"}})).await;
    assert_eq!(called["isError"], true);
    assert!(!called.to_string().contains("TOP SECRET"), "{called}");
}

#[tokio::test]
async fn files_in_ignored_directories_are_refused() {
    let f = with_ignored_secrets();
    let why = "is excluded by .gitignore and is not served";
    for path in ["target/secret.txt", "target", "target/", "debug.log"] {
        refused_by_tools(&f, path, why).await;
    }
    refused_read(&f, &f.uri("target/secret.txt"), why).await;
    refused_read(&f, &f.uri("target"), why).await;
    // Whether an ignored path exists is not told.
    for path in ["target/missing.txt", "missing.log", "target/deeper/missing.txt"] {
        let message = tool_error(&f.tool("read_file", json!({"path": path})).await);
        assert!(message.contains(why), "{path}: {message}");
    }
    // A nested .gitignore counts below its directory only; a whitelist keeps a file in.
    write(&f.root, "src/.gitignore", "generated.rs\n");
    write(&f.root, "src/generated.rs", SECRET);
    write(&f.root, "docs/generated.rs", "// documented\n");
    write(&f.root, ".gitignore", "target/\n*.log\n.env\n!keep.log\n");
    write(&f.root, "keep.log", "kept\n");
    refused_by_tools(&f, "src/generated.rs", why).await;
    assert_eq!(text(&f.tool("read_file", json!({"path": "docs/generated.rs"})).await), "// documented\n");
    assert_eq!(text(&f.tool("read_file", json!({"path": "keep.log"})).await), "kept\n");
    // An .ignore file is honoured too, and named in the refusal.
    write(&f.root, "notes/.ignore", "*.txt\n");
    refused_by_tools(&f, "notes/über café.txt", "is excluded by .ignore and is not served").await;
}

#[cfg(unix)]
#[tokio::test]
async fn links_to_or_named_as_ignored_files_are_refused() {
    use std::os::unix::fs::symlink;
    let f = with_ignored_secrets();
    std::fs::create_dir(f.root.join("docs")).unwrap();
    symlink(f.root.join(".env"), f.root.join("docs/settings")).unwrap();
    symlink(f.root.join("target"), f.root.join("build")).unwrap();
    symlink(f.root.join("README.md"), f.root.join("readme.log")).unwrap();
    let why = "is excluded by .gitignore and is not served";
    for path in ["docs/settings", "build", "build/secret.txt", "readme.log"] {
        refused_by_tools(&f, path, why).await;
    }
    refused_read(&f, &f.uri("docs/settings"), why).await;
    refused_read(&f, &f.uri("build/secret.txt"), why).await;
}

#[tokio::test]
async fn git_directories_are_never_served() {
    let f = Fixture::new();
    write(&f.root, ".git/config", format!("[remote \"origin\"]\n\turl = https://{SECRET}@example.com/x\n"));
    write(&f.root, "vendor/lib/.git/config", SECRET);
    // Even an ignore file that whitelists it does not open .git up.
    write(&f.root, ".gitignore", "target/\n*.log\n!.git\n!.git/\n");
    let why = "is in a .git directory, which is not served";
    for path in [".git/config", ".git", "vendor/lib/.git/config", "vendor/lib/.git"] {
        refused_by_tools(&f, path, why).await;
    }
    refused_read(&f, &f.uri(".git/config"), why).await;
    refused_read(&f, &f.uri(".git/missing"), why).await;
    let f = f.reopened();
    unseen_by_walks(&f, |name| name.contains(".git/"), "TOP SECRET", "**/config").await;
}

#[tokio::test]
async fn hidden_files_nothing_ignores_are_served_when_named() {
    let f = Fixture::new();
    write(&f.root, ".github/workflows/ci.yml", "on: push\n");
    let read = f.tool("read_file", json!({"path": ".github/workflows/ci.yml"})).await;
    assert_eq!(text(&read), "on: push\n");
    let described = f.tool("describe_file", json!({"path": ".github/workflows/ci.yml"})).await;
    assert_eq!(described.structured_content.unwrap()["lineCount"], 1);
    let contents = f.read(&f.uri(".github/workflows/ci.yml")).await.unwrap();
    assert_eq!(contents[0].uri, f.uri(".github/workflows/ci.yml"));
    let gitignore = f.tool("read_file", json!({"path": ".gitignore"})).await;
    assert_eq!(text(&gitignore), "target/\n*.log\n");
    let inside = f.tool("list_directory", json!({"path": ".github/workflows"})).await;
    assert_eq!(text(&inside), ".github/workflows/ci.yml (9 bytes)");
    // Still left out of listings, finds and searches from above.
    let top = f.tool("list_directory", json!({})).await;
    assert!(!text(&top).contains(".github"), "{}", text(&top));
    let found = f.tool("find_files", json!({"glob": "**/*.yml"})).await;
    assert_eq!(found.structured_content.unwrap()["files"], json!([]));
    let listed = f.ws.resources(&Principal::local());
    assert!(listed.iter().all(|r| !r.name.starts_with('.')), "{listed:?}");
}

#[tokio::test]
async fn an_edited_gitignore_counts_at_once() {
    let f = Fixture::new();
    assert!(!f.tool("read_file", json!({"path": "notes/über café.txt"})).await.is_error);
    write(&f.root, ".gitignore", "target/\n*.log\nnotes/\n");
    let refused = f.tool("read_file", json!({"path": "notes/über café.txt"})).await;
    assert!(tool_error(&refused).contains("is excluded by .gitignore"));
    write(&f.root, ".gitignore", "target/\n");
    assert_eq!(text(&f.tool("read_file", json!({"path": "debug.log"})).await), "hello from an ignored file\n");
}
