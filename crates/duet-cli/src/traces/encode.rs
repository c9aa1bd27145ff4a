//! Spans as the bytes of an OTLP `ExportTraceServiceRequest`, written straight from the
//! SDK's `SpanData` or from a request's span as duet records it (`duet::trace::RequestSpan`,
//! whose attributes are never `KeyValue`s) with prost's encoding primitives: each span as it
//! ends ([`EncodedSpans::push`]), and a request around the buffers of a batch
//! ([`export_request`]), each span's bytes copied once, from its buffer into the request.
//!
//! Why it exists: `opentelemetry-otlp` first turns every span into prost's generated structs
//! (an owned `String` or `Vec` for each id, name, key and value) and then encodes those.
//! Under callgrind that was about two thirds of what an exported span cost duet
//! (`docs/operations.md`). The bytes here are the ones prost writes for those structs, field
//! for field and in the same order (the tests compare them with `opentelemetry-proto`'s own
//! transform), without the structs in between.
//!
//! A nested message is written in place after a one-byte length, which is widened (the body
//! moved along) only when the message turns out to be 128 bytes or longer. No span,
//! attribute or value gets an allocation of its own.

use duet::trace::RequestSpan;
use opentelemetry::trace::{Event, Link, SpanContext, SpanId, SpanKind, Status};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SpanData;
use prost::bytes::BufMut;
use prost::encoding::{WireType, encode_varint, encoded_len_varint};
use std::time::{SystemTime, UNIX_EPOCH};

/// The `resource` and `schema_url` fields of every `ResourceSpans`, encoded once: the SDK
/// gives the exporter its resource when the provider is built.
#[derive(Debug)]
pub struct EncodedResource {
    fields: Vec<u8>,
    schema_url: Vec<u8>,
}

impl Default for EncodedResource {
    /// The empty resource, as the exporter has it until the SDK sets one.
    fn default() -> EncodedResource {
        EncodedResource::new(&Resource::builder_empty().build())
    }
}

impl EncodedResource {
    pub fn new(resource: &Resource) -> EncodedResource {
        let mut fields = Vec::new();
        message(&mut fields, 1, |buf| {
            for (key, value) in resource.iter() {
                key_value(buf, 1, key.as_str(), value);
            }
        });
        let mut schema_url = Vec::new();
        string(&mut schema_url, 3, resource.schema_url().unwrap_or_default());
        EncodedResource { fields, schema_url }
    }
}

/// Spans encoded as they ended, grouped by instrumentation scope: a thread's buffer, whose
/// spans go into the `ResourceSpans` of an export with those of the other buffers of its
/// batch ([`export_request`]). The requests' scope (`duet::trace::scope`) comes
/// first, so that a request's span goes in without its scope being looked for; the others
/// follow in the order each first appeared.
#[derive(Debug)]
pub struct EncodedSpans {
    /// Each scope, and the `spans` fields of its `ScopeSpans`, in the order they came.
    scopes: Vec<(InstrumentationScope, Vec<u8>)>,
    len: usize,
    shared: SharedAttributes,
}

impl Default for EncodedSpans {
    fn default() -> EncodedSpans {
        EncodedSpans { scopes: vec![(duet::trace::scope(), Vec::new())], len: 0, shared: SharedAttributes::default() }
    }
}

impl EncodedSpans {
    /// The number of spans.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes the spans take, encoded.
    pub fn encoded_len(&self) -> usize {
        self.scopes.iter().map(|(_, spans)| spans.len()).sum()
    }

    /// Encodes `span` after the others of its scope.
    pub fn push(&mut self, scope: &InstrumentationScope, span: &impl SpanFields) {
        let index = self.scope_index(scope);
        self.push_at(index, span);
    }

    /// Encodes a request's span after the others of the requests' scope.
    pub fn push_request(&mut self, span: &RequestSpan) {
        self.push_at(0, span);
    }

    fn push_at(&mut self, index: usize, span: &impl SpanFields) {
        message(&mut self.scopes[index].1, 2, |buf| self::span(buf, span, &mut self.shared));
        self.len += 1;
    }

    /// The bytes the spans may take before the buffer grows.
    #[cfg(test)]
    pub fn room(&self) -> usize {
        self.scopes.iter().map(|(_, spans)| spans.capacity()).sum()
    }

