//! Each request's trace, on every transport, so a tool call shows up as one trace from host
//! to backend. The caller's W3C trace context (`traceparent`, `tracestate`, `baggage`) comes
//! from the request's `_meta` (where MCP reserves the keys) or else from the HTTP headers.
//!
//! A request has two spans, each made only when something wants it:
//! - its `tracing` span ([`REQUEST_SPAN_TARGET`]), for the log: the method, JSON-RPC id,
//!   principal, and the caller's `trace_id` and `parent_span_id`, so log lines correlate with
//!   the caller's trace in any subscriber;
//! - with the `otel` feature and a [`Tracer`] in [`ServerOptions::tracer`], its OpenTelemetry
//!   span, the one the semantic conventions for MCP describe (`{mcp.method.name} {target}`,
//!   kind server, their attributes), recorded as plain data ([`RequestSpan`]) and handed to
//!   the tracer's sink as it ends: the sampler decides first, and a span it drops costs no
//!   attribute. The caller's span is its parent.
//!
//! With the `otel` feature the request runs inside its OpenTelemetry context: its span (or,
//! without a tracer, the caller's, when a subscriber wants the request's `tracing` span) and
//! the caller's baggage. `opentelemetry::Context::current()` in a handler reads it, and a
//! `tracing-opentelemetry` layer that skips the request's `tracing` span nests a handler's
//! own spans (a manifest command, a Redis call) under the request.
//! `docs/operations.md` shows a program that exports them. duet itself reaches the span's
//! recording through a task-local (`RECORDING`) rather than the context's map of values,
//! which would cost a map made for every request.
//!
//! [`ServerOptions::tracer`]: crate::protocol::ServerOptions

use crate::signals::{ErrorType, Operation};
use duet_wire::message::{Incoming, Message, Meta, Notification, Request};
use duet_wire::method::{Method, Primitive};
#[cfg(feature = "http")]
use http::{HeaderMap, HeaderName};
use serde_json::Value;
use tracing::Span;

#[cfg(feature = "otel")]
mod request_span;
#[cfg(feature = "otel")]
mod tracer;
#[cfg(feature = "otel")]
pub use request_span::{RequestError, RequestSpan};
#[cfg(feature = "otel")]
pub use tracer::{ProcessorSink, SpanSink, Tracer, scope};

/// A valid `traceparent` (version 00 layout; later versions are read the same way, as
/// the specification asks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceParent {
    /// 32 lowercase hex digits, not all zero.
    pub trace_id: String,
    /// 16 lowercase hex digits, not all zero: the caller's span.
    pub parent_id: String,
    pub flags: u8,
}

/// A trace context: the parent, the vendor `tracestate` and the W3C `baggage`, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceContext {
    pub parent: TraceParent,
    pub state: Option<String>,
    pub baggage: Option<String>,
}

fn hex_field(field: &str, len: usize) -> Option<String> {
    let ok = field.len() == len && field.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    (ok && field.bytes().any(|b| b != b'0')).then(|| field.to_owned())
}

