//! Watching: edits reach subscribed sessions as `notifications/resources/updated`, new and
//! removed files as `notifications/resources/list_changed`, changes to ignored files reach
//! no one, an edited `.gitignore` changes the list, and dropping the workspace ends the
//! watcher thread.

use super::*;

/// A watched fixture and a session of it that subscribed to `README.md`.
async fn watched(version: Version) -> (Fixture, Client) {
    let f = Fixture::new();
    f.ws.watch().unwrap();
    f.ws.watch().unwrap(); // a second call changes nothing
    // Once the first walk is done, every directory is watched.
    f.ws.resources(&Principal::local());
    let client = Client::connect(&f.ws, version).await;
    assert_eq!(client.request("resources/subscribe", json!({"uri": f.uri("README.md")})).await, json!({}));
    (f, client)
}

fn updated(uri: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
}

#[tokio::test]
async fn an_edit_reaches_the_subscriber() {
    for version in [Version::V2024_11_05, Version::V2025_11_25] {
        let (f, client) = watched(version).await;
        write(&f.root, "README.md", "# Demo\nhello again, longer now\n");
        let sent = client.sent.wait_for("notifications/resources/updated").await;
        assert_eq!(sent, [updated(&f.uri("README.md"))], "{version}");
        // The listing follows: the new size is listed.
        let listing = f.ws.resources(&Principal::local());
        assert_eq!(listing[0].size, Some(31));
        // Other files' updates are not for this session.
        write(&f.root, "src/lib.rs", "// changed\n");
        write(&f.root, "new.txt", "x");
        let sent = client.sent.wait_for("notifications/resources/list_changed").await;
        assert!(sent.iter().all(|m| m["method"] != "notifications/resources/updated"), "{sent:?}");
    }
}

#[tokio::test]
async fn new_and_removed_files_change_the_list() {
    let (f, client) = watched(Version::V2025_06_18).await;
    write(&f.root, "docs/guide.md", "# Guide\n");
    let sent = client.sent.wait_for("notifications/resources/list_changed").await;
    assert_eq!(sent, [json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})]);
    let listed = |f: &Fixture| f.ws.resources(&Principal::local()).iter().map(|r| r.name.clone()).collect::<Vec<_>>();
    assert!(listed(&f).contains(&"docs/guide.md".to_string()));
    let page = client.list_all("resources/list", "resources").await;
    assert!(page.iter().any(|r| r["name"] == "docs/guide.md"));

    std::fs::remove_file(f.root.join("docs/guide.md")).unwrap();
    client.sent.wait_for("notifications/resources/list_changed").await;
    assert!(!listed(&f).contains(&"docs/guide.md".to_string()));
}

#[tokio::test]
async fn directories_that_come_and_go_change_the_list_once() {
    let (f, client) = watched(Version::V2025_11_25).await;
    let listed = |f: &Fixture| f.ws.resources(&Principal::local()).iter().map(|r| r.name.clone()).collect::<Vec<_>>();
    // A directory tree made at once (its subdirectories before anyone could watch them).
    for n in 0..12 {
        write(&f.root, &format!("fresh/{}/deep/f{n}.txt", n % 3), "new");
    }
    let sent = client.sent.wait_for("notifications/resources/list_changed").await;
    assert_eq!(sent.iter().filter(|m| m["method"] == "notifications/resources/list_changed").count(), 1);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(client.sent.take().is_empty(), "one burst, one notification");
    let names = listed(&f);
    assert_eq!(names.iter().filter(|n| n.starts_with("fresh/")).count(), 12, "{names:?}");
    // A file written into a directory the burst made: its watch is in place.
    write(&f.root, "fresh/1/deep/later.txt", "later");
    client.sent.wait_for("notifications/resources/list_changed").await;
    assert!(listed(&f).contains(&"fresh/1/deep/later.txt".to_string()));
    // The tree goes, and its files with it.
    std::fs::remove_dir_all(f.root.join("fresh")).unwrap();
    client.sent.wait_for("notifications/resources/list_changed").await;
    assert!(!listed(&f).iter().any(|n| n.starts_with("fresh/")));
    // A directory moved in from outside the root brings its files.
    let outside = f.dir.path().with_extension("moved");
    write(&outside, "inner/moved.txt", "moved");
    std::fs::rename(&outside, f.root.join("moved")).unwrap();
    client.sent.wait_for("notifications/resources/list_changed").await;
    assert!(listed(&f).contains(&"moved/inner/moved.txt".to_string()));
}