    /// Forgets every span, keeping the room they took for the next ones.
    pub fn clear(&mut self) {
        self.scopes.iter_mut().for_each(|(_, spans)| spans.clear());
        self.len = 0;
    }

    /// Where the spans of `scope` are, a place made for them if they are the first.
    fn scope_index(&mut self, scope: &InstrumentationScope) -> usize {
        match self.scopes.iter().position(|(known, _)| known == scope) {
            Some(index) => index,
            None => {
                self.scopes.push((scope.clone(), Vec::new()));
                self.scopes.len() - 1
            }
        }
    }
}

/// The attributes a request's span shares with many others
/// (`RequestSpan::shared_conventions`: the method, the principal, the version and the
/// transport), as they were last encoded and the values they were encoded from: a span that
/// has the same values takes the bytes as they are, rather than five attributes written again.
#[derive(Debug, Default)]
pub struct SharedAttributes {
    values: Vec<(&'static str, String)>,
    encoded: Vec<u8>,
}

impl SharedAttributes {
    /// Writes the shared attributes of `span` as span attributes (field 9).
    fn write(&mut self, buf: &mut Vec<u8>, span: &RequestSpan) {
        let (mut seen, mut same) = (0, true);
        span.shared_conventions(|key, value| {
            same &= self.values.get(seen).is_some_and(|(k, v)| *k == key && v == value);
            seen += 1;
        });
        if !same || seen != self.values.len() {
            self.values.clear();
            self.encoded.clear();
            span.shared_conventions(|key, value| {
                self.values.push((key, value.to_owned()));
                string_attribute(&mut self.encoded, 9, key, value);
            });
        }
        buf.extend_from_slice(&self.encoded);
    }
}

/// Appends to `buf` the request that exports the spans of `batch`: one `ResourceSpans`,
/// holding one `ScopeSpans` per instrumentation scope (in the order each first appears),
/// with the spans of that scope from every buffer. Every length is counted before its
/// message is written, so the spans, most of the request, are copied once and never moved
/// after.
pub fn export_request(buf: &mut Vec<u8>, resource: &EncodedResource, batch: &[EncodedSpans]) {
    let mut scopes: Vec<ScopeSpans> = Vec::new();
    for (scope, encoded) in batch.iter().flat_map(|spans| &spans.scopes).filter(|(_, encoded)| !encoded.is_empty()) {
        match scopes.iter_mut().find(|parts| parts.of == scope) {
            Some(parts) => parts.spans.push(encoded),
            None => scopes.push(ScopeSpans::new(scope, encoded)),
        }
    }
    let inner: usize = scopes.iter().map(|parts| field_len(2, parts.len())).sum();
    let resource_len = resource.fields.len() + inner + resource.schema_url.len();
    buf.reserve(field_len(1, resource_len));
    length_delimited(buf, 1, resource_len);
    buf.extend_from_slice(&resource.fields);
    for parts in &scopes {
        length_delimited(buf, 2, parts.len());
        buf.extend_from_slice(&parts.scope);
        parts.spans.iter().for_each(|spans| buf.extend_from_slice(spans));
        buf.extend_from_slice(&parts.schema_url);
    }
    buf.extend_from_slice(&resource.schema_url);
}

/// A `ScopeSpans` of a request in its parts: the scope field, the spans of each buffer, the
/// schema URL field.
struct ScopeSpans<'a> {
    of: &'a InstrumentationScope,
    scope: Vec<u8>,
    spans: Vec<&'a [u8]>,
    schema_url: Vec<u8>,
}

impl<'a> ScopeSpans<'a> {
    fn new(of: &'a InstrumentationScope, spans: &'a [u8]) -> ScopeSpans<'a> {
        let mut parts = ScopeSpans { of, scope: Vec::new(), spans: vec![spans], schema_url: Vec::new() };
        message(&mut parts.scope, 1, |buf| instrumentation_scope(buf, of));
        string(&mut parts.schema_url, 3, of.schema_url().unwrap_or_default());
        parts
    }

    fn len(&self) -> usize {
        self.scope.len() + self.spans.iter().map(|spans| spans.len()).sum::<usize>() + self.schema_url.len()
    }
}

/// The key and length of a length-delimited field whose `len` bytes come next.
fn length_delimited(buf: &mut Vec<u8>, tag: u32, len: usize) {
    key(buf, tag, WireType::LengthDelimited);
    varint(buf, len as u64);
}

