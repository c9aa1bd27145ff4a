//! Shared support of the tests that read the spans duet makes: an in-memory OpenTelemetry
//! exporter behind `tracing-opentelemetry`, the default subscriber of the test's thread for as
//! long as the recorder lives (on a current-thread runtime, the server's tasks run there too),
//! and a request that joins a caller's trace.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;

pub struct SpanRecorder {
    // Dropped first: the thread's previous subscriber is back before the exporter goes.
    _default: tracing::subscriber::DefaultGuard,
    provider: SdkTracerProvider,
    exporter: InMemorySpanExporter,
}

impl SpanRecorder {
    pub fn install() -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("duet-test")));
        SpanRecorder { _default: tracing::subscriber::set_default(subscriber), provider, exporter }
    }

    /// The spans finished so far.
    pub fn spans(&self) -> Vec<SpanData> {
        let _ = self.provider.force_flush();
        self.exporter.get_finished_spans().expect("the in-memory exporter has the spans")
    }
}

/// A 2026-07-28 `tools/call` of `tool`, without arguments, whose `_meta` carries the caller's
/// `traceparent`.
pub fn traced_call(tool: &str, traceparent: &str) -> Value {
    let meta = json!({"traceparent": traceparent,
                      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {}, "_meta": meta}})
}
