//! Shared support of the tests that read the spans duet makes: an in-memory OpenTelemetry
//! exporter, fed by the tracer of the server options the recorder gives (each request's
//! span, through the SDK's simple span processor) and by `tracing-opentelemetry` (a
//! handler's own spans), installed as a program would: the layer skips the requests'
//! `tracing` spans. The layer is the default subscriber
//! of the test's thread for as long as the recorder lives (on a current-thread runtime, the
//! server's tasks run there too). And a request that joins a caller's trace.

use duet::protocol::ServerOptions;
use duet::trace::{ProcessorSink, REQUEST_SPAN_TARGET, Tracer};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{InMemorySpanExporter, Sampler, SdkTracerProvider, SimpleSpanProcessor, SpanData};
use serde_json::{Value, json};
use tracing::Level;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;

pub(crate) struct SpanRecorder {
    // Dropped first: the thread's previous subscriber is back before the exporter goes.
    _default: tracing::subscriber::DefaultGuard,
    provider: SdkTracerProvider,
    exporter: InMemorySpanExporter,
}

impl SpanRecorder {
    pub(crate) fn install() -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
        let handlers = Targets::new().with_default(Level::TRACE).with_target(REQUEST_SPAN_TARGET, LevelFilter::OFF);
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("duet-test")).with_filter(handlers));
        SpanRecorder { _default: tracing::subscriber::set_default(subscriber), provider, exporter }
    }

    /// Server options whose requests' spans this recorder receives.
    pub(crate) fn options(&self) -> ServerOptions {
        // The SDK's default sampler: the caller's decision stands, a new trace is kept.
        let sampler = Sampler::ParentBased(Box::new(Sampler::AlwaysOn));
        let resource = Resource::builder_empty().build();
        let requests = ProcessorSink::new(SimpleSpanProcessor::new(self.exporter.clone()), &resource);
        ServerOptions { tracer: Some(Tracer::new(sampler, requests)), ..ServerOptions::default() }
    }

    /// The spans finished so far.
    pub(crate) fn spans(&self) -> Vec<SpanData> {
        let _ = self.provider.force_flush();
        self.exporter.get_finished_spans().expect("the in-memory exporter has the spans")
    }
}

/// A 2026-07-28 `tools/call` of `tool`, without arguments, whose `_meta` carries the caller's
/// `traceparent`.
pub(crate) fn traced_call(tool: &str, traceparent: &str) -> Value {
    let meta = json!({"traceparent": traceparent,
                      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {}, "_meta": meta}})
}
