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

pub(crate) fn scope(name: &'static str, version: Option<&'static str>) -> InstrumentationScope {
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
pub(crate) fn request_span(id: u64, instrumentation_scope: InstrumentationScope) -> SpanData {
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
pub(crate) fn batch(spans: &[SpanData]) -> EncodedSpans {
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
    let caller = SpanContext::new(TraceId::from(7), SpanId::from(99), TraceFlags::SAMPLED, true, Default::default());
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
    let resource =
        Resource::builder().with_service_name("duet").with_attribute(KeyValue::new("service.version", "0.1.0")).build();
    let duet = || scope("duet", None);
    // Two scopes, interleaved, and spans long enough to need a two-byte length.
    let spans =
        vec![request_span(1, duet()), every_field(), request_span(2, duet()), request_span(3, duet()), every_field()];
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
    let mut reused = batch(&[request_span(1, scope("other-lib", Some("2.1.0"))), request_span(2, scope("duet", None))]);
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
    let spans = [request_span(1, duet()), request_span(2, other()), request_span(3, duet()), request_span(4, other())];
    // A buffer with none of the first scope's spans comes first.
    let buffers = [batch(&[]), batch(&spans[..1]), batch(&spans[1..3]), batch(&spans[3..])];
    let resource = Resource::builder_empty().build();
    let mut buf = Vec::new();
    export_request(&mut buf, &EncodedResource::new(&resource), &buffers);
    assert_eq!(buf, reference(&spans, &resource).1);
}
