//! What replicas share. One process keeps everything in memory; replicas behind a load
//! balancer must see the same idempotency keys, session records and tasks, and the changes
//! one replica's layer raises must reach the listen streams and sessions held by the others.
//! The backplane is that shared part: [`Keys`] (values with an expiry, an atomic claim and
//! an atomic swap), a [`Bus`] (changes published to every other replica, session states,
//! tasks that changed, and messages routed to the replica a session's stream or question is
//! on), an [`EventLog`] (the recent events of resumable SSE streams, which a client may pick
//! up again on any replica) and [`Rosters`] (the live sessions, counted across replicas for
//! the caps). [`Backplane::memory`] is
//! the default and what one process needs; servers built on one clone of it share it as
//! replicas would. `RedisBackplane::connect` (feature `redis`) shares it through Redis,
//! authenticating everything it writes and reads there.

#[cfg(feature = "redis")]
mod fresh;
#[cfg(feature = "redis")]
mod mac;
mod memory;
#[cfg(feature = "redis")]
mod redis;

use crate::layer::{Change, Principal, Receiver};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use memory::{MemoryBus, MemoryEvents, MemoryKeys, MemoryRosters};
#[cfg(feature = "redis")]
pub use redis::RedisBackplane;

/// The shared store could not answer (unreachable, too slow, or it answered nonsense).
/// Whatever needed the shared state fails with this message; nothing waits longer than
/// the store's timeout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the shared store is unavailable: {0}")]
pub struct StoreError(pub String);

/// Values with an expiry, shared by every replica.
#[async_trait]
pub trait Keys: Send + Sync {
    /// Sets `key` to `value` for `ttl` unless it holds a value, atomically: `None` when this
    /// call set it, else the value it holds.
    async fn claim(&self, key: &str, value: &[u8], ttl: Duration) -> Result<Option<Vec<u8>>, StoreError>;
    /// What `key` holds.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Sets `key` to `value` for `ttl`, whatever it held.
    async fn put(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StoreError>;
    /// Sets `key` to `new` for `ttl` if it still holds `old`, atomically: whether it did.
    async fn swap(&self, key: &str, old: &[u8], new: &[u8], ttl: Duration) -> Result<bool, StoreError>;
    /// Removes `key`.
    async fn delete(&self, key: &str) -> Result<(), StoreError>;
}

/// What one replica tells the others, as the bus carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Published {
    /// The replica that sent it (a server's `replica_id`).
    pub origin: u64,
    /// What happened there.
    pub event: Event,
}

/// What one replica tells the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// A change the origin's layer raised.
    Change(Change),
    /// A message the origin received for a session another replica must handle: a legacy
    /// HTTP+SSE session's POST (for the replica holding its stream), a client's answer or
    /// cancellation (for the replica whose request it concerns).
    Routed(Routed),
    /// The state of a handshake-era HTTP session changed on the origin, or the session
    /// ended (`None`); replicas holding a copy take it on, with where its GET stream is.
    /// `revision` counts the writes of the session's record: a copy takes on no older one.
    /// The state is the engine's, as JSON: the backplane carries it without reading it.
    Session {
        /// The session's id.
        session: String,
        /// Its state, or `None` once it ended.
        state: Option<serde_json::Value>,
        /// Where its GET stream is.
        #[serde(flatten)]
        stream: GetStream,
        /// How many writes its record has had.
        #[serde(default)]
        revision: u64,
    },
    /// The origin appended to the [`EventLog`] of `stream`: whoever reads it reads again.
    Logged {
        /// The stream's id.
        stream: String,
    },
    /// A client asks to pick up `stream` where it broke: the replica writing the stream
    /// starts keeping its events in the [`EventLog`].
    Resuming {
        /// The stream's id.
        stream: String,
    },
    /// The record of a task changed on the origin (its id): the replica running it looks
    /// at it again (an answer came, or it was cancelled), and listen streams that follow it
    /// tell their clients.
    Task(String),
}

/// Where a handshake-era session's GET stream is, as its record and the bus carry it.
/// The replica that held it last delivers the session's changes (before any did, the
/// replica that made the session): a stream that closes hands nothing over, so no change
/// raised while the replicas learn of it falls between two of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetStream {
    /// The replica whose GET stream of the session is open, if one is.
    #[serde(default, rename = "streamer")]
    pub open: Option<u64>,
    /// The replica whose GET stream of the session was open last.
    #[serde(default, rename = "last_streamer")]
    pub last: Option<u64>,
}

impl GetStream {
    /// Opened on replica `here`.
    pub fn opened(here: u64) -> Self {
        GetStream { open: Some(here), last: Some(here) }
    }

    /// Closed on replica `here`: unchanged if another replica's is open.
    pub fn closed(self, here: u64) -> Self {
        match self.open {
            Some(open) if open == here => GetStream { open: None, ..self },
            _ => self,
        }
    }

    /// The replica that delivers the session's changes, if one holds or held the stream.
    pub fn deliverer(self) -> Option<u64> {
        self.open.or(self.last)
    }
}

/// A message posted to one replica for a session another replica handles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Routed {
    /// The session's id.
    pub session: String,
    /// Who sent it, as the origin authenticated them.
    pub principal: Principal,
    /// The JSON-RPC message, as posted.
    pub message: String,
}

