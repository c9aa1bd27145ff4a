//! W3C trace context (`traceparent`, `tracestate`, `baggage`) carried into each request's
//! `tracing` span (on every transport), so a tool call shows up as one trace from host to
//! backend. The context comes from the request's `_meta` (where MCP reserves the keys) or
//! else from the HTTP headers. The span is the one the OpenTelemetry semantic conventions
//! for MCP describe: its name and attributes are theirs.
//!
//! Every request span records `trace_id` and `parent_span_id`, so logs correlate with
//! the caller's trace in any subscriber. With the `otel` feature the context also becomes
//! the OpenTelemetry parent of the span (through `tracing-opentelemetry`): a program that
//! installs an OpenTelemetry layer exports the request, and everything a handler does
//! inside it, as children of the caller's span.

use crate::message::{Incoming, Message, Meta, Notification, Request};
use crate::method::{Method, Primitive};
use crate::signals::{ErrorType, Operation};
#[cfg(feature = "http")]
use http::HeaderMap;
use serde_json::Value;
use tracing::Span;

/// A valid `traceparent` (version 00 layout; later versions are read the same way, as
/// the specification asks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent {
    /// 32 lowercase hex digits, not all zero.
    pub trace_id: String,
    /// 16 lowercase hex digits, not all zero: the caller's span.
    pub parent_id: String,
    pub flags: u8,
}

/// A trace context: the parent, the vendor `tracestate` and the W3C `baggage`, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub parent: TraceParent,
    pub state: Option<String>,
    pub baggage: Option<String>,
}

fn hex_field(field: &str, len: usize) -> Option<String> {
    let ok = field.len() == len && field.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    (ok && field.bytes().any(|b| b != b'0')).then(|| field.to_owned())
}

