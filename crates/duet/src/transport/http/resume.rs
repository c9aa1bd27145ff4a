//! Resumable SSE streams of handshake-era Streamable HTTP sessions. Every event a session's
//! streams carry has an id that names its stream (`g.…` for the session's GET stream,
//! `p<token>.…` for a POST's) and is unique in the session. A client whose stream broke
//! opens a GET with `Last-Event-ID`, on whichever replica the load balancer picks, and gets
//! what came after that event, each event once; a POST's stream picked up this way ends
//! with its answer, as the POST's own would have.
//!
//! The events wait in the backplane's [`EventLog`]. A session's GET stream is always
//! written there (which also keeps what comes while no stream is open) and read from
//! there by whichever replica holds the stream. A POST's stream goes straight to its
//! connection and keeps its recent events in memory; only when that connection is gone
//! before the answer (the client left, or duet ended the stream so that the client polls,
//! SEP-1699) or a client asks to resume it does its writer put them, and all that follows,
//! in the log. A stream that ended on its connection keeps its events here a little longer
//! (the last ones may still have been in flight when the client left). 2025-11-25 streams start with a priming event: an id and no data, with the
//! `retry` interval.

use super::body;
use crate::backplane::{Backplane, Event, LOG_CAPACITY, Logged, Published};
use crate::protocol::session::table::SessionStreams;
use crate::wakers::Wakers;
use async_trait::async_trait;
use bytes::Bytes;
use duet_wire::jsonrpc::{Sink, encode};
use futures::Stream;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How often a reader looks at its log without being told of an append (a replica's
/// notice may be lost with Redis, or the writer may not know yet that someone reads).
const POLL: Duration = Duration::from_secs(1);
/// How long a client resuming a POST's stream waits for the stream's first logged event
/// before its GET ends (the stream ended normally, or its replica is gone).
const WAIT_FOR_LOG: Duration = Duration::from_secs(10);

/// How long a POST stream that ended on its connection keeps its events for a client that
/// resumes it after all, and how many bytes of such events a replica keeps at most.
const FINISHED_KEPT: Duration = Duration::from_secs(30);
const FINISHED_BYTES: usize = 16 << 20;

/// Makes event ids unique within this process (with the replica id, within the session).
static NEXT_EVENT: AtomicU64 = AtomicU64::new(1);

/// A stream of a session, as its events' ids name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum StreamName {
    /// The session's GET stream.
    Get,
    /// The SSE stream answering one POST.
    Post(String),
}

impl StreamName {
    /// A name for a new POST stream.
    pub(super) fn new_post() -> Self {
        StreamName::Post(format!("{:x}", rand::random::<u64>()))
    }

    /// The stream a `Last-Event-ID` names; `None` for an id duet did not make.
    pub(super) fn of_event(id: &str) -> Option<Self> {
        let (tag, rest) = id.split_once('.')?;
        if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_hexdigit() || b == b'.') {
            return None;
        }
        match tag.strip_prefix('p') {
            _ if tag == "g" => Some(StreamName::Get),
            Some(token) if (1..=16).contains(&token.len()) && token.bytes().all(|b| b.is_ascii_hexdigit()) => {
                Some(StreamName::Post(token.to_string()))
            }
            _ => None,
        }
    }

    fn tag(&self) -> String {
        match self {
            StreamName::Get => "g".into(),
            StreamName::Post(token) => format!("p{token}"),
        }
    }

    /// The name of its log in the backplane.
    pub(super) fn log(&self, session: &str) -> String {
        format!("{session}:{}", self.tag())
    }

    /// The id of the priming event of a stream that starts after `after`, or at the start.
    pub(super) fn priming_id(&self, after: Option<&str>) -> String {
        after.map_or_else(|| format!("{}.0", self.tag()), str::to_string)
    }
}

/// A logged event's data: the JSON-RPC line, marked when it is the stream's last.
fn entry(line: &str, last: bool) -> String {
    format!("{}{line}", if last { '$' } else { '.' })
}

/// The line of a logged event, and whether it is its stream's last.
fn line_of(data: &str) -> (&str, bool) {
    match data.split_at_checked(1) {
        Some(("$", line)) => (line, true),
        Some((_, line)) => (line, false),
        None => ("", false),
    }
}

/// Writes events to a stream's log and tells the readers.
#[derive(Clone)]
pub(super) struct LogWriter {
    streams: Weak<Streams>,
    replica: u64,
    tag: String,
    log: String,
}

impl LogWriter {
    pub(super) fn new(streams: &Arc<Streams>, session: &str, stream: &StreamName) -> Self {
        let (tag, log) = (stream.tag(), stream.log(session));
        LogWriter { streams: Arc::downgrade(streams), replica: streams.replica, tag, log }
    }

