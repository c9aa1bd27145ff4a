//! The backplane on a Redis server, for replicas behind a load balancer. Keys are Redis
//! strings with an expiry under a prefix; the bus is one pub/sub channel (`PREFIXbus`); an
//! event log is a list (`PREFIXevents:STREAM`, `id` and data on two lines an entry) trimmed
//! to its newest entries, with an expiry. Publishing and appending go through one ordered
//! outbox, sent in pipelines, so what a replica appends is in Redis before what it
//! publishes next reaches anyone. One connection
//! (RESP3, so commands and pushed messages share it) reconnects by itself and resubscribes;
//! a watchdog pings it every second so a lost connection is noticed and mended even when
//! nothing else talks to Redis. Every command has a deadline: a request that needs shared
//! state fails within it, never hangs. Events published while Redis is unreachable are
//! lost (pub/sub keeps no history); each loss is logged and counted.
//!
//! Redis is not trusted: every value, bus message and event-log entry carries a MAC bound to
//! where it is stored ([`super::mac`]), and what fails it is taken for absent; a bus message
//! is believed once, and only while fresh ([`super::fresh`]). The rosters
//! (sorted sets of session ids) carry none: a forged member can at worst end a session,
//! which deleting its record does as well.

use super::fresh::{Freshness, Stamped, Stamper, now_millis};
use super::mac::{BackplaneMac, Kind, TAG_HEX_LEN};
use super::{
    Backplane, Bus, EventLog, Joined, Keys, LOG_CAPACITY, Logged, Published, Rosters, SWAP_ATTEMPTS, StoreError,
    Subscriber,
};
use crate::layer::Feed;
use crate::signals;
use crate::state_key::StateKeys;
use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, ProtocolVersion, PushInfo, PushKind, Value};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::Instrument as _;

/// How long one command may take, connecting included.
const DEADLINE: Duration = Duration::from_secs(2);
/// Events waiting to be published or appended; beyond it they are dropped (and counted).
const OUTBOX: usize = 4096;
/// Events sent in one pipeline.
const BATCH: usize = 64;
/// Sets KEYS[1] to ARGV[2] for ARGV[3] ms if what it holds after its first ARGV[4] bytes
/// (the MAC) is ARGV[1]: the payload the caller read, whose MAC may be under the previous
/// key. 1 if it did, else 0.
const SWAP: &str = "local held = redis.call('GET', KEYS[1]) \
    if held and string.sub(held, ARGV[4] + 1) == ARGV[1] then \
    redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 else return 0 end";

/// Now in Redis's clock, in milliseconds (the replicas' clocks may differ).
const NOW: &str = "local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)";

/// KEYS[1] a roster, ARGV member, limit, idle ms: `{1, ''}` when it joined, else `{0, the
/// oldest member whose time has passed, or ''}`.
const JOIN: &str = "
    local idle = tonumber(ARGV[3])
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - idle)
    if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
        redis.call('ZADD', KEYS[1], now, ARGV[1])
        redis.call('PEXPIRE', KEYS[1], 2 * idle)
        return {1, ''}
    end
    local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1)
    return {0, oldest[1] or ''}";

/// KEYS[1] a roster, ARGV member, ahead ms, idle ms: the member's time set ahead of now.
const TOUCH: &str = "
    if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[1]) == 1 then
        redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + 2 * tonumber(ARGV[3]))
    end";

/// What the outbox sends, in order.
enum Outgoing {
    /// An event, stamped and sealed as it is sent, so that it leaves in the order of its
    /// sequence and its age counts from then.
    Publish(Published),
    Append {
        key: String,
        entries: Vec<Vec<u8>>,
        ttl: Duration,
    },
    Remove(String),
    Touch {
        key: String,
        member: String,
        ahead: Duration,
        idle: Duration,
    },
    Leave {
        key: String,
        member: String,
    },
}