/// Parses a `traceparent` value; `None` when it is invalid (and must be ignored).
pub fn parse_traceparent(value: &str) -> Option<TraceParent> {
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
pub fn from_meta(meta: &Meta) -> Option<TraceContext> {
    let parent = parse_traceparent(meta.other.get("traceparent")?.as_str()?)?;
    let text = |key: &str| meta.other.get(key).and_then(Value::as_str).map(str::to_owned);
    Some(TraceContext { parent, state: text("tracestate"), baggage: text("baggage") })
}

/// The trace context of HTTP headers.
#[cfg(feature = "http")]
pub fn from_headers(headers: &HeaderMap) -> Option<TraceContext> {
    let parent = parse_traceparent(headers.get("traceparent")?.to_str().ok()?)?;
    let text = |key: &str| headers.get(key).and_then(|v| v.to_str().ok()).map(str::to_owned);
    Some(TraceContext { parent, state: text("tracestate"), baggage: text("baggage") })
}

/// The trace context of an incoming message: its own `_meta` first (the first request or
/// notification of a batch), then the transport's (`transport`, only called when needed:
/// over HTTP, the headers').
pub fn of_message(message: &Message, transport: impl FnOnce() -> Option<TraceContext>) -> Option<TraceContext> {
    let first = message.items().iter().find_map(|m| match m {
        Incoming::Request(Request { meta, .. }) | Incoming::Notification(Notification { meta, .. }) => Some(meta),
        _ => None,
    });
    first.and_then(from_meta).or_else(transport)
}

/// The span a request runs in, named and described as the OpenTelemetry conventions for MCP
/// ask (`{mcp.method.name} {target}`, kind server): its method, its JSON-RPC id, the id of
/// the principal it runs as (never a credential), and the caller's trace as its parent. What
/// is known once it is answered (version, tool, error, transport) is added by [`annotate`];
/// the transport adds `mcp.session.id`. A batch (2025-03-26) is one span, `batch`, with
/// none of a single request's attributes.
pub fn request_span(message: &Message, principal: &str, transport: impl FnOnce() -> Option<TraceContext>) -> Span {
    use tracing::field::Empty;
    let span = match message {
        Message::Batch(_) => tracing::info_span!("mcp.request", otel.name = "batch", otel.kind = "server", principal),
        Message::One(_) => {
            // A method the table does not know is a client's free text: the span's name
            // stays bounded (`_OTHER`, as the conventions name unknown HTTP methods), and the
            // attribute keeps at most the first UNKNOWN_METHOD_BYTES of it.
            let (name, method) = match message.method() {
                None => ("message", "message"),
                Some(Method::Other(raw)) => ("_OTHER", shortened(raw)),
                Some(known) => (known.as_str(), known.as_str()),
            };
            tracing::info_span!(
                "mcp.request",
                otel.name = name,
                otel.kind = "server",
                otel.status_code = Empty,
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
    };
    // No subscriber wants the span: the caller's context is not even read.
    if span.is_disabled() {
        return span;
    }
    if let (Message::One(_), Some(request)) = (message, message.requests().next()) {
        span.record("jsonrpc.request.id", tracing::field::display(&request.id));
    }
    if let Some(context) = &of_message(message, transport) {
        span.record("trace_id", context.parent.trace_id.as_str());
        span.record("parent_span_id", context.parent.parent_id.as_str());
        #[cfg(feature = "otel")]
        otel::set_parent(&span, context);
    }
    span
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

/// Adds to the request's span what its answer tells: the version it ran at, its transport,
/// the tool or prompt the layer found (which also names the span), the resource it read,
/// and the error, if any (the span's status too). The fields are those `request_span`
/// declared; on a batch's span none are, and nothing is recorded.
pub(crate) fn annotate(span: &Span, operation: &Operation<'_>) {
    if span.is_disabled() {
        return;
    }
    span.record("mcp.protocol.version", operation.version.as_str());
    if let Some(transport) = operation.transport {
        span.record("network.transport", transport.as_str());
    }
    if let Some((kind, name)) = operation.target {
        let attribute = if kind == Primitive::Prompt { "gen_ai.prompt.name" } else { "gen_ai.tool.name" };
        span.record(attribute, name);
        let span_name = format!("{} {name}", operation.method.as_str());
        // A span already entered has started in OpenTelemetry: `otel.name` no longer renames it.
        #[cfg(feature = "otel")]
        otel::rename(span, span_name.clone());
        span.record("otel.name", span_name);
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
        None => return,
    }
    span.record("otel.status_code", "error");
}

#[cfg(feature = "otel")]
mod otel {
    use super::TraceContext;
    use opentelemetry::propagation::{Extractor, TextMapPropagator};
    use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// A context's W3C fields as the SDK's propagators read them: the parent in the version 00
    /// layout (as a reader of that version sees any later one).
    struct Carrier {
        traceparent: String,
        tracestate: Option<String>,
        baggage: Option<String>,
    }

    impl Extractor for Carrier {
        fn get(&self, key: &str) -> Option<&str> {
            match key {
                "traceparent" => Some(&self.traceparent),
                "tracestate" => self.tracestate.as_deref(),
                "baggage" => self.baggage.as_deref(),
                _ => None,
            }
        }

        fn keys(&self) -> Vec<&str> {
            vec!["traceparent", "tracestate", "baggage"]
        }
    }

    /// Renames the OpenTelemetry span of `span`, started or not.
    pub(super) fn rename(span: &tracing::Span, name: String) {
        use opentelemetry::trace::TraceContextExt;
        span.context().span().update_name(name);
    }

    /// The caller's span becomes the remote parent of `span`, and its baggage the baggage of
    /// the context the request runs in.
    pub(super) fn set_parent(span: &tracing::Span, context: &TraceContext) {
        let parent = &context.parent;
        let carrier = Carrier {
            traceparent: format!("00-{}-{}-{:02x}", parent.trace_id, parent.parent_id, parent.flags),
            tracestate: context.state.clone(),
            baggage: context.baggage.clone(),
        };
        let cx = TraceContextPropagator::new().extract(&carrier);
        let cx = BaggagePropagator::new().extract_with_context(&cx, &carrier);
        let _ = span.set_parent(cx);
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
