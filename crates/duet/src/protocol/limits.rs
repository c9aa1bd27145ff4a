//! Limits per principal, so one greedy client cannot starve the others without a gateway in
//! front: requests per second (a token bucket per principal, and per principal and tool for
//! tools given a rate of their own) and requests in flight, where a task the principal
//! started counts as a request in flight until it ends. Every request counts, each
//! request of a batch on its own: a single message over a limit is refused before anything
//! runs (over HTTP, 429 with `Retry-After` and the JSON-RPC error); a request of a batch over
//! a limit is answered -32029 in the batch and never runs, while the others do. Buckets of
//! principals that went quiet are dropped, so the table stays as large as the set of
//! active clients.

use duet_wire::jsonrpc::{Response as RpcResponse, RpcError};
use duet_wire::message::{Incoming, Message, Request};
use duet_wire::method::{Method, Primitive};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The limits, all off by default.
#[derive(Debug, Clone, Default)]
pub struct RateLimits {
    /// Requests per second per principal, with bursts of as many: each POST, or each
    /// request of a batch.
    pub requests_per_second: Option<f64>,
    /// `tools/call`s per second per principal for these tools.
    pub tool_calls_per_second: BTreeMap<String, f64>,
    /// Requests one principal may have running at once on one replica (an answer streamed
    /// as SSE counts until its stream starts; each request of a batch until the batch is
    /// answered; a task until it ends). Requests about tasks (`tasks/get`, `tasks/result`,
    /// `tasks/cancel`...) do not wait for the principal's tasks, so it can always follow and
    /// stop them.
    pub max_in_flight: Option<usize>,
}

impl RateLimits {
    /// Whether no limit is set.
    pub fn is_off(&self) -> bool {
        self.requests_per_second.is_none() && self.tool_calls_per_second.is_empty() && self.max_in_flight.is_none()
    }
}

/// Why a request was refused, and when to come back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    pub what: String,
    pub retry_after: Duration,
}

impl Refusal {
    /// Whole seconds to wait, at least 1.
    pub(crate) fn seconds(&self) -> u64 {
        self.retry_after.as_secs_f64().ceil().max(1.0) as u64
    }

    /// The JSON-RPC error: what the limit is, and when to retry (also as `data`).
    pub(crate) fn error(&self) -> RpcError {
        let seconds = self.seconds();
        RpcError::new(RATE_LIMITED, format!("Rate limit exceeded: {}; retry after {seconds} s", self.what))
            .with_data(serde_json::json!({"retryAfter": seconds}))
    }
}

/// The JSON-RPC code of a refusal.
pub const RATE_LIMITED: i64 = duet_wire::jsonrpc::code::OVER_LIMIT;

/// Tokens of one (principal, tool) pair; `rate` tokens a second, at most `rate` (or 1).
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets are forgotten once this many are held and one has been full this long.
const FORGET_AFTER: Duration = Duration::from_secs(60);
const MANY_BUCKETS: usize = 10_000;

type Buckets = HashMap<(String, Option<String>), Bucket>;
type Running = HashMap<String, usize>;

/// How many tasks a principal has running on this replica.
pub(crate) type RunningTasks = Box<dyn Fn(&str) -> usize + Send + Sync>;

pub(crate) struct Limiter {
    limits: RateLimits,
    buckets: Mutex<Buckets>,
    in_flight: Arc<Mutex<Running>>,
    tasks: RunningTasks,
}

