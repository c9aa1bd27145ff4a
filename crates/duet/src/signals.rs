//! The operating signals duet emits, through the [`metrics`] facade: each request's duration
//! and each session's, named as the OpenTelemetry semantic conventions for MCP name them
//! (rendered the Prometheus way: `mcp_server_operation_duration_seconds`), and duet's own
//! gauges and counters. A program sees them by installing a recorder (the `duet` binary
//! installs the Prometheus exporter for `--metrics-addr`); with none installed every call
//! here does nothing.
//!
//! Label values are bounded whatever clients send: a method is a row of the method table or
//! `other`, a tool or prompt name is a label only once the layer found it, an error is its
//! JSON-RPC code, and rejections name their cause from a fixed list.

use crate::protocol::Version;
use duet_wire::method::{Method, Primitive};
use hashbrown::{Equivalent, HashMap};
use metrics::{Histogram, Label};
use std::sync::{PoisonError, RwLock};
use std::time::Duration;

/// `mcp.server.operation.duration`: one observation per request answered, in seconds.
pub const OPERATION_DURATION: &str = "mcp_server_operation_duration_seconds";
/// `mcp.server.session.duration`: one observation per session (a connection that lasts)
/// when it ends, in seconds.
pub const SESSION_DURATION: &str = "mcp_server_session_duration_seconds";
/// Sessions open now (stdio connections, handshake-era HTTP and legacy SSE sessions).
pub const SESSIONS_ACTIVE: &str = "duet_sessions_active";
/// `subscriptions/listen` streams open now.
pub const LISTEN_STREAMS_ACTIVE: &str = "duet_listen_streams_active";
/// HTTP connections open now.
pub const CONNECTIONS_ACTIVE: &str = "duet_http_connections_active";
/// Tasks this replica runs now (started and not ended: working or waiting for input).
pub const TASKS_ACTIVE: &str = "duet_tasks_active";
/// HTTP requests refused before the engine saw them, by `status` and `reason`.
pub const REJECTIONS: &str = "duet_http_rejections_total";
/// Requests whose bearer token was missing or refused.
pub const AUTH_FAILURES: &str = "duet_auth_failures_total";
/// Multi round-trip retries whose `requestState` was refused (tampered, expired, misbound).
pub const SEALED_STATE_REJECTIONS: &str = "duet_sealed_state_rejections_total";

/// Calls to the shared store (the Redis backplane) that failed or timed out, and changes
/// it could not carry, by `operation`.
pub const BACKPLANE_ERRORS: &str = "duet_backplane_errors_total";
/// Values, bus messages and event-log entries read from the shared store whose MAC was
/// missing or wrong (forged, edited, or copied from another key), and bus messages sent too
/// long ago or received already (replayed), ignored, by `kind`.
pub const BACKPLANE_REJECTIONS: &str = "duet_backplane_rejected_total";

/// The buckets the conventions advise for both durations, in seconds.
pub const DURATION_BUCKETS: [f64; 14] =
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// Gives each signal its help text and unit, for a recorder that shows them (Prometheus's
/// `# HELP`). Call it once the recorder is installed.
pub fn describe() {
    use metrics::Unit;
    metrics::describe_histogram!(OPERATION_DURATION, Unit::Seconds, "MCP request duration as the server saw it");
    metrics::describe_histogram!(SESSION_DURATION, Unit::Seconds, "MCP session duration as the server saw it");
    metrics::describe_gauge!(SESSIONS_ACTIVE, "Sessions open: stdio, handshake-era HTTP, legacy SSE");
    metrics::describe_gauge!(LISTEN_STREAMS_ACTIVE, "subscriptions/listen streams open");
    metrics::describe_gauge!(CONNECTIONS_ACTIVE, "HTTP connections open");
    metrics::describe_gauge!(TASKS_ACTIVE, "Tasks running on this replica: working or waiting for input");
    metrics::describe_counter!(
        REJECTIONS,
        "HTTP requests and connections refused before the engine, by status and reason"
    );
    metrics::describe_counter!(AUTH_FAILURES, "Requests whose bearer token was missing or refused");
    metrics::describe_counter!(SEALED_STATE_REJECTIONS, "Retries whose requestState was refused");
    metrics::describe_counter!(BACKPLANE_ERRORS, "Shared-store calls that failed, and changes not carried");
    metrics::describe_counter!(
        BACKPLANE_REJECTIONS,
        "Shared-store values and messages ignored: MAC missing or wrong, stale or replayed"
    );
}

