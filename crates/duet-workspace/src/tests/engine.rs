//! The workspace behind the engine, as clients of every protocol version see it; every
//! result is checked against that version's schema.

use super::*;
use std::sync::mpsc;

#[tokio::test]
async fn every_version_lists_reads_calls_and_prompts() {
    let f = Fixture::new();
    for version in HANDSHAKE.into_iter().chain([Version::V2026_07_28]) {
        let client = Client::connect(&f.ws, version).await;
        let resources = client.list_all("resources/list", "resources").await;
        assert_eq!(resources.len(), 5, "{version}");
        assert_eq!(resources[0]["uri"], f.uri("README.md"));
        // Pages of 3 (the test server's size), through the workspace's own cursors.
        let first = client.request("resources/list", json!({})).await;
        assert_eq!(first["resources"].as_array().unwrap().len(), 3);
        let rest = client.request("resources/list", json!({"cursor": first["nextCursor"]})).await;
        assert_eq!(rest["resources"].as_array().unwrap().len(), 2);
        assert_eq!(rest.get("nextCursor"), None);
        for cursor in [json!("bm90IGEgY3Vyc29y"), json!(5), json!(first["nextCursor"].as_str().unwrap().repeat(2))] {
            let refused = client.error("resources/list", json!({"cursor": cursor})).await;
            assert_eq!((refused.code, refused.message.as_str()), (-32602, "Invalid cursor"), "{version} {cursor}");
        }
        let templates = client.request("resources/templates/list", json!({})).await;
        let template = templates["resourceTemplates"][0]["uriTemplate"].as_str().unwrap().to_string();

        let readme = client.request("resources/read", json!({"uri": f.uri("README.md")})).await;
        assert_eq!(readme["contents"][0]["text"], "# Demo\nhello world\n", "{version}");
        let blob = client.request("resources/read", json!({"uri": f.uri("data/blob.bin")})).await;
        assert_eq!(blob["contents"][0]["blob"], "iVBORw0KGgoAaGVsbG//", "{version}");
        let hidden = template.replace("{+path}", ".hidden/secret.txt");
        let out = client.request("resources/read", json!({"uri": hidden})).await;
        assert_eq!(out["contents"][0]["text"], "hello from a hidden directory\n");
        let ignored = template.replace("{+path}", "target/out.txt");
        let refused = client.error("resources/read", json!({"uri": ignored})).await;
        assert_eq!(refused.code, -32602, "{version}: {refused:?}");
        assert!(refused.message.contains("excluded by .gitignore") && !refused.message.contains("hello"));

        let tools = client.list_all("tools/list", "tools").await;
        assert_eq!(tools.len(), 7);
        for (name, args) in [
            ("list_directory", json!({"path": "src"})),
            ("find_files", json!({"glob": "*.rs"})),
            ("search_files", json!({"pattern": "fn"})),
            ("read_file", json!({"path": "src/lib.rs", "start_line": 2})),
            ("describe_file", json!({"path": "README.md"})),
            ("directory_tree", json!({"depth": 2})),
            ("read_multiple_files", json!({"paths": ["README.md", "missing.txt"]})),
            ("read_file", json!({"path": "README.md", "tail": 1})),
        ] {
            let result = client.request("tools/call", json!({"name": name, "arguments": args})).await;
            assert_ne!(result["isError"], true, "{version} {name}: {result}");
        }
        let failed = client.request("tools/call", json!({"name": "read_file", "arguments": {"path": "../x"}})).await;
        assert_eq!(failed["isError"], true);

        let prompts = client.request("prompts/list", json!({})).await;
        assert_eq!(prompts["prompts"].as_array().unwrap().len(), 2);
        let review =
            client.request("prompts/get", json!({"name": "review_file", "arguments": {"path": "src/lib.rs"}})).await;
        assert_eq!(review["messages"][0]["content"]["type"], "resource");
        assert_eq!(review["messages"][0]["content"]["resource"]["uri"], f.uri("src/lib.rs"));
        let summary = client.request("prompts/get", json!({"name": "summarize_directory"})).await;
        assert!(summary["messages"][0]["content"]["text"].as_str().unwrap().contains("src/main.rs"));

        let completion = client
            .request(
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "review_file"}, "argument": {"name": "path", "value": "src/"}}),
            )
            .await;
        assert_eq!(completion["completion"]["values"], json!(["src/lib.rs", "src/main.rs"]), "{version}");
        let completion = client
            .request(
                "completion/complete",
                json!({"ref": {"type": "ref/resource", "uri": template}, "argument": {"name": "path", "value": "no"}}),
            )
            .await;
        assert_eq!(completion["completion"]["values"], json!(["notes/über café.txt"]), "{version}");
    }
}

#[tokio::test]
async fn a_search_streams_progress_to_the_request() {
    let f = Fixture::new();
    let client = Client::connect(&f.ws, Version::V2025_11_25).await;
    let progress = Recorder::new(client.version.as_str());
    let params = json!({"name": "search_files", "arguments": {"pattern": "hello", "case_insensitive": true}, "_meta": {"progressToken": "p1"}});
    let message = client.message("tools/call", params);
    let result = client.send("tools/call", message, Some(progress.sink())).await.unwrap();
    assert_eq!(result["structuredContent"]["matches"].as_array().unwrap().len(), 2);
    let notes = progress.take();
    assert!(!notes.is_empty());
    assert_eq!(notes[0]["method"], "notifications/progress");
    assert_eq!(notes[0]["params"]["progressToken"], "p1");
    assert_eq!(notes[0]["params"]["progress"], 1);
    assert!(notes[0]["params"]["message"].as_str().unwrap().starts_with("1 file scanned, "), "{}", notes[0]);
}

#[tokio::test]
async fn notifications_cancelled_stops_a_running_search() {
    let f = Fixture::with_files((0..50).map(|i| (format!("many/{i:02}.txt"), "needle\n")));
    let client = Arc::new(Client::connect(&f.ws, Version::V2025_06_18).await);

    // The search's first progress report holds the search until the test has cancelled it.
    let (reported, first_report) = mpsc::channel::<()>();
    let (go_on, release) = mpsc::channel::<()>();
    let release = Mutex::new(release);
    let reports = Arc::new(Mutex::new(0));
    let counted = reports.clone();
    let sink: Sink = Arc::new(move |message: Value| {
        assert_eq!(message["method"], "notifications/progress");
        *counted.lock().unwrap() += 1;
        let _ = reported.send(());
        let _ = release.lock().unwrap().recv_timeout(WAIT);
    });
    let params = json!({"name": "search_files", "arguments": {"pattern": "needle"}, "_meta": {"progressToken": 7}});
    let message = client.message("tools/call", params);
    let id = message["id"].clone();
    let running = {
        let client = client.clone();
        tokio::spawn(async move { client.session.handle(message, Some(sink), None).await })
    };
    bounded("the first progress report", async {
        while first_report.try_recv().is_err() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}});
    assert_eq!(client.session.handle(cancel, None, None).await, None);
    let answer = bounded("the cancelled call", running).await.unwrap();
    assert_eq!(answer, None, "a cancelled request gets no response");
    go_on.send(()).unwrap();
    // Released, the search sees the cancellation before its next file and reports no more.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(*reports.lock().unwrap(), 1);
    assert_eq!(client.session.inflight(), 0);
}
