//! duet's span exporter: each request's span, and its children (a manifest command, a
//! handler's own spans), exported over OTLP/HTTP in protobuf to a collector. Spans are
//! encoded where they end and sent in batches from the exporter's own thread, so no request
//! waits on the collector; past its queue, spans are dropped rather than held.
//!
//! Why a crate of its own: the exporter is most of what a program needs beyond the library to
//! send traces (an HTTP client, the OTLP encoding, a batching thread), and none of what the
//! library needs to serve. `duet serve --otlp-endpoint` installs it, and so can any program
//! that mounts duet: with the library's `otel` feature, the requests' spans are made by the
//! [`Tracer`] this crate gives `ServerOptions::tracer`, and the program's other spans reach
//! the same processor through a `tracing` layer. It encodes and batches spans itself rather
//! than through `opentelemetry-otlp` and the SDK's batch processor, with which an exported
//! span cost a request about twice as much (`docs/operations.md`; `encode`, `processor`).
//!
//! A program installs it before it starts serving, and shuts the provider down before it
//! exits so that the last spans are sent:
//!
//! ```no_run
//! use duet::prelude::ServerOptions;
//! use tracing_subscriber::layer::SubscriberExt as _;
//! use tracing_subscriber::util::SubscriberInitExt as _;
//!
//! # fn main() -> anyhow::Result<()> {
//! let export = duet_otlp::Export::new("http://127.0.0.1:4318", 1.0)?;
//! let (layer, provider, tracer) = duet_otlp::layer(&export, env!("CARGO_CRATE_NAME"))?;
//! tracing_subscriber::registry().with(layer).try_init()?;
//! let options = ServerOptions { tracer: Some(tracer), ..ServerOptions::default() };
//! // … serve with `options` …
//! provider.shutdown()?;
//! # Ok(())
//! # }
//! ```

mod encode;
mod exporter;
mod processor;

use duet::trace::Tracer;
use exporter::OtlpHttpExporter;
use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use processor::{EncodingProcessor, Limits};
use std::time::Duration;
use tracing::Level;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

/// Spans sent in one export, and the most waiting to be sent: sixteen times the SDK's
/// defaults (512 and 2,048). Each export costs the server's core far more than its bytes:
/// with the server on a core of its own, exporting every span of `tools/call` cost 15.5 % of
/// its throughput in batches of 512, 7.7 % in batches of 2,048 and 3.1 % in batches of 8,192
/// (`docs/operations.md`). Past the queue (about 11 MiB of a request's spans), spans are
/// dropped rather than held.
const BATCH: usize = 8192;
const QUEUE: usize = 32768;
/// The most bytes of spans in one export, whatever their number: a collector refuses a
/// request past its own limit (the OpenTelemetry Collector takes 20 MiB over HTTP and 4 MiB
/// over gRPC by default), and spans with many attributes from handlers are larger than a
/// request's own (about 330 bytes).
const REQUEST_BYTES: usize = 4 << 20;
/// The longest a span waits to be sent: the SDK's default.
const DELAY: Duration = Duration::from_secs(5);

/// Where spans go and which of them: a collector's OTLP/HTTP endpoint and the share of the
/// traces that start here to send, checked.
#[derive(Debug, Clone)]
pub struct Export {
    endpoint: String,
    sample_ratio: f64,
}

impl Export {
    /// Spans posted to `endpoint` (an http:// or https:// URL; without a path, the OTLP
    /// default `/v1/traces` is added), of a `sample_ratio` (0 to 1) of the traces that start
    /// here; a caller's sampled or unsampled `traceparent` is followed whatever it is.
    pub fn new(endpoint: &str, sample_ratio: f64) -> Result<Export, Refused> {
        Ok(Export { endpoint: self::endpoint(endpoint)?, sample_ratio: self::sample_ratio(sample_ratio)? })
    }
}

/// Why [`Export::new`] refused what it was given: the value, and what is wrong with it. The
/// program says which of its options gave the value (`duet serve`: `--otlp-endpoint`,
/// `--otlp-sample-ratio`).
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The endpoint is not an http:// or https:// URL.
    #[error("{given:?}: {why}")]
    Endpoint {
        /// The endpoint as given.
        given: String,
        /// What is wrong with it.
        why: String,
    },
    /// The sample ratio is not a probability.
    #[error("{0}: a ratio from 0 to 1 is needed")]
    SampleRatio(f64),
}