impl Outgoing {
    /// The Redis command that failed when this could not be sent.
    fn operation(&self) -> &'static str {
        match self {
            Outgoing::Publish(_) => "PUBLISH",
            Outgoing::Append { .. } => "RPUSH",
            Outgoing::Remove(_) => "DEL",
            Outgoing::Touch { .. } => "EVAL",
            Outgoing::Leave { .. } => "ZREM",
        }
    }
}

/// Keys, a bus and event logs in Redis.
pub struct RedisBackplane {
    connection: ConnectionManager,
    prefix: String,
    outbox: mpsc::Sender<Outgoing>,
    subscribers: Arc<Feed<Published>>,
    mac: Arc<BackplaneMac>,
    bus: Arc<BusSealer>,
}

/// Seals what a replica publishes on the bus channel: stamped ([`super::fresh`]) and behind
/// the MAC.
struct BusSealer {
    channel: String,
    mac: Arc<BackplaneMac>,
    stamper: Stamper,
}

impl BusSealer {
    /// `published` as the bus carries it: JSON, stamped with the time now and its sequence,
    /// behind its MAC.
    fn seal(&self, published: Published) -> Vec<u8> {
        // Plain data: serializing it cannot fail.
        let payload = serde_json::to_vec(&self.stamper.stamp(published, now_millis())).unwrap_or_default();
        self.mac.seal(Kind::Bus, &self.channel, &payload)
    }
}

impl RedisBackplane {
    /// Connects to the Redis server at `url` (`redis://HOST:PORT/DB`, or `rediss://` over
    /// TLS, with a user and password when it needs them), its keys and channel named under
    /// `prefix`, what it writes and reads authenticated with a key derived from `keys` (the
    /// replicas' shared state keys). Fails when the server cannot be reached now.
    pub async fn connect(url: &str, prefix: &str, keys: &StateKeys) -> Result<Backplane, StoreError> {
        let refused = |e: redis::RedisError| StoreError(format!("cannot use Redis at {}: {e}", redacted(url)));
        let client = Client::open(url).map_err(refused)?;
        let info = client.get_connection_info().clone();
        let settings = info.redis_settings().clone().set_protocol(ProtocolVersion::RESP3);
        let client = Client::open(info.set_redis_settings(settings)).map_err(refused)?;
        let subscribers: Arc<Feed<Published>> = Arc::new(Feed::new());
        let received = subscribers.clone();
        let mac = Arc::new(BackplaneMac::new(keys));
        let channel = format!("{prefix}bus");
        let (checker, checked_channel, freshness) = (mac.clone(), channel.clone(), Freshness::default());
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(DEADLINE))
            .set_response_timeout(Some(DEADLINE))
            .set_max_delay(Duration::from_secs(1))
            // Few attempts per reconnection (a start against a Redis that is down fails within
            // a second); the watchdog's pings start the next one.
            .set_number_of_retries(2)
            .set_push_sender(move |push: PushInfo| {
                deliver(&received, &checker, &freshness, &checked_channel, push);
                Ok::<(), redis::aio::SendError>(())
            })
            .set_automatic_resubscription();
        let mut connection = ConnectionManager::new_with_config(client, config).await.map_err(refused)?;
        connection.subscribe(&channel).await.map_err(refused)?;
        let (outbox, pending) = mpsc::channel(OUTBOX);
        let bus = Arc::new(BusSealer { channel, mac: mac.clone(), stamper: Stamper::default() });
        tokio::spawn(publish(connection.clone(), bus.clone(), pending));
        let prefix = prefix.to_string();
        let backplane = Arc::new(RedisBackplane { connection, prefix, outbox, subscribers, mac, bus });
        tokio::spawn(watch(Arc::downgrade(&backplane)));
        Ok(Backplane::new(backplane, &redacted(url)))
    }

    /// The prefix of a deployment that names none, derived from its state key: deployments
    /// with different keys sharing one Redis never mix. Not secret.
    pub fn default_prefix(keys: &StateKeys) -> String {
        BackplaneMac::new(keys).default_prefix()
    }

    /// Sets the Redis key `stored` to `sealed` if the payload it holds (whatever its MAC) is
    /// `old`, atomically: whether it did.
    async fn swap_sealed(&self, stored: &str, old: &[u8], sealed: &[u8], ttl: Duration) -> Result<bool, StoreError> {
        let mut swap = redis::cmd("EVAL");
        swap.arg(SWAP).arg(1).arg(stored).arg(old).arg(sealed).arg(millis(ttl)).arg(TAG_HEX_LEN);
        self.run::<i64>(swap, "EVAL").await.map(|done| done == 1)
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    fn log_key(&self, stream: &str) -> String {
        format!("{}events:{stream}", self.prefix)
    }

    fn roster_key(&self, roster: &str) -> String {
        format!("{}roster:{roster}", self.prefix)
    }

    /// Queues `outgoing` behind what is queued already; a full outbox drops it, said and
    /// counted.
    fn send(&self, outgoing: Outgoing) {
        let operation = outgoing.operation();
        if self.outbox.try_send(outgoing).is_err() {
            tracing::warn!("the Redis outbox is not keeping up; {operation} was not sent");
            metrics::counter!(signals::BACKPLANE_ERRORS, "operation" => operation).increment(1);
        }
    }

    /// Runs one command within the deadline, in a client span named for it.
    async fn run<T: redis::FromRedisValue>(
        &self,
        command: redis::Cmd,
        operation: &'static str,
    ) -> Result<T, StoreError> {
        let span = tracing::info_span!(
            "redis",
            otel.name = operation,
            otel.kind = "client",
            db.system.name = "redis",
            db.operation.name = operation,
            error.type = tracing::field::Empty,
        );
        let mut connection = self.connection.clone();
        let outcome =
            tokio::time::timeout(DEADLINE, command.query_async(&mut connection)).instrument(span.clone()).await;
        let error = match outcome {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(e)) => StoreError(format!("Redis {operation} failed: {e}")),
            Err(_) => StoreError(format!("Redis did not answer {operation} within {} s", DEADLINE.as_secs())),
        };
        span.record("error.type", "store_unavailable");
        metrics::counter!(signals::BACKPLANE_ERRORS, "operation" => operation).increment(1);
        Err(error)
    }
}

