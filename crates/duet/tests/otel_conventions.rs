//! The request spans, as the OpenTelemetry semantic conventions for MCP describe them: named
//! `{mcp.method.name} {target}`, kind server, with the method, protocol version, JSON-RPC id,
//! tool or prompt, resource, session, transport and error attributes; the caller's baggage
//! reaches the handler. Read from an in-memory exporter (the `otel` feature).

mod otel_support;
mod stdio_support;

use duet::layer::{
    Content, HandlerError, Layer, PromptMessage, PromptResult, PromptSpec, Registry, ResourceContents, ResourceSpec,
    ServerInfo, ToolResult, ToolSpec,
};
use duet::protocol::Server;
use duet::transport::http::{HttpConfig, HttpServer};
use opentelemetry::baggage::BaggageExt;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt};
use opentelemetry::{KeyValue, Value as OtelValue};
use opentelemetry_sdk::trace::SpanData;
use otel_support::{SpanRecorder, traced_call};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn registry() -> Registry {
    let mut registry = Registry::new(ServerInfo::new("conventions-test", "1"));
    registry
        .tool(ToolSpec::new("echo", |_, _| async { ToolResult::text("ok") }))
        .expect("tool")
        .tool(ToolSpec::new("fails", |_, _| async { ToolResult::error("it failed") }))
        .expect("tool")
        .tool(ToolSpec::new("baggage", |_, _| async {
            let cx = opentelemetry::Context::current();
            ToolResult::text(cx.baggage().get("tenant").map(|v| v.to_string()).unwrap_or_default())
        }))
        .expect("tool")
        .tool(ToolSpec::new("annotated", |_, _| async {
            // A handler adds to the request's span through the OpenTelemetry API.
            let cx = opentelemetry::Context::current();
            cx.span().set_attribute(KeyValue::new("handler.note", "seen"));
            cx.span().add_event("checked", vec![]);
            ToolResult::text("ok")
        }))
        .expect("tool")
        .resource(ResourceSpec::new("mem://note", "note", |uri: String, _| async move {
            Ok::<_, HandlerError>(vec![ResourceContents::text(uri, "text/plain", "note")])
        }))
        .expect("resource")
        .prompt(PromptSpec::new("greet", |_: BTreeMap<String, String>, _| async {
            Ok::<_, HandlerError>(PromptResult::new(vec![PromptMessage::user(Content::text("hello"))]))
        }))
        .expect("prompt");
    registry
}

fn server(recorder: &SpanRecorder) -> Server {
    let layer: Arc<dyn Layer> = Arc::new(registry());
    Server::new(layer, recorder.options())
}

/// A 2026-07-28 request with the caller's trace in `_meta`.
fn modern(id: u64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({"traceparent": TRACEPARENT, "baggage": "tenant=acme",
                             "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv: &&KeyValue| kv.key.as_str() == key).map(|kv| match &kv.value {
        OtelValue::String(s) => s.to_string(),
        other => other.to_string(),
    })
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
        panic!("no span named {name:?}: {:?}", spans.iter().map(|s| (&s.name, &s.attributes)).collect::<Vec<_>>())
    })
}

