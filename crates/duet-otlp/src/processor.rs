//! The span processor: each span is encoded (`crate::encode`) on the thread that ends it,
//! into a buffer of that thread's own, whether the SDK made it (a handler's span, through
//! `SpanProcessor`) or duet did (a request's, through `duet::trace::SpanSink`); a full
//! buffer is queued for the export thread, which gathers buffers into batches and posts them
//! (`crate::exporter`) every [`Limits::delay`] or [`Limits::batch`] spans, each span's bytes
//! copied once, into the request. Past [`Limits::queue`] spans waiting, whole buffers are
//! dropped rather than held. The export thread is woken when a batch is queued or it is asked
//! something, not for each buffer: on a busy core each wake-up is a switch between threads,
//! and woken for every buffer the export thread spent most of its time in them (perf).
//!
//! Why it exists rather than the SDK's `BatchSpanProcessor`: that one sends every span's
//! data through one channel that every request thread contends for, to be encoded and freed
//! on the export thread; the allocator then reclaims that memory across threads. Here a
//! span's data is freed where it was made, and one buffer crosses threads per
//! [`Limits::batch`] / [`SHARDS`] spans: on `tools/call`, export costs about half the
//! throughput it did (`bench/history/2026-12.md`, the run of 2026-12-02 15:46).

use crate::encode::EncodedSpans;
use crate::exporter::OtlpHttpExporter;
use duet::trace::{RequestSpan, SpanSink};
use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Buffers the threads that end spans write to; a thread keeps one for its life. More
/// than the threads of a runtime on most machines, so that two rarely share one.
pub(crate) const SHARDS: usize = 16;

/// How much is batched, and for how long.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The most spans waiting to be sent; past it, spans are dropped.
    pub(crate) queue: usize,
    /// The spans of one export.
    pub(crate) batch: usize,
    /// The most bytes of encoded spans in one export: a batch goes early rather than past
    /// them (collectors limit a request's size). Only a thread's buffer larger than this
    /// goes over, alone.
    pub(crate) request_bytes: usize,
    /// The longest a span waits to be sent.
    pub(crate) delay: Duration,
}

impl Limits {
    /// The spans a thread's buffer takes before it goes to the export thread.
    fn buffer(&self) -> usize {
        (self.batch / SHARDS).max(1)
    }
}

/// What the export thread is asked, besides sending what is queued.
#[derive(Debug)]
enum Ask {
    /// Send everything now and say how it went.
    Flush(SyncSender<OTelSdkResult>),
    /// Flush, then end.
    Shutdown(SyncSender<OTelSdkResult>),
}

/// What the threads that end spans pass to the export thread.
#[derive(Debug, Default)]
struct Queue {
    /// Full buffers, in the order they came, and the spans they hold.
    buffers: Vec<EncodedSpans>,
    spans: usize,
    asks: Vec<Ask>,
    /// The resource the provider set, once.
    resource: Option<Resource>,
    /// Every handle of the processor is gone: send what is left and end.
    closed: bool,
    /// The export thread has ended: nothing is sent any more.
    ended: bool,
}

/// The queue, and what wakes the export thread to it.
#[derive(Debug, Default)]
struct Exchange {
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// The buffers of the threads that end spans, and emptied ones to give them in place of
/// a full one, so that a thread's buffer keeps the room it grew to.
#[derive(Default)]
struct Shards {
    buffers: [Mutex<EncodedSpans>; SHARDS],
    spares: Mutex<Vec<EncodedSpans>>,
}

impl Shards {
    /// The buffer of the calling thread.
    fn mine(&self) -> &Mutex<EncodedSpans> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        thread_local! {
            static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
        }
        &self.buffers[SHARD.with(|shard| *shard)]
    }

    /// An empty buffer, one used before if there is one.
    fn spare(&self) -> EncodedSpans {
        lock(&self.spares).pop().unwrap_or_default()
    }

    /// Keeps `buffer`, emptied, for [`Shards::spare`]; one for each shard at most.
    fn recycle(&self, mut buffer: EncodedSpans) {
        buffer.clear();
        let mut spares = lock(&self.spares);
        if spares.len() < SHARDS {
            spares.push(buffer);
        }
    }

