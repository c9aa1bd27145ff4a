//! `opentelemetry.proto.trace.v1.Span`, written from either kind of span duet ends: the
//! SDK's `SpanData` (a handler's span) or a request's span as duet records it, whose
//! attributes come straight from its fields ([`SpanFields`]), the ones a run of requests
//! shares written once and copied after ([`SharedAttributes`]).

use super::attributes::{attributes, string_attribute};
use super::protobuf::{bytes, fixed64, key, length_delimited, message, string, uint};
use duet::trace::RequestSpan;
use opentelemetry::trace::{Event, Link, SpanContext, SpanId, SpanKind, Status};
use opentelemetry_sdk::trace::SpanData;
use prost::bytes::BufMut;
use prost::encoding::WireType;
use std::time::{SystemTime, UNIX_EPOCH};

/// The attributes a request's span shares with many others
/// (`RequestSpan::shared_conventions`: the method, the principal, the version and the
/// transport), as they were last encoded and the values they were encoded from: a span that
/// has the same values takes the bytes as they are, rather than five attributes written again.
#[derive(Debug, Default)]
pub(crate) struct SharedAttributes {
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

/// What [`span`] reads of a span, whichever kind it is.
pub(crate) trait SpanFields {
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
pub(super) fn span(buf: &mut Vec<u8>, span: &impl SpanFields, shared: &mut SharedAttributes) {
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

/// A time as nanoseconds since the Unix epoch; 0 before it.
fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_nanos() as u64)
}
