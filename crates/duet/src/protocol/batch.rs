//! JSON-RPC batches, which only 2024-11-05 and 2025-03-26 allow: when a batch is refused
//! (its version, or more messages than `max_batch_items`), and how an allowed one is
//! answered (its messages at most [`CONCURRENT_ITEMS`] at a time, the responses in one
//! array in the order of the batch, nothing at all when none of them is answered). The
//! array is held whole until it is sent, so its bytes are bounded too: once the answers
//! so far reach `max_batch_answer_bytes`, each request left is answered with an error
//! saying so instead of running, and an answer that would pass the bound is replaced by
//! that error.

use super::Version;
use duet_wire::jsonrpc::{Response, RpcError, code};
use duet_wire::message::{Incoming, Message};
use futures::{FutureExt, StreamExt};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};

/// Messages of one batch that run at once; the others wait for one of them to end.
pub(crate) const CONCURRENT_ITEMS: usize = 16;

/// Why a batch is refused: `negotiated` is the session's handshake-era version (`None`
/// before `initialize`), `modern` whether it speaks 2026-07-28. `None` when it is allowed.
pub(crate) fn refusal(negotiated: Option<Version>, modern: bool) -> Option<RpcError> {
    let refused = |v: Version| format!("JSON-RPC batches are not supported by protocol version {v}");
    let message = match negotiated {
        Some(v) if v.allows_batches() => return None,
        Some(v) => refused(v),
        None if modern => refused(Version::MODERN[0]),
        None => "JSON-RPC batches are not supported before initialization".to_string(),
    };
    Some(RpcError::invalid_request(message))
}

/// Why a batch of `items` messages is too long for a server that takes at most `cap`.
pub(crate) fn over_cap(items: usize, cap: usize) -> Option<RpcError> {
    let why = format!("Invalid Request: a batch may hold at most {cap} messages; this one holds {items}");
    (items > cap).then(|| RpcError::invalid_request(why))
}

/// How large a batch may be: its messages, and the bytes of its answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchBounds {
    pub items: usize,
    pub answer_bytes: usize,
}

/// The error answering a request of a batch whose answer reached `limit` bytes.
fn answer_full(limit: usize) -> RpcError {
    let why = format!("the batch's answer reached {limit} bytes; send fewer or smaller requests");
    RpcError::new(code::OVER_LIMIT, why)
}

