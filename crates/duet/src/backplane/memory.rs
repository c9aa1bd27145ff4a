//! The backplane within one process: keys in a map whose entries expire, a bus that hands
//! each event to the other servers built on the same backplane, event logs in memory
//! (bounded in count and bytes as well as by their expiry), and rosters.

use super::{Bus, EventLog, Joined, Keys, LOG_CAPACITY, Logged, Published, Rosters, StoreError, Subscriber};
use crate::layer::Feed;
use async_trait::async_trait;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often at most the map drops its expired entries (each write checks).
const PURGE_EVERY: Duration = Duration::from_secs(1);

struct Entries {
    values: HashMap<String, (Vec<u8>, Instant)>,
    purged: Instant,
}

/// Keys in this process's memory.
pub struct MemoryKeys {
    entries: Mutex<Entries>,
}

impl Default for MemoryKeys {
    fn default() -> Self {
        MemoryKeys { entries: Mutex::new(Entries { values: HashMap::new(), purged: Instant::now() }) }
    }
}

impl MemoryKeys {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The map, without the entries that expired.
    fn live(&self) -> MutexGuard<'_, Entries> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if now.duration_since(entries.purged) >= PURGE_EVERY {
            entries.values.retain(|_, (_, until)| *until > now);
            entries.purged = now;
        }
        entries
    }
}

#[async_trait]
impl Keys for MemoryKeys {
    async fn claim(&self, key: &str, value: &[u8], ttl: Duration) -> Result<Option<Vec<u8>>, StoreError> {
        let now = Instant::now();
        let mut entries = self.live();
        match entries.values.get(key) {
            Some((held, until)) if *until > now => Ok(Some(held.clone())),
            _ => {
                entries.values.insert(key.to_string(), (value.to_vec(), now + ttl));
                Ok(None)
            }
        }
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let now = Instant::now();
        Ok(self.live().values.get(key).filter(|(_, until)| *until > now).map(|(value, _)| value.clone()))
    }