/// The bytes a length-delimited field of `len` bytes takes, its key and length included.
fn field_len(tag: u32, len: usize) -> usize {
    encoded_len_varint(u64::from(tag << 3 | WireType::LengthDelimited as u32)) + encoded_len_varint(len as u64) + len
}

/// `opentelemetry.proto.common.v1.InstrumentationScope`.
fn instrumentation_scope(buf: &mut Vec<u8>, scope: &InstrumentationScope) {
    string(buf, 1, scope.name());
    string(buf, 2, scope.version().unwrap_or_default());
    attributes(buf, 3, scope.attributes());
}

/// What [`span`] reads of a span, whichever kind it is.
pub trait SpanFields {
    fn context(&self) -> &SpanContext;
    fn parent(&self) -> (SpanId, bool);
    /// The name, in one or two parts (joined by a space).
    fn name(&self) -> (&str, Option<&str>);
    fn kind(&self) -> &SpanKind;
    fn times(&self) -> (SystemTime, SystemTime);
    /// Writes each attribute as field 9 of a span; `shared` keeps what a run of spans has in
    /// common.
    fn attributes(&self, buf: &mut Vec<u8>, shared: &mut SharedAttributes);
    fn dropped_attributes(&self) -> u32;
    fn events(&self) -> (&[Event], u32);
    fn links(&self) -> (&[Link], u32);
    fn status(&self) -> &Status;
}

impl SpanFields for SpanData {
    fn context(&self) -> &SpanContext {
        &self.span_context
    }
    fn parent(&self) -> (SpanId, bool) {
        (self.parent_span_id, self.parent_span_is_remote)
    }
    fn name(&self) -> (&str, Option<&str>) {
        (&self.name, None)
    }
    fn kind(&self) -> &SpanKind {
        &self.span_kind
    }
    fn times(&self) -> (SystemTime, SystemTime) {
        (self.start_time, self.end_time)
    }
    fn attributes(&self, buf: &mut Vec<u8>, _shared: &mut SharedAttributes) {
        attributes(buf, 9, &self.attributes);
    }
    fn dropped_attributes(&self) -> u32 {
        self.dropped_attributes_count
    }
    fn events(&self) -> (&[Event], u32) {
        (&self.events.events, self.events.dropped_count)
    }
    fn links(&self) -> (&[Link], u32) {
        (&self.links.links, self.links.dropped_count)
    }
    fn status(&self) -> &Status {
        &self.status
    }
}

/// A request's span: the conventions' attributes come straight from its fields.
impl SpanFields for RequestSpan {
    fn context(&self) -> &SpanContext {
        &self.context
    }
    fn parent(&self) -> (SpanId, bool) {
        (self.parent_span_id, self.parent_is_remote)
    }
    fn name(&self) -> (&str, Option<&str>) {
        RequestSpan::name(self)
    }
    fn kind(&self) -> &SpanKind {
        &SpanKind::Server
    }
    fn times(&self) -> (SystemTime, SystemTime) {
        (self.start, self.end)
    }
    fn attributes(&self, buf: &mut Vec<u8>, shared: &mut SharedAttributes) {
        shared.write(buf, self);
        self.own_conventions(|key, value| string_attribute(buf, 9, key, value));
        attributes(buf, 9, &self.attributes);
    }
    fn dropped_attributes(&self) -> u32 {
        self.dropped_attributes
    }
    fn events(&self) -> (&[Event], u32) {
        (&self.events, self.dropped_events)
    }
    fn links(&self) -> (&[Link], u32) {
        (&self.links, self.dropped_links)
    }
    fn status(&self) -> &Status {
        &self.status
    }
}