/// Parses a `traceparent` value; `None` when it is invalid (and must be ignored).
pub(crate) fn parse_traceparent(value: &str) -> Option<TraceParent> {
    let value = value.trim();
    let mut fields = value.split('-');
    let version = fields.next()?;
    if version.len() != 2 || version == "ff" || !version.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let trace_id = hex_field(fields.next()?, 32)?;
    let parent_id = hex_field(fields.next()?, 16)?;
    let flags = fields.next()?;
    if flags.len() != 2 {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    // Version 00 has exactly four fields; a later version may append more.
    if version == "00" && fields.next().is_some() {
        return None;
    }
    Some(TraceParent { trace_id, parent_id, flags })
}

/// The trace context of a JSON-RPC message's `params._meta`.
pub(crate) fn from_meta(meta: &Meta) -> Option<TraceContext> {
    let parent = parse_traceparent(meta.other.get("traceparent")?.as_str()?)?;
    let text = |key: &str| meta.other.get(key).and_then(Value::as_str).map(str::to_owned);
    Some(TraceContext { parent, state: text("tracestate"), baggage: text("baggage") })
}

/// The trace context of HTTP headers.
#[cfg(feature = "http")]
pub(crate) fn from_headers(headers: &HeaderMap) -> Option<TraceContext> {
    // Names made once: a name given as text is parsed again at every lookup.
    const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
    const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");
    const BAGGAGE: HeaderName = HeaderName::from_static("baggage");
    let parent = parse_traceparent(headers.get(TRACEPARENT)?.to_str().ok()?)?;
    let text = |key| headers.get(key).and_then(|v| v.to_str().ok()).map(str::to_owned);
    Some(TraceContext { parent, state: text(TRACESTATE), baggage: text(BAGGAGE) })
}

/// The trace context of an incoming message: its own `_meta` first (the first request or
/// notification of a batch), then the transport's (`transport`, only called when needed:
/// over HTTP, the headers').
pub(crate) fn of_message(message: &Message, transport: impl FnOnce() -> Option<TraceContext>) -> Option<TraceContext> {
    let first = message.items().iter().find_map(|m| match m {
        Incoming::Request(Request { meta, .. }) | Incoming::Notification(Notification { meta, .. }) => Some(meta),
        _ => None,
    });
    first.and_then(from_meta).or_else(transport)
}

/// The target of each request's `tracing` span. It carries the request's fields to the log;
/// a `tracing-opentelemetry` layer should skip it, since duet makes the request's
/// OpenTelemetry span itself (with the `otel` feature), and would otherwise export it twice.
pub const REQUEST_SPAN_TARGET: &str = "duet::request";

/// A request's trace: its `tracing` span and, with the `otel` feature, its OpenTelemetry
/// context. Either may be empty: the span when no subscriber wants it, the context when
/// nothing is exported and no caller sent one.
pub(crate) struct RequestTrace {
    span: Span,
    #[cfg(feature = "otel")]
    context: opentelemetry::Context,
    #[cfg(feature = "otel")]
    recording: Option<std::sync::Arc<tracer::Recording>>,
}

#[cfg(feature = "otel")]
tokio::task_local! {
    /// The recording of the request's OpenTelemetry span while the request runs, if it is
    /// kept (with a [`RequestTrace`]: [`RequestTrace::instrument`], [`RequestTrace::in_scope`]).
    static RECORDING: Option<std::sync::Arc<tracer::Recording>>;
}

/// What makes a request's OpenTelemetry span, if anything does (nothing without `otel`).
#[cfg(feature = "otel")]
pub(crate) type TracerRef<'a> = Option<&'a Tracer>;
/// What makes a request's OpenTelemetry span, if anything does (nothing without `otel`).
#[cfg(not(feature = "otel"))]
pub(crate) type TracerRef<'a> = Option<&'a std::convert::Infallible>;

impl RequestTrace {
    /// The trace of an incoming message, whose caller's context is the message's own `_meta`
    /// or else the transport's (`transport`, only called when needed: over HTTP, the
    /// headers'). It is read only when something wants it: the log, or the tracer. A batch
    /// (2025-03-26) is one span, `batch`, with none of a single request's attributes.
    pub(crate) fn start(
        tracer: TracerRef<'_>,
        message: &Message,
        principal: &str,
        transport: impl FnOnce() -> Option<TraceContext>,
    ) -> RequestTrace {
        let span = log_span(message, principal);
        let traced = tracer.is_some();
        let caller = if traced || !span.is_disabled() { of_message(message, transport) } else { None };
        if !span.is_disabled() {
            if let (Message::One(_), Some(request)) = (message, message.requests().next()) {
                span.record("jsonrpc.request.id", tracing::field::display(&request.id));
            }
            if let Some(caller) = &caller {
                span.record("trace_id", caller.parent.trace_id.as_str());
                span.record("parent_span_id", caller.parent.parent_id.as_str());
            }
        }
        #[cfg(feature = "otel")]
        let (context, recording) = otel::start(tracer, message, principal, caller.as_ref());
        RequestTrace {
            span,
            #[cfg(feature = "otel")]
            context,
            #[cfg(feature = "otel")]
            recording,
        }
    }

    /// The trace of the request running now, to carry onto another task or thread.
    pub(crate) fn current() -> RequestTrace {
        RequestTrace {
            span: Span::current(),
            #[cfg(feature = "otel")]
            context: opentelemetry::Context::current(),
            #[cfg(feature = "otel")]
            recording: RECORDING.try_with(Clone::clone).ok().flatten(),
        }
    }

    /// The request's session (an HTTP transport's): `mcp.session.id`.
    #[cfg(feature = "http")]
    pub(crate) fn session(&self, id: &str) {
        self.span.record("mcp.session.id", id);
        #[cfg(feature = "otel")]
        otel::set_session(self.recording.as_deref(), id);
    }

    /// Runs `f` inside the trace.
    pub(crate) fn in_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        #[cfg(feature = "otel")]
        {
            let _attached = self.context.clone().attach();
            RECORDING.sync_scope(self.recording.clone(), || self.span.in_scope(f))
        }
        #[cfg(not(feature = "otel"))]
        self.span.in_scope(f)
    }

    /// `future`, run inside the trace each time it is polled.
    pub(crate) fn instrument<F: Future>(self, future: F) -> impl Future<Output = F::Output> {
        let future = tracing::Instrument::instrument(future, self.span);
        #[cfg(feature = "otel")]
        let future =
            RECORDING.scope(self.recording, opentelemetry::context::FutureExt::with_context(future, self.context));
        future
    }
}

