//! Shared support of the tests that read the spans duet makes: an in-memory OpenTelemetry
//! exporter behind `tracing-opentelemetry`, the default subscriber of the test's thread for as
//! long as the recorder lives (on a current-thread runtime, the server's tasks run there too).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
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
