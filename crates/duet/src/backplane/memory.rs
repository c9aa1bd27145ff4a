//! The backplane within one process: keys in a map whose entries expire, and a bus that
//! hands each event to the other servers built on the same backplane.

use super::{Bus, Keys, Published, StoreError, Subscriber};
use crate::layer::Feed;
use async_trait::async_trait;
use std::collections::HashMap;
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
}