/// `network.transport`: how a request reached duet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// stdio.
    Pipe,
    /// HTTP.
    Tcp,
}

impl Transport {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Transport::Pipe => "pipe",
            Transport::Tcp => "tcp",
        }
    }
}

/// What the conventions' labels say of one answered request.
pub(crate) struct Operation<'a> {
    pub method: &'a Method,
    /// The tool or prompt the layer found, by the name it was asked for (`gen_ai.tool.name`
    /// or `gen_ai.prompt.name`).
    pub target: Option<(Primitive, &'a str)>,
    /// `mcp.resource.uri`, the resource a request named: a span attribute, never a label.
    pub resource_uri: Option<&'a str>,
    pub version: Version,
    /// `error.type`: the JSON-RPC error code, or `tool_error` for a tool result that is an
    /// error.
    pub error: Option<ErrorType>,
    pub transport: Option<Transport>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ErrorType {
    Code(i64),
    Tool,
}

impl Operation<'_> {
    /// Observes the request's duration in its histogram, one of `histograms`.
    pub(crate) fn record(&self, histograms: &OperationHistograms, elapsed: Duration) {
        let method = match self.method {
            Method::Other(_) => "other",
            known => known.traits().name,
        };
        let labels =
            Labels { method, version: self.version, target: self.target, error: self.error, transport: self.transport };
        histograms.record(labels, elapsed.as_secs_f64());
    }
}

/// The handles of [`OPERATION_DURATION`], one for each set of labels, each registered with
/// the recorder the first time its set is seen. Registering is how `metrics` finds a handle
/// by its labels, made into strings and compared, sorted, with those registered: about 800
/// instructions of a request; a handle kept here is found by a hash of the request's own
/// fields. A server keeps its own, so a recorder installed for one thread
/// (`metrics::with_local_recorder`) has the handles of the servers made under it. As many as
/// the recorder keeps: the labels are bounded (the module's doc).
#[derive(Default)]
pub(crate) struct OperationHistograms(RwLock<HashMap<Labels<Box<str>>, Histogram>>);

impl OperationHistograms {
    fn record(&self, labels: Labels<&str>, value: f64) {
        if let Some(histogram) = self.0.read().unwrap_or_else(PoisonError::into_inner).get(&labels) {
            return histogram.record(value);
        }
        let histogram = metrics::histogram!(OPERATION_DURATION, labels.to_metrics());
        histogram.record(value);
        self.0.write().unwrap_or_else(PoisonError::into_inner).insert(labels.owned(), histogram);
    }
}

/// What the labels of an observation are drawn from, the target's name owned (`Box<str>`,
/// kept) or borrowed (`&str`, looked up). Both hash alike: a name hashes as its `str`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Labels<S> {
    method: &'static str,
    version: Version,
    target: Option<(Primitive, S)>,
    error: Option<ErrorType>,
    transport: Option<Transport>,
}

impl Labels<&str> {
    fn owned(&self) -> Labels<Box<str>> {
        let Labels { method, version, target, error, transport } = *self;
        Labels { method, version, target: target.map(|(kind, name)| (kind, name.into())), error, transport }
    }

    /// The labels as the conventions name them, rendered the Prometheus way.
    fn to_metrics(&self) -> Vec<Label> {
        let mut labels = vec![
            Label::from_static_parts("mcp_method_name", self.method),
            Label::from_static_parts("mcp_protocol_version", self.version.as_str()),
        ];
        if let Some((kind, name)) = self.target {
            let key = if kind == Primitive::Prompt { "gen_ai_prompt_name" } else { "gen_ai_tool_name" };
            labels.push(Label::new(key, name.to_owned()));
        }
        match self.error {
            Some(ErrorType::Code(code)) => labels.push(Label::new("error_type", code.to_string())),
            Some(ErrorType::Tool) => labels.push(Label::from_static_parts("error_type", "tool_error")),
            None => {}
        }
        if let Some(transport) = self.transport {
            labels.push(Label::from_static_parts("network_transport", transport.as_str()));
        }
        labels
    }
}