    fn next_id(&self) -> String {
        format!("{}.{:x}.{:x}", self.tag, self.replica, NEXT_EVENT.fetch_add(1, Ordering::Relaxed))
    }

    /// Appends a JSON-RPC line (the session's GET stream: never a last one).
    pub(super) fn write(&self, line: &str) {
        let event = Logged { id: self.next_id(), data: entry(line, false) };
        self.append(vec![event]);
    }

    fn append(&self, events: Vec<Logged>) {
        let Some(streams) = self.streams.upgrade() else { return };
        if events.is_empty() {
            return;
        }
        let backplane = &streams.backplane;
        backplane.events.append(&self.log, events, streams.retention);
        let event = Event::Logged { stream: self.log.clone() };
        backplane.bus.publish(Published { origin: self.replica, event });
    }
}

/// An event a POST stream sent: its bytes on the wire (shared with the connection, not
/// copied) and whether it is the stream's last. Made into a [`Logged`] only when it goes
/// to the log.
struct Sent {
    event: Bytes,
    last: bool,
}

impl Sent {
    /// The event as the log keeps it, read back from what [`body::message_with_id`] made.
    fn logged(&self) -> Option<Logged> {
        let text = std::str::from_utf8(&self.event).ok()?;
        let (id, rest) = text.strip_prefix("id: ")?.split_once('\n')?;
        let line = rest.strip_prefix("event: message\ndata: ")?.strip_suffix("\n\n")?;
        Some(Logged { id: id.to_string(), data: entry(line, self.last) })
    }
}

/// The events of `sent`, as the log keeps them.
fn logged(sent: impl IntoIterator<Item = Sent>) -> Vec<Logged> {
    sent.into_iter().filter_map(|s| s.logged()).collect()
}

/// Where a POST stream's events are kept: its newest in memory while its connection is
/// there, else in the log.
enum Kept {
    Recent(VecDeque<Sent>),
    Logged,
}

/// The writer of one POST's resumable stream.
pub(super) struct PostStream {
    writer: LogWriter,
    kept: Mutex<Kept>,
}

impl PostStream {
    /// A POST stream of `session`, known to this replica (so a client resuming it from
    /// another replica can ask for its events) until dropped.
    pub(super) fn open(streams: &Arc<Streams>, session: &str) -> (Arc<PostStream>, StreamName) {
        let name = StreamName::new_post();
        let stream = Arc::new(PostStream {
            writer: LogWriter::new(streams, session, &name),
            kept: Mutex::new(Kept::Recent(VecDeque::new())),
        });
        streams.writing(&stream.writer.log, &stream);
        (stream, name)
    }

    fn kept(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The SSE event of a JSON-RPC line, kept for a client that may resume the stream.
    pub(super) fn frame(&self, line: &str, last: bool) -> Bytes {
        let mut kept = self.kept();
        let id = self.writer.next_id();
        let event = body::message_with_id(&id, line);
        match &mut *kept {
            Kept::Recent(recent) => {
                if recent.len() == LOG_CAPACITY {
                    recent.pop_front();
                }
                recent.push_back(Sent { event: event.clone(), last });
            }
            Kept::Logged => self.writer.append(vec![Logged { id, data: entry(line, last) }]),
        }
        event
    }

    /// From now on every event goes to the log, those kept so far first: the connection
    /// is gone, or a client asks to resume.
    pub(super) fn detach(&self) {
        let mut kept = self.kept();
        if let Kept::Recent(recent) = std::mem::replace(&mut *kept, Kept::Logged) {
            self.writer.append(logged(recent));
        }
    }
}

impl Drop for PostStream {
    fn drop(&mut self) {
        let Some(streams) = self.writer.streams.upgrade() else { return };
        streams.done_writing(&self.writer.log);
        if let Kept::Recent(recent) = std::mem::replace(&mut *self.kept(), Kept::Logged) {
            streams.keep_finished(self.writer.clone(), recent);
        }
    }
}

/// The events of a POST stream that ended on its connection, kept a while.
struct Finished {
    at: std::time::Instant,
    writer: LogWriter,
    sent: VecDeque<Sent>,
    bytes: usize,
}

/// The finished streams a replica keeps, oldest first, and their bytes.
#[derive(Default)]
struct FinishedStreams {
    streams: VecDeque<Finished>,
    bytes: usize,
}

/// Detaches a POST stream when its body is dropped before its last event went out.
pub(super) struct Detach {
    pub stream: Arc<PostStream>,
    pub finished: bool,
}

impl Drop for Detach {
    fn drop(&mut self) {
        if !self.finished {
            self.stream.detach();
        }
    }
}

/// Where the id of the last event the session's GET streams sent is kept.
pub(super) fn cursor_key(id: &str) -> String {
    format!("session-cursor:{id}")
}

/// The sessions' GET streams, as the engine's session table writes to them and forgets
/// them: a session's unprompted messages go to its GET stream's log, and when the session
/// ends everywhere its log and its cursor go.
pub(super) struct GetStreams(pub Arc<Streams>);

#[async_trait]
impl SessionStreams for GetStreams {
    fn standing(&self, id: &str) -> Sink {
        let log = LogWriter::new(&self.0, id, &StreamName::Get);
        Arc::new(move |message| log.write(&encode(&message)))
    }