/// The URL spans are posted to: `URL` as given when it has a path, else the OTLP default
/// path `/v1/traces` under it (`http://collector:4318` → `http://collector:4318/v1/traces`).
fn endpoint(given: &str) -> Result<String, Refused> {
    let refused = |why: &str| Refused::Endpoint { given: given.to_owned(), why: why.to_owned() };
    let mut url = url::Url::parse(given).map_err(|e| refused(&e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
        return Err(refused("an http:// or https:// URL is needed, as OTLP/HTTP takes"));
    }
    if url.path() == "/" {
        url.set_path("/v1/traces");
    }
    Ok(url.into())
}

/// The sample ratio: a probability.
fn sample_ratio(given: f64) -> Result<f64, Refused> {
    if (0.0..=1.0).contains(&given) { Ok(given) } else { Err(Refused::SampleRatio(given)) }
}

/// The layer that exports duet's other spans (those of `duet` and of `program`, the target
/// of the program's own spans such as its crate's name, at info and above, whatever the log
/// level, but the requests' own `tracing` spans, which are the log's) as children of the
/// request's; its provider, which sends what is left when shut down; and the tracer of each
/// request's span (`ServerOptions::tracer`). Both kinds of span are sampled alike and go
/// through one processor, whose thread starts here: call it outside any async runtime.
pub fn layer<S>(export: &Export, program: &str) -> anyhow::Result<(impl Layer<S>, SdkTracerProvider, Tracer)>
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
    let processor = EncodingProcessor::new(exporter, limits(|name| std::env::var(name).ok()))?;
    let requests = Tracer::new(sampler.clone(), processor.clone());
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_sampler(sampler)
        .with_resource(resource)
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer_with_scope(duet::trace::scope()))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_target(false)
        // duet reads a span's context from the span itself, never from the thread.
        .with_context_activation(false)
        .with_filter(
            Targets::new()
                .with_target("duet", Level::INFO)
                .with_target(program, Level::INFO)
                .with_target(duet::trace::REQUEST_SPAN_TARGET, LevelFilter::OFF),
        );
    Ok((layer, provider, requests))
}

/// [`QUEUE`], [`BATCH`], [`REQUEST_BYTES`] and [`DELAY`], unless the SDK's variables (read by `var`) say
/// otherwise: `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (at most the
/// queue) and `OTEL_BSP_SCHEDULE_DELAY` (milliseconds). A value that is not a positive
/// whole number is ignored.
fn limits(var: impl Fn(&str) -> Option<String>) -> Limits {
    let read = |name: &str| var(name)?.trim().parse::<u64>().ok().filter(|n| *n > 0);
    let queue = read("OTEL_BSP_MAX_QUEUE_SIZE").map_or(QUEUE, |n| n as usize);
    Limits {
        queue,
        batch: read("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").map_or(BATCH, |n| n as usize).min(queue),
        request_bytes: REQUEST_BYTES,
        delay: read("OTEL_BSP_SCHEDULE_DELAY").map_or(DELAY, Duration::from_millis),
    }
}

#[cfg(test)]
mod tests {
    use super::{BATCH, DELAY, QUEUE, Refused, endpoint, limits, sample_ratio};
    use std::time::Duration;

    #[test]
    fn the_sdks_variables_set_the_limits() {
        let defaults = limits(|_| None);
        assert_eq!((defaults.queue, defaults.batch, defaults.delay), (QUEUE, BATCH, DELAY));
        let given = limits(|name| {
            let value = match name {
                "OTEL_BSP_MAX_QUEUE_SIZE" => "100",
                "OTEL_BSP_MAX_EXPORT_BATCH_SIZE" => "500",
                "OTEL_BSP_SCHEDULE_DELAY" => " 250 ",
                _ => return None,
            };
            Some(value.to_string())
        });
        assert_eq!((given.queue, given.batch, given.delay), (100, 100, Duration::from_millis(250)));
        let ignored = limits(|name| Some(if name.ends_with("DELAY") { "soon" } else { "0" }.to_string()));
        assert_eq!((ignored.queue, ignored.batch, ignored.delay), (QUEUE, BATCH, DELAY));
    }

    #[test]
    fn a_sample_ratio_is_a_probability() {
        assert_eq!(sample_ratio(0.25).expect("ok"), 0.25);
        for bad in [-0.1, 1.5, f64::NAN] {
            let refused = sample_ratio(bad).expect_err("refused");
            assert!(matches!(refused, Refused::SampleRatio(given) if given.to_bits() == bad.to_bits()), "{refused}");
        }
    }

    #[test]
    fn the_default_path_is_added_only_to_a_bare_url() {
        assert_eq!(endpoint("http://127.0.0.1:4318").expect("ok"), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(endpoint("http://127.0.0.1:4318/").expect("ok"), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(endpoint("https://otel.example/custom/path").expect("ok"), "https://otel.example/custom/path");
        for bad in ["127.0.0.1:4318", "grpc://127.0.0.1:4317", "not a url", "file:///tmp/x"] {
            let refused = endpoint(bad).expect_err(bad);
            assert!(matches!(&refused, Refused::Endpoint { given, .. } if given == bad), "{refused}");
            assert!(refused.to_string().starts_with(&format!("{bad:?}: ")), "{refused}");
        }
    }
}
