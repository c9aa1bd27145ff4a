//! A request's span as plain data: the fields the semantic conventions for MCP give it, each
//! where duet learnt it, and what a handler added through the OpenTelemetry API. It is
//! recorded without the SDK's span (no attribute is a `KeyValue` until something asks), so
//! an exporter of its own can write it straight to the wire; [`RequestSpan::to_span_data`]
//! gives it to any of the SDK's span processors.

use duet_wire::jsonrpc::RequestId;
use duet_wire::method::Method;
use opentelemetry::trace::{Event, Link, SpanContext, SpanId, SpanKind, Status};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use std::borrow::Cow;
use std::time::SystemTime;

/// One request's span (kind server), handed to a [`super::SpanSink`] when it ends. It may
/// gain fields as the conventions do: made with [`RequestSpan::new`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestSpan {
    /// Its trace id, span id, flags and `tracestate`.
    pub context: SpanContext,
    /// The caller's span, if the caller sent one.
    pub parent_span_id: SpanId,
    /// Whether that span is the caller's (true) or one of this process.
    pub parent_is_remote: bool,
    /// When the request arrived.
    pub start: SystemTime,
    /// When it was answered.
    pub end: SystemTime,
    /// The first word of the span's name: the method's name, `_OTHER` for a method duet does
    /// not know, `message` for a response, or `batch` for a batch (which has no attributes).
    pub method: &'static str,
    /// `mcp.method.name` when `method` is `_OTHER`: the first bytes of the method as sent.
    pub unknown_method: Option<String>,
    /// The id of the principal the request ran as (never a credential).
    pub principal: String,
    /// `jsonrpc.request.id`.
    pub request_id: Option<RequestId>,
    /// `mcp.session.id`.
    pub session_id: Option<String>,
    /// `mcp.protocol.version`.
    pub protocol_version: Option<&'static str>,
    /// `network.transport`: `pipe` or `tcp`.
    pub transport: Option<&'static str>,
    /// `gen_ai.tool.name` or `gen_ai.prompt.name`, whichever the request named; the second
    /// word of the span's name.
    pub tool: Option<String>,
    /// `gen_ai.prompt.name`, as [`RequestSpan::tool`].
    pub prompt: Option<String>,
    /// `mcp.resource.uri`.
    pub resource_uri: Option<String>,
    /// `error.type` (with `rpc.response.status_code` for a JSON-RPC error).
    pub error: Option<RequestError>,
    /// What a handler set through the OpenTelemetry API, and how much of it past the limits
    /// (the SDK's default, 128 of each) was dropped.
    pub attributes: Vec<KeyValue>,
    /// The events a handler added.
    pub events: Vec<Event>,
    /// The links a handler added.
    pub links: Vec<Link>,
    /// Attributes dropped past the limit.
    pub dropped_attributes: u32,
    /// Events dropped past the limit.
    pub dropped_events: u32,
    /// Links dropped past the limit.
    pub dropped_links: u32,
    /// The span's status: unset, or an error with its description.
    pub status: Status,
    /// The name a handler gave the span, in place of duet's.
    pub renamed: Option<Cow<'static, str>>,
}

/// How a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestError {
    /// A JSON-RPC error, by its code.
    Code(i64),
    /// A tool result marked `isError`.
    Tool,
}

impl RequestSpan {
    /// A span of `method` begun now under `parent` (an invalid context when there is none),
    /// whose attributes are still to be learnt.
    pub fn new(context: SpanContext, parent: &SpanContext, method: &'static str) -> RequestSpan {
        let start = opentelemetry::time::now();
        RequestSpan {
            context,
            parent_span_id: if parent.is_valid() { parent.span_id() } else { SpanId::INVALID },
            parent_is_remote: parent.is_valid() && parent.is_remote(),
            start,
            end: start,
            method,
            unknown_method: None,
            principal: String::new(),
            request_id: None,
            session_id: None,
            protocol_version: None,
            transport: None,
            tool: None,
            prompt: None,
            resource_uri: None,
            error: None,
            attributes: Vec::new(),
            events: Vec::new(),
            links: Vec::new(),
            dropped_attributes: 0,
            dropped_events: 0,
            dropped_links: 0,
            status: Status::Unset,
            renamed: None,
        }
    }

    /// Whether it is a batch's span, which takes none of a request's attributes.
    pub fn is_batch(&self) -> bool {
        self.method == "batch"
    }