/// `opentelemetry.proto.trace.v1.Span`.
fn span(buf: &mut Vec<u8>, span: &impl SpanFields, shared: &mut SharedAttributes) {
    let context = span.context();
    ids(buf, context);
    let (parent, parent_is_remote) = span.parent();
    if parent != SpanId::INVALID {
        bytes(buf, 4, &parent.to_bytes());
    }
    match span.name() {
        (name, None) => string(buf, 5, name),
        (first, Some(second)) => {
            length_delimited(buf, 5, first.len() + 1 + second.len());
            buf.extend_from_slice(first.as_bytes());
            buf.push(b' ');
            buf.extend_from_slice(second.as_bytes());
        }
    }
    // The SDK's kinds, as the protocol numbers them (0 is "unspecified").
    let kind = match span.kind() {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    };
    uint(buf, 6, kind);
    let (start, end) = span.times();
    fixed64(buf, 7, nanos(start));
    fixed64(buf, 8, nanos(end));
    span.attributes(buf, shared);
    uint(buf, 10, span.dropped_attributes().into());
    let (events, dropped_events) = span.events();
    for event in events {
        message(buf, 11, |buf| {
            fixed64(buf, 1, nanos(event.timestamp));
            string(buf, 2, &event.name);
            attributes(buf, 3, &event.attributes);
            uint(buf, 4, event.dropped_attributes_count.into());
        });
    }
    uint(buf, 12, dropped_events.into());
    let (links, dropped_links) = span.links();
    for link in links {
        message(buf, 13, |buf| {
            ids(buf, &link.span_context);
            attributes(buf, 4, &link.attributes);
            uint(buf, 5, link.dropped_attributes_count.into());
            flags(buf, 6, &link.span_context, link.span_context.is_remote());
        });
    }
    uint(buf, 14, dropped_links.into());
    message(buf, 15, |buf| match span.status() {
        Status::Unset => {}
        Status::Ok => uint(buf, 3, 1),
        Status::Error { description } => {
            string(buf, 2, description);
            uint(buf, 3, 2);
        }
    });
    flags(buf, 16, context, parent_is_remote);
}

/// Fields 1 to 3 of a span and of a link: trace id, span id, `tracestate`.
fn ids(buf: &mut Vec<u8>, context: &SpanContext) {
    bytes(buf, 1, &context.trace_id().to_bytes());
    bytes(buf, 2, &context.span_id().to_bytes());
    string(buf, 3, &context.trace_state().header());
}

/// A span's or a link's `flags`: the W3C trace flags, with bit 8 saying that whether the
/// parent (of a link: the linked span) is remote is known, and bit 9 that it is.
fn flags(buf: &mut Vec<u8>, tag: u32, context: &SpanContext, remote: bool) {
    let flags = u32::from(context.trace_flags().to_u8()) | 0x100 | if remote { 0x200 } else { 0 };
    key(buf, tag, WireType::ThirtyTwoBit);
    buf.put_u32_le(flags);
}

fn attributes<'a>(buf: &mut Vec<u8>, tag: u32, attributes: impl IntoIterator<Item = &'a KeyValue>) {
    for attribute in attributes {
        key_value(buf, tag, attribute.key.as_str(), &attribute.value);
    }
}

/// An `opentelemetry.proto.common.v1.KeyValue` field.
fn key_value(buf: &mut Vec<u8>, tag: u32, key: &str, value: &Value) {
    match value {
        Value::String(text) => string_attribute(buf, tag, key, text.as_str()),
        value => message(buf, tag, |buf| key_value_body(buf, key, |buf| any_value(buf, value))),
    }
}

/// A `KeyValue` field whose value is a string. Most attributes are short strings, written in
/// four copies, two of them four fixed bytes, as every length then takes one byte.
fn string_attribute(buf: &mut Vec<u8>, tag: u32, key: &str, value: &str) {
    // The key's field, then the `AnyValue` field: its key and length, and its string field.
    let body = 2 + key.len() + 2 + 2 + value.len();
    if tag < 16 && !key.is_empty() && body < 0x80 {
        buf.reserve(2 + body);
        buf.extend_from_slice(&[(tag << 3) as u8 | 2, body as u8, 1 << 3 | 2, key.len() as u8]);
        buf.extend_from_slice(key.as_bytes());
        buf.extend_from_slice(&[2 << 3 | 2, (2 + value.len()) as u8, 1 << 3 | 2, value.len() as u8]);
        buf.extend_from_slice(value.as_bytes());
        return;
    }
    message(buf, tag, |buf| key_value_body(buf, key, |buf| string_value(buf, value)));
}

/// The fields of a `KeyValue`: its key, and its `AnyValue` written by `any_value`.
fn key_value_body(buf: &mut Vec<u8>, key: &str, any_value: impl FnOnce(&mut Vec<u8>)) {
    string(buf, 1, key);
    message(buf, 2, any_value);
}

/// The `string_value` of an `AnyValue`.
fn string_value(buf: &mut Vec<u8>, value: &str) {
    bytes(buf, 1, value.as_bytes());
}