#[async_trait]
impl Keys for RedisBackplane {
    /// A value held that fails its MAC counts as none: it is swapped for `value`.
    async fn claim(&self, key: &str, value: &[u8], ttl: Duration) -> Result<Option<Vec<u8>>, StoreError> {
        let stored = self.key(key);
        let sealed = self.mac.seal(Kind::Key, &stored, value);
        for _ in 0..SWAP_ATTEMPTS {
            let mut set = redis::cmd("SET");
            set.arg(&stored).arg(&sealed).arg("NX").arg("GET").arg("PX").arg(millis(ttl));
            let Some(held) = self.run::<Option<Vec<u8>>>(set, "SET").await? else { return Ok(None) };
            if let Some(payload) = self.mac.open(Kind::Key, &stored, &held) {
                return Ok(Some(payload.to_vec()));
            }
            if self.swap_sealed(&stored, &held[held.len().min(TAG_HEX_LEN)..], &sealed, ttl).await? {
                return Ok(None);
            }
        }
        Err(StoreError("a value kept changing while it was claimed".to_string()))
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let stored = self.key(key);
        let mut get = redis::cmd("GET");
        get.arg(&stored);
        let held: Option<Vec<u8>> = self.run(get, "GET").await?;
        Ok(held.and_then(|held| self.mac.open(Kind::Key, &stored, &held).map(<[u8]>::to_vec)))
    }

