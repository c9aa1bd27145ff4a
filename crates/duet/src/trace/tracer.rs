//! What makes each request's span and where it goes when it ends ([`Tracer`], [`SpanSink`]).
//!
//! Why not the SDK's tracer: a request's span is always the same shape (kind server, the
//! conventions' attributes), and the SDK's span is general: its builder, each attribute an
//! owned `KeyValue` set under a lock, its `SpanData` built again at the end. Here the span
//! is a [`RequestSpan`] filled in place, and the sink decides how to write it: the `duet`
//! binary encodes it straight to OTLP bytes, a program hands it to any of the SDK's span
//! processors ([`ProcessorSink`]). The sampler and the ids are the SDK's. On a 2026
//! `tools/call` (45k instructions under callgrind), export added 7.25k instructions with the
//! SDK's span and adds 4.2k with this one (`docs/operations.md`).
//!
//! A handler may add up to 128 attributes, events and links to the span, the SDK's default
//! limits; past them each is counted as dropped.
//!
//! While the request runs its span is in its OpenTelemetry context, so that a handler's own
//! spans are its children and a handler may add attributes, events and links to it. It ends
//! when the last context holding it is dropped, as the SDK's spans do, and the sink is shown
//! it where it lies: a span is a few hundred bytes, and each move costs.

use super::request_span::RequestSpan;
use opentelemetry::trace::{Event, Link, SpanContext, SpanKind, Status, TraceContextExt};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SamplingDecision, ShouldSample, SpanProcessor};
use std::borrow::Cow;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

/// Where each request's span goes once it ends.
pub trait SpanSink: Send + Sync + 'static {
    /// Sees a span that has ended (once each). The span is lent, not given: it is dropped
    /// where it was made, and a sink that keeps it clones it.
    fn end(&self, span: &RequestSpan);

    /// Sends what is left, at exit ([`Tracer::shutdown`]).
    fn shutdown(&self) -> OTelSdkResult {
        Ok(())
    }
}

/// Any of the SDK's span processors as a sink: each span reaches it as `SpanData`, in the
/// instrumentation scope [`scope`].
#[derive(Debug)]
pub struct ProcessorSink<P>(P);

impl<P: SpanProcessor> ProcessorSink<P> {
    /// `processor`, told the resource its spans come from (`service.name` and the like).
    pub fn new(mut processor: P, resource: &Resource) -> ProcessorSink<P> {
        processor.set_resource(resource);
        ProcessorSink(processor)
    }
}

impl<P: SpanProcessor + 'static> SpanSink for ProcessorSink<P> {
    fn end(&self, span: &RequestSpan) {
        self.0.on_end(span.to_span_data(scope()));
    }

    fn shutdown(&self) -> OTelSdkResult {
        self.0.shutdown()
    }
}

/// The instrumentation scope of the requests' spans: `duet` and the library's version.
pub fn scope() -> InstrumentationScope {
    static SCOPE: LazyLock<InstrumentationScope> =
        LazyLock::new(|| InstrumentationScope::builder("duet").with_version(env!("CARGO_PKG_VERSION")).build());
    SCOPE.clone()
}

/// Makes each request's span: `sampler` decides (a `ParentBased` one follows the caller),
/// and a span kept goes to the sink when it ends. Cheap to clone.
#[derive(Clone)]
pub struct Tracer {
    sampler: Arc<dyn ShouldSample>,
    ids: RandomIdGenerator,
    sink: Arc<dyn SpanSink>,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer").field("sampler", &self.sampler).finish_non_exhaustive()
    }
}

impl Tracer {
    /// Spans sampled by `sampler`, each handed to `sink` when its request ends.
    pub fn new(sampler: impl ShouldSample + 'static, sink: impl SpanSink) -> Tracer {
        Tracer { sampler: Arc::new(sampler), ids: RandomIdGenerator::default(), sink: Arc::new(sink) }
    }

    /// Tells the sink to send what is left: at exit, once no request runs.
    pub fn shutdown(&self) -> OTelSdkResult {
        self.sink.shutdown()
    }

    /// `parent` with the span of a request of `method` begun in it, filled by `fill` if the
    /// sampler keeps it, and the span's recording then. A span the sampler drops still has
    /// ids, so that what the request calls carries its trace, marked not sampled.
    pub(crate) fn start(
        &self,
        parent: Context,
        method: &'static str,
        fill: impl FnOnce(&mut RequestSpan),
    ) -> (Context, Option<Arc<Recording>>) {
        let caller = parent.span().span_context().clone();
        let trace_id = if caller.is_valid() { caller.trace_id() } else { self.ids.new_trace_id() };
        let span_id = self.ids.new_span_id();
        let sampled = self.sampler.should_sample(Some(&parent), trace_id, method, &SpanKind::Server, &[], &[]);
        let keep = sampled.decision != SamplingDecision::Drop;
        let flags = caller.trace_flags().with_sampled(sampled.decision == SamplingDecision::RecordAndSample);
        let context = SpanContext::new(trace_id, span_id, flags, false, sampled.trace_state);
        if !keep {
            // Not remote: the flag is the span context's own, and this one is local.
            return (parent.with_remote_span_context(context), None);
        }
        // Made in place: a span is a few hundred bytes, and moving it costs.
        let span = Mutex::new(Some(RequestSpan::new(context.clone(), &caller, method)));
        let recording = Arc::new(Recording { context, span, sink: self.sink.clone() });
        recording.update(|span| {
            span.attributes = sampled.attributes;
            fill(span);
        });
        (parent.with_span(Live(recording.clone())), Some(recording))
    }
}

/// A request's span while it runs, until it is handed to the sink.
pub(crate) struct Recording {
    context: SpanContext,
    span: Mutex<Option<RequestSpan>>,
    sink: Arc<dyn SpanSink>,
}

