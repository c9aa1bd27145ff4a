//! Limits per principal, so one greedy client cannot starve the others without a gateway in
//! front: requests per second (a token bucket per principal, and per principal and tool for
//! tools given a rate of their own) and requests in flight. A POST over a limit is answered
//! 429 with `Retry-After` and a JSON-RPC error before anything runs. Buckets of principals
//! that went quiet are dropped, so the table stays as large as the set of active clients.

use super::body::Body;
use super::service::rpc_error;
use crate::jsonrpc::RpcError;
use crate::message::Message;
use crate::method::Primitive;
use http::{HeaderValue, Response, StatusCode};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The limits, all off by default.
#[derive(Debug, Clone, Default)]
pub struct RateLimits {
    /// Requests (POSTs) per second per principal, with bursts of as many.
    pub requests_per_second: Option<f64>,
    /// `tools/call`s per second per principal for these tools.
    pub tool_calls_per_second: BTreeMap<String, f64>,
    /// Requests one principal may have running at once (an answer streamed as SSE counts
    /// until its stream starts).
    pub max_in_flight: Option<usize>,
}

impl RateLimits {
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
    /// 429 with `Retry-After` (whole seconds, at least 1) and a JSON-RPC error for the
    /// message's request, if it is one.
    pub fn response(&self, message: &Message) -> Response<Body> {
        let seconds = self.retry_after.as_secs_f64().ceil().max(1.0) as u64;
        let error = RpcError::new(RATE_LIMITED, format!("Rate limit exceeded: {}; retry after {seconds} s", self.what))
            .with_data(serde_json::json!({"retryAfter": seconds}));
        let id = match message {
            Message::One(_) => message.requests().next().map(|r| r.id.clone()),
            Message::Batch(_) => None,
        };
        crate::signals::rejected(429, "rate_limited");
        let mut response = rpc_error(StatusCode::TOO_MANY_REQUESTS, id, error);
        response.headers_mut().insert(http::header::RETRY_AFTER, HeaderValue::from(seconds));
        response
    }
}

/// The JSON-RPC code of a refusal (implementation-defined server errors are -32000 to
/// -32099).
pub const RATE_LIMITED: i64 = -32029;

/// Tokens of one (principal, tool) pair; `rate` tokens a second, at most `rate` (or 1).
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Buckets are forgotten once this many are held and one has been full this long.
const FORGET_AFTER: Duration = Duration::from_secs(60);
const MANY_BUCKETS: usize = 10_000;

pub(crate) struct Limiter {
    limits: RateLimits,
    buckets: Mutex<HashMap<(String, Option<String>), Bucket>>,
    in_flight: Arc<Mutex<HashMap<String, usize>>>,
}

/// A request counted in flight for its principal until dropped.
#[derive(Debug)]
pub(crate) struct InFlight {
    principal: String,
    table: Arc<Mutex<HashMap<String, usize>>>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = table.get_mut(&self.principal) {
            *n -= 1;
            if *n == 0 {
                table.remove(&self.principal);
            }
        }
    }
}

impl Limiter {
    pub fn new(limits: RateLimits) -> Limiter {
        Limiter { limits, buckets: Mutex::default(), in_flight: Arc::default() }
    }

    /// Admits `message` from `principal`, or says which limit it is over. `None` in flight
    /// guard when no in-flight limit is set.
    pub fn admit(&self, principal: &str, message: &Message) -> Result<Option<InFlight>, Refusal> {
        if self.limits.is_off() {
            return Ok(None);
        }
        let tools: Vec<(&str, f64)> = message
            .requests()
            .filter_map(crate::auth::operation)
            .filter(|(kind, _)| *kind == Primitive::Tool)
            .filter_map(|(_, name)| self.limits.tool_calls_per_second.get(name).map(|rate| (name, *rate)))
            .collect();
        let guard = self.enter(principal)?;
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if buckets.len() > MANY_BUCKETS {
            buckets.retain(|_, b| now.duration_since(b.at) < FORGET_AFTER);
        }
        let mut takes: Vec<((String, Option<String>), f64, String)> = Vec::new();
        if let Some(rate) = self.limits.requests_per_second {
            takes.push(((principal.to_string(), None), rate, format!("{} a second", counted(rate, "request"))));
        }
        for (tool, rate) in tools {
            takes.push((
                (principal.to_string(), Some(tool.to_string())),
                rate,
                format!("{} a second of {tool}", counted(rate, "call")),
            ));
        }
        // Every bucket must have a token before any is spent.
        for (key, rate, what) in &takes {
            let bucket = buckets.entry(key.clone()).or_insert(Bucket { tokens: rate.max(1.0), at: now });
            bucket.tokens = (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * rate).min(rate.max(1.0));
            bucket.at = now;
            if bucket.tokens < 1.0 {
                let wait = Duration::from_secs_f64((1.0 - bucket.tokens) / rate);
                return Err(Refusal { what: what.clone(), retry_after: wait });
            }
        }
        for (key, ..) in &takes {
            if let Some(bucket) = buckets.get_mut(key) {
                bucket.tokens -= 1.0;
            }
        }
        Ok(guard)
    }

    /// Counts a request in flight for `principal`, if it has room.
    fn enter(&self, principal: &str) -> Result<Option<InFlight>, Refusal> {
        let Some(max) = self.limits.max_in_flight else { return Ok(None) };
        let mut table = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        let running = table.entry(principal.to_string()).or_insert(0);
        if *running >= max {
            let what = format!("{} in flight", counted(max, "request"));
            return Err(Refusal { what, retry_after: Duration::from_secs(1) });
        }
        *running += 1;
        Ok(Some(InFlight { principal: principal.to_string(), table: self.in_flight.clone() }))
    }
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

    #[test]
    fn a_bucket_per_principal_and_per_tool() {
        let limits = RateLimits {
            requests_per_second: Some(3.0),
            tool_calls_per_second: BTreeMap::from([("slow".to_string(), 1.0)]),
            max_in_flight: None,
        };
        let limiter = Limiter::new(limits);
        assert!(limiter.admit("alice", &call("slow")).is_ok());
        let refused = limiter.admit("alice", &call("slow")).unwrap_err();
        assert_eq!(refused.what, "1 call a second of slow");
        assert!(refused.retry_after > Duration::ZERO && refused.retry_after <= Duration::from_secs(1));
        // The refused call spent nothing: alice still has two requests of her three.
        assert!(limiter.admit("alice", &call("echo")).is_ok());
        assert!(limiter.admit("alice", &call("echo")).is_ok());
        assert_eq!(limiter.admit("alice", &call("echo")).unwrap_err().what, "3 requests a second");
        assert!(limiter.admit("bob", &call("slow")).is_ok(), "bob has buckets of his own");
    }

    #[test]
    fn requests_in_flight() {
        let limiter = Limiter::new(RateLimits { max_in_flight: Some(1), ..RateLimits::default() });
        let running = limiter.admit("alice", &call("echo")).unwrap();
        assert_eq!(limiter.admit("alice", &call("echo")).unwrap_err().what, "1 request in flight");
        assert!(limiter.admit("bob", &call("echo")).is_ok());
        drop(running);
        assert!(limiter.admit("alice", &call("echo")).is_ok(), "room again once it ended");
    }
}