    async fn put(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StoreError> {
        let stored = self.key(key);
        let mut set = redis::cmd("SET");
        set.arg(&stored).arg(self.mac.seal(Kind::Key, &stored, value)).arg("PX").arg(millis(ttl));
        self.run(set, "SET").await
    }

    async fn swap(&self, key: &str, old: &[u8], new: &[u8], ttl: Duration) -> Result<bool, StoreError> {
        let stored = self.key(key);
        self.swap_sealed(&stored, old, &self.mac.seal(Kind::Key, &stored, new), ttl).await
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        let mut del = redis::cmd("DEL");
        del.arg(self.key(key));
        self.run::<i64>(del, "DEL").await.map(drop)
    }
}

#[async_trait]
impl Bus for RedisBackplane {
    async fn publish_now(&self, published: Published) -> Result<(), StoreError> {
        let mut command = redis::cmd("PUBLISH");
        command.arg(&self.bus.channel).arg(self.bus.seal(published));
        self.run::<i64>(command, "PUBLISH").await.map(drop)
    }

    fn publish(&self, published: Published) {
        self.send(Outgoing::Publish(published));
    }

    fn subscribe(&self, subscriber: &Arc<Subscriber>) {
        self.subscribers.subscribe(subscriber);
    }
}

#[async_trait]
impl EventLog for RedisBackplane {
    fn append(&self, stream: &str, events: Vec<Logged>, ttl: Duration) {
        let key = self.log_key(stream);
        let seal = |e: Logged| self.mac.seal(Kind::EventLog, &key, format!("{}\n{}", e.id, e.data).as_bytes());
        let entries = events.into_iter().map(seal).collect();
        self.send(Outgoing::Append { key, entries, ttl });
    }

    async fn read(&self, stream: &str) -> Result<Vec<Logged>, StoreError> {
        let key = self.log_key(stream);
        let mut range = redis::cmd("LRANGE");
        range.arg(&key).arg(0).arg(-1);
        let entries: Vec<Vec<u8>> = self.run(range, "LRANGE").await?;
        let logged = |entry: Vec<u8>| {
            let entry = std::str::from_utf8(self.mac.open(Kind::EventLog, &key, &entry)?).ok()?;
            let (id, data) = entry.split_once('\n')?;
            Some(Logged { id: id.to_string(), data: data.to_string() })
        };
        Ok(entries.into_iter().filter_map(logged).collect())
    }

    fn remove(&self, stream: &str) {
        self.send(Outgoing::Remove(self.log_key(stream)));
    }
}

#[async_trait]
impl Rosters for RedisBackplane {
    async fn join(&self, roster: &str, member: &str, limit: usize, idle: Duration) -> Result<Joined, StoreError> {
        let mut eval = redis::cmd("EVAL");
        eval.arg(format!("{NOW} {JOIN}")).arg(1).arg(self.roster_key(roster)).arg(member).arg(limit).arg(millis(idle));
        let (joined, oldest): (i64, String) = self.run(eval, "EVAL").await?;
        Ok(if joined == 1 { Joined::Joined } else { Joined::Full { oldest: Some(oldest).filter(|o| !o.is_empty()) } })
    }

    fn touch(&self, roster: &str, member: &str, ahead: Duration, idle: Duration) {
        self.send(Outgoing::Touch { key: self.roster_key(roster), member: member.to_string(), ahead, idle });
    }

    fn leave(&self, roster: &str, member: &str) {
        self.send(Outgoing::Leave { key: self.roster_key(roster), member: member.to_string() });
    }
}

/// A TTL in whole milliseconds, at least one (Redis refuses zero).
fn millis(ttl: Duration) -> u64 {
    (ttl.as_millis() as u64).max(1)
}

/// `url` without its password, for messages and logs.
fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_string(),
    }
}

