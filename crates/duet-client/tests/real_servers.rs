//! The client against servers it did not grow up with, installed pinned by
//! scripts/real-servers.sh: `@modelcontextprotocol/server-everything` over stdio and
//! Streamable HTTP, `@modelcontextprotocol/server-filesystem` over stdio (npm, in
//! tests/interop-ts), a server on the Python SDK `mcp` 2.3.0 (tests/fixtures/python_server.py)
//! over stdio and Streamable HTTP in both eras, and rmcp 3.11's echo server (the benchmark's
//! peer, bench/peers/rmcp-echo) over both in both eras: listings, a call, a read, a prompt,
//! a completion, progress, in whichever era the server speaks; and an elicitation and a
//! sampling request answered by the caller's handlers (server-everything's, in the handshake
//! era; the Python SDK's in both: mid-call requests, and 2026-07-28's `input_required`); a
//! watched resource's update, a task polled to its end and one cancelled (server-everything's
//! 2025-11-25 tasks); and a stream that breaks off resumed (server-everything's Streamable
//! HTTP keeps its events).
//!
//! The script says where it installed them: `DUET_REAL_SERVERS_NODE_MODULES` (the npm
//! packages and their Node), `DUET_REAL_SERVERS_PYTHON` (the venv's Python with `mcp`), and
//! `DUET_REAL_SERVERS_RMCP_ECHO` (the built peer). A test whose variable is not set says so
//! and passes without running; test.sh runs them all through the script.

use duet_client::types::TaskStatus;
use duet_client::types::{ContentKind, ResourceBody};
use duet_client::{
    Change, Client, Elicitation, Elicited, Ended, Handlers, HttpTransport, Interest, Negotiate, Options, Started,
    StdioTransport, Version,
};
use duet_wire::method::Method;
use duet_wire::params::{CompleteParams, CompletionArgument, CompletionReference};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// How long an HTTP server may take to listen.
const STARTUP: Duration = Duration::from_secs(30);

/// The path variable `name` holds, or `None` after saying the test is skipped.
fn installed(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os(name).map(PathBuf::from);
    if path.is_none() {
        eprintln!("skipped: {name} is not set (scripts/real-servers.sh installs the servers and sets it)");
    }
    path
}

/// A command of `program` and `args`, for a stdio transport.
fn command(program: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    command
}

/// Node and the entry point of npm package `package` under `node_modules`.
fn node_package(node_modules: &Path, package: &str) -> (PathBuf, String) {
    let entry = node_modules.join("@modelcontextprotocol").join(package).join("dist/index.js");
    (node_modules.join(".bin/node"), entry.display().to_string())
}

/// The Python SDK fixture server.
fn python_fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python_server.py").display().to_string()
}

/// A loopback port free a moment ago, for a server that cannot pick its own and say which.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