/// A request's `tracing` span, for the log: its method, JSON-RPC id, the id of the principal
/// it runs as (never a credential) and the caller's trace. What is known once it is answered
/// is added by [`annotate`]; the transport adds `mcp.session.id`.
fn log_span(message: &Message, principal: &str) -> Span {
    use tracing::field::Empty;
    match message {
        Message::Batch(_) => tracing::info_span!(target: REQUEST_SPAN_TARGET, "mcp.request", batch = true, principal),
        Message::One(_) => {
            let (name, unknown) = names(message);
            let method = unknown.unwrap_or(name);
            tracing::info_span!(
                target: REQUEST_SPAN_TARGET,
                "mcp.request",
                mcp.method.name = method,
                mcp.protocol.version = Empty,
                mcp.session.id = Empty,
                mcp.resource.uri = Empty,
                jsonrpc.request.id = Empty,
                gen_ai.operation.name = Empty,
                gen_ai.tool.name = Empty,
                gen_ai.prompt.name = Empty,
                error.type = Empty,
                rpc.response.status_code = Empty,
                network.transport = Empty,
                principal,
                trace_id = Empty,
                parent_span_id = Empty,
            )
        }
    }
}

/// A single message's span name, which is also its `mcp.method.name` unless the method is
/// unknown (the second item, then). A method the table does not know is
/// a client's free text: the name stays bounded (`_OTHER`, as the conventions name unknown
/// HTTP methods), and the attribute keeps at most the first [`UNKNOWN_METHOD_BYTES`] of it.
fn names(message: &Message) -> (&'static str, Option<&str>) {
    match message.method() {
        None => ("message", None),
        Some(Method::Other(raw)) => ("_OTHER", Some(shortened(raw))),
        Some(known) => (known.traits().name, None),
    }
}

/// The most of an unknown method's name a span keeps.
const UNKNOWN_METHOD_BYTES: usize = 64;

/// `raw` cut to [`UNKNOWN_METHOD_BYTES`] at a character boundary.
fn shortened(raw: &str) -> &str {
    let mut end = raw.len().min(UNKNOWN_METHOD_BYTES);
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    &raw[..end]
}

/// Adds to the running request's spans what its answer tells: the version it ran at, its
/// transport, the tool or prompt the layer found (which also names the span), the resource
/// it read, and the error, if any (the span's status too). A batch's spans take none of it.
pub(crate) fn annotate(operation: &Operation<'_>) {
    let span = Span::current();
    if !span.is_disabled() {
        annotate_log(&span, operation);
    }
    #[cfg(feature = "otel")]
    otel::annotate(operation);
}

/// [`annotate`] for the `tracing` span: its fields, which a batch's span does not declare
/// (recording them there does nothing).
fn annotate_log(span: &Span, operation: &Operation<'_>) {
    span.record("mcp.protocol.version", operation.version.as_str());
    if let Some(transport) = operation.transport {
        span.record("network.transport", transport.as_str());
    }
    if let Some((kind, name)) = operation.target {
        span.record(if kind == Primitive::Prompt { "gen_ai.prompt.name" } else { "gen_ai.tool.name" }, name);
    }
    if *operation.method == Method::ToolsCall {
        span.record("gen_ai.operation.name", "execute_tool");
    }
    if let Some(uri) = operation.resource_uri {
        span.record("mcp.resource.uri", uri);
    }
    match operation.error {
        Some(ErrorType::Code(code)) => {
            let code = code.to_string();
            span.record("error.type", code.as_str());
            span.record("rpc.response.status_code", code.as_str());
        }
        Some(ErrorType::Tool) => {
            span.record("error.type", "tool_error");
        }
        None => {}
    }
}

#[cfg(feature = "otel")]
mod otel {
    use super::RECORDING;
    use super::request_span::RequestError;
    use super::tracer::{Recording, Tracer};
    use super::{TraceContext, names};
    use crate::signals::{ErrorType, Operation, Transport};
    use duet_wire::message::Message;
    use duet_wire::method::Primitive;
    use opentelemetry::Context;
    use opentelemetry::propagation::{Extractor, TextMapPropagator};
    use opentelemetry::trace::{SpanContext, SpanId, Status, TraceContextExt, TraceFlags, TraceId, TraceState};
    use opentelemetry_sdk::propagation::BaggagePropagator;
    use std::sync::Arc;

