//! The scenarios of Streamable HTTP's streams: `sse-retry`, where the server ends a tool
//! call's stream before its answer and the client must pick it up with a GET carrying
//! `Last-Event-ID`, after the `retry` the stream named.

use crate::{Outcome, Run};
use duet_client::{Client, HttpTransport};
use serde_json::json;

/// Calls the scenario's `test_reconnection` tool, whose answer comes only on the resumed
/// stream.
pub(crate) async fn sse_retry(run: &Run) -> Outcome {
    let client = Client::connect(HttpTransport::new(&run.url)?, run.negotiate).await?;
    let called = client.call_tool("test_reconnection", json!({})).await;
    client.close().await;
    called?;
    Ok(())
}
