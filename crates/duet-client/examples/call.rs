//! Connects to an MCP server, lists its tools and calls one, in whichever era the server
//! speaks. The server is a Streamable HTTP URL, or a command spoken to over stdio:
//!
//! ```text
//! cargo run -p duet-client --example call -- http://127.0.0.1:8080/mcp echo '{"text": "hi"}'
//! cargo run -p duet-client --example call -- 'duet serve --fixtures testkit' echo '{"text": "hi"}'
//! ```

use duet_client::{Client, HttpTransport, Negotiate, StdioTransport, Transport};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let server = args.next().ok_or("usage: call URL|COMMAND [TOOL [JSON-ARGUMENTS]]")?;
    let transport: Transport = if server.starts_with("http://") || server.starts_with("https://") {
        HttpTransport::new(&server)?.into()
    } else {
        let mut words = server.split_whitespace();
        let mut command = tokio::process::Command::new(words.next().ok_or("an empty command")?);
        command.args(words);
        StdioTransport::spawn(command)?.into()
    };
    let client = Client::connect(transport, Negotiate::Auto).await?;
    println!("speaking {}", client.terms().version);
    let called = async {
        for tool in client.list_tools().await? {
            println!("{}: {}", tool.name, tool.about.description.unwrap_or_default());
        }
        let Some(tool) = args.next() else { return Ok(None) };
        let arguments = args.next().map(|json| serde_json::from_str(&json)).transpose()?.unwrap_or(Value::Null);
        Ok::<_, Box<dyn std::error::Error>>(Some(client.call_tool(&tool, arguments).await?))
    }
    .await;
    client.close().await;
    if let Some(result) = called? {
        println!("{}", serde_json::to_string_pretty(&result)?);
    }
    Ok(())
}
