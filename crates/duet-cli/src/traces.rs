//! `--otlp-endpoint`: each request's span, and its children (a manifest command, a handler's
//! own spans), exported over OTLP/HTTP in protobuf to a collector. Spans are batched and sent
//! from the exporter's own thread, so no request waits on the collector; past its queue,
//! spans are dropped rather than held.

mod encode;
mod exporter;

use crate::usage::Usage;
use exporter::OtlpHttpExporter;
use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchConfig, BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider};
use tracing::Level;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

/// Spans sent in one export, and the most waiting to be sent: four times the SDK's defaults
/// (512 and 2,048). An export has a cost of its own (the request, the collector's answer),
/// which larger batches spread over more spans: at tens of thousands of requests a second,
/// the exporter's threads take a third less CPU (`docs/operations.md`). Past the queue
/// (about 7 MiB of spans), spans are dropped rather than held.
const BATCH: usize = 2048;
const QUEUE: usize = 8192;

/// Where spans go and which of them: `--otlp-endpoint` and `--otlp-sample-ratio`, checked.
pub struct Export {
    pub endpoint: String,
    pub sample_ratio: f64,
}

impl Export {
    pub fn new(endpoint: &str, sample_ratio: f64) -> Result<Export, Usage> {
        Ok(Export { endpoint: self::endpoint(endpoint)?, sample_ratio: self::sample_ratio(sample_ratio)? })
    }
}

/// The URL spans are posted to: `URL` as given when it has a path, else the OTLP default
/// path `/v1/traces` under it (`http://collector:4318` → `http://collector:4318/v1/traces`).
fn endpoint(given: &str) -> Result<String, Usage> {
    let refused = |why: &str| Usage(format!("--otlp-endpoint {given:?}: {why}"));
    let mut url = url::Url::parse(given).map_err(|e| refused(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
        return Err(refused("an http:// or https:// URL is needed, as OTLP/HTTP takes"));
    }
    if url.path() == "/" {
        url.set_path("/v1/traces");
    }
    Ok(url.into())
}

/// `--otlp-sample-ratio`: a probability.
fn sample_ratio(given: f64) -> Result<f64, Usage> {
    if (0.0..=1.0).contains(&given) {
        Ok(given)
    } else {
        Err(Usage(format!("--otlp-sample-ratio {given}: a ratio from 0 to 1 is needed")))
    }
}

/// The provider, whose tracer makes each request's span (`ServerOptions::tracer`) and which
/// sends what is left when shut down, and the layer that exports duet's other spans (those
/// of `duet` and `duet_cli` at info and above, whatever the log level, but the requests'
/// own `tracing` spans, which are the log's), as children of the request's.
pub fn layer<S>(export: &Export) -> anyhow::Result<(impl Layer<S>, SdkTracerProvider)>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    let exporter = OtlpHttpExporter::new(&export.endpoint)?;
    let resource = Resource::builder()
        .with_service_name("duet")
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    // A caller's sampling decision (the flag of its `traceparent`) stands; a trace that starts
    // here is kept with the given probability.
    let sampler = Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(export.sample_ratio)));
    let processor = BatchSpanProcessor::builder(exporter).with_batch_config(batch_config()).build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_sampler(sampler)
        .with_resource(resource)
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("duet"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_target(false)
        // duet reads a span's context from the span itself, never from the thread.
        .with_context_activation(false)
        .with_filter(
            Targets::new()
                .with_target("duet", Level::INFO)
                .with_target("duet_cli", Level::INFO)
                .with_target(duet::trace::REQUEST_SPAN_TARGET, LevelFilter::OFF),
        );
    Ok((layer, provider))
}

/// [`BATCH`] and [`QUEUE`], unless the SDK's own variables (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`,
/// `OTEL_BSP_MAX_QUEUE_SIZE`) say otherwise; the others (`OTEL_BSP_SCHEDULE_DELAY`, …) as
/// the SDK reads them.
fn batch_config() -> BatchConfig {
    let mut config = BatchConfigBuilder::default();
    if std::env::var_os("OTEL_BSP_MAX_QUEUE_SIZE").is_none() {
        config = config.with_max_queue_size(QUEUE);
    }
    if std::env::var_os("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").is_none() {
        config = config.with_max_export_batch_size(BATCH);
    }
    config.build()
}

#[cfg(test)]
mod tests {
    use super::{endpoint, sample_ratio};

    #[test]
    fn a_sample_ratio_is_a_probability() {
        assert_eq!(sample_ratio(0.25).expect("ok"), 0.25);
        for bad in [-0.1, 1.5, f64::NAN] {
            assert!(sample_ratio(bad).expect_err("refused").0.contains("--otlp-sample-ratio"));
        }
    }

    #[test]
    fn the_default_path_is_added_only_to_a_bare_url() {
        assert_eq!(endpoint("http://127.0.0.1:4318").expect("ok"), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(endpoint("http://127.0.0.1:4318/").expect("ok"), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(endpoint("https://otel.example/custom/path").expect("ok"), "https://otel.example/custom/path");
        for bad in ["127.0.0.1:4318", "grpc://127.0.0.1:4317", "not a url", "file:///tmp/x"] {
            let refused = endpoint(bad).expect_err(bad).0;
            assert!(refused.contains("--otlp-endpoint"), "{refused}");
        }
    }
}