    /// The caller's context as a remote parent, with its baggage.
    fn remote(caller: &TraceContext) -> Context {
        let parent = &caller.parent;
        let ids = (TraceId::from_hex(&parent.trace_id), SpanId::from_hex(&parent.parent_id));
        let (Ok(trace_id), Ok(span_id)) = ids else { return Context::new() };
        // An invalid `tracestate` is dropped, as the W3C specification asks.
        let state = caller.state.as_deref().and_then(|s| s.parse::<TraceState>().ok()).unwrap_or_default();
        let flags = TraceFlags::new(parent.flags) & TraceFlags::SAMPLED;
        let cx = Context::new().with_remote_span_context(SpanContext::new(trace_id, span_id, flags, true, state));
        match &caller.baggage {
            Some(baggage) => BaggagePropagator::new().extract_with_context(&cx, &Baggage(baggage)),
            None => cx,
        }
    }

    /// A `baggage` header as the SDK's propagator reads it.
    struct Baggage<'a>(&'a str);

    impl Extractor for Baggage<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            (key == "baggage").then_some(self.0)
        }

        fn keys(&self) -> Vec<&str> {
            vec!["baggage"]
        }
    }

    /// The context a request runs in: the caller's, with the request's span when `tracer`
    /// makes one; and the span's recording, if the sampler keeps it. The sampler decides
    /// before any attribute is made.
    pub(super) fn start(
        tracer: Option<&Tracer>,
        message: &Message,
        principal: &str,
        caller: Option<&TraceContext>,
    ) -> (Context, Option<Arc<Recording>>) {
        let parent = caller.map_or_else(Context::new, remote);
        let Some(tracer) = tracer else { return (parent, None) };
        if matches!(message, Message::Batch(_)) {
            return tracer.start(parent, "batch", |_| {});
        }
        let (method, unknown) = names(message);
        tracer.start(parent, method, |span| {
            span.unknown_method = unknown.map(str::to_owned);
            span.principal = principal.to_owned();
            span.request_id = message.requests().next().map(|request| request.id.clone());
        })
    }

    #[cfg(feature = "http")]
    pub(super) fn set_session(recording: Option<&Recording>, id: &str) {
        if let Some(recording) = recording {
            recording.update(|span| {
                if !span.is_batch() {
                    span.session_id = Some(id.to_owned());
                }
            });
        }
    }

    /// [`super::annotate`] for the request's OpenTelemetry span, if it is kept.
    pub(super) fn annotate(operation: &Operation<'_>) {
        // Outside any request's trace (a program calling the engine directly) there is none.
        let _ = RECORDING.try_with(|recording| {
            if let Some(recording) = recording {
                record(recording, operation);
            }
        });
    }

    fn record(recording: &Recording, operation: &Operation<'_>) {
        recording.update(|span| {
            if span.is_batch() {
                return;
            }
            span.protocol_version = Some(operation.version.as_str());
            span.transport = operation.transport.map(Transport::as_str);
            match operation.target {
                Some((Primitive::Prompt, name)) => span.prompt = Some(name.to_owned()),
                Some((_, name)) => span.tool = Some(name.to_owned()),
                None => {}
            }
            span.resource_uri = operation.resource_uri.map(str::to_owned);
            span.error = operation.error.map(|error| match error {
                ErrorType::Code(code) => RequestError::Code(code),
                ErrorType::Tool => RequestError::Tool,
            });
            if span.error.is_some() && span.status == Status::Unset {
                span.status = Status::error("");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn traceparent_parsing_follows_w3c() {
        let p = parse_traceparent(PARENT).expect("valid");
        assert_eq!(p.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(p.parent_id, "00f067aa0ba902b7");
        assert_eq!(p.flags, 1);
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad:?}");
        }
        let future = parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-ever");
        assert!(future.is_some(), "later versions may append fields");
    }

    #[cfg(feature = "http")]
    #[test]
    fn meta_wins_over_headers() {
        let mut headers = HeaderMap::new();
        headers
            .insert("traceparent", "00-11111111111111111111111111111111-2222222222222222-00".parse().expect("ascii"));
        let with_meta = Message::from(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": {"traceparent": PARENT, "tracestate": "k=v"}}}),
        );
        let cx = of_message(&with_meta, || from_headers(&headers)).expect("context");
        assert_eq!(cx.parent.parent_id, "00f067aa0ba902b7");
        assert_eq!(cx.state.as_deref(), Some("k=v"));
        let without = Message::from(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}));
        assert_eq!(
            of_message(&without, || from_headers(&headers)).map(|c| c.parent.parent_id),
            Some("2222222222222222".into())
        );
        assert_eq!(of_message(&without, || None), None);
    }
}