/// `opentelemetry.proto.common.v1.AnyValue`: one field of its `oneof`, written even when it
/// holds the default (an empty string, `false`, 0). A kind of value newer than this code
/// is written as an empty `AnyValue`.
fn any_value(buf: &mut Vec<u8>, value: &Value) {
    match value {
        Value::String(v) => string_value(buf, v.as_str()),
        Value::Bool(v) => int_value(buf, 2, u64::from(*v)),
        Value::I64(v) => int_value(buf, 3, *v as u64),
        Value::F64(v) => double_value(buf, *v),
        Value::Array(array) => message(buf, 5, |buf| match array {
            Array::Bool(vs) => vs.iter().for_each(|v| message(buf, 1, |buf| int_value(buf, 2, u64::from(*v)))),
            Array::I64(vs) => vs.iter().for_each(|v| message(buf, 1, |buf| int_value(buf, 3, *v as u64))),
            Array::F64(vs) => vs.iter().for_each(|v| message(buf, 1, |buf| double_value(buf, *v))),
            Array::String(vs) => vs.iter().for_each(|v| message(buf, 1, |buf| string_value(buf, v.as_str()))),
            _ => {}
        }),
        _ => {}
    }
}

fn int_value(buf: &mut Vec<u8>, tag: u32, value: u64) {
    key(buf, tag, WireType::Varint);
    varint(buf, value);
}

fn double_value(buf: &mut Vec<u8>, value: f64) {
    key(buf, 4, WireType::SixtyFourBit);
    buf.put_f64_le(value);
}

/// A message field, its body written by `body` (an optional message is written only when
/// present, and every one a span has is).
fn message(buf: &mut Vec<u8>, tag: u32, body: impl FnOnce(&mut Vec<u8>)) {
    key(buf, tag, WireType::LengthDelimited);
    let start = buf.len();
    buf.push(0);
    body(buf);
    let len = buf.len() - start - 1;
    if len < 0x80 {
        buf[start] = len as u8;
    } else {
        let width = encoded_len_varint(len as u64);
        buf.resize(buf.len() + width - 1, 0);
        buf.copy_within(start + 1..start + 1 + len, start + width);
        encode_varint(len as u64, &mut &mut buf[start..start + width]);
    }
}

/// A `bytes` or `string` field, written even when empty.
fn bytes(buf: &mut Vec<u8>, tag: u32, value: &[u8]) {
    length_delimited(buf, tag, value.len());
    buf.extend_from_slice(value);
}

/// A `string` field, left out when empty as proto3 has it.
fn string(buf: &mut Vec<u8>, tag: u32, value: &str) {
    if !value.is_empty() {
        bytes(buf, tag, value.as_bytes());
    }
}

/// A `uint32` or enum field, left out when 0.
fn uint(buf: &mut Vec<u8>, tag: u32, value: u64) {
    if value != 0 {
        int_value(buf, tag, value);
    }
}

/// A `fixed64` field, left out when 0.
fn fixed64(buf: &mut Vec<u8>, tag: u32, value: u64) {
    if value != 0 {
        key(buf, tag, WireType::SixtyFourBit);
        buf.put_u64_le(value);
    }
}

/// A field's key: one byte below tag 16.
#[inline]
fn key(buf: &mut Vec<u8>, tag: u32, wire_type: WireType) {
    varint(buf, u64::from(tag << 3 | wire_type as u32));
}

/// A varint, with the one-byte case (most lengths, every key) written without a loop.
#[inline]
fn varint(buf: &mut Vec<u8>, value: u64) {
    if value < 0x80 {
        buf.push(value as u8);
    } else {
        encode_varint(value, buf);
    }
}

/// A time as nanoseconds since the Unix epoch; 0 before it.
fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_nanos() as u64)
}

#[cfg(test)]
pub(super) mod tests {
    use super::{EncodedResource, EncodedSpans, export_request};
    use duet::trace::{RequestError, RequestSpan};
    use duet::wire::jsonrpc::RequestId;
    use opentelemetry::trace::{Event, Link, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId};
    use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
    use prost::Message as _;
    use std::time::{Duration, UNIX_EPOCH};

    pub(in crate::traces) fn scope(name: &'static str, version: Option<&'static str>) -> InstrumentationScope {
        let scope = InstrumentationScope::builder(name);
        match version {
            Some(version) => scope
                .with_version(version)
                .with_schema_url("https://example.com/scope")
                .with_attributes([KeyValue::new("scope.attr", true)])
                .build(),
            None => scope.build(),
        }
    }