    /// The span's name in its parts: `{mcp.method.name} {target}` (`tools/call echo`), the
    /// method alone when there is no target, or the name a handler gave it.
    pub fn name(&self) -> (&str, Option<&str>) {
        match &self.renamed {
            Some(name) => (name, None),
            None => (self.method, self.tool.as_deref().or(self.prompt.as_deref())),
        }
    }

    /// Calls `f` with each of the conventions' attributes the span has, as text: the
    /// [shared](RequestSpan::shared_conventions) ones, then the
    /// [request's own](RequestSpan::own_conventions). The handler's
    /// [`RequestSpan::attributes`] come after.
    pub fn conventions(&self, mut f: impl FnMut(&'static str, &str)) {
        self.shared_conventions(&mut f);
        self.own_conventions(f);
    }

    /// The conventions' attributes that many requests share, as text, always in this order
    /// and drawn only from the method, the principal, the version and the transport:
    /// `mcp.method.name`, `principal`, `mcp.protocol.version`, `network.transport`,
    /// `gen_ai.operation.name`. An exporter may encode them once for a run of spans.
    pub fn shared_conventions(&self, mut f: impl FnMut(&'static str, &str)) {
        if self.is_batch() {
            return;
        }
        f("mcp.method.name", self.unknown_method.as_deref().unwrap_or(self.method));
        f("principal", &self.principal);
        let known = [
            ("mcp.protocol.version", self.protocol_version),
            ("network.transport", self.transport),
            ("gen_ai.operation.name", (self.method == Method::ToolsCall.as_str()).then_some("execute_tool")),
        ];
        each_present(known, &mut f);
    }

    /// The conventions' attributes of this request alone, as text: `jsonrpc.request.id`,
    /// `mcp.session.id`, `gen_ai.tool.name` or `gen_ai.prompt.name`, `mcp.resource.uri`,
    /// `error.type` and `rpc.response.status_code`, those it has.
    pub fn own_conventions(&self, mut f: impl FnMut(&'static str, &str)) {
        if self.is_batch() {
            return;
        }
        match &self.request_id {
            Some(RequestId::Int(id)) => f("jsonrpc.request.id", itoa::Buffer::new().format(*id)),
            Some(id) => f("jsonrpc.request.id", &id.to_string()),
            None => {}
        }
        let known = [
            ("mcp.session.id", self.session_id.as_deref()),
            ("gen_ai.tool.name", self.tool.as_deref()),
            ("gen_ai.prompt.name", self.prompt.as_deref()),
            ("mcp.resource.uri", self.resource_uri.as_deref()),
        ];
        each_present(known, &mut f);
        match self.error {
            Some(RequestError::Code(code)) => {
                let mut digits = itoa::Buffer::new();
                let code = digits.format(code);
                f("error.type", code);
                f("rpc.response.status_code", code);
            }
            Some(RequestError::Tool) => f("error.type", "tool_error"),
            None => {}
        }
    }

    /// The span as the SDK's span processors take it, in the instrumentation scope `scope`.
    pub fn to_span_data(&self, scope: InstrumentationScope) -> SpanData {
        let name = match self.name() {
            (name, None) => name.to_owned(),
            (method, Some(target)) => format!("{method} {target}"),
        };
        let mut attributes = Vec::with_capacity(10 + self.attributes.len());
        self.conventions(|key, value| attributes.push(KeyValue::new(key, value.to_owned())));
        attributes.extend_from_slice(&self.attributes);
        let mut events = SpanEvents::default();
        (events.events, events.dropped_count) = (self.events.clone(), self.dropped_events);
        let mut links = SpanLinks::default();
        (links.links, links.dropped_count) = (self.links.clone(), self.dropped_links);
        SpanData {
            span_context: self.context.clone(),
            parent_span_id: self.parent_span_id,
            parent_span_is_remote: self.parent_is_remote,
            span_kind: SpanKind::Server,
            name: name.into(),
            start_time: self.start,
            end_time: self.end,
            attributes,
            dropped_attributes_count: self.dropped_attributes,
            events,
            links,
            status: self.status.clone(),
            instrumentation_scope: scope,
        }
    }
}

/// Calls `f` with each of `attributes` that has a value.
fn each_present<const N: usize>(attributes: [(&'static str, Option<&str>); N], f: &mut impl FnMut(&'static str, &str)) {
    for (key, value) in attributes {
        if let Some(value) = value {
            f(key, value);
        }
    }
}