    async fn forget(&self, id: &str) {
        let backplane = &self.0.backplane;
        if let Err(e) = backplane.keys.delete(&cursor_key(id)).await {
            tracing::warn!(session = %id, "cannot remove the session's stream cursor: {e}");
        }
        backplane.events.remove(&StreamName::Get.log(id));
    }
}

/// The streams this replica writes or reads, by log: so that what the bus says of a log
/// reaches them; and where their events go.
pub(super) struct Streams {
    writers: Mutex<HashMap<String, Weak<PostStream>>>,
    readers: Wakers,
    finished: Mutex<FinishedStreams>,
    /// Holds the logs, and tells the other replicas of appends.
    backplane: Backplane,
    /// This replica's id.
    replica: u64,
    /// How long a log keeps its events.
    retention: Duration,
    /// How long where a GET stream stopped is kept (a session's idle timeout).
    cursor_ttl: Duration,
}

impl Streams {
    pub(super) fn new(backplane: Backplane, replica: u64, retention: Duration, cursor_ttl: Duration) -> Self {
        Streams {
            writers: Mutex::default(),
            readers: Wakers::default(),
            finished: Mutex::default(),
            backplane,
            replica,
            retention,
            cursor_ttl,
        }
    }

    /// Keeps the events of a stream that ended on its connection for [`FINISHED_KEPT`],
    /// within [`FINISHED_BYTES`] (the oldest go first).
    fn keep_finished(&self, writer: LogWriter, sent: VecDeque<Sent>) {
        let now = std::time::Instant::now();
        let bytes = sent.iter().map(|s| s.event.len()).sum();
        let mut finished = self.finished.lock().unwrap_or_else(|p| p.into_inner());
        finished.bytes += bytes;
        finished.streams.push_back(Finished { at: now, writer, sent, bytes });
        while let Some(oldest) = finished.streams.front() {
            if now.duration_since(oldest.at) < FINISHED_KEPT && finished.bytes <= FINISHED_BYTES {
                break;
            }
            finished.bytes -= oldest.bytes;
            finished.streams.pop_front();
        }
    }

    fn writing(&self, log: &str, stream: &Arc<PostStream>) {
        self.writers.lock().unwrap_or_else(|p| p.into_inner()).insert(log.to_string(), Arc::downgrade(stream));
    }

    fn done_writing(&self, log: &str) {
        self.writers.lock().unwrap_or_else(|p| p.into_inner()).remove(log);
    }

    /// What readers of `log` here wait on.
    fn reading(&self, log: &str) -> Arc<Notify> {
        self.readers.watch(log)
    }

    /// A replica appended to `log`: its readers here read again.
    pub(super) fn logged(&self, log: &str) {
        self.readers.wake(log)
    }