    /// Every buffer that holds spans, each replaced by an empty one.
    fn drain(&self) -> impl Iterator<Item = EncodedSpans> + '_ {
        self.buffers.iter().filter_map(|buffer| {
            let mut buffer = lock(buffer);
            (!buffer.is_empty()).then(|| std::mem::replace(&mut *buffer, self.spare()))
        })
    }
}

/// A buffer, whether or not a thread panicked holding it: encoding leaves no half-made state.
fn lock<T>(buffer: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    buffer.lock().unwrap_or_else(|p| p.into_inner())
}

impl std::fmt::Debug for Shards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shards")
    }
}

/// The processor the provider hands each ended span (`SdkTracerProvider::builder`), and
/// the sink of the requests' spans (`duet::trace::Tracer`): clones share one export thread.
#[derive(Debug, Clone)]
pub(crate) struct EncodingProcessor(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    shards: Arc<Shards>,
    limits: Limits,
    exchange: Arc<Exchange>,
    /// Spans dropped because the queue was full.
    dropped: AtomicUsize,
}

impl Drop for Shared {
    /// The last handle is gone: the export thread sends what is left and ends.
    fn drop(&mut self) {
        lock(&self.exchange.queue).closed = true;
        self.exchange.wake.notify_one();
    }
}

impl EncodingProcessor {
    /// A processor whose thread exports through `exporter`.
    pub(crate) fn new(exporter: OtlpHttpExporter, limits: Limits) -> std::io::Result<EncodingProcessor> {
        let shards = Arc::new(Shards::default());
        let exchange = Arc::new(Exchange::default());
        let worker = Worker { exporter, shards: shards.clone(), exchange: exchange.clone(), limits, batch: Vec::new() };
        std::thread::Builder::new().name("duet-otlp".into()).spawn(move || worker.run())?;
        Ok(EncodingProcessor(Arc::new(Shared { shards, limits, exchange, dropped: AtomicUsize::new(0) })))
    }

    /// Encodes a span into the calling thread's buffer with `encode`, if it is `sampled`;
    /// the buffer is queued for the export thread once full, and the thread woken once a
    /// batch is queued.
    fn push(&self, sampled: bool, encode: impl FnOnce(&mut EncodedSpans)) {
        let shared = &*self.0;
        if !sampled {
            return;
        }
        let full = {
            let mut mine = lock(shared.shards.mine());
            encode(&mut mine);
            (mine.len() >= shared.limits.buffer()).then(|| std::mem::replace(&mut *mine, shared.shards.spare()))
        };
        let Some(full) = full else { return };
        let spans = full.len();
        let mut queue = lock(&shared.exchange.queue);
        if queue.ended {
            return;
        }
        if queue.spans + spans > shared.limits.queue {
            drop(queue);
            shared.shards.recycle(full);
            if shared.dropped.fetch_add(spans, Ordering::Relaxed) == 0 {
                tracing::warn!("spans are made faster than the collector takes them: dropped (more may follow)");
            }
            return;
        }
        queue.buffers.push(full);
        queue.spans += spans;
        // Once, as the queue comes to a batch: the export thread looks before it waits.
        if queue.spans >= shared.limits.batch && queue.spans - spans < shared.limits.batch {
            shared.exchange.wake.notify_one();
        }
    }

    /// Asks the export thread `ask` and waits for its answer, at most `limit`.
    fn ask(&self, ask: impl FnOnce(SyncSender<OTelSdkResult>) -> Ask, limit: Duration) -> OTelSdkResult {
        let (answer, answered) = sync_channel(1);
        {
            let mut queue = lock(&self.0.exchange.queue);
            if queue.ended {
                return Err(OTelSdkError::AlreadyShutdown);
            }
            queue.asks.push(ask(answer));
        }
        self.0.exchange.wake.notify_one();
        answered.recv_timeout(limit).map_err(|e| match e {
            RecvTimeoutError::Timeout => OTelSdkError::Timeout(limit),
            RecvTimeoutError::Disconnected => OTelSdkError::AlreadyShutdown,
        })?
    }
}

impl SpanSink for EncodingProcessor {
    fn end(&self, span: &RequestSpan) {
        self.push(span.context.is_sampled(), |spans| spans.push_request(span));
    }
}