    async fn put(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StoreError> {
        self.live().values.insert(key.to_string(), (value.to_vec(), Instant::now() + ttl));
        Ok(())
    }

    async fn swap(&self, key: &str, old: &[u8], new: &[u8], ttl: Duration) -> Result<bool, StoreError> {
        let now = Instant::now();
        let mut entries = self.live();
        match entries.values.get_mut(key) {
            Some((held, until)) if *until > now && held.as_slice() == old => {
                *held = new.to_vec();
                *until = now + ttl;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.live().values.remove(key);
        Ok(())
    }
}

/// A bus within this process.
#[derive(Default)]
pub struct MemoryBus {
    feed: Feed<Published>,
}

impl MemoryBus {
    /// A bus with no subscribers.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl Bus for MemoryBus {
    fn publish(&self, published: Published) {
        self.feed.notify(published);
    }

    async fn publish_now(&self, published: Published) -> Result<(), StoreError> {
        self.feed.notify(published);
        Ok(())
    }

    fn subscribe(&self, subscriber: &Arc<Subscriber>) {
        self.feed.subscribe(subscriber);
    }
}

/// Event logs kept at most; past it (or past [`EVENT_BYTES`]) the one nearest its end goes.
const EVENT_LOGS: usize = 10_000;
/// The bytes of event data kept at most, all logs together.
const EVENT_BYTES: usize = 64 << 20;

#[derive(Default)]
struct Logs {
    logs: HashMap<String, (VecDeque<Logged>, Instant)>,
    bytes: usize,
    purged: Option<Instant>,
}

impl Logs {
    fn size(log: &VecDeque<Logged>) -> usize {
        log.iter().map(|e| e.id.len() + e.data.len()).sum()
    }

    fn drop_log(&mut self, stream: &str) {
        if let Some((log, _)) = self.logs.remove(stream) {
            self.bytes -= Self::size(&log);
        }
    }

    /// Drops the logs that ended, at most once a [`PURGE_EVERY`], then the nearest their
    /// end while over the bounds.
    fn bound(&mut self, now: Instant) {
        if self.purged.is_none_or(|at| now.duration_since(at) >= PURGE_EVERY) {
            let ended: Vec<String> =
                self.logs.iter().filter(|(_, (_, until))| *until <= now).map(|(k, _)| k.clone()).collect();
            for stream in ended {
                self.drop_log(&stream);
            }
            self.purged = Some(now);
        }
        while self.logs.len() > EVENT_LOGS || self.bytes > EVENT_BYTES {
            let Some(nearest) = self.logs.iter().min_by_key(|(_, (_, until))| *until).map(|(k, _)| k.clone()) else {
                break;
            };
            self.drop_log(&nearest);
        }
    }
}

/// Event logs in this process's memory.
#[derive(Default)]
pub struct MemoryEvents {
    logs: Mutex<Logs>,
}

impl MemoryEvents {
    /// No logs yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Logs> {
        self.logs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl EventLog for MemoryEvents {
    fn append(&self, stream: &str, events: Vec<Logged>, ttl: Duration) {
        let now = Instant::now();
        let mut logs = self.lock();
        let added: usize = events.iter().map(|e| e.id.len() + e.data.len()).sum();
        let (log, until) = logs.logs.entry(stream.to_string()).or_insert_with(|| (VecDeque::new(), now));
        *until = now + ttl;
        log.extend(events);
        let mut dropped = 0;
        while log.len() > LOG_CAPACITY {
            dropped += log.pop_front().map_or(0, |e| e.id.len() + e.data.len());
        }
        logs.bytes = logs.bytes + added - dropped;
        logs.bound(now);
    }

    async fn read(&self, stream: &str) -> Result<Vec<Logged>, StoreError> {
        let now = Instant::now();
        let logs = self.lock();
        Ok(logs
            .logs
            .get(stream)
            .filter(|(_, until)| *until > now)
            .map(|(log, _)| log.iter().cloned().collect())
            .unwrap_or_default())
    }

    fn remove(&self, stream: &str) {
        self.lock().drop_log(stream);
    }
}

/// The members of one roster: each one's time, and how long it lives past it.
type Members = HashMap<String, (Instant, Duration)>;

/// Rosters in this process's memory.
#[derive(Default)]
pub struct MemoryRosters {
    rosters: Mutex<HashMap<String, Members>>,
}

impl MemoryRosters {
    /// No rosters yet.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl Rosters for MemoryRosters {
    async fn join(&self, roster: &str, member: &str, limit: usize, idle: Duration) -> Result<Joined, StoreError> {
        let now = Instant::now();
        let mut rosters = self.rosters.lock().unwrap_or_else(|p| p.into_inner());
        let members = rosters.entry(roster.to_string()).or_default();
        members.retain(|_, (at, idle)| *at + *idle > now);
        if members.len() < limit || members.contains_key(member) {
            members.insert(member.to_string(), (now, idle));
            return Ok(Joined::Joined);
        }
        let oldest = members.iter().filter(|(_, (at, _))| *at <= now).min_by_key(|(_, (at, _))| *at);
        Ok(Joined::Full { oldest: oldest.map(|(member, _)| member.clone()) })
    }

    fn touch(&self, roster: &str, member: &str, ahead: Duration, idle: Duration) {
        let mut rosters = self.rosters.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(time) = rosters.get_mut(roster).and_then(|members| members.get_mut(member)) {
            *time = (Instant::now() + ahead, idle);
        }
    }

    fn leave(&self, roster: &str, member: &str) {
        let mut rosters = self.rosters.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(members) = rosters.get_mut(roster) {
            members.remove(member);
            if members.is_empty() {
                rosters.remove(roster);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn claims_are_exclusive_until_they_expire() {
        let keys = MemoryKeys::new();
        assert_eq!(keys.claim("k", b"a", Duration::from_millis(20)).await, Ok(None));
        assert_eq!(keys.claim("k", b"b", Duration::from_secs(9)).await, Ok(Some(b"a".to_vec())));
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(keys.claim("k", b"c", Duration::from_secs(9)).await, Ok(None));
        keys.put("k", b"d", Duration::from_secs(9)).await.unwrap();
        assert_eq!(keys.get("k").await, Ok(Some(b"d".to_vec())));
        assert_eq!(keys.claim("k", b"e", Duration::from_secs(9)).await, Ok(Some(b"d".to_vec())));
        keys.delete("k").await.unwrap();
        assert_eq!(keys.get("k").await, Ok(None));
        assert_eq!(keys.claim("k", b"f", Duration::from_secs(9)).await, Ok(None));
    }

    fn logged(id: usize) -> Logged {
        Logged { id: id.to_string(), data: "x".repeat(10) }
    }

    #[tokio::test]
    async fn event_logs_keep_their_newest_events_until_they_end() {
        let events = MemoryEvents::new();
        events.append("s", (0..LOG_CAPACITY + 3).map(logged).collect(), Duration::from_millis(30));
        let kept = events.read("s").await.unwrap();
        assert_eq!((kept.len(), kept[0].id.as_str()), (LOG_CAPACITY, "3"));
        events.append("t", vec![logged(1)], Duration::from_secs(9));
        events.remove("t");
        assert!(events.read("t").await.unwrap().is_empty());
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert!(events.read("s").await.unwrap().is_empty(), "ended with its expiry");
    }

    #[tokio::test]
    async fn event_logs_are_bounded_in_bytes() {
        let events = MemoryEvents::new();
        let big = |id: &str| vec![Logged { id: id.into(), data: "x".repeat(EVENT_BYTES / 2) }];
        events.append("a", big("1"), Duration::from_secs(5));
        events.append("b", big("2"), Duration::from_secs(9));
        assert!(events.read("a").await.unwrap().is_empty(), "the log nearest its end went");
        assert_eq!(events.read("b").await.unwrap().len(), 1);
        assert!(events.lock().bytes <= EVENT_BYTES);
    }

    #[tokio::test]
    async fn rosters_name_their_oldest_member_when_full() {
        let rosters = MemoryRosters::new();
        let idle = Duration::from_secs(60);
        for member in ["a", "b"] {
            assert_eq!(rosters.join("r", member, 2, idle).await, Ok(Joined::Joined));
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        assert_eq!(rosters.join("r", "a", 2, idle).await, Ok(Joined::Joined), "a member already there is renewed");
        assert_eq!(rosters.join("r", "c", 2, idle).await, Ok(Joined::Full { oldest: Some("b".into()) }));
        rosters.touch("r", "b", idle, idle);
        assert_eq!(rosters.join("r", "c", 2, idle).await, Ok(Joined::Full { oldest: Some("a".into()) }));
        rosters.touch("r", "a", idle, idle);
        assert_eq!(rosters.join("r", "c", 2, idle).await, Ok(Joined::Full { oldest: None }), "every time to come");
        rosters.leave("r", "a");
        assert_eq!(rosters.join("r", "c", 2, idle).await, Ok(Joined::Joined));
        let short = Duration::from_millis(20);
        assert_eq!(rosters.join("s", "x", 1, short).await, Ok(Joined::Joined));
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(rosters.join("s", "y", 1, short).await, Ok(Joined::Joined), "x lived its idle time");
    }

    #[tokio::test]
    async fn a_swap_needs_the_value_it_replaces() {
        let keys = MemoryKeys::new();
        assert_eq!(keys.swap("k", b"", b"a", Duration::from_secs(9)).await, Ok(false), "nothing to replace");
        keys.put("k", b"a", Duration::from_millis(20)).await.unwrap();
        assert_eq!(keys.swap("k", b"b", b"c", Duration::from_secs(9)).await, Ok(false));
        assert_eq!(keys.swap("k", b"a", b"c", Duration::from_secs(9)).await, Ok(true));
        assert_eq!(keys.get("k").await, Ok(Some(b"c".to_vec())));
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(keys.get("k").await, Ok(Some(b"c".to_vec())), "the swap set a new expiry");
        keys.put("k", b"d", Duration::from_millis(10)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(keys.swap("k", b"d", b"e", Duration::from_secs(9)).await, Ok(false), "an expired value is gone");
    }
}
