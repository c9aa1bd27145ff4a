//! What the client's tests share: one scenario run against duet's test registry in any
//! era and over any transport, with every listing paged small.
#![allow(dead_code, reason = "each test file uses a part")]

use duet::fixtures::conformance;
use duet::protocol::{Server, ServerOptions};
use duet::transport::http::{HttpConfig, HttpServer};
use duet_client::types::{ContentKind, ResourceBody, ToolResult};
use duet_client::{Change, Client, Error, Interest, Options, Version};
use duet_wire::method::Method;
use duet_wire::params::{CompleteParams, CompletionArgument, CompletionReference};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The `duet` binary, built with the `fixtures` feature: `DUET_BIN`, else `target/debug/duet`.
pub(crate) fn duet_bin() -> std::path::PathBuf {
    std::env::var_os("DUET_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/duet"))
}

/// Items per list page: small, so every listing of the test registry takes several pages.
pub(crate) const PAGE_SIZE: usize = 2;

/// Options of the tests' clients: tool calls ask for progress.
pub(crate) fn options() -> Options {
    Options { progress: true, ..Options::default() }
}

/// duet's conformance fixtures over HTTP on 127.0.0.1, any port.
pub(crate) async fn conformance_server() -> HttpServer {
    let server = Server::new(Arc::new(conformance::registry()), ServerOptions::default());
    HttpServer::bind(server, HttpConfig { port: 0, ..HttpConfig::default() }).await.expect("the server binds")
}

