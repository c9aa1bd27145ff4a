//! `duet read URI`: reads a resource in process and prints text contents as they are,
//! binary contents as their wire JSON. Of a workspace it also reads a path (relative to the
//! first root, as the tools take them), which it names by its `file://` URI.

use super::failure;
use crate::choice;
use crate::cli::ReadArgs;
use duet::layer::{Reply, RequestCx, ResourceBody};
use std::process::ExitCode;

pub(crate) async fn run(args: ReadArgs) -> anyhow::Result<ExitCode> {
    let layer = match choice::layer(&args.layer) {
        Ok(layer) => layer,
        Err(usage) => return Ok(usage.exit()),
    };
    let uri = match choice::workspace_roots(&args.layer) {
        Some(roots) if !args.uri.contains("://") => {
            let path = roots[0].join(&args.uri);
            match std::fs::canonicalize(&path) {
                Ok(path) => duet::file_uri::from_path(&path),
                Err(e) => return Ok(failure(format_args!("{}: {e}", path.display()))),
            }
        }
        _ => args.uri.clone(),
    };
    let cx = RequestCx::builder(choice::principal(&args.principal)).build();
    let contents = match layer.read_resource(&uri, cx.clone()).await {
        Ok(Reply::Complete(contents)) => contents,
        Ok(Reply::InputRequired(_)) => {
            return Ok(failure(format_args!("{uri} needs input from an MCP client; read it from one")));
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