    /// A request's span as duet makes it: a server span under a remote caller, with string
    /// attributes, an error status and no events or links.
    pub(in crate::traces) fn request_span(id: u64, instrumentation_scope: InstrumentationScope) -> SpanData {
        SpanData {
            span_context: SpanContext::new(
                TraceId::from(0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736),
                SpanId::from(id),
                TraceFlags::SAMPLED,
                false,
                "vendor=value,other=x".parse().expect("tracestate"),
            ),
            parent_span_id: SpanId::from(0x00f0_67aa_0ba9_02b7),
            parent_span_is_remote: true,
            span_kind: SpanKind::Server,
            name: format!("tools/call echo {}", "é".repeat(id as usize * 40)).into(),
            start_time: UNIX_EPOCH + Duration::from_nanos(1_764_000_000_000_000_000 + id),
            end_time: UNIX_EPOCH + Duration::from_nanos(1_764_000_000_000_300_000 + id),
            attributes: vec![
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("principal", "local"),
                KeyValue::new("jsonrpc.request.id", id.to_string()),
                KeyValue::new("error.type", ""),
            ],
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::error("bad"),
            instrumentation_scope,
        }
    }

    /// A span using every field: events, links, dropped counts, every kind of value, a root
    /// without a parent, a time before the epoch.
    fn every_field() -> SpanData {
        let mut events = SpanEvents::default();
        events.events = vec![
            Event::new("exception", UNIX_EPOCH + Duration::from_nanos(1_500), vec![KeyValue::new("handled", false)], 3),
            Event::new("", UNIX_EPOCH, vec![], 0),
        ];
        events.dropped_count = 4;
        let mut links = SpanLinks::default();
        links.links = vec![Link::new(
            SpanContext::new(
                TraceId::from(0x2233_4455_6677_8899_aabb_ccdd_eeff_0011),
                SpanId::from(0x2030_4050_6070_8090),
                TraceFlags::SAMPLED,
                true,
                "vendor=link".parse().expect("tracestate"),
            ),
            vec![KeyValue::new("link.attr", "linked")],
            5,
        )];
        links.dropped_count = 6;
        let strings = vec![StringValue::from("a"), StringValue::from(""), StringValue::from("x".repeat(300))];
        SpanData {
            span_context: SpanContext::new(
                TraceId::from(1),
                SpanId::from(2),
                TraceFlags::default(),
                false,
                Default::default(),
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: "".into(),
            start_time: UNIX_EPOCH - Duration::from_secs(1),
            end_time: UNIX_EPOCH + Duration::from_nanos(2_500),
            attributes: vec![
                KeyValue::new("bool", true),
                KeyValue::new("false", false),
                KeyValue::new("int", -42_i64),
                KeyValue::new("zero", 0_i64),
                KeyValue::new("float", 3.5_f64),
                KeyValue::new("bools", Value::Array(Array::Bool(vec![true, false]))),
                KeyValue::new("ints", Value::Array(Array::I64(vec![1, -1, i64::MAX]))),
                KeyValue::new("floats", Value::Array(Array::F64(vec![0.0, -2.25]))),
                KeyValue::new("strings", Value::Array(Array::String(strings))),
                KeyValue::new("empty", Value::Array(Array::I64(vec![]))),
                KeyValue::new("", "long ".repeat(100)),
            ],
            dropped_attributes_count: 2,
            events,
            links,
            status: Status::Ok,
            instrumentation_scope: scope("other-lib", Some("2.1.0")),
        }
    }

    /// The request `opentelemetry-proto`'s own transform makes of the same batch, and its
    /// bytes as prost encodes them.
    fn reference(spans: &[SpanData], resource: &Resource) -> (ExportTraceServiceRequest, Vec<u8>) {
        let resource: ResourceAttributesWithSchema = resource.into();
        let request =
            ExportTraceServiceRequest { resource_spans: group_spans_by_resource_and_scope(spans.to_vec(), &resource) };
        let bytes = request.encode_to_vec();
        (request, bytes)
    }

    /// `spans`, each encoded as it would end.
    pub(in crate::traces) fn batch(spans: &[SpanData]) -> EncodedSpans {
        let mut batch = EncodedSpans::default();
        spans.iter().for_each(|span| batch.push(&span.instrumentation_scope, span));
        batch
    }

    fn encoded(spans: &[SpanData], resource: &Resource) -> Vec<u8> {
        let mut buf = Vec::new();
        export_request(&mut buf, &EncodedResource::new(resource), &[batch(spans)]);
        buf
    }

    /// Requests' spans as duet records them: every attribute the conventions give, a tool's
    /// and a prompt's, errors of both kinds, what a handler adds, a batch, an unknown method.
    fn recorded_requests() -> Vec<RequestSpan> {
        let context =
            |id| SpanContext::new(TraceId::from(7), SpanId::from(id), TraceFlags::SAMPLED, false, Default::default());
        let caller =
            SpanContext::new(TraceId::from(7), SpanId::from(99), TraceFlags::SAMPLED, true, Default::default());
        let mut call = RequestSpan::new(context(1), &caller, "tools/call");
        call.principal = "alice".into();
        call.request_id = Some(RequestId::Int(-12));
        call.session_id = Some("s-1".into());
        call.protocol_version = Some("2025-11-25");
        call.transport = Some("tcp");
        call.tool = Some("echo".into());
        call.error = Some(RequestError::Tool);
        call.status = Status::error("");
        call.end = call.start + Duration::from_micros(250);
        let mut prompt = RequestSpan::new(context(2), &SpanContext::empty_context(), "prompts/get");
        prompt.request_id = Some(RequestId::Str("p\"1".into()));
        prompt.prompt = Some("greet".into());
        prompt.error = Some(RequestError::Code(-32602));
        prompt.attributes = vec![KeyValue::new("handler.count", 3_i64), KeyValue::new("handler.note", "hi")];
        prompt.events = vec![Event::new("checked", UNIX_EPOCH + Duration::from_nanos(5), vec![], 0)];
        prompt.links = vec![Link::new(caller.clone(), vec![KeyValue::new("why", "retry")], 0)];
        (prompt.dropped_attributes, prompt.dropped_events, prompt.dropped_links) = (1, 2, 3);
        let mut read = RequestSpan::new(context(3), &caller, "resources/read");
        // Long enough that its attribute's length takes two bytes.
        read.resource_uri = Some(format!("file:///tmp/{}", "x".repeat(150)));
        read.renamed = Some("renamed by its handler".into());
        let mut unknown = RequestSpan::new(context(4), &caller, "_OTHER");
        unknown.unknown_method = Some("vendor/thing".into());
        let batch = RequestSpan::new(context(5), &caller, "batch");
        vec![call, prompt, read, unknown, batch]
    }

    /// Encodes `recorded` with `push`, checks the export against the same spans as the SDK's
    /// and opentelemetry-proto's transform have them (decoded and byte for byte), and returns
    /// that reference.
    fn encoded_as_the_sdk_spans(
        recorded: &[RequestSpan],
        push: impl Fn(&mut EncodedSpans, &RequestSpan),
    ) -> ExportTraceServiceRequest {
        let resource = Resource::builder_empty().build();
        let mut direct = EncodedSpans::default();
        recorded.iter().for_each(|span| push(&mut direct, span));
        let mut bytes = Vec::new();
        export_request(&mut bytes, &EncodedResource::new(&resource), &[direct]);
        let as_sdk: Vec<SpanData> = recorded.iter().map(|span| span.to_span_data(duet::trace::scope())).collect();
        let (expected, expected_bytes) = reference(&as_sdk, &resource);
        assert_eq!(ExportTraceServiceRequest::decode(bytes.as_slice()).expect("valid protobuf"), expected);
        assert_eq!(bytes, expected_bytes, "the same bytes, field for field");
        expected
    }

    #[test]
    fn a_request_span_is_encoded_as_the_sdk_span_it_stands_for() {
        let expected = encoded_as_the_sdk_spans(&recorded_requests(), |spans, span| {
            spans.push(&duet::trace::scope(), span);
        });
        let spans = &expected.resource_spans[0].scope_spans[0].spans;
        let names: Vec<&str> = spans.iter().map(|span| span.name.as_str()).collect();
        assert_eq!(names, ["tools/call echo", "prompts/get greet", "renamed by its handler", "_OTHER", "batch"]);
        assert_eq!(spans[0].attributes.len(), 9, "{:?}", spans[0].attributes);
        assert!(spans[4].attributes.is_empty(), "a batch has none of a request's attributes");
    }

    #[test]
    fn attributes_shared_with_the_span_before_are_the_bytes_written_for_it() {
        let call = recorded_requests().swap_remove(0);
        let mut again = call.clone();
        again.tool = Some("other".into());
        let mut by_bob = call.clone();
        by_bob.principal = "bob".into();
        let mut fewer = call.clone();
        fewer.transport = None;
        let mut after_fewer = call.clone();
        after_fewer.principal = "alicf".into();
        let recorded = [call.clone(), again, by_bob, call.clone(), fewer, call, after_fewer];
        encoded_as_the_sdk_spans(&recorded, EncodedSpans::push_request);
    }

    #[test]
    fn a_batch_is_encoded_as_opentelemetry_proto_encodes_it() {
        let resource = Resource::builder()
            .with_service_name("duet")
            .with_attribute(KeyValue::new("service.version", "0.1.0"))
            .build();
        let duet = || scope("duet", None);
        // Two scopes, interleaved, and spans long enough to need a two-byte length.
        let spans = vec![
            request_span(1, duet()),
            every_field(),
            request_span(2, duet()),
            request_span(3, duet()),
            every_field(),
        ];
        let (expected, expected_bytes) = reference(&spans, &resource);
        let bytes = encoded(&spans, &resource);
        let decoded = ExportTraceServiceRequest::decode(bytes.as_slice()).expect("valid protobuf");
        assert_eq!(decoded.resource_spans.len(), 1);
        let (ours, theirs) = (&decoded.resource_spans[0], &expected.resource_spans[0]);
        assert_eq!(ours.resource, theirs.resource);
        assert_eq!(ours.schema_url, theirs.schema_url);
        assert_eq!(ours.scope_spans.len(), 2);
        for (ours, theirs) in ours.scope_spans.iter().zip(&theirs.scope_spans) {
            assert_eq!(ours.scope, theirs.scope);
            assert_eq!(ours.schema_url, theirs.schema_url);
            assert_eq!(ours.spans.len(), theirs.spans.len());
            for (ours, theirs) in ours.spans.iter().zip(&theirs.spans) {
                assert_eq!(ours, theirs);
            }
        }
        assert_eq!(decoded, expected);
        assert_eq!(bytes, expected_bytes, "the same bytes, field for field");
    }

    #[test]
    fn edge_batches_are_encoded_as_opentelemetry_proto_encodes_them() {
        let with_schema = Resource::builder_empty()
            .with_schema_url([KeyValue::new("service.name", "checkout")], "https://example.com/resource")
            .build();
        for (spans, resource) in [
            (vec![], Resource::builder_empty().build()),
            (vec![request_span(1, scope("duet", None))], Resource::builder_empty().build()),
            (vec![every_field()], with_schema),
        ] {
            assert_eq!(encoded(&spans, &resource), reference(&spans, &resource).1);
        }
    }

    #[test]
    fn the_default_resource_is_the_empty_one() {
        let spans = [request_span(1, scope("duet", None))];
        let mut buf = Vec::new();
        export_request(&mut buf, &EncodedResource::default(), &[batch(&spans)]);
        assert_eq!(buf, reference(&spans, &Resource::builder_empty().build()).1);
    }

    #[test]
    fn a_cleared_batch_sends_only_the_spans_pushed_after() {
        let mut reused =
            batch(&[request_span(1, scope("other-lib", Some("2.1.0"))), request_span(2, scope("duet", None))]);
        reused.clear();
        assert!(reused.is_empty());
        let spans = [request_span(3, scope("duet", None))];
        spans.iter().for_each(|span| reused.push(&span.instrumentation_scope, span));
        let mut buf = Vec::new();
        export_request(&mut buf, &EncodedResource::default(), &[reused]);
        assert_eq!(buf, reference(&spans, &Resource::builder_empty().build()).1);
    }

    #[test]
    fn the_buffers_of_a_batch_are_one_request_with_each_scope_together() {
        let (duet, other) = (|| scope("duet", None), || scope("other-lib", Some("2.1.0")));
        let spans =
            [request_span(1, duet()), request_span(2, other()), request_span(3, duet()), request_span(4, other())];
        // A buffer with none of the first scope's spans comes first.
        let buffers = [batch(&[]), batch(&spans[..1]), batch(&spans[1..3]), batch(&spans[3..])];
        let resource = Resource::builder_empty().build();
        let mut buf = Vec::new();
        export_request(&mut buf, &EncodedResource::new(&resource), &buffers);
        assert_eq!(buf, reference(&spans, &resource).1);
    }
}
