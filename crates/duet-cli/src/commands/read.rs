//! `duet read URI`: reads a resource in process and prints text contents as they are,
//! binary contents as their wire JSON.

use super::failure;
use crate::choice;
use crate::cli::ReadArgs;
use duet::layer::{Reply, RequestCx, ResourceBody};
use std::process::ExitCode;

pub async fn run(args: ReadArgs) -> anyhow::Result<ExitCode> {
    let layer = match choice::layer(&args.layer) {
        Ok(layer) => layer,
        Err(usage) => return Ok(usage.exit()),
    };
    let cx = RequestCx::builder(choice::principal(&args.principal)).build();
    let contents = match layer.read_resource(&args.uri, cx.clone()).await {
        Ok(Reply::Complete(contents)) => contents,
        Ok(Reply::InputRequired(_)) => {
            return Ok(failure(format_args!("{} needs input from an MCP client; read it from one", args.uri)));
        }
        Err(e) => return Ok(failure(e)),
    };
    for item in &contents {
        match &item.body {
            ResourceBody::Text(text) => println!("{text}"),
            ResourceBody::Blob(_) => println!("{}", serde_json::to_string(item)?),
        }
    }
    Ok(ExitCode::SUCCESS)
}