/// A server listening on HTTP, killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    /// Starts `program` with `args` (and `env`), and waits until `port` takes connections.
    fn start(program: &Path, args: &[&str], env: &[(&str, String)], port: u16) -> HttpServer {
        let child = std::process::Command::new(program)
            .args(args)
            .envs(env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{} starts: {e}", program.display()));
        let mut server = HttpServer { child, url: format!("http://127.0.0.1:{port}/mcp") };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                server.child.try_wait().expect("waitable").is_none(),
                "{} ended before listening",
                program.display()
            );
            assert!(started.elapsed() < STARTUP, "{} does not listen on {port}", program.display());
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    async fn connect(&self, negotiate: Negotiate) -> Client {
        let transport = HttpTransport::new(&self.url).expect("a URL");
        Client::connect_with(transport, negotiate, options()).await.expect("connects over HTTP")
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Tool calls ask for progress; the caller's handlers answer what the server asks.
fn options() -> Options {
    Options { progress: true, handlers: handlers(), ..Options::default() }
}

/// The user's name is Ada (whatever the form asks, the name being its one required field),
/// and the model says back what it was asked, as `sampled: PROMPT`.
fn handlers() -> Handlers {
    Handlers::new()
        .on_elicitation(|_: Elicitation| async {
            Ok(Elicited::Accept(Map::from_iter([("name".into(), json!("Ada"))])))
        })
        .on_sampling(|params: Map<String, Value>| async move {
            let prompt = params["messages"][0]["content"]["text"].as_str().unwrap_or_default().to_owned();
            let answer = json!({
                "role": "assistant",
                "content": {"type": "text", "text": format!("sampled: {prompt}")},
                "model": "echo-model",
                "stopReason": "endTurn",
            });
            Ok(answer.as_object().cloned().unwrap_or_default())
        })
}

async fn spawned(command: tokio::process::Command, negotiate: Negotiate) -> Client {
    let transport = StdioTransport::spawn(command).expect("the server spawns");
    Client::connect_with(transport, negotiate, options()).await.expect("connects over stdio")
}

fn text(kind: &ContentKind) -> &str {
    match kind {
        ContentKind::Text { text } => text,
        other => panic!("not text: {other:?}"),
    }
}

fn completion(reference: CompletionReference, name: &str, value: &str) -> CompleteParams {
    CompleteParams {
        reference,
        argument: CompletionArgument { name: name.into(), value: Some(value.into()) },
        context: None,
    }
}

/// Calls server-everything's long operation of two steps, taking `seconds`; the progress
/// the client got.
async fn long_operation(client: &Client, seconds: u64) -> Vec<Value> {
    let mut notifications = client.notifications().expect("the channel");
    let long = client.call_tool("trigger-long-running-operation", json!({"duration": seconds, "steps": 2})).await;
    assert!(!long.expect("the long operation").is_error);
    let mut progress = Vec::new();
    while let Ok(notification) = notifications.try_recv() {
        if notification.method == Method::Progress {
            progress.push(notification.params["progress"].clone());
        }
    }
    progress
}

/// What server-everything serves, whatever its transport: every kind of request, and a
/// long call's progress on the notification channel.
async fn everything(client: Client) {
    // Its SDK (TypeScript 1.x) speaks the handshake era only: the client fell back.
    assert_eq!(client.terms().version, Version::V2025_11_25);
    let tools = client.list_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    let echoed = client.call_tool("echo", json!({"message": "hé"})).await.expect("echo");
    assert_eq!(text(&echoed.content[0].kind), "Echo: hé");

    let resources = client.list_resources().await.expect("resources/list");
    assert!(resources.iter().any(|r| r.uri.starts_with("demo://resource/static/")), "{resources:?}");
    let templates = client.list_resource_templates().await.expect("resources/templates/list");
    assert!(templates.iter().any(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}"));
    let read = client.read_resource("demo://resource/dynamic/text/1").await.expect("resources/read");
    assert!(matches!(&read[0].body, ResourceBody::Text(t) if t.starts_with("Resource 1:")), "{read:?}");

    let prompts = client.list_prompts().await.expect("prompts/list");
    assert!(prompts.iter().any(|p| p.name == "completable-prompt"), "{prompts:?}");
    let prompt = client.get_prompt("args-prompt", BTreeMap::from([("city".into(), "Lyon".into())])).await;
    assert!(text(&prompt.expect("prompts/get").messages[0].content.kind).contains("Lyon"));
    let reference = CompletionReference::Prompt { name: "completable-prompt".into() };
    let completed = client.complete(completion(reference, "department", "E")).await.expect("completion/complete");
    assert_eq!(completed.values, ["Engineering"]);

    assert_eq!(long_operation(&client, 1).await, [json!(1), json!(2)]);

    // Its tools that ask the client, there because the client declared the handlers.
    let elicited = client.call_tool("trigger-elicitation-request", json!({})).await.expect("an elicitation");
    let said = text(&elicited.content[1].kind);
    assert!(said.contains("- Name: Ada") && said.contains("- Favorite Integer: 42"), "the defaults filled in: {said}");
    let sampled = client.call_tool("trigger-sampling-request", json!({"prompt": "hi"})).await.expect("a sampling");
    let said = text(&sampled.content[0].kind);
    assert!(said.contains("sampled: Resource trigger-sampling-request context: hi"), "{said}");

    // A watch of a resource it updates every 5 s once asked to.
    let watched = resources.iter().find(|r| r.uri.starts_with("demo://resource/static/")).expect("a static resource");
    let interest = Interest { resource_uris: vec![watched.uri.clone()], ..Interest::default() };
    let mut changes = client.watch(interest).await.expect("resources/subscribe");
    client.call_tool("toggle-subscriber-updates", json!({})).await.expect("updates started");
    let change = tokio::time::timeout(Duration::from_secs(15), changes.next()).await.expect("an update in time");
    assert_eq!(change, Some(Change::Resource { uri: watched.uri.clone() }));
    changes.stop().await.expect("resources/unsubscribe");
    client.call_tool("toggle-subscriber-updates", json!({})).await.expect("updates stopped");

    // Its research tool runs as a 2025-11-25 task: one polled to its end, one cancelled.
    let research = |topic: &str| client.call_tool_as_task("simulate-research-query", json!({"topic": topic}));
    let Started::Task(task) = research("tides").await.expect("a task") else { panic!("not run as a task") };
    match client.wait_task(task).await.expect("the task ends") {
        Ended::Completed(result) => assert!(!result.is_error && text(&result.content[0].kind).contains("tides")),
        other => panic!("the research did not complete: {other:?}"),
    }
    let Started::Task(task) = research("moons").await.expect("a task") else { panic!("not run as a task") };
    client.cancel_task(&task.task_id).await.expect("tasks/cancel");
    assert_eq!(client.get_task(&task.task_id).await.expect("tasks/get").status, TaskStatus::Cancelled);
    client.close().await;
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let Some(node_modules) = installed("DUET_REAL_SERVERS_NODE_MODULES") else { return };
    let (node, entry) = node_package(&node_modules, "server-everything");
    everything(spawned(command(&node, &[&entry, "stdio"]), Negotiate::Auto).await).await;
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    let Some(node_modules) = installed("DUET_REAL_SERVERS_NODE_MODULES") else { return };
    let (node, entry) = node_package(&node_modules, "server-everything");
    let port = free_port();
    let server = HttpServer::start(&node, &[&entry, "streamableHttp"], &[("PORT", port.to_string())], port);
    everything(server.connect(Negotiate::Auto).await).await;
}

/// A proxy to a server that breaks off, once, the first of its answers that carries a
/// progress notification, just after passing that notification on (as a network that
/// fails mid-stream would); every other byte passes untouched.
struct BreakingProxy {
    port: u16,
    /// Whether it broke an answer off.
    broken: Arc<AtomicBool>,
    /// Whether a request named the last event its client saw (`Last-Event-ID`) since.
    resumed: Arc<AtomicBool>,
}

impl BreakingProxy {
    async fn start(upstream: u16) -> BreakingProxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let port = listener.local_addr().expect("an address").port();
        let proxy = BreakingProxy { port, broken: Arc::default(), resumed: Arc::default() };
        let (broken, resumed) = (proxy.broken.clone(), proxy.resumed.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await.expect("the server");
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                let (seen_break, resumed) = (broken.clone(), resumed.clone());
                let requests = tokio::spawn(pipe(client_read, server_write, move |request| {
                    if seen_break.load(Ordering::SeqCst) && request.to_ascii_lowercase().contains("last-event-id:") {
                        resumed.store(true, Ordering::SeqCst);
                    }
                    true
                }));
                let broken = broken.clone();
                tokio::spawn(async move {
                    pipe(server_read, client_write, |answer| {
                        !answer.contains("notifications/progress") || broken.swap(true, Ordering::SeqCst)
                    })
                    .await;
                    requests.abort();
                });
            }
        });
        proxy
    }
}