/// A tool result's content as text: its text blocks, anything else in debug form.
pub(crate) fn text_of(result: &ToolResult) -> String {
    result
        .content
        .iter()
        .map(|c| match &c.kind {
            ContentKind::Text { text } => text.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

fn text(kind: &ContentKind) -> &str {
    match kind {
        ContentKind::Text { text } => text,
        other => panic!("not text: {other:?}"),
    }
}

/// Lists, calls, reads, gets and completes against the test registry, and checks what the
/// client agreed on was `version`.
async fn exercise(client: &Client, version: Version) {
    let terms = client.terms();
    assert_eq!(terms.version, version);
    assert_eq!(terms.server_info.as_ref().map(|info| info.name.as_str()), Some("duet-testkit"));
    assert!(terms.instructions.as_deref().is_some_and(|i| i.starts_with("A test server")), "{terms:?}");

    // Listings take several pages; the whole equals the pages joined.
    let tools = client.list_tools().await.expect("tools/list");
    assert!(tools.len() > 2 * PAGE_SIZE, "{} tools", tools.len());
    let structured = version.has_structured_output();
    assert!(tools.iter().any(|t| t.name == "echo" && t.output_schema.is_some() == structured));
    let first = client.list_tools_page(None).await.expect("a page");
    assert_eq!(first.items.len(), PAGE_SIZE);
    assert_eq!(first.items[..], tools[..PAGE_SIZE]);
    let second = client.list_tools_page(first.next_cursor.clone()).await.expect("the next page");
    assert_eq!(second.items[..], tools[PAGE_SIZE..2 * PAGE_SIZE]);
    assert_eq!(client.list_resources().await.expect("resources/list")[0].uri, "test://info");
    assert_eq!(client.list_resource_templates().await.expect("templates")[0].uri_template, "test://items/{item_id}");
    assert!(client.list_prompts().await.expect("prompts/list").iter().any(|p| p.name == "greet"));

    // A call, checked against echo's output schema where the revision has one.
    let echoed = client.call_tool("echo", json!({"text": "hé", "times": 2})).await.expect("echo");
    assert_eq!(text(&echoed.content[0].kind), r#"{"text":"héhé"}"#);
    assert_eq!(echoed.structured_content, structured.then(|| json!({"text": "héhé"})));
    assert!(!echoed.is_error);

    // A tool's failure is a result; an unknown tool is the server's JSON-RPC error.
    let failed = client.call_tool("fail", json!({})).await.expect("fail answers");
    assert!(failed.is_error && text(&failed.content[0].kind).contains("boom"), "{failed:?}");
    match client.call_tool("no_such_tool", json!({})).await {
        Err(Error::Rpc(error)) => assert!(error.message.contains("no_such_tool"), "{error:?}"),
        other => panic!("an unknown tool: {other:?}"),
    }
    assert!(matches!(client.call_tool("echo", json!([1])).await, Err(Error::Invalid(_))));

    // Resources, a template's resource, prompts, completions.
    let info = client.read_resource("test://info").await.expect("read");
    assert_eq!(info[0].body, ResourceBody::Text(r#"{"hello":"world"}"#.into()));
    let item = client.read_resource("test://items/beta").await.expect("read an item");
    assert!(matches!(&item[0].body, ResourceBody::Text(t) if t.contains("\"index\": 1")), "{item:?}");
    let greeting = client
        .get_prompt("greet", BTreeMap::from([("name".into(), "Ann".into()), ("style".into(), "formal".into())]))
        .await
        .expect("prompts/get");
    assert_eq!(text(&greeting.messages[0].content.kind), "Good day, Ann.");
    let completed = client
        .complete(CompleteParams {
            reference: CompletionReference::Prompt { name: "greet".into() },
            argument: CompletionArgument { name: "name".into(), value: Some("a".into()) },
            context: None,
        })
        .await
        .expect("completion/complete");
    assert_eq!(completed.values, ["alpha"]);

    client.set_logging_level("info").await.expect("logging");
    client.ping().await.expect("ping");
}

/// Calls `slow`, which reports progress and logs each step (over HTTP the answer is an SSE
/// stream), and checks its notifications reached the channel before its result.
async fn progress_reaches_the_channel(client: &Client) {
    let mut notifications = client.notifications().expect("the channel, once");
    assert!(client.notifications().is_none());
    client.set_logging_level("info").await.expect("logging");
    let done = client.call_tool("slow", json!({"steps": 2})).await.expect("slow");
    assert_eq!(text(&done.content[0].kind), r#"{"done":2}"#);
    let mut seen = Vec::new();
    while let Ok(notification) = notifications.try_recv() {
        seen.push(notification);
    }
    let progress: Vec<_> =
        seen.iter().filter(|n| n.method == Method::Progress).map(|n| n.params["progress"].clone()).collect();
    assert_eq!(progress, [json!(1), json!(2)], "{seen:?}");
    assert!(seen.iter().any(|n| n.method == Method::LogMessage), "{seen:?}");
}

/// Gives up on a call of `sleepy` (which sleeps until cancelled): the client stays usable.
async fn a_request_given_up_leaves_the_client_usable(client: &Client) {
    let gave_up = tokio::time::timeout(Duration::from_millis(200), client.call_tool("sleepy", json!({}))).await;
    assert!(gave_up.is_err(), "sleepy sleeps until cancelled");
    client.ping().await.expect("the client still answers");
}

/// The whole scenario on a client that agreed on `version`: every request, progress and
/// log notifications, a request given up.
pub(crate) async fn converse(client: &Client, version: Version) {
    exercise(client, version).await;
    progress_reaches_the_channel(client).await;
    a_request_given_up_leaves_the_client_usable(client).await;
}

/// Watches the tool list and `test://info`, calls the test registry's `touch`, sees both
/// changes, and stops watching.
pub(crate) async fn sees_touch(client: &Client) {
    let version = client.terms().version;
    let interest = Interest { tools: true, resource_uris: vec!["test://info".into()], ..Interest::default() };
    let mut changes = client.watch(interest).await.expect("watching");
    client.call_tool("touch", json!({})).await.expect("touch");
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let change = tokio::time::timeout(Duration::from_secs(5), changes.next()).await;
        seen.push(change.expect("a change in time").expect("the watch goes on"));
    }
    assert!(seen.contains(&Change::Tools), "{version}: {seen:?}");
    assert!(seen.contains(&Change::Resource { uri: "test://info".into() }), "{version}: {seen:?}");
    changes.stop().await.expect("stops watching");
}