#[tokio::test]
async fn stdio_spans_carry_the_conventions_attributes() {
    let recorder = SpanRecorder::install();
    let requests = [
        traced_call("echo", TRACEPARENT),
        modern(2, "tools/call", json!({"name": "fails", "arguments": {}})),
        modern(3, "tools/call", json!({"name": "no-such-tool", "arguments": {}})),
        modern(4, "resources/read", json!({"uri": "mem://note"})),
        modern(5, "prompts/get", json!({"name": "greet"})),
        modern(6, "tools/call", json!({"name": "baggage", "arguments": {}})),
        modern(7, &format!("made/up/{}", "x".repeat(500)), json!({})),
        modern(8, "tools/call", json!({"name": "annotated", "arguments": {}})),
    ];
    let answers = stdio_support::serve_lines(server(&recorder), &requests).await;
    assert_eq!(answers.len(), requests.len(), "{answers:?}");
    let baggage = answers.iter().find(|a| a["id"] == 6).expect("answer 6");
    assert_eq!(baggage["result"]["content"][0]["text"], "acme", "the handler sees the caller's baggage: {baggage}");

    let spans = recorder.spans();
    let echo = named(&spans, "tools/call echo");
    assert_eq!(echo.span_kind, SpanKind::Server);
    assert_eq!(echo.status, Status::Unset);
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "echo"),
        ("gen_ai.operation.name", "execute_tool"),
        ("mcp.protocol.version", "2026-07-28"),
        ("jsonrpc.request.id", "1"),
        ("network.transport", "pipe"),
    ] {
        assert_eq!(attribute(echo, key).as_deref(), Some(value), "{key} of {:?}", echo.attributes);
    }
    assert_eq!(attribute(echo, "error.type"), None);
    assert_eq!(attribute(echo, "mcp.session.id"), None, "stdio has no session id");

    let fails = named(&spans, "tools/call fails");
    assert_eq!(attribute(fails, "error.type").as_deref(), Some("tool_error"));
    assert_eq!(attribute(fails, "rpc.response.status_code"), None, "a tool error is a result, not a JSON-RPC error");
    assert!(matches!(fails.status, Status::Error { .. }), "{:?}", fails.status);

    // An unknown name is no target: the span is named by its method alone.
    let unknown = spans.iter().find(|s| attribute(s, "jsonrpc.request.id").as_deref() == Some("3")).expect("span 3");
    assert_eq!(unknown.name, "tools/call");
    assert_eq!(attribute(unknown, "gen_ai.tool.name"), None);
    assert_eq!(attribute(unknown, "error.type").as_deref(), Some("-32602"));
    assert_eq!(attribute(unknown, "rpc.response.status_code").as_deref(), Some("-32602"));
    assert!(matches!(unknown.status, Status::Error { .. }));

    // A method nobody knows: a bounded name, and only the start of what the client sent.
    let made_up = spans.iter().find(|s| attribute(s, "jsonrpc.request.id").as_deref() == Some("7")).expect("span 7");
    assert_eq!(made_up.name, "_OTHER");
    let method = attribute(made_up, "mcp.method.name").expect("the method attribute");
    assert!(method.starts_with("made/up/xxx") && method.len() == 64, "{method}");

    let annotated = named(&spans, "tools/call annotated");
    assert_eq!(attribute(annotated, "handler.note").as_deref(), Some("seen"));
    assert_eq!(attribute(annotated, "gen_ai.tool.name").as_deref(), Some("annotated"), "duet's own attributes too");
    assert_eq!(annotated.events.iter().map(|e| e.name.as_ref()).collect::<Vec<_>>(), ["checked"]);
    assert_eq!(spans.len(), requests.len(), "one span a request, each ended once");

    let read = named(&spans, "resources/read");
    assert_eq!(attribute(read, "mcp.resource.uri").as_deref(), Some("mem://note"));
    let prompt = named(&spans, "prompts/get greet");
    assert_eq!(attribute(prompt, "gen_ai.prompt.name").as_deref(), Some("greet"));
    assert_eq!(attribute(prompt, "gen_ai.operation.name"), None);
}

async fn post(client: &reqwest::Client, url: &str, session: Option<&str>, body: Value) -> reqwest::Response {
    let mut request = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.send().await.expect("answer")
}

#[tokio::test]
async fn handshake_sessions_name_their_session() {
    let recorder = SpanRecorder::install();
    let config = HttpConfig { port: 0, json_response: true, ..HttpConfig::default() };
    let http = HttpServer::bind(server(&recorder), config).await.expect("bind");
    let (client, url) = (reqwest::Client::new(), http.url());

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let opened = post(&client, &url, None, init).await;
    let session = opened.headers()["mcp-session-id"].to_str().expect("ascii").to_owned();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {}}});
    let answer: Value = post(&client, &url, Some(&session), call).await.json().await.expect("JSON");
    assert_eq!(answer["result"]["content"][0]["text"], "ok", "{answer}");
    http.shutdown(Duration::from_secs(1)).await;

    let spans = recorder.spans();
    let initialize = named(&spans, "initialize");
    assert_eq!(attribute(initialize, "mcp.session.id").as_deref(), Some(session.as_str()));
    let echo = named(&spans, "tools/call echo");
    for (key, value) in [
        ("mcp.session.id", session.as_str()),
        ("mcp.protocol.version", "2025-11-25"),
        ("network.transport", "tcp"),
        ("jsonrpc.request.id", "2"),
    ] {
        assert_eq!(attribute(echo, key).as_deref(), Some(value), "{key} of {:?}", echo.attributes);
    }
}