/// Copies `from` to `to` until either ends, or `go_on`, shown each chunk once it is copied,
/// says to stop.
async fn pipe(mut from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin, mut go_on: impl FnMut(&str) -> bool) {
    let mut chunk = vec![0; 64 * 1024];
    while let Ok(read @ 1..) = from.read(&mut chunk).await {
        if to.write_all(&chunk[..read]).await.is_err() || !go_on(&String::from_utf8_lossy(&chunk[..read])) {
            return;
        }
    }
}

/// server-everything's Streamable HTTP keeps its events (an event store): a call's stream
/// that breaks off after its first progress notification is resumed with a GET from the
/// last event seen, which brings the second and the answer, each once.
#[tokio::test]
async fn server_everything_resumes_a_dropped_stream() {
    let Some(node_modules) = installed("DUET_REAL_SERVERS_NODE_MODULES") else { return };
    let (node, entry) = node_package(&node_modules, "server-everything");
    let port = free_port();
    let server = HttpServer::start(&node, &[&entry, "streamableHttp"], &[("PORT", port.to_string())], port);
    let proxy = BreakingProxy::start(port).await;
    let transport = HttpTransport::new(&format!("http://127.0.0.1:{}/mcp", proxy.port)).expect("a URL");
    let client = Client::connect_with(transport, Negotiate::Auto, options()).await.expect("connects");
    assert_eq!(long_operation(&client, 2).await, [json!(1), json!(2)], "each progress once");
    assert!(proxy.broken.load(Ordering::SeqCst), "the call's stream was broken off");
    assert!(proxy.resumed.load(Ordering::SeqCst), "and resumed from its last event");
    client.close().await;
    drop(server);
}

