//! W3C trace context over HTTP and stdio: the `traceparent` of a request's `_meta` (or, without one,
//! of the HTTP header) becomes the OpenTelemetry parent of the request's span, so a tool
//! call, and whatever its handler does, is one trace with the caller's. Spans go to an
//! in-memory exporter through `tracing-opentelemetry` (the `otel` feature).

mod otel_support;
mod stdio_support;

use duet::layer::{Layer, Registry, ServerInfo, ToolResult, ToolSpec};
use duet::protocol::Server;
use duet::transport::http::{HttpConfig, HttpServer};
use opentelemetry::trace::{SpanId, TraceContextExt, TraceId};
use opentelemetry_sdk::trace::SpanData;
use otel_support::{SpanRecorder, traced_call};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tracing_opentelemetry::OpenTelemetrySpanExt;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// A tool that reports the trace it runs in and does "backend" work in a child span.
fn registry() -> Registry {
    let mut registry = Registry::new(ServerInfo::new("trace-test", "1"));
    registry
        .tool(ToolSpec::new("traced", |_, _| async {
            let backend = tracing::info_span!("backend.call");
            let _entered = backend.enter();
            let trace_id = tracing::Span::current().context().span().span_context().trace_id();
            ToolResult::text(trace_id.to_string())
        }))
        .expect("tool");
    registry
}

async fn post(url: &str, meta: Value, headers: &[(&str, &str)]) -> Value {
    let mut meta = meta;
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "traced", "arguments": {}, "_meta": meta}});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "traced")
        .json(&body);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    request.send().await.expect("answer").json().await.expect("JSON")
}

fn span<'a>(spans: &'a [SpanData], name: &str, trace: &str) -> &'a SpanData {
    let trace_id = TraceId::from_hex(trace).expect("hex");
    spans.iter().find(|s| s.name == name && s.span_context.trace_id() == trace_id).unwrap_or_else(|| {
        panic!("no {name} span in trace {trace}: {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>())
    })
}

// A current-thread runtime: the server's tasks run on the thread whose default subscriber
// the test set.
#[tokio::test]
async fn a_tool_call_is_one_trace_with_its_caller() {
    let recorder = SpanRecorder::install();

    let layer: Arc<dyn Layer> = Arc::new(registry());
    let config = HttpConfig { port: 0, json_response: true, ..HttpConfig::default() };
    let server = HttpServer::bind(Server::new(layer, recorder.options()), config).await.expect("bind");
    let url = server.url();

    // The trace context of `_meta`, which wins over a header naming another trace.
    let traceparent = format!("00-{TRACE_ID}-{PARENT_ID}-01");
    let other = "00-11111111111111111111111111111111-2222222222222222-01";
    let meta = json!({"traceparent": traceparent, "tracestate": "duet=test"});
    let answer = post(&url, meta, &[("traceparent", other)]).await;
    assert_eq!(answer["result"]["content"][0]["text"], TRACE_ID, "the handler runs in the caller's trace: {answer}");

    // The HTTP header when `_meta` has none.
    let header_trace = "5bf92f3577b34da6a3ce929d0e0e4737";
    let header_parent = format!("00-{header_trace}-1111111111111111-01");
    let answer = post(&url, json!({}), &[("traceparent", &header_parent)]).await;
    assert_eq!(answer["result"]["content"][0]["text"], header_trace, "{answer}");

    // Without any, the request starts a trace of its own.
    let answer = post(&url, json!({}), &[]).await;
    let own = answer["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    assert!(own.len() == 32 && own != TRACE_ID && own != header_trace, "{answer}");

    server.shutdown(Duration::from_secs(1)).await;
    let spans = recorder.spans();
    let request = span(&spans, "tools/call traced", TRACE_ID);
    assert_eq!(request.parent_span_id, SpanId::from_hex(PARENT_ID).expect("hex"), "its parent is the caller's span");
    assert!(request.parent_span_is_remote);
    assert_eq!(request.span_context.trace_state().header(), "duet=test");
    let backend = span(&spans, "backend.call", TRACE_ID);
    assert_eq!(backend.parent_span_id, request.span_context.span_id(), "handler work nests under the request");
    let from_header = span(&spans, "tools/call traced", header_trace);
    assert_eq!(from_header.parent_span_id, SpanId::from_hex("1111111111111111").expect("hex"));
}

/// Serves one `traced` call over stdio, its caller's trace context `traceparent`: the spans
/// the recorder got, once the handler said it ran in the caller's trace.
async fn traced_over_stdio(recorder: &SpanRecorder, traceparent: &str) -> Vec<SpanData> {
    let server = Server::new(Arc::new(registry()), recorder.options());
    let answers = stdio_support::serve_lines(server, &[traced_call("traced", traceparent)]).await;
    let [answer] = &answers[..] else { panic!("not one answer: {answers:?}") };
    assert_eq!(answer["result"]["content"][0]["text"], TRACE_ID, "{answer}");
    recorder.spans()
}

#[tokio::test]
async fn stdio_requests_join_their_callers_trace_too() {
    let recorder = SpanRecorder::install();
    let spans = traced_over_stdio(&recorder, &format!("00-{TRACE_ID}-{PARENT_ID}-01")).await;
    assert_eq!(span(&spans, "tools/call traced", TRACE_ID).parent_span_id, SpanId::from_hex(PARENT_ID).expect("hex"));
}

/// The sampler decides when the request arrives: a trace its caller did not sample makes no
/// span here, and the handler still runs in the caller's trace.
#[tokio::test]
async fn a_trace_the_caller_did_not_sample_is_not_exported() {
    let recorder = SpanRecorder::install();
    let spans = traced_over_stdio(&recorder, &format!("00-{TRACE_ID}-{PARENT_ID}-00")).await;
    assert!(spans.is_empty(), "{:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
}