impl SpanProcessor for EncodingProcessor {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        self.push(span.span_context.is_sampled(), |spans| spans.push(&span.instrumentation_scope, &span));
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.ask(Ask::Flush, self.0.limits.delay + crate::exporter::EXPORT_TIMEOUT)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let done = self.ask(Ask::Shutdown, timeout);
        let dropped = self.0.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!(dropped, "spans were dropped because the collector did not take them fast enough");
        }
        done
    }

    fn set_resource(&mut self, resource: &Resource) {
        // Before any span: the provider sets it as it is built.
        lock(&self.0.exchange.queue).resource = Some(resource.clone());
        self.0.exchange.wake.notify_one();
    }
}

/// The export thread.
struct Worker {
    exporter: OtlpHttpExporter,
    shards: Arc<Shards>,
    exchange: Arc<Exchange>,
    limits: Limits,
    /// The buffers of the next export, as the threads filled them.
    batch: Vec<EncodedSpans>,
}

impl Worker {
    fn run(mut self) {
        let mut due = Instant::now() + self.limits.delay;
        loop {
            let Queue { buffers, asks, resource, closed, .. } = self.next(due);
            if let Some(resource) = resource {
                self.exporter.set_resource(&resource);
            }
            for spans in buffers {
                let _ = self.take(spans);
            }
            if Instant::now() >= due {
                let _ = self.export_all();
                due = Instant::now() + self.limits.delay;
            }
            for ask in asks {
                match ask {
                    Ask::Flush(answer) => {
                        let _ = answer.send(self.export_all());
                    }
                    Ask::Shutdown(answer) => {
                        let sent = self.export_all();
                        self.end();
                        let _ = answer.send(sent);
                        return;
                    }
                }
            }
            if closed {
                let _ = self.export_all();
                self.end();
                return;
            }
        }
    }