/// Receives what the bus carries.
pub type Subscriber = Receiver<Published>;

/// Carries events between replicas, in order per origin.
#[async_trait]
pub trait Bus: Send + Sync {
    /// Sends `published` to every subscriber, this replica's included (they skip their own
    /// origin). Never blocks: it runs on the thread that raised the change.
    fn publish(&self, published: Published);
    /// Sends `published` and returns once the bus has handed it to every subscriber's
    /// connection, so what this replica's caller does next reaches them after it.
    async fn publish_now(&self, published: Published) -> Result<(), StoreError>;
    /// Delivers what is published to `subscriber` for as long as the caller keeps the `Arc`.
    fn subscribe(&self, subscriber: &Arc<Subscriber>);
}

/// One event of a resumable stream: the id the client knows it by, and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logged {
    /// Unique within the stream's session; no line breaks.
    pub id: String,
    /// The event's `data`, as the stream wrote it.
    pub data: String,
}

/// How many events a stream's log keeps: the newest.
pub const LOG_CAPACITY: usize = 512;

/// The recent events of resumable SSE streams (handshake-era Streamable HTTP), so that a
/// client whose stream broke can pick it up after the last event it saw, on any replica.
/// A log keeps its newest [`LOG_CAPACITY`] events and ends `ttl` after its last append.
#[async_trait]
pub trait EventLog: Send + Sync {
    /// Appends `events` to the log of `stream`. Never blocks; what one replica appends and
    /// publishes on the [`Bus`] reaches the store in the order it was called, so a replica
    /// told [`Event::Logged`] finds the events in the log.
    fn append(&self, stream: &str, events: Vec<Logged>, ttl: Duration);
    /// The events of `stream`'s log, oldest first; none when it has no log.
    async fn read(&self, stream: &str) -> Result<Vec<Logged>, StoreError>;
    /// Ends the log of `stream`.
    fn remove(&self, stream: &str);
}

/// What [`Rosters::join`] says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Joined {
    /// The member is in.
    Joined,
    /// The roster is full: its oldest member whose time has passed (the one to end to make
    /// room), or `None` when every member's time is still to come.
    Full {
        /// The oldest member whose time has passed.
        oldest: Option<String>,
    },
}

/// Named lists of members, each with a time, shared by every replica: the handshake-era
/// sessions of each principal and of the whole server, so that the session caps count
/// across replicas. A member lives until `idle` after its time; a time in the future (a
/// session whose stream is open, renewed by the replica holding it) keeps it from being
/// the oldest.
#[async_trait]
pub trait Rosters: Send + Sync {
    /// Adds `member` to `roster` at the present time, unless it holds `limit` live members
    /// already (a member already there is renewed instead).
    async fn join(&self, roster: &str, member: &str, limit: usize, idle: Duration) -> Result<Joined, StoreError>;
    /// Sets the time of `member` of `roster`, if it is there, to `ahead` from now. Never
    /// blocks.
    fn touch(&self, roster: &str, member: &str, ahead: Duration, idle: Duration);
    /// Takes `member` off `roster`. Never blocks.
    fn leave(&self, roster: &str, member: &str);
}

/// Tries of a read-modify-swap of [`Keys`] before it gives up (each lost try means another
/// write won).
pub(crate) const SWAP_ATTEMPTS: usize = 64;

/// The shared part of a set of replicas. Cheap to clone; clones share.
#[derive(Clone)]
pub struct Backplane {
    /// Shared keys and values: session records, tasks, sealed states spent.
    pub keys: Arc<dyn Keys>,
    /// What the replicas tell each other.
    pub bus: Arc<dyn Bus>,
    /// The recent events of resumable streams.
    pub events: Arc<dyn EventLog>,
    /// The sessions of each principal and of the whole server, for the session caps.
    pub rosters: Arc<dyn Rosters>,
    /// What it is, for logs: `memory`, or the store's address.
    name: Arc<str>,
    immediate: bool,
}

impl Backplane {
    /// Everything in this process: what one replica needs.
    pub fn memory() -> Self {
        Backplane {
            keys: Arc::new(MemoryKeys::new()),
            bus: Arc::new(MemoryBus::new()),
            events: Arc::new(MemoryEvents::new()),
            rosters: Arc::new(MemoryRosters::new()),
            name: "memory".into(),
            immediate: true,
        }
    }

    /// A backplane of the program's own, one value that is all its parts (as
    /// `RedisBackplane` is), named `name` in logs. Its fields may then be replaced one by one.
    pub fn new<T: Keys + Bus + EventLog + Rosters + 'static>(shared: Arc<T>, name: &str) -> Self {
        Backplane {
            keys: shared.clone(),
            bus: shared.clone(),
            events: shared.clone(),
            rosters: shared,
            name: name.into(),
            immediate: false,
        }
    }

    /// What it is, for logs: `memory`, or the store's address.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether every subscriber has handled a published event before `publish` returns
    /// (in one process): then what a server holds is never behind what another published,
    /// and it need not read the keys again to be sure.
    pub fn is_immediate(&self) -> bool {
        self.immediate
    }
}

impl Default for Backplane {
    fn default() -> Self {
        Backplane::memory()
    }
}

impl fmt::Debug for Backplane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Backplane").field(&self.name).finish()
    }
}