impl Recording {
    /// Changes the span, unless it has ended.
    pub(crate) fn update(&self, change: impl FnOnce(&mut RequestSpan)) {
        if let Some(span) = self.lock().as_mut() {
            change(span);
        }
    }

    /// Ends the span at `end` and shows it to the sink; only the first time.
    fn end(&self, end: SystemTime) {
        let mut span = self.lock();
        if let Some(ended) = span.as_mut() {
            ended.end = end;
            self.sink.end(ended);
            *span = None;
        }
    }

    /// The span, whether or not a thread panicked holding it: each change is whole.
    fn lock(&self) -> MutexGuard<'_, Option<RequestSpan>> {
        self.span.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The most attributes, events and links a handler may add to a request's span: the SDK's
/// default limits. Past them, each is counted as dropped.
const HANDLER_LIMIT: usize = 128;

/// `item` added to `items` within [`HANDLER_LIMIT`], else counted in `dropped`.
fn add_within<T>(items: &mut Vec<T>, dropped: &mut u32, item: T) {
    if items.len() < HANDLER_LIMIT {
        items.push(item);
    } else {
        *dropped = dropped.saturating_add(1);
    }
}

/// The request's span as the OpenTelemetry API sees it in the context; it ends the span when
/// the last context holding it goes.
struct Live(Arc<Recording>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.end(opentelemetry::time::now());
    }
}

impl opentelemetry::trace::Span for Live {
    fn add_event_with_timestamp<T>(&mut self, name: T, timestamp: SystemTime, attributes: Vec<KeyValue>)
    where
        T: Into<Cow<'static, str>>,
    {
        let event = Event::new(name, timestamp, attributes, 0);
        self.0.update(|span| add_within(&mut span.events, &mut span.dropped_events, event));
    }

    fn span_context(&self) -> &SpanContext {
        &self.0.context
    }

    fn is_recording(&self) -> bool {
        self.0.lock().is_some()
    }

    fn set_attribute(&mut self, attribute: KeyValue) {
        self.0.update(|span| add_within(&mut span.attributes, &mut span.dropped_attributes, attribute));
    }

    /// As the SDK has it: `Ok` is final, and `Error` replaces only `Unset` or another error.
    fn set_status(&mut self, status: Status) {
        self.0.update(|span| {
            if status > span.status {
                span.status = status;
            }
        });
    }

    fn update_name<T>(&mut self, new_name: T)
    where
        T: Into<Cow<'static, str>>,
    {
        self.0.update(|span| span.renamed = Some(new_name.into()));
    }

    fn add_link(&mut self, span_context: SpanContext, attributes: Vec<KeyValue>) {
        let link = Link::new(span_context, attributes, 0);
        self.0.update(|span| add_within(&mut span.links, &mut span.dropped_links, link));
    }

    fn end_with_timestamp(&mut self, timestamp: SystemTime) {
        self.0.end(timestamp);
    }
}

#[cfg(test)]
mod tests {
    use super::{HANDLER_LIMIT, RequestSpan, SpanSink, Tracer};
    use opentelemetry::trace::{SpanContext, TraceContextExt};
    use opentelemetry::{Context, KeyValue};
    use opentelemetry_sdk::trace::Sampler;
    use std::sync::{Arc, Mutex};

    /// The spans that ended, kept.
    #[derive(Clone, Default)]
    struct Ended(Arc<Mutex<Vec<RequestSpan>>>);

    impl SpanSink for Ended {
        fn end(&self, span: &RequestSpan) {
            self.0.lock().expect("not poisoned").push(span.clone());
        }
    }

    #[test]
    fn a_handler_adds_to_the_request_span_within_the_limits_and_it_ends_once() {
        let ended = Ended::default();
        let tracer = Tracer::new(Sampler::AlwaysOn, ended.clone());
        let (cx, recording) = tracer.start(Context::new(), "tools/call", |span| span.principal = "alice".into());
        assert!(recording.is_some());
        let span = cx.span();
        assert!(span.is_recording());
        for n in 0..HANDLER_LIMIT + 2 {
            span.set_attribute(KeyValue::new("n", n as i64));
            span.add_event("checked", vec![]);
        }
        span.add_link(SpanContext::empty_context(), vec![]);
        span.update_name("renamed");
        span.end();
        span.set_attribute(KeyValue::new("late", true));
        drop(cx);
        let spans = ended.0.lock().expect("not poisoned");
        assert_eq!(spans.len(), 1, "ended once: by the handler, not again when its context went");
        let span = &spans[0];
        assert_eq!((span.attributes.len(), span.dropped_attributes), (HANDLER_LIMIT, 2));
        assert_eq!((span.events.len(), span.dropped_events), (HANDLER_LIMIT, 2));
        assert_eq!((span.links.len(), span.dropped_links), (1, 0));
        assert_eq!(span.name(), ("renamed", None));
        assert_eq!(span.principal, "alice");
        assert!(span.end >= span.start);
    }

    #[test]
    fn a_span_the_sampler_drops_is_not_recorded_but_carries_the_trace() {
        let ended = Ended::default();
        let tracer = Tracer::new(Sampler::AlwaysOff, ended.clone());
        let (cx, recording) = tracer.start(Context::new(), "tools/call", |_| panic!("a dropped span is never filled"));
        assert!(recording.is_none());
        let span = cx.span();
        assert!(!span.is_recording());
        assert!(span.span_context().is_valid() && !span.span_context().is_sampled());
        assert!(!span.span_context().is_remote());
        drop(cx);
        assert!(ended.0.lock().expect("not poisoned").is_empty());
    }
}
