//! `layer::local`: handlers whose futures are not `Send` (they keep an `Rc<RefCell<…>>`
//! across awaits) registered as every kind of spec, served by the engine in both eras, over
//! stdio and over HTTP on a multi-threaded runtime, inside the request's trace; a cancelled
//! or timed-out call drops the handler's future; a panicking one is answered exactly like a
//! panicking `Send` handler.

#[path = "engine/client.rs"]
#[allow(dead_code)]
mod client;
mod otel_support;
mod stdio_support;

use client::{Client, bounded, eventually, texts};
use duet::layer::{
    Content, HandlerError, Json, Principal, PromptMessage, PromptResult, PromptSpec, Registry, RequestCx,
    ResourceContents, ResourceSpec, ServerInfo, TemplateSpec, ToolResult, ToolSpec, local,
};
use duet::protocol::{Server, ServerOptions};
use duet::transport::http::{HttpConfig, HttpServer};
use duet::wire::Version;
use futures::FutureExt;
use opentelemetry::trace::TraceContextExt;
use otel_support::{SpanRecorder, traced_call};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Two terms, added by a local handler.
#[derive(Deserialize, schemars::JsonSchema)]
struct Terms {
    a: i64,
    b: i64,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

/// How many `stuck` calls started, and how many of their futures were dropped.
#[derive(Clone, Default)]
struct Probe {
    started: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
}

/// Counts a drop of the future that owns it.
struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Appends `words` to a list shared, through an `Rc<RefCell<…>>`, with a local task, awaiting
/// between words: a future that is neither `Send` nor `Sync`.
async fn collect(words: Vec<String>) -> String {
    let list = Rc::new(RefCell::new(Vec::new()));
    let helper = tokio::task::spawn_local({
        let list = list.clone();
        async move { list.borrow_mut().push("<".to_string()) }
    });
    helper.await.expect("the local helper task");
    for word in words {
        tokio::time::sleep(Duration::from_millis(1)).await;
        list.borrow_mut().push(word);
    }
    list.borrow_mut().push(">".into());
    list.borrow().join(" ")
}

/// Panics unless the arguments say `calm`.
fn explode(args: &Map<String, Value>) -> ToolResult {
    if args.get("calm") != Some(&Value::Bool(true)) {
        panic!("explode was not calm");
    }
    ToolResult::text("calm")
}

/// A tool that holds an `Rc` and never finishes; `probe` sees it start and its future dropped.
fn stuck(name: &str, probe: &Probe) -> ToolSpec {
    let probe = probe.clone();
    ToolSpec::new(
        name,
        local(move |_: Map<String, Value>, _| {
            let probe = probe.clone();
            async move {
                let _dropped = Dropped(probe.dropped.clone());
                let _local = Rc::new(());
                probe.started.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<ToolResult>().await
            }
        }),
    )
}

fn registry(probe: &Probe) -> Registry {
    let mut registry = Registry::new(ServerInfo::new("local", "1"));
    let words = json!({"type": "object", "properties": {"words": {"type": "array", "items": {"type": "string"}}}});
    registry
        .tool(
            ToolSpec::new(
                "words",
                local(|args: Map<String, Value>, _| async move {
                    let words = serde_json::from_value(args["words"].clone())?;
                    Ok::<_, HandlerError>(ToolResult::text(collect(words).await))
                }),
            )
            .input_schema(words),
        )
        .unwrap()
        .tool(ToolSpec::typed(
            "add",
            local(|input: Terms, _| async move {
                let shared = Rc::new(input.a);
                tokio::task::yield_now().await;
                Json(Sum { sum: *shared + input.b })
            }),
        ))
        .unwrap()
        .resource(ResourceSpec::new(
            "local://note",
            "note",
            local(|uri: String, _| async move {
                Ok::<_, HandlerError>(vec![ResourceContents::text(
                    uri,
                    "text/plain",
                    collect(vec!["note".into()]).await,
                )])
            }),
        ))
        .unwrap()
        .template(TemplateSpec::new(
            "local://items/{id}",
            "item",
            local(|(uri, vars): (String, BTreeMap<String, String>), _| async move {
                let text = collect(vec![vars["id"].clone()]).await;
                Ok::<_, HandlerError>(vec![ResourceContents::text(uri, "text/plain", text)])
            }),
        ))
        .unwrap()
        .prompt(
            PromptSpec::new(
                "greet",
                local(|args: BTreeMap<String, String>, _| async move {
                    let text = collect(vec!["hello".into(), args["name"].clone()]).await;
                    Ok::<_, HandlerError>(PromptResult::new(vec![PromptMessage::user(Content::text(text))]))
                }),
            )
            .argument("name", "Who to greet", true),
        )
        .unwrap();
    registry
        .tool(stuck("stuck", probe))
        .unwrap()
        .tool(stuck("stuck_briefly", probe).timeout(Duration::from_millis(100)))
        .unwrap()
        .tool(ToolSpec::new(
            "traced",
            local(|_, _| async {
                let backend = Rc::new(tracing::info_span!("backend.call"));
                tokio::task::yield_now().await;
                let trace_id = backend.in_scope(|| tracing::Span::current().context().span().span_context().trace_id());
                ToolResult::text(trace_id.to_string())
            }),
        ))
        .unwrap()
        .tool(ToolSpec::new("explode", |args, _| async move { explode(&args) }))
        .unwrap()
        .tool(ToolSpec::new(
            "explode_local",
            local(|args, _| async move {
                let args = Rc::new(args);
                tokio::task::yield_now().await;
                explode(&args)
            }),
        ))
        .unwrap();
    registry
}

fn server(probe: &Probe) -> Server {
    server_with(probe, ServerOptions::default())
}

fn server_with(probe: &Probe, options: ServerOptions) -> Server {
    Server::new(Arc::new(registry(probe)), options)
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// What each spec kind answers, checked through `client`.
/// A client of `server` in each era, the handshake one initialized.
async fn clients_of_both_eras(server: &Server) -> [Client; 2] {
    let handshake = Client::connect(server, Version::V2025_06_18);
    handshake.initialize(Version::V2025_06_18.as_str()).await;
    [handshake, Client::connect(server, Version::V2026_07_28)]
}

async fn every_kind_answers(client: &Client) {
    let words = client.request("tools/call", call("words", json!({"words": ["a", "b"]}))).await;
    assert_eq!(texts(&words), ["< a b >"], "{}", client.version);
    let add = client.request("tools/call", call("add", json!({"a": 2, "b": 40}))).await;
    assert_eq!(add["structuredContent"], json!({"sum": 42}));
    let bad = client.request("tools/call", call("add", json!({"a": "two", "b": 40}))).await;
    assert_eq!(bad["isError"], true, "typed arguments are still checked: {bad}");
    let note = client.request("resources/read", json!({"uri": "local://note"})).await;
    assert_eq!(note["contents"][0]["text"], "< note >");
    let item = client.request("resources/read", json!({"uri": "local://items/7"})).await;
    assert_eq!(item["contents"][0], json!({"uri": "local://items/7", "mimeType": "text/plain", "text": "< 7 >"}));
    let prompt = client.request("prompts/get", json!({"name": "greet", "arguments": {"name": "Ada"}})).await;
    assert_eq!(prompt["messages"][0]["content"]["text"], "< hello Ada >");
}

#[tokio::test]
async fn every_spec_kind_serves_a_local_handler_in_both_eras() {
    let server = server(&Probe::default());
    for client in clients_of_both_eras(&server).await {
        every_kind_answers(&client).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn local_calls_run_side_by_side_on_a_multi_threaded_runtime() {
    let server = server(&Probe::default());
    let client = Arc::new(Client::connect(&server, Version::V2026_07_28));
    let calls = (0..32).map(|i| {
        let client = client.clone();
        tokio::spawn(async move {
            let words = client.request("tools/call", call("words", json!({"words": [i.to_string()]}))).await;
            assert_eq!(texts(&words), [format!("< {i} >")]);
        })
    });
    for call in calls.collect::<Vec<_>>() {
        bounded("a local call", call).await.expect("the call task");
    }
}

#[tokio::test]
async fn a_cancelled_local_call_drops_its_future_and_gets_no_answer() {
    let probe = Probe::default();
    let client = Arc::new(Client::connect(&server(&probe), Version::V2025_06_18));
    client.initialize("2025-06-18").await;
    let message = client.message_with_id(json!("stuck-1"), "tools/call", call("stuck", json!({})));
    let task = tokio::spawn({
        let client = client.clone();
        async move { client.send(message).await }
    });
    eventually("the stuck call to start", || probe.started.load(Ordering::SeqCst) == 1).await;
    assert_eq!(probe.dropped.load(Ordering::SeqCst), 0);
    client.notify("notifications/cancelled", json!({"requestId": "stuck-1", "reason": "test"})).await;
    assert_eq!(bounded("the cancelled call", task).await.unwrap(), None);
    eventually("the stuck future to be dropped", || probe.dropped.load(Ordering::SeqCst) == 1).await;
    assert_eq!(client.session.inflight(), 0);
    assert_eq!(client.request("ping", json!({})).await, json!({}));
}

#[tokio::test]
async fn a_local_call_that_times_out_is_dropped() {
    let probe = Probe::default();
    let client = Client::connect(&server(&probe), Version::V2026_07_28);
    let result = client.request("tools/call", call("stuck_briefly", json!({}))).await;
    assert_eq!(result["isError"], true);
    assert_eq!(texts(&result), ["Tool stuck_briefly timed out after 0.1 s"]);
    eventually("the timed-out future to be dropped", || probe.dropped.load(Ordering::SeqCst) == 1).await;
    assert_eq!(probe.started.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_panicking_local_handler_is_answered_like_a_panicking_send_handler() {
    let server = server(&Probe::default());
    for client in clients_of_both_eras(&server).await {
        let version = client.version;
        let sent = client.error("tools/call", call("explode", json!({}))).await;
        let local = client.error("tools/call", call("explode_local", json!({}))).await;
        assert_eq!((local.code, local.message.as_str()), (-32603, "Internal error"), "{version}");
        assert_eq!(serde_json::to_value(&local).unwrap(), serde_json::to_value(&sent).unwrap(), "{version}");
        let calm = client.request("tools/call", call("explode_local", json!({"calm": true}))).await;
        assert_eq!(texts(&calm), ["calm"], "{version}: the session lives on");
        every_kind_answers(&client).await;
        assert_eq!(client.session.inflight(), 0);
    }
}

#[tokio::test]
async fn a_local_panic_is_resumed_with_its_own_payload() {
    let handler = local(|code: u32, _| async move {
        let code = Rc::new(code);
        tokio::task::yield_now().await;
        std::panic::panic_any(*code)
    });
    let cx = RequestCx::builder(Principal::local()).build();
    let panic = AssertUnwindSafe(handler(7, cx)).catch_unwind().await.expect_err("the call panics");
    assert_eq!(panic.downcast_ref::<u32>(), Some(&7));
}

/// Serves `requests` over the stdio transport until they are all answered; the answers by id.
async fn serve_stdio(requests: &[Value]) -> Vec<Value> {
    serve_stdio_with(ServerOptions::default(), requests).await
}

async fn serve_stdio_with(options: ServerOptions, requests: &[Value]) -> Vec<Value> {
    let serve = stdio_support::serve_lines(server_with(&Probe::default(), options), requests);
    let mut answers = bounded("serving stdio", serve).await;
    answers.sort_by_key(|a| a["id"].as_i64());
    answers
}

#[tokio::test]
async fn stdio_serves_local_handlers() {
    let requests = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call("words", json!({"words": ["x"]}))}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call("add", json!({"a": 1, "b": 2}))}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call("explode_local", json!({}))}),
    ];
    let answers = serve_stdio(&requests).await;
    assert_eq!(answers.len(), 4, "{answers:?}");
    assert_eq!(texts(&answers[1]["result"]), ["< x >"]);
    assert_eq!(answers[2]["result"]["structuredContent"], json!({"sum": 3}));
    assert_eq!(answers[3]["error"], json!({"code": -32603, "message": "Internal error"}));
}

// A current-thread runtime: the stdio transport's tasks run on the thread whose default
// subscriber the test set, and a local call's thread reports to that subscriber too.
#[tokio::test]
async fn a_local_handler_runs_in_the_request_trace() {
    const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    let recorder = SpanRecorder::install();

    let request = traced_call("traced", &format!("00-{TRACE_ID}-00f067aa0ba902b7-01"));
    let answers = serve_stdio_with(recorder.options(), &[request]).await;
    assert_eq!(texts(&answers[0]["result"]), [TRACE_ID], "{answers:?}");
    let spans = recorder.spans();
    let named = |name: &str| spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no {name} span"));
    let (request, backend) = (named("tools/call traced"), named("backend.call"));
    assert_eq!(backend.parent_span_id, request.span_context.span_id(), "the local call nests under the request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_serves_local_handlers() {
    let http = HttpServer::bind(server(&Probe::default()), HttpConfig { port: 0, ..HttpConfig::default() })
        .await
        .expect("the server binds");
    let client = reqwest::Client::builder().no_proxy().build().expect("a reqwest client");
    let post = |id: i64, name: &str, arguments: Value| {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}});
        let mut params = call(name, arguments);
        params["_meta"] = meta;
        client
            .post(http.url())
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", name)
            .body(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string())
            .send()
    };
    let words: Value =
        bounded("words", post(1, "words", json!({"words": ["y", "z"]}))).await.unwrap().json().await.unwrap();
    assert_eq!(texts(&words["result"]), ["< y z >"], "{words}");
    let add: Value = bounded("add", post(2, "add", json!({"a": 20, "b": 22}))).await.unwrap().json().await.unwrap();
    assert_eq!(add["result"]["structuredContent"], json!({"sum": 42}), "{add}");
    let boom: Value = bounded("explode", post(3, "explode_local", json!({}))).await.unwrap().json().await.unwrap();
    assert_eq!(boom["error"]["code"], -32603, "{boom}");
    bounded("shutting down", http.shutdown(Duration::from_secs(1))).await;
}