    /// What is queued, taken, once there is a batch of it or something else to do, or at `due`.
    fn next(&self, due: Instant) -> Queue {
        let mut queue = lock(&self.exchange.queue);
        loop {
            let ready =
                queue.spans >= self.limits.batch || !queue.asks.is_empty() || queue.resource.is_some() || queue.closed;
            let left = due.saturating_duration_since(Instant::now());
            if ready || left.is_zero() {
                // `closed` too, which `run` acts on at once; `ended` is false until then.
                return std::mem::take(&mut *queue);
            }
            queue = match self.exchange.wake.wait_timeout(queue, left) {
                Ok((queue, _)) => queue,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// Says that nothing is sent any more: spans are no longer queued, and whoever asks
    /// after is told so.
    fn end(&self) {
        let mut queue = lock(&self.exchange.queue);
        queue.ended = true;
        queue.asks.clear();
    }

    /// Exports every span there is. What was queued before the command that asks for it
    /// came first, and is in the batch; the rest is in the threads' buffers.
    fn export_all(&mut self) -> OTelSdkResult {
        let mut sent = Ok(());
        for spans in self.shards.drain().collect::<Vec<_>>() {
            sent = sent.and(self.take(spans));
        }
        sent.and(self.export())
    }

    /// Adds `spans` to the batch, sending first the batch they would take past
    /// [`Limits::batch`] or [`Limits::request_bytes`], and after, a batch they fill.
    fn take(&mut self, spans: EncodedSpans) -> OTelSdkResult {
        let mut sent = Ok(());
        let (count, bytes) = self.size();
        if count + spans.len() > self.limits.batch || bytes + spans.encoded_len() > self.limits.request_bytes {
            sent = self.export();
        }
        self.batch.push(spans);
        let (count, bytes) = self.size();
        if count >= self.limits.batch || bytes >= self.limits.request_bytes {
            sent = sent.and(self.export());
        }
        sent
    }

    /// The spans of the batch, and the bytes they take.
    fn size(&self) -> (usize, usize) {
        self.batch.iter().fold((0, 0), |(count, bytes), spans| (count + spans.len(), bytes + spans.encoded_len()))
    }

    /// Posts the batch; its buffers go back to the threads whether or not the collector took it.
    fn export(&mut self) -> OTelSdkResult {
        let sent = self.exporter.export(&self.batch);
        self.batch.drain(..).for_each(|spans| self.shards.recycle(spans));
        sent.map_err(|e| {
            tracing::error!("spans could not be exported: {e}");
            OTelSdkError::InternalFailure(e)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{EncodingProcessor, Limits, Shards, lock};
    use crate::encode::tests::{batch, request_span, scope};
    use crate::exporter::tests::{Received, collector, holding_collector};
    use opentelemetry::KeyValue;
    use opentelemetry::trace::{SpanContext, TraceFlags};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::error::OTelSdkError;
    use opentelemetry_sdk::trace::{SpanData, SpanProcessor as _};
    use prost::Message as _;
    use std::sync::atomic::Ordering;
    use std::sync::mpsc::sync_channel;
    use std::time::Duration;

    /// At most `queue` spans waiting and `batch` in an export, of any size, and none sent on
    /// the timer.
    fn limits(queue: usize, batch: usize) -> Limits {
        Limits { queue, batch, request_bytes: 1 << 20, delay: Duration::from_secs(60) }
    }

    fn processor(url: &str, limits: Limits) -> EncodingProcessor {
        EncodingProcessor::new(super::OtlpHttpExporter::new(url).expect("exporter"), limits).expect("processor")
    }

    /// Each export the collector received, decoded.
    fn exported(received: Vec<Received>) -> Vec<ExportTraceServiceRequest> {
        let decode = |(_, body): Received| ExportTraceServiceRequest::decode(body.as_slice()).expect("protobuf");
        received.into_iter().map(decode).collect()
    }

    /// The ids of the spans `export` carried, in order.
    fn span_ids(export: &ExportTraceServiceRequest) -> Vec<u64> {
        let spans = export.resource_spans.iter().flat_map(|r| &r.scope_spans).flat_map(|s| &s.spans);
        let mut ids: Vec<u64> =
            spans.map(|span| u64::from_be_bytes(span.span_id[..].try_into().expect("8 bytes"))).collect();
        ids.sort();
        ids
    }

    #[test]
    fn spans_ended_on_many_threads_are_sent_in_one_export_at_shutdown() {
        use duet::trace::{RequestSpan, SpanSink as _};
        use opentelemetry::trace::{SpanId, TraceId};
        let (url, collector) = collector(&["200 OK"]);
        let mut processor = processor(&url, limits(1000, 1000));
        processor.set_resource(&Resource::builder_empty().with_attribute(KeyValue::new("service.name", "t")).build());
        std::thread::scope(|threads| {
            for thread in 0..4 {
                let processor = &processor;
                threads.spawn(move || {
                    for n in 1..=10 {
                        processor.on_end(request_span(thread * 10 + n, scope("duet", None)));
                    }
                    // And a request's span as duet records it, through the sink.
                    let id = |flags| {
                        SpanContext::new(TraceId::from(9), SpanId::from(41 + thread), flags, false, Default::default())
                    };
                    processor.end(&RequestSpan::new(id(TraceFlags::SAMPLED), &SpanContext::empty_context(), "ping"));
                    // Not sampled: not sent.
                    processor.end(&RequestSpan::new(id(TraceFlags::default()), &SpanContext::empty_context(), "ping"));
                });
            }
        });
        // Not sampled: not sent.
        let mut unsampled = request_span(99, scope("duet", None));
        let context = &unsampled.span_context;
        unsampled.span_context =
            SpanContext::new(context.trace_id(), context.span_id(), TraceFlags::default(), false, Default::default());
        processor.on_end(unsampled);
        processor.shutdown_with_timeout(Duration::from_secs(10)).expect("sent");
        assert!(matches!(processor.force_flush(), Err(OTelSdkError::AlreadyShutdown)));
        let exports = exported(collector.join().expect("collector"));
        assert_eq!(exports.len(), 1);
        assert_eq!(span_ids(&exports[0]), (1..=44).collect::<Vec<_>>());
        let resource = exports[0].resource_spans[0].resource.as_ref().expect("the resource");
        assert_eq!(resource.attributes[0].key, "service.name");
    }

    #[test]
    fn full_buffers_wait_for_a_batch_and_the_last_handle_gone_sends_the_rest() {
        let (url, collector) = collector(&["200 OK", "200 OK"]);
        // Buffers of 4 spans, exports of 64.
        let processor = processor(&url, limits(1000, 64));
        (1..=8).for_each(|n| processor.on_end(request_span(n, scope("duet", None))));
        std::thread::sleep(Duration::from_millis(200));
        let queued = lock(&processor.0.exchange.queue).buffers.len();
        assert_eq!(queued, 2, "two full buffers, less than a batch: the export thread is not woken for them");
        (9..=66).for_each(|n| processor.on_end(request_span(n, scope("duet", None))));
        // Spans 65 and 66 are in the thread's own buffer when the last handle goes.
        drop(processor);
        let ids: Vec<Vec<u64>> = exported(collector.join().expect("collector")).iter().map(span_ids).collect();
        assert_eq!(ids, [(1..=64).collect::<Vec<_>>(), vec![65, 66]]);
    }

    #[test]
    fn an_export_stays_within_its_bytes_unless_a_buffer_alone_is_larger() {
        // Spans of one size but for their ids' digits, in buffers of 4 (batch 64), each
        // taking about `buffer` bytes.
        let span = |n| SpanData { name: "tools/call echo".into(), ..request_span(n, scope("duet", None)) };
        let buffer = batch(&(21..=24).map(span).collect::<Vec<_>>()).encoded_len();
        let ids = |first: u64, last: u64| (first..=last).collect::<Vec<_>>();
        static ANSWERS: [&str; 6] = ["200 OK"; 6];
        let cases = [
            // Room for two buffers and a half: two go in each request.
            (buffer * 5 / 2, vec![ids(1, 8), ids(9, 16), ids(17, 24)]),
            // Room for none: each buffer goes alone.
            (buffer / 2, (0..6).map(|b| ids(b * 4 + 1, b * 4 + 4)).collect()),
        ];
        for (request_bytes, expected) in cases {
            let (url, collector) = collector(&ANSWERS[..expected.len()]);
            let processor = processor(&url, Limits { request_bytes, ..limits(1000, 64) });
            (1..=24).for_each(|n| processor.on_end(span(n)));
            processor.shutdown_with_timeout(Duration::from_secs(10)).expect("sent");
            let sent: Vec<Vec<u64>> = exported(collector.join().expect("collector")).iter().map(span_ids).collect();
            assert_eq!(sent, expected, "at most {request_bytes} bytes, buffers of about {buffer}");
        }
    }

    #[test]
    fn a_thread_is_given_back_a_used_buffer_emptied_with_its_room() {
        let shards = Shards::default();
        let used = batch(&[request_span(1, scope("duet", None))]);
        let room = used.room();
        assert!(room > 0);
        shards.recycle(used);
        let spare = shards.spare();
        assert!(spare.is_empty());
        assert_eq!(spare.room(), room);
        assert_eq!(shards.spare().room(), 0, "none left: a new one");
    }

    #[test]
    fn past_the_queue_spans_are_dropped_rather_than_waited_for() {
        let (arrived, first_arrived) = sync_channel(1);
        let (release, released) = sync_channel::<()>(1);
        let hold = move || {
            arrived.send(()).expect("the test waits");
            released.recv().expect("the test releases");
        };
        let (url, collector) = holding_collector(&["200 OK", "200 OK", "200 OK"], hold);
        // Every span goes alone, and two may wait.
        let processor = processor(&url, limits(2, 1));
        processor.on_end(request_span(1, scope("duet", None)));
        first_arrived.recv_timeout(Duration::from_secs(10)).expect("the first span is being sent");
        for n in 2..=6 {
            processor.on_end(request_span(n, scope("duet", None)));
        }
        assert_eq!(processor.0.dropped.load(Ordering::Relaxed), 3, "spans 4 to 6 found no room");
        release.send(()).expect("the collector waits");
        processor.shutdown_with_timeout(Duration::from_secs(10)).expect("sent");
        let ids: Vec<Vec<u64>> = exported(collector.join().expect("collector")).iter().map(span_ids).collect();
        assert_eq!(ids, [vec![1], vec![2], vec![3]]);
    }
}