/// Requests counted in flight for their principal until dropped.
#[derive(Debug)]
pub(crate) struct InFlight {
    principal: String,
    count: usize,
    table: Arc<Mutex<Running>>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut table = lock(&self.table);
        if let Some(n) = table.get_mut(&self.principal) {
            *n = n.saturating_sub(self.count);
            if *n == 0 {
                table.remove(&self.principal);
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Limiter {
    /// The limits `limits`, with `tasks` telling what a principal's tasks hold in flight.
    pub(crate) fn new(limits: RateLimits, tasks: RunningTasks) -> Limiter {
        Limiter { limits, buckets: Mutex::default(), in_flight: Arc::default(), tasks }
    }

    /// Admits `message` from `principal`: each request takes a token of the principal's
    /// bucket, one of its tool's bucket when the tool has a rate, and a slot in flight, all
    /// or none; a message of no request (notifications, answers) takes them once. A single
    /// message over a limit is refused whole. In a batch each request is admitted on its
    /// own, and one over a limit is replaced by its -32029 error, which answers it. The
    /// guard holds the slots taken; `None` when no in-flight limit is set.
    pub(crate) fn admit(&self, principal: &str, message: &mut Message) -> Result<Option<InFlight>, Refusal> {
        if self.limits.is_off() {
            return Ok(None);
        }
        let mut running = lock(&self.in_flight);
        let mut buckets = lock(&self.buckets);
        let now = Instant::now();
        if buckets.len() > MANY_BUCKETS {
            buckets.retain(|_, b| now.duration_since(b.at) < FORGET_AFTER);
        }
        let mut take = |request: Option<&Request>| self.take(&mut running, &mut buckets, now, principal, request);
        let taken = match message {
            Message::Batch(items) if items.iter().any(|item| matches!(item, Incoming::Request(_))) => {
                let mut taken = 0;
                for item in items.iter_mut() {
                    let Incoming::Request(request) = item else { continue };
                    match take(Some(request)) {
                        Ok(()) => taken += 1,
                        Err(refusal) => {
                            crate::signals::rejected(429, "rate_limited");
                            *item = Incoming::Invalid(RpcResponse::error(Some(request.id.clone()), refusal.error()));
                        }
                    }
                }
                taken
            }
            _ => {
                take(message.requests().next())?;
                1
            }
        };
        drop(buckets);
        let counted = self.limits.max_in_flight.is_some() && taken > 0;
        Ok(counted.then(|| InFlight { principal: principal.to_string(), count: taken, table: self.in_flight.clone() }))
    }

    /// Takes what one request (or a message of none) needs: a slot in flight, a token of the
    /// principal's bucket and, for a call of a tool with a rate of its own, one of that
    /// tool's. Nothing is taken unless everything is there.
    fn take(
        &self,
        running: &mut Running,
        buckets: &mut Buckets,
        now: Instant,
        principal: &str,
        request: Option<&Request>,
    ) -> Result<(), Refusal> {
        if let Some(max) = self.limits.max_in_flight {
            // Read under the lock of the table in flight: a request that became a task holds
            // its slot until the task is counted here, so no call slips between the two.
            let tasks = if request.is_some_and(waits_for_tasks) { (self.tasks)(principal) } else { 0 };
            if running.get(principal).copied().unwrap_or(0) + tasks >= max {
                let held_by_tasks = if tasks > 0 { ", running tasks included" } else { "" };
                let what = format!("{} in flight{held_by_tasks}", counted(max, "request"));
                return Err(Refusal { what, retry_after: Duration::from_secs(1) });
            }
        }
        let tool = request
            .and_then(crate::auth::operation)
            .filter(|(kind, _)| *kind == Primitive::Tool)
            .and_then(|(_, name)| self.limits.tool_calls_per_second.get_key_value(name));
        let mut takes: Vec<((String, Option<String>), f64)> = Vec::with_capacity(2);
        if let Some(rate) = self.limits.requests_per_second {
            takes.push(((principal.to_string(), None), rate));
        }
        if let Some((tool, rate)) = tool {
            takes.push(((principal.to_string(), Some(tool.clone())), *rate));
        }
        for (key, rate) in &takes {
            let bucket = buckets.entry(key.clone()).or_insert(Bucket { tokens: rate.max(1.0), at: now });
            bucket.tokens = (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * rate).min(rate.max(1.0));
            bucket.at = now;
            if bucket.tokens < 1.0 {
                let what = match &key.1 {
                    None => format!("{} a second", counted(rate, "request")),
                    Some(tool) => format!("{} a second of {tool}", counted(rate, "call")),
                };
                return Err(Refusal { what, retry_after: Duration::from_secs_f64((1.0 - bucket.tokens) / rate) });
            }
        }
        for (key, _) in &takes {
            if let Some(bucket) = buckets.get_mut(key) {
                bucket.tokens -= 1.0;
            }
        }
        if self.limits.max_in_flight.is_some() {
            *running.entry(principal.to_string()).or_insert(0) += 1;
        }
        Ok(())
    }
}

/// Whether `request` counts the principal's running tasks against its in-flight limit:
/// every request but those about tasks, which must reach the tasks holding the slots.
fn waits_for_tasks(request: &Request) -> bool {
    request.method.traits().target != Some(Primitive::Task) && request.method != Method::TasksList
}

/// "1 request", "0.5 requests": singular only for one.
fn counted(n: impl std::fmt::Display, noun: &str) -> String {
    let n = n.to_string();
    let plural = if n == "1" { "" } else { "s" };
    format!("{n} {noun}{plural}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(tool: &str) -> Message {
        Message::from(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool}}))
    }

    fn no_tasks() -> RunningTasks {
        Box::new(|_| 0)
    }

    fn admit(limiter: &Limiter, principal: &str, tool: &str) -> Result<Option<InFlight>, Refusal> {
        limiter.admit(principal, &mut call(tool))
    }

    #[test]
    fn a_bucket_per_principal_and_per_tool() {
        let limits = RateLimits {
            requests_per_second: Some(3.0),
            tool_calls_per_second: BTreeMap::from([("slow".to_string(), 1.0)]),
            max_in_flight: None,
        };
        let limiter = Limiter::new(limits, no_tasks());
        assert!(admit(&limiter, "alice", "slow").is_ok());
        let refused = admit(&limiter, "alice", "slow").unwrap_err();
        assert_eq!(refused.what, "1 call a second of slow");
        assert!(refused.retry_after > Duration::ZERO && refused.retry_after <= Duration::from_secs(1));
        // The refused call spent nothing: alice still has two requests of her three.
        assert!(admit(&limiter, "alice", "echo").is_ok());
        assert!(admit(&limiter, "alice", "echo").is_ok());
        assert_eq!(admit(&limiter, "alice", "echo").unwrap_err().what, "3 requests a second");
        assert!(admit(&limiter, "bob", "slow").is_ok(), "bob has buckets of his own");
    }

