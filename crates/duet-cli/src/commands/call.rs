//! `duet call TOOL --args JSON|@FILE|-`: runs a tool in process, as a principal with no
//! client capabilities, and prints its structured result (or its text); its progress goes
//! to stderr (`progress.rs`).

use super::failure;
use super::progress::Progress;
use crate::choice;
use crate::cli::CallArgs;
use crate::usage::Usage;
use duet::layer::{ContentKind, LayerError, Reply, RequestCx};
use duet::wire::jsonrpc::RequestId;
use serde_json::{Map, Value};
use std::io::Read;
use std::process::ExitCode;

fn arguments(spec: Option<&str>) -> Result<Map<String, Value>, Usage> {
    let text = match spec {
        None => return Ok(Map::new()),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Usage(format!("cannot read --args from stdin: {e}")))?;
            text
        }
        Some(file) if file.starts_with('@') => std::fs::read_to_string(&file[1..])
            .map_err(|e| Usage(format!("cannot read --args file {}: {e}", &file[1..])))?,
        Some(json) => json.to_string(),
    };
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Usage("--args must be a JSON object".into())),
        Err(e) => Err(Usage(format!("--args is not valid JSON: {e}"))),
    }
}

pub(crate) async fn run(args: CallArgs) -> anyhow::Result<ExitCode> {
    let (layer, arguments) = match (choice::layer(&args.layer), arguments(args.args.as_deref())) {
        (Ok(layer), Ok(arguments)) => (layer, arguments),
        (Err(usage), _) | (_, Err(usage)) => return Ok(usage.exit()),
    };
    let progress = Progress::new();
    let cx = RequestCx::builder(choice::principal(&args.principal))
        .notify(progress.sink())
        .progress_token(Some(RequestId::Str("duet-call".into())))
        .build();
    let called = layer.call_tool(&args.tool, arguments, cx.clone()).await;
    progress.finish();
    let result = match called {
        Ok(Reply::Complete(result)) => result,
        Ok(Reply::InputRequired(_)) => {
            return Ok(failure(format_args!(
                "{} needs input from an MCP client (a confirmation or an answer); call it from one",
                args.tool
            )));
        }
        Err(LayerError::NotFound(_)) => return Ok(failure(format_args!("Unknown tool: {}", args.tool))),
        Err(e) => return Ok(failure(e)),
    };
    if args.raw {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else if let (Some(structured), false) = (&result.structured_content, result.is_error) {
        println!("{}", serde_json::to_string_pretty(structured)?);
    } else {
        for content in &result.content {
            match &content.kind {
                ContentKind::Text { text } => println!("{text}"),
                _ => println!("{}", serde_json::to_string(content)?),
            }
        }
    }
    Ok(if result.is_error { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