#[tokio::test]
async fn a_file_renamed_over_reaches_the_subscriber() {
    let (f, client) = watched(Version::V2025_06_18).await;
    // An editor's atomic save: a temporary file, renamed over the one subscribed to.
    write(&f.root, "README.md.tmp", "# Demo\nsaved atomically\n");
    std::fs::rename(f.root.join("README.md.tmp"), f.root.join("README.md")).unwrap();
    let sent = client.sent.wait_for("notifications/resources/updated").await;
    assert!(sent.contains(&updated(&f.uri("README.md"))), "{sent:?}");
    // The temporary file came and went within the burst: the list did not change.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let later = client.sent.take();
    assert!(sent.iter().chain(&later).all(|m| m["method"] != "notifications/resources/list_changed"), "{later:?}");
}

#[tokio::test]
async fn ignored_and_hidden_paths_raise_nothing() {
    let (f, client) = watched(Version::V2025_11_25).await;
    write(&f.root, "target/new.txt", "build output");
    write(&f.root, "target/out.txt", "rebuilt");
    write(&f.root, "trace.log", "log line");
    write(&f.root, ".git/index", "git's own");
    // Past the debounce window, a change that counts shows the others raised nothing.
    tokio::time::sleep(Duration::from_millis(400)).await;
    write(&f.root, "README.md", "# Demo\nhello\n");
    let sent = client.sent.wait_for("notifications/resources/updated").await;
    assert_eq!(sent, [updated(&f.uri("README.md"))]);
}

#[tokio::test]
async fn an_edited_gitignore_changes_the_list() {
    let (f, client) = watched(Version::V2025_06_18).await;
    write(&f.root, ".gitignore", "target/\n*.log\nnotes/\n");
    client.sent.wait_for("notifications/resources/list_changed").await;
    let listed: Vec<_> = f.ws.resources(&Principal::local()).iter().map(|r| r.name.clone()).collect();
    assert_eq!(listed, ["README.md", "data/blob.bin", "src/lib.rs", "src/main.rs"]);
}

#[tokio::test]
async fn listen_streams_get_the_changes_too() {
    let (f, _) = watched(Version::V2025_11_25).await;
    let client = Client::connect(&f.ws, Version::V2026_07_28).await;
    let stream = Recorder::new(Version::V2026_07_28.as_str());
    let params = json!({"notifications": {"resourcesListChanged": true, "resourceSubscriptions": [f.uri("src")]}});
    let listen = client.message("subscriptions/listen", params);
    let session = client.session.clone();
    let sink = stream.sink();
    let running = tokio::spawn(async move { session.handle(listen, Some(sink), None).await });
    // The stream acknowledges first; changes follow.
    stream.wait_for("notifications/subscriptions/acknowledged").await;
    write(&f.root, "src/main.rs", "fn main() {}\n");
    let sent = stream.wait_for("notifications/resources/updated").await;
    let update = sent.iter().find(|m| m["method"] == "notifications/resources/updated").unwrap();
    assert_eq!(update["params"]["uri"], f.uri("src/main.rs"));
    running.abort();
}

#[tokio::test]
async fn dropping_the_workspace_ends_the_watcher() {
    let f = Fixture::new();
    f.ws.watch().unwrap();
    let shared = Arc::downgrade(&f.ws.shared);
    drop(f.ws);
    // Nothing ends the watcher thread (which holds the shared state) but its channel closing.
    bounded("the watcher thread to end", async {
        while shared.upgrade().is_some() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    drop(f.dir);
}