/// server-filesystem's newest release is on the TypeScript SDK 1.x, whose newest revision is
/// 2025-11-25: it negotiates that, and refuses 2026-07-28 pinned.
#[tokio::test]
async fn server_filesystem_over_stdio() {
    let Some(node_modules) = installed("DUET_REAL_SERVERS_NODE_MODULES") else { return };
    let (node, entry) = node_package(&node_modules, "server-filesystem");
    let dir = std::env::temp_dir().join(format!("duet-real-servers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let dir = dir.canonicalize().expect("canonical");
    std::fs::write(dir.join("note.txt"), "line one\nline two\n").expect("a file");
    let root = dir.display().to_string();

    let client = spawned(command(&node, &[&entry, &root]), Negotiate::Auto).await;
    assert_eq!(client.terms().version, Version::V2025_11_25);
    let tools = client.list_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "read_text_file"), "{tools:?}");
    let file = dir.join("note.txt").display().to_string();
    let read = client.call_tool("read_text_file", json!({"path": file, "head": 1})).await.expect("a read");
    assert_eq!(text(&read.content[0].kind).trim_end(), "line one");
    let listed = client.call_tool("list_directory", json!({"path": root})).await.expect("a listing");
    assert!(text(&listed.content[0].kind).contains("[FILE] note.txt"), "{listed:?}");
    let outside = client.call_tool("read_text_file", json!({"path": "/etc/hostname"})).await.expect("answers");
    assert!(outside.is_error, "{outside:?}");
    client.close().await;

    let pinned = StdioTransport::spawn(command(&node, &[&entry, &root])).expect("spawns");
    let refused = Client::connect(pinned, Negotiate::Pin(Version::V2026_07_28)).await;
    assert!(refused.is_err(), "server-filesystem does not speak 2026-07-28");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What the Python fixture serves, in the era the client pinned.
async fn python(client: Client, version: Version) {
    assert_eq!(client.terms().version, version);
    let tools = client.list_tools().await.expect("tools/list");
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["add", "greet", "haiku"]);
    let added = client.call_tool("add", json!({"a": 2, "b": 3})).await.expect("add");
    assert_eq!(added.structured_content, Some(json!({"result": 5})));
    let resources = client.list_resources().await.expect("resources/list");
    assert_eq!(resources.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(), ["note://greeting"]);
    let templates = client.list_resource_templates().await.expect("resources/templates/list");
    assert_eq!(templates[0].uri_template, "note://items/{name}");
    let read = client.read_resource("note://greeting").await.expect("resources/read");
    assert_eq!(read[0].body, ResourceBody::Text("hello from python".into()));
    let item = client.read_resource("note://items/pear").await.expect("a template's resource");
    assert_eq!(item[0].body, ResourceBody::Text("item pear".into()));
    let prompt = client.get_prompt("review", BTreeMap::from([("language".into(), "rust".into())])).await;
    assert_eq!(text(&prompt.expect("prompts/get").messages[0].content.kind), "Review this rust code.");
    let reference = CompletionReference::Prompt { name: "review".into() };
    let completed = client.complete(completion(reference, "language", "r")).await.expect("completion/complete");
    assert_eq!(completed.values, ["rust", "ruby"]);
    let greeted = client.call_tool("greet", json!({})).await.expect("an elicitation answered");
    assert_eq!(greeted.structured_content, Some(json!({"result": "Hello, Ada!"})));
    let haiku = client.call_tool("haiku", json!({"topic": "rain"})).await.expect("a sampling answered");
    assert_eq!(haiku.structured_content, Some(json!({"result": "sampled: A haiku about rain"})));
    client.close().await;
}

