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
//!
//! The module holds the buffers and the request around them; the span message is
//! [`span`]'s, attributes and their values [`attributes`]'s, and the protobuf wire format's
//! primitives [`protobuf`]'s.

mod attributes;
mod protobuf;
mod span;
#[cfg(test)]
pub(crate) mod tests;

use attributes::{attributes, key_value};
use duet::trace::RequestSpan;
use opentelemetry::InstrumentationScope;
use opentelemetry_sdk::Resource;
use protobuf::{field_len, length_delimited, message, string};
use span::SharedAttributes;
use span::SpanFields;

/// The `resource` and `schema_url` fields of every `ResourceSpans`, encoded once: the SDK
/// gives the exporter its resource when the provider is built.
#[derive(Debug)]
pub(crate) struct EncodedResource {
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
    pub(crate) fn new(resource: &Resource) -> EncodedResource {
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
pub(crate) struct EncodedSpans {
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
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes the spans take, encoded.
    pub(crate) fn encoded_len(&self) -> usize {
        self.scopes.iter().map(|(_, spans)| spans.len()).sum()
    }

    /// Encodes `span` after the others of its scope.
    pub(crate) fn push(&mut self, scope: &InstrumentationScope, span: &impl SpanFields) {
        let index = self.scope_index(scope);
        self.push_at(index, span);
    }

    /// Encodes a request's span after the others of the requests' scope.
    pub(crate) fn push_request(&mut self, span: &RequestSpan) {
        self.push_at(0, span);
    }

    fn push_at(&mut self, index: usize, span: &impl SpanFields) {
        message(&mut self.scopes[index].1, 2, |buf| span::span(buf, span, &mut self.shared));
        self.len += 1;
    }

    /// The bytes the spans may take before the buffer grows.
    #[cfg(test)]
    pub(crate) fn room(&self) -> usize {
        self.scopes.iter().map(|(_, spans)| spans.capacity()).sum()
    }

    /// Forgets every span, keeping the room they took for the next ones.
    pub(crate) fn clear(&mut self) {
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

/// Appends to `buf` the request that exports the spans of `batch`: one `ResourceSpans`,
/// holding one `ScopeSpans` per instrumentation scope (in the order each first appears),
/// with the spans of that scope from every buffer. Every length is counted before its
/// message is written, so the spans, most of the request, are copied once and never moved
/// after.
pub(crate) fn export_request(buf: &mut Vec<u8>, resource: &EncodedResource, batch: &[EncodedSpans]) {
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

/// `opentelemetry.proto.common.v1.InstrumentationScope`.
fn instrumentation_scope(buf: &mut Vec<u8>, scope: &InstrumentationScope) {
    string(buf, 1, scope.name());
    string(buf, 2, scope.version().unwrap_or_default());
    attributes(buf, 3, scope.attributes());
}
