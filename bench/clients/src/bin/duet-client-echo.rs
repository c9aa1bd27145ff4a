//! The benchmark's caller on duet's client (`duet_client`): `echo` over Streamable HTTP in
//! either era, as the harness drives it (see the crate's doc).

use bench_clients::{Args, Era, TEXT, serve_runs};
use duet_client::{Client, HttpTransport, Negotiate, Version};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::from_env()?;
    let version = match args.era {
        Era::Modern => Version::V2026_07_28,
        Era::Handshake => Version::V2025_11_25,
    };
    let client = Client::connect(HttpTransport::new(&args.url)?, Negotiate::Pin(version)).await?;
    let call = || async { client.call_tool("echo", json!({"text": TEXT})).await };
    let first = call().await?;
    if first.is_error || first.structured_content != Some(json!({"text": TEXT})) {
        return Err(format!("echo answered {first:?}").into());
    }
    let ran = serve_runs(client.terms().version.as_str(), args.in_flight, || async {
        call().await.is_ok_and(|result| !result.is_error)
    })
    .await;
    client.close().await;
    Ok(ran?)
}