#[tokio::test]
async fn python_sdk_over_stdio_in_both_eras() {
    let Some(python_bin) = installed("DUET_REAL_SERVERS_PYTHON") else { return };
    let fixture = python_fixture();
    for version in [Version::V2026_07_28, Version::V2025_11_25] {
        let client = spawned(command(&python_bin, &[&fixture, "stdio"]), Negotiate::Pin(version)).await;
        python(client, version).await;
    }
    let client = spawned(command(&python_bin, &[&fixture, "stdio"]), Negotiate::Auto).await;
    python(client, Version::V2026_07_28).await;
}

#[tokio::test]
async fn python_sdk_over_streamable_http_in_both_eras() {
    let Some(python_bin) = installed("DUET_REAL_SERVERS_PYTHON") else { return };
    let port = free_port();
    let server = HttpServer::start(&python_bin, &[&python_fixture(), "http", &port.to_string()], &[], port);
    for version in [Version::V2026_07_28, Version::V2025_11_25] {
        python(server.connect(Negotiate::Pin(version)).await, version).await;
    }
    python(server.connect(Negotiate::Auto).await, Version::V2026_07_28).await;
}

/// rmcp's echo server (tools only), in the era the client pinned.
async fn rmcp_echo(client: Client, version: Version) {
    assert_eq!(client.terms().version, version);
    let tools = client.list_tools().await.expect("tools/list");
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["echo"]);
    let echoed = client.call_tool("echo", json!({"text": "hé", "times": 2})).await.expect("echo");
    assert_eq!(text(&echoed.content[0].kind), "héhé");
    client.close().await;
}

#[tokio::test]
async fn rmcp_over_stdio_and_streamable_http_in_both_eras() {
    let Some(rmcp) = installed("DUET_REAL_SERVERS_RMCP_ECHO") else { return };
    let port = free_port();
    let server = HttpServer::start(&rmcp, &["http-default", "--port", &port.to_string()], &[], port);
    for version in [Version::V2026_07_28, Version::V2025_11_25] {
        rmcp_echo(spawned(command(&rmcp, &["stdio"]), Negotiate::Pin(version)).await, version).await;
        rmcp_echo(server.connect(Negotiate::Pin(version)).await, version).await;
    }
    rmcp_echo(spawned(command(&rmcp, &["stdio"]), Negotiate::Auto).await, Version::V2026_07_28).await;
}