    /// A client asks to resume `log`: if this replica writes it, or wrote it lately, its
    /// events go to the log.
    pub(super) fn resuming(&self, log: &str) {
        let writer = self.writers.lock().unwrap_or_else(|p| p.into_inner()).get(log).and_then(Weak::upgrade);
        if let Some(stream) = writer {
            return stream.detach();
        }
        let mut finished = self.finished.lock().unwrap_or_else(|p| p.into_inner());
        let found = finished.streams.iter().position(|f| f.writer.log == log && f.at.elapsed() < FINISHED_KEPT);
        if let Some(stream) = found.and_then(|at| finished.streams.remove(at)) {
            finished.bytes -= stream.bytes;
            drop(finished);
            stream.writer.append(logged(stream.sent));
        }
    }
}

/// How a reader goes on once it has sent what the log holds.
pub(super) struct Tail {
    pub log: String,
    /// The last event the client has, if it said.
    pub after: Option<String>,
    /// A POST's stream: ends with its last event (or when no log comes).
    pub post: bool,
    /// Ends the stream (the session ended, or the server shuts down).
    pub stop: CancellationToken,
    /// Where the id of the last event sent is saved for the next GET without
    /// `Last-Event-ID` (the session's GET stream).
    pub cursor_key: Option<String>,
}

struct Reading {
    streams: Arc<Streams>,
    tail: Tail,
    notify: Arc<Notify>,
    pending: VecDeque<Logged>,
    saved: Option<String>,
    found_log: bool,
    started: tokio::time::Instant,
}

/// The events of a log after `tail.after`, then whatever is appended to it, as SSE events.
pub(super) fn tail(streams: Arc<Streams>, tail: Tail) -> impl Stream<Item = Bytes> + Send {
    let notify = streams.reading(&tail.log);
    if tail.post {
        let event = Event::Resuming { stream: tail.log.clone() };
        streams.backplane.bus.publish(Published { origin: streams.replica, event });
    }
    let saved = tail.after.clone();
    let reading = Reading {
        streams,
        tail,
        notify,
        pending: VecDeque::new(),
        saved,
        found_log: false,
        started: tokio::time::Instant::now(),
    };
    futures::stream::unfold(Some(reading), |reading| async move {
        let mut reading = reading?;
        loop {
            if let Some(event) = reading.pending.pop_front() {
                let (line, last) = line_of(&event.data);
                let bytes = body::message_with_id(&event.id, line);
                reading.tail.after = Some(event.id);
                let next = if last && reading.tail.post { None } else { Some(reading) };
                return Some((bytes, next));
            }
            reading.save_cursor().await;
            if !reading.refill().await {
                return None;
            }
        }
    })
}

impl Reading {
    /// Waits until the log holds events after the cursor, and takes them; `false` when the
    /// stream is to end.
    async fn refill(&mut self) -> bool {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.streams.backplane.events.read(&self.tail.log).await {
                Ok(events) => {
                    self.found_log |= !events.is_empty();
                    let start = match &self.tail.after {
                        Some(after) => events.iter().position(|e| &e.id == after).map_or(0, |at| at + 1),
                        None => 0,
                    };
                    self.pending.extend(events.into_iter().skip(start));
                    if !self.pending.is_empty() {
                        return true;
                    }
                }
                Err(e) => tracing::debug!(log = %self.tail.log, "cannot read a stream's events yet: {e}"),
            }
            if self.tail.post && !self.found_log && self.started.elapsed() >= WAIT_FOR_LOG {
                return false;
            }
            tokio::select! {
                _ = self.tail.stop.cancelled() => return false,
                _ = notified => {}
                _ = tokio::time::sleep(POLL) => {}
            }
        }
    }

    /// Saves the id of the last event sent, where the next GET without `Last-Event-ID`
    /// starts; a store that cannot take it is logged (that GET may repeat events).
    async fn save_cursor(&mut self) {
        let Some(key) = &self.tail.cursor_key else { return };
        if self.tail.after == self.saved {
            return;
        }
        let Some(after) = self.tail.after.clone() else { return };
        let keys = &self.streams.backplane.keys;
        if let Err(e) = keys.put(key, after.as_bytes(), self.streams.cursor_ttl).await {
            tracing::debug!(log = %self.tail.log, "cannot save where a stream stopped: {e}");
        }
        self.saved = Some(after);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_name_their_stream() {
        assert_eq!(StreamName::of_event("g.3fa.17"), Some(StreamName::Get));
        assert_eq!(StreamName::of_event("p9c1e.3fa.5"), Some(StreamName::Post("9c1e".into())));
        assert_eq!(StreamName::of_event("g.0"), Some(StreamName::Get));
        for foreign in ["", "g", "g.", "x.1", "p.1", "pzz.1", "p12345678901234567.1", "g.1\nid: 2", "g.1 ", "42"] {
            assert_eq!(StreamName::of_event(foreign), None, "{foreign:?}");
        }
        let post = StreamName::new_post();
        assert_eq!(StreamName::of_event(&post.priming_id(None)), Some(post.clone()));
        assert_eq!(post.log("s1"), format!("s1:{}", post.tag()));
    }

    #[test]
    fn sent_events_read_back_as_logged() {
        let line = r#"{"a":"b\\n"}"#;
        let sent = Sent { event: body::message_with_id("p1.2.3", line), last: true };
        assert_eq!(sent.logged(), Some(Logged { id: "p1.2.3".into(), data: entry(line, true) }));
    }

    #[test]
    fn logged_lines_say_which_is_last() {
        assert_eq!(line_of(&entry("{}", true)), ("{}", true));
        assert_eq!(line_of(&entry("{\"a\":1}", false)), ("{\"a\":1}", false));
        assert_eq!(line_of(""), ("", false));
    }
}