    #[test]
    fn requests_in_flight() {
        let limiter = Limiter::new(RateLimits { max_in_flight: Some(1), ..RateLimits::default() }, no_tasks());
        let running = admit(&limiter, "alice", "echo").unwrap();
        assert_eq!(admit(&limiter, "alice", "echo").unwrap_err().what, "1 request in flight");
        assert!(admit(&limiter, "bob", "echo").is_ok());
        drop(running);
        assert!(admit(&limiter, "alice", "echo").is_ok(), "room again once it ended");
    }

    #[test]
    fn a_running_task_holds_a_slot_in_flight() {
        let tasks: Arc<Mutex<Running>> = Arc::default();
        let counted = tasks.clone();
        let tasks_of = Box::new(move |principal: &str| lock(&counted).get(principal).copied().unwrap_or(0));
        let limiter = Limiter::new(RateLimits { max_in_flight: Some(2), ..RateLimits::default() }, tasks_of);
        lock(&tasks).insert("alice".to_string(), 1);
        let open = admit(&limiter, "alice", "echo").unwrap();
        let refused = admit(&limiter, "alice", "echo").unwrap_err();
        assert_eq!(refused.what, "2 requests in flight, running tasks included");
        let get = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": "t"}});
        assert!(limiter.admit("alice", &mut Message::from(get)).is_ok(), "a request about tasks reaches them");
        assert!(admit(&limiter, "bob", "echo").is_ok(), "alice's tasks are hers");
        drop(open);
        lock(&tasks).remove("alice");
        let _two = (admit(&limiter, "alice", "echo").unwrap(), admit(&limiter, "alice", "echo").unwrap());
    }

    /// A batch of `calls` of `tool`, and a notification.
    fn batch(tool: &str, calls: usize) -> Message {
        let mut items: Vec<_> = (0..calls)
            .map(|id| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool}}))
            .collect();
        items.push(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        Message::from(serde_json::Value::from(items))
    }

    /// The ids of the requests still in `message`, and the limits the others were refused for.
    fn sorted(message: &Message) -> (Vec<String>, Vec<String>) {
        let admitted = message.requests().map(|r| r.id.to_value().to_string()).collect();
        let refused = message
            .items()
            .iter()
            .filter_map(|item| match item {
                Incoming::Invalid(RpcResponse { result: Err(error), .. }) if error.code == RATE_LIMITED => {
                    Some(error.message.clone())
                }
                _ => None,
            })
            .collect();
        (admitted, refused)
    }

    #[test]
    fn each_request_of_a_batch_counts() {
        let limiter = Limiter::new(RateLimits { requests_per_second: Some(2.0), ..RateLimits::default() }, no_tasks());
        let mut message = batch("echo", 3);
        assert!(limiter.admit("alice", &mut message).is_ok());
        let (admitted, refused) = sorted(&message);
        assert_eq!(admitted, ["0", "1"]);
        assert_eq!(refused, ["Rate limit exceeded: 2 requests a second; retry after 1 s"]);
        assert_eq!(message.items().len(), 4, "the notification stays");
        // The bucket is empty, not overdrawn: the next request is refused, whole.
        assert_eq!(admit(&limiter, "alice", "echo").unwrap_err().what, "2 requests a second");
    }

    #[test]
    fn a_tool_bucket_never_goes_below_empty() {
        let limits = RateLimits {
            tool_calls_per_second: BTreeMap::from([("sleepy".to_string(), 1.0)]),
            max_in_flight: Some(2),
            ..RateLimits::default()
        };
        let limiter = Limiter::new(limits, no_tasks());
        let mut message = batch("sleepy", 5);
        let in_flight = limiter.admit("alice", &mut message).unwrap();
        let (admitted, refused) = sorted(&message);
        assert_eq!(admitted, ["0"]);
        assert_eq!(refused.len(), 4);
        assert!(refused.iter().all(|why| why.contains("1 call a second of sleepy")), "{refused:?}");
        // One slot of the two is taken until the batch is answered.
        assert!(admit(&limiter, "alice", "echo").is_ok());
        let mut two = batch("echo", 2);
        let _held = limiter.admit("alice", &mut two).unwrap();
        let (admitted, refused) = sorted(&two);
        assert_eq!(admitted, ["0"]);
        assert_eq!(refused, ["Rate limit exceeded: 2 requests in flight; retry after 1 s"]);
        drop(in_flight);
        assert!(admit(&limiter, "alice", "echo").is_ok(), "the batch's slot is back");
    }
}
