//! What duet says about itself: its log on stderr (`--log-level`, `--log-format`,
//! `DUET_LOG`) and, with `--otlp-endpoint`, its spans exported to a collector. Both are
//! layers of one `tracing` subscriber, each with its own filter, so the log's level never
//! hides a span from the exporter. The OpenTelemetry SDK's own warnings (a collector that
//! cannot be reached) are logged at `warn`. Colours only on a terminal. What duet tells
//! whoever runs it at any level (where it listens, why it stops) goes through [`notice`]
//! and [`error`], in the log's format: with `--log-format json` every line is JSON.

use crate::cli::LogFormat;
use duet::trace::Tracer;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::fmt::Display;
use std::sync::OnceLock;
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// How long the exit waits for the last spans to be sent.
const LAST_EXPORT: Duration = Duration::from_secs(5);

/// The target of [`notice`] and [`error`] events, which every filter lets through.
const NOTICE: &str = "duet_cli::notice";

/// The format [`init`] installed; before it (the command line is still being read), text.
static FORMAT: OnceLock<LogFormat> = OnceLock::new();

fn json() -> bool {
    FORMAT.get() == Some(&LogFormat::Json)
}

/// A line for whoever runs duet, at any log level: where it listens, why it stops. The text
/// format writes it as it is, for the scripts that wait for `listening on`; the JSON format
/// as an object whose `message` it is.
pub(crate) fn notice(line: impl Display) {
    if json() {
        tracing::info!(target: NOTICE, "{line}");
    } else {
        eprintln!("{line}");
    }
}

/// `Error: …`: why duet gives up, at any log level and in the log's format (an `ERROR`
/// object in JSON).
pub(crate) fn error(message: impl Display) {
    if json() {
        tracing::error!(target: NOTICE, "{message}");
    } else {
        eprintln!("Error: {message}");
    }
}

/// The installed subscriber's exporter, if any: shut down before exit so the last spans go.
pub(crate) struct Telemetry {
    traces: Option<(SdkTracerProvider, Tracer)>,
}

impl Telemetry {
    /// The tracer of each request's span, while spans are exported.
    pub(crate) fn tracer(&self) -> Option<Tracer> {
        self.traces.as_ref().map(|(_, tracer)| tracer.clone())
    }

    pub(crate) fn shutdown(self) {
        if let Some((provider, _)) = self.traces
            && let Err(e) = provider.shutdown_with_timeout(LAST_EXPORT)
        {
            tracing::warn!("the last spans could not be exported: {e}");
        }
    }
}

/// Whether the log may colour its text: on a terminal, unless `NO_COLOR` is set to
/// anything (no-color.org); a log piped to a file or a collector gets plain text.
fn colour() -> bool {
    use std::io::IsTerminal as _;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Installs the process's subscriber, with the span exporter when `otlp` says where to.
pub(crate) fn init(level: &str, format: LogFormat, otlp: Option<&duet_otlp::Export>) -> anyhow::Result<Telemetry> {
    let filter = EnvFilter::try_from_env("DUET_LOG")
        .unwrap_or_else(|_| {
            EnvFilter::new(format!("duet={level},duet_cli={level},duet_workspace={level},opentelemetry_sdk=warn"))
        })
        .add_directive(format!("{NOTICE}=info").parse()?);
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(colour());
    let logs = match format {
        LogFormat::Text => logs.with_target(false).with_filter(filter).boxed(),
        // The request's span holds its method, id, principal and trace: one object per line.
        LogFormat::Json => {
            logs.json().flatten_event(true).with_current_span(true).with_span_list(false).with_filter(filter).boxed()
        }
    };
    let (traces, provider) = match otlp {
        Some(export) => {
            let (layer, provider, tracer) = duet_otlp::layer(export, env!("CARGO_CRATE_NAME"))?;
            (Some(layer), Some((provider, tracer)))
        }
        None => (None, None),
    };
    tracing_subscriber::registry().with(logs).with(traces).try_init()?;
    FORMAT.get_or_init(|| format);
    Ok(Telemetry { traces: provider })
}
