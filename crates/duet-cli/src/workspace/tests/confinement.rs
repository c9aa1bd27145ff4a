//! Nothing outside the roots is served: `..`, absolute paths and URIs outside them,
//! symbolic links out of them, and anything but regular files and directories are refused
//! by every entry point, with errors that show none of the refused content.

use super::*;

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
        ("describe_file", json!({"path": path})),
        ("list_directory", json!({"path": path})),
        ("find_files", json!({"glob": "*", "path": path})),
        ("search_files", json!({"pattern": "SECRET", "path": path})),
    ] {
        let result = f.tool(tool, args).await;
        let message = tool_error(&result);
        assert!(message.contains(why), "{tool} on {path:?}: {message}");
        assert!(!message.contains("TOP SECRET"), "{tool} on {path:?} leaked: {message}");
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

    for uri in ["file:///etc/passwd".to_string(), super::super::uri::from_path(&secret)] {
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
    let ws = Workspace::open(vec![f.root.clone()]).unwrap();
    let f = Fixture { ws, ..f };

    refused_by_tools(&f, "link.txt", "leads outside the workspace through a symbolic link").await;
    refused_by_tools(&f, "linkdir", "leads outside the workspace through a symbolic link").await;
    refused_by_tools(&f, "linkdir/secret.txt", "leads outside the workspace through a symbolic link").await;
    for rel in ["link.txt", "linkdir/secret.txt"] {
        let error = f.read(&f.uri(rel)).await.unwrap_err();
        assert!(error.to_string().contains("symbolic link") && !error.to_string().contains("TOP SECRET"));
    }
    // Walks do not follow links: not listed, not found, not searched.
    let listed = f.ws.resources(&Principal::local());
    assert!(listed.iter().all(|r| !r.name.starts_with("link")), "{listed:?}");
    let search = f.tool("search_files", json!({"pattern": "SECRET"})).await;
    assert_eq!(search.structured_content.unwrap()["matches"], json!([]));
    let found = f.tool("find_files", json!({"glob": "**/secret*"})).await;
    assert_eq!(found.structured_content.unwrap()["files"], json!([]));
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
