//! The scenarios of the protocol itself (not of authorization): each connects in the
//! revision asked for and does what the scenario's mock server expects of a client.

use crate::{Outcome, Run};
use duet_client::{Client, HttpTransport};
use serde_json::json;

/// Runs scenario `run.scenario`.
pub(crate) async fn run(run: &Run) -> Outcome {
    match run.scenario.as_str() {
        "initialize" | "tools_call" => list_and_call(run).await,
        "sse-retry" => crate::streams::sse_retry(run).await,
        other => Err(format!("no such scenario: {other}").into()),
    }
}

/// Connects, lists the tools and calls the first with `{a: 2, b: 3}`.
async fn list_and_call(run: &Run) -> Outcome {
    let client = Client::connect(HttpTransport::new(&run.url)?, run.negotiate).await?;
    let listed = client.list_tools().await;
    let called = match listed.as_ref().ok().and_then(|tools| tools.first()) {
        Some(tool) => client.call_tool(&tool.name, json!({"a": 2, "b": 3})).await.map(drop),
        None => Ok(()),
    };
    client.close().await;
    listed?;
    Ok(called?)
}