/// Hands a message of the bus channel whose MAC is right, fresh and not seen before to the
/// subscribers. Refusals are logged (never the message) and counted.
fn deliver(subscribers: &Feed<Published>, mac: &BackplaneMac, freshness: &Freshness, channel: &str, push: PushInfo) {
    match (push.kind, push.data.as_slice()) {
        (PushKind::Message, [_channel, Value::BulkString(sealed)]) => {
            let Some(payload) = mac.open(Kind::Bus, channel, sealed) else { return };
            let stamped: Stamped = match serde_json::from_slice(payload) {
                Ok(stamped) => stamped,
                Err(e) => return tracing::warn!("ignored a message on the bus channel that is not an event: {e}"),
            };
            match freshness.admit(&stamped, now_millis()) {
                Ok(()) => subscribers.notify(stamped.published),
                Err(refusal) => {
                    let (origin, sequence, sent) = (stamped.published.origin, stamped.sequence, stamped.sent);
                    tracing::warn!(
                        kind = refusal.label(),
                        origin,
                        sequence,
                        sent,
                        "ignored a bus message: sent too long ago, or received already (replayed)"
                    );
                    metrics::counter!(signals::BACKPLANE_REJECTIONS, "kind" => refusal.label()).increment(1);
                }
            }
        }
        (PushKind::Disconnection, _) => {
            tracing::warn!("lost the connection to Redis; reconnecting");
            metrics::counter!(signals::BACKPLANE_ERRORS, "operation" => "CONNECTION").increment(1);
        }
        _ => {}
    }
}

/// Sends what the outbox receives, in order, a pipeline at a time, until the backplane
/// is dropped.
async fn publish(mut connection: ConnectionManager, bus: Arc<BusSealer>, mut pending: mpsc::Receiver<Outgoing>) {
    let mut batch = Vec::with_capacity(BATCH);
    while pending.recv_many(&mut batch, BATCH).await > 0 {
        let mut pipeline = redis::pipe();
        for outgoing in batch.drain(..) {
            match outgoing {
                Outgoing::Publish(published) => {
                    pipeline.cmd("PUBLISH").arg(&bus.channel).arg(bus.seal(published)).ignore();
                }
                Outgoing::Append { key, entries, ttl } => {
                    pipeline.cmd("RPUSH").arg(&key).arg(entries).ignore();
                    pipeline.cmd("LTRIM").arg(&key).arg(-(LOG_CAPACITY as i64)).arg(-1).ignore();
                    pipeline.cmd("PEXPIRE").arg(&key).arg(millis(ttl)).ignore();
                }
                Outgoing::Remove(key) => {
                    pipeline.cmd("DEL").arg(key).ignore();
                }
                Outgoing::Touch { key, member, ahead, idle } => {
                    let script = format!("{NOW} {TOUCH}");
                    pipeline
                        .cmd("EVAL")
                        .arg(script)
                        .arg(1)
                        .arg(key)
                        .arg(member)
                        .arg(millis(ahead))
                        .arg(millis(idle))
                        .ignore();
                }
                Outgoing::Leave { key, member } => {
                    pipeline.cmd("ZREM").arg(key).arg(member).ignore();
                }
            }
        }
        match tokio::time::timeout(DEADLINE, pipeline.query_async::<()>(&mut connection)).await {
            Ok(Ok(())) => {}
            outcome => {
                let why = outcome.map_or_else(|_| "no answer in time".to_string(), |r| format!("{:?}", r.err()));
                tracing::warn!("events were not sent to the other replicas or logs: a Redis pipeline failed ({why})");
                metrics::counter!(signals::BACKPLANE_ERRORS, "operation" => "PIPELINE").increment(1);
            }
        }
    }
}

/// Pings Redis every second, while the backplane lives, so a lost connection is reopened
/// (and the channel resubscribed) even when nothing else needs it.
async fn watch(backplane: Weak<RedisBackplane>) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    loop {
        every.tick().await;
        let Some(mut connection) = backplane.upgrade().map(|b| b.connection.clone()) else { return };
        let _ = tokio::time::timeout(DEADLINE, redis::cmd("PING").query_async::<()>(&mut connection)).await;
    }
}