impl Equivalent<Labels<Box<str>>> for Labels<&str> {
    fn equivalent(&self, kept: &Labels<Box<str>>) -> bool {
        let kept_target = kept.target.as_ref().map(|(kind, name)| (*kind, &**name));
        (self.method, self.version, self.target, self.error, self.transport)
            == (kept.method, kept.version, kept_target, kept.error, kept.transport)
    }
}

/// A session ended after `lasted`.
pub(crate) fn session_ended(lasted: Duration, version: Option<Version>, transport: Option<Transport>) {
    let mut labels = Vec::new();
    if let Some(version) = version {
        labels.push(Label::from_static_parts("mcp_protocol_version", version.as_str()));
    }
    if let Some(transport) = transport {
        labels.push(Label::from_static_parts("network_transport", transport.as_str()));
    }
    metrics::histogram!(SESSION_DURATION, labels).record(lasted.as_secs_f64());
    metrics::gauge!(SESSIONS_ACTIVE).decrement(1);
}

/// An HTTP request or connection refused before the engine saw it: `reason` is one of
/// `guard` (Host or Origin), `auth`, `rate_limited`, `connections` (over the cap).
pub(crate) fn rejected(status: u16, reason: &'static str) {
    metrics::counter!(REJECTIONS, "status" => status.to_string(), "reason" => reason).increment(1);
}

pub(crate) fn session_opened() {
    metrics::gauge!(SESSIONS_ACTIVE).increment(1);
}

#[cfg(test)]
mod tests {
    use super::{ErrorType, Operation, OperationHistograms, Transport};
    use crate::protocol::Version;
    use duet_wire::method::{Method, Primitive};
    use metrics::{Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// Each histogram it registers, counted, and each value observed, with its labels.
    #[derive(Default)]
    struct Observed {
        registered: AtomicUsize,
        values: Arc<Mutex<Vec<(String, f64)>>>,
    }

    /// One registered histogram: its labels, and where its values go.
    struct Observing(String, Arc<Mutex<Vec<(String, f64)>>>);

    impl HistogramFn for Observing {
        fn record(&self, value: f64) {
            self.1.lock().expect("not poisoned").push((self.0.clone(), value));
        }
    }

    impl Recorder for Observed {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

        fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
            Counter::noop()
        }

        fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
            Gauge::noop()
        }

        fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
            self.registered.fetch_add(1, Ordering::Relaxed);
            let labels: Vec<String> = key.labels().map(|label| format!("{}={}", label.key(), label.value())).collect();
            Histogram::from_arc(Arc::new(Observing(labels.join(","), self.values.clone())))
        }
    }

    #[test]
    fn each_set_of_labels_is_registered_once_and_its_values_reach_it() {
        let observed = Observed::default();
        let histograms = OperationHistograms::default();
        let echo = "mcp_method_name=tools/call,mcp_protocol_version=2026-07-28,gen_ai_tool_name=echo,\
                    network_transport=tcp";
        let failed = "mcp_method_name=tools/call,mcp_protocol_version=2026-07-28,gen_ai_tool_name=fail,\
                      error_type=tool_error,network_transport=tcp";
        metrics::with_local_recorder(&observed, || {
            for (seconds, tool, error) in [(1, "echo", None), (2, "fail", Some(ErrorType::Tool)), (3, "echo", None)] {
                // The name as a request holds it: borrowed from its own params.
                let tool = String::from(tool);
                let call = Operation {
                    method: &Method::ToolsCall,
                    target: Some((Primitive::Tool, &tool)),
                    resource_uri: None,
                    version: Version::V2026_07_28,
                    error,
                    transport: Some(Transport::Tcp),
                };
                call.record(&histograms, Duration::from_secs(seconds));
            }
        });
        assert_eq!(observed.registered.load(Ordering::Relaxed), 2, "one registration for each set of labels");
        let values = observed.values.lock().expect("not poisoned").clone();
        assert_eq!(values, [(echo.to_string(), 1.0), (failed.to_string(), 2.0), (echo.to_string(), 3.0)]);
    }
}
