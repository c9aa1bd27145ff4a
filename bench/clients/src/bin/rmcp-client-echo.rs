//! The benchmark's caller on rmcp's client (the official Rust SDK): `echo` over Streamable
//! HTTP in either era, as the harness drives it (see the crate's doc), written as rmcp's
//! documentation does (`serve_with_lifecycle` on a `StreamableHttpClientTransport`).

use bench_clients::{Args, Era, TEXT, serve_runs};
use rmcp::ClientServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::ClientLifecycleMode;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::from_env()?;
    let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("rmcp-client-echo", "0"));
    let (info, lifecycle) = match args.era {
        Era::Modern => {
            (info, ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] })
        }
        Era::Handshake => (info.with_protocol_version(ProtocolVersion::V_2025_11_25), ClientLifecycleMode::Initialize),
    };
    let client = info.serve_with_lifecycle(StreamableHttpClientTransport::from_uri(args.url), lifecycle).await?;
    let arguments = json!({"text": TEXT}).as_object().cloned().unwrap_or_default();
    let call = || client.call_tool(CallToolRequestParams::new("echo").with_arguments(arguments.clone()));
    let first = call().await?;
    if first.is_error == Some(true) || first.structured_content != Some(json!({"text": TEXT})) {
        return Err(format!("echo answered {first:?}").into());
    }
    let version = client.peer_info().map(|info| info.protocol_version.to_string()).unwrap_or_default();
    let ran = serve_runs(&version, args.in_flight, || async {
        call().await.is_ok_and(|result| result.is_error != Some(true))
    })
    .await;
    client.cancel().await?;
    Ok(ran?)
}
