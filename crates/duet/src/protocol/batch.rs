//! JSON-RPC batches, which only 2024-11-05 and 2025-03-26 allow: when a batch is refused,
//! and how an allowed one is answered (its messages concurrently, the responses in one
//! array, nothing at all when none of them is answered).

use super::Version;
use crate::jsonrpc::{Response, RpcError};
use crate::message::{Incoming, Message};
use std::future::Future;

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

/// Answers a batch: an empty one, or one `refusal` forbids, with one error; otherwise each
/// message through `answer`.
pub(crate) async fn answer<F, Fut>(
    items: Vec<Incoming>,
    refusal: Option<RpcError>,
    answer: F,
) -> Option<Message<Response>>
where
    F: FnMut(Incoming) -> Fut,
    Fut: Future<Output = Option<Response>>,
{
    if items.is_empty() {
        return Some(Message::One(Response::error(None, RpcError::invalid_request("Invalid Request: empty batch"))));
    }
    if let Some(error) = refusal {
        return Some(Message::One(Response::error(None, error)));
    }
    let responses: Vec<Response> =
        futures::future::join_all(items.into_iter().map(answer)).await.into_iter().flatten().collect();
    (!responses.is_empty()).then_some(Message::Batch(responses))
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
}