/// Answers a batch: an empty one, one `refusal` forbids, or one of more than
/// `bounds.items` messages, with one error; otherwise each message through `answer`, until
/// the answers reach `bounds.answer_bytes` (see the module's doc).
pub(crate) async fn answer<F, Fut>(
    items: Vec<Incoming>,
    refusal: Option<RpcError>,
    bounds: BatchBounds,
    answer: F,
) -> Option<Message<Response>>
where
    F: FnMut(Incoming) -> Fut,
    Fut: Future<Output = Option<Response>>,
{
    if items.is_empty() {
        return Some(Message::One(Response::error(None, RpcError::invalid_request("Invalid Request: empty batch"))));
    }
    if let Some(error) = refusal.or_else(|| over_cap(items.len(), bounds.items)) {
        return Some(Message::One(Response::error(None, error)));
    }
    let mut answer = answer;
    let full = AtomicBool::new(false);
    let mut answered_bytes = 0usize;
    let mut responses: Vec<(usize, Response)> = futures::stream::iter(items.into_iter().enumerate())
        .map(|(at, item)| {
            match item {
                Incoming::Request(request) if full.load(Ordering::Acquire) => {
                    let refused = Response::error(Some(request.id), answer_full(bounds.answer_bytes));
                    std::future::ready(Some(refused)).left_future()
                }
                item => answer(item).right_future(),
            }
            .map(move |response| response.map(|response| (at, response)))
        })
        .buffer_unordered(CONCURRENT_ITEMS)
        .filter_map(std::future::ready)
        .map(|(at, response)| {
            answered_bytes += response.line_capacity();
            if answered_bytes <= bounds.answer_bytes || response.result.is_err() {
                return (at, response);
            }
            full.store(true, Ordering::Release);
            answered_bytes -= response.line_capacity();
            (at, Response::error(response.id, answer_full(bounds.answer_bytes)))
        })
        .collect()
        .await;
    responses.sort_unstable_by_key(|(at, _)| *at);
    (!responses.is_empty()).then(|| Message::Batch(responses.into_iter().map(|(_, response)| response).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_may_batch() {
        assert_eq!(refusal(Some(Version::V2025_03_26), false), None);
        let message = |e: Option<RpcError>| e.map(|e| e.message);
        assert_eq!(
            message(refusal(Some(Version::V2025_06_18), false)).as_deref(),
            Some("JSON-RPC batches are not supported by protocol version 2025-06-18")
        );
        assert_eq!(
            message(refusal(None, true)).as_deref(),
            Some("JSON-RPC batches are not supported by protocol version 2026-07-28")
        );
        assert_eq!(
            message(refusal(None, false)).as_deref(),
            Some("JSON-RPC batches are not supported before initialization")
        );
    }

    fn pings(n: usize) -> Vec<Incoming> {
        let batch: Vec<_> = (0..n).map(|i| serde_json::json!({"jsonrpc": "2.0", "id": i, "method": "ping"})).collect();
        match Message::from(serde_json::Value::from(batch)) {
            Message::Batch(items) => items,
            Message::One(one) => panic!("not a batch: {one:?}"),
        }
    }

    #[tokio::test]
    async fn a_batch_longer_than_the_cap_runs_nothing() {
        let ran = std::sync::atomic::AtomicUsize::new(0);
        let count = |_| {
            ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            async { None }
        };
        let refused = answer(pings(3), None, BatchBounds { items: 2, answer_bytes: 1 << 20 }, count).await;
        let Some(Message::One(Response { id: None, result: Err(error) })) = refused else {
            panic!("one error, not {refused:?}")
        };
        assert_eq!(error.message, "Invalid Request: a batch may hold at most 2 messages; this one holds 3");
        assert_eq!(ran.into_inner(), 0);
    }

    #[tokio::test]
    async fn items_run_a_few_at_a_time_and_answer_in_order() {
        let (running, most) = (std::sync::atomic::AtomicUsize::new(0), std::sync::atomic::AtomicUsize::new(0));
        let run = |item: Incoming| {
            let Incoming::Request(request) = item else { panic!("a request") };
            let (running, most) = (&running, &most);
            async move {
                let now = running.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                most.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                // The first items take longest: the answers still come in the batch's order.
                let turns = 100usize.saturating_sub(request.id.to_value().as_u64().unwrap_or(0) as usize);
                for _ in 0..turns {
                    tokio::task::yield_now().await;
                }
                running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                Some(Response::error(Some(request.id), RpcError::internal()))
            }
        };
        let Some(Message::Batch(responses)) =
            answer(pings(50), None, BatchBounds { items: 100, answer_bytes: 1 << 20 }, run).await
        else {
            panic!("a batch")
        };
        let ids: Vec<_> = responses.iter().map(|r| r.id.clone().map(|id| id.to_value())).collect();
        assert_eq!(ids, (0..50).map(|i| Some(serde_json::json!(i))).collect::<Vec<_>>());
        assert_eq!(most.into_inner(), CONCURRENT_ITEMS);
    }

    #[tokio::test]
    async fn past_its_answer_bound_a_batch_runs_no_more_requests() {
        let ran = std::sync::atomic::AtomicUsize::new(0);
        let kilobyte = |item: Incoming| {
            let Incoming::Request(request) = item else { panic!("a request") };
            ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let result = duet_wire::jsonrpc::Rendered::new(&"x".repeat(1000)).unwrap();
            async move { Some(Response { id: Some(request.id), result: Ok(result) }) }
        };
        let bounds = BatchBounds { items: 100, answer_bytes: 10_000 };
        let Some(Message::Batch(responses)) = answer(pings(100), None, bounds, kilobyte).await else {
            panic!("a batch")
        };
        assert_eq!(responses.len(), 100, "every request is answered");
        let answered = responses.iter().filter(|r| r.result.is_ok()).count();
        assert!((1..10).contains(&answered), "{answered} answers of 1 KB within 10 KB");
        let refused = responses.iter().find_map(|r| r.result.as_ref().err()).expect("the rest refused");
        assert_eq!(refused.code, code::OVER_LIMIT);
        assert_eq!(refused.message, "the batch's answer reached 10000 bytes; send fewer or smaller requests");
        // What was running when the bound was reached finishes; nothing after it starts.
        assert!(ran.into_inner() <= answered + 1 + CONCURRENT_ITEMS);
    }
}
