//! `duet read [URL] URI [-- COMMAND…]`: reads a resource in process or on another server and
//! prints text contents as they are, binary contents as their wire JSON (`--json`: all of
//! it as wire JSON). Of a workspace it also reads a path (relative to the first root, as
//! the tools take them), which it names by its `file://` URI.

use super::failure;
use super::source::Source;
use crate::choice;
use crate::cli::ReadArgs;
use crate::usage::Usage;
use duet::layer::ResourceBody;
use std::process::ExitCode;

pub(crate) async fn run(args: ReadArgs) -> anyhow::Result<ExitCode> {
    let Some((uri, before)) = args.words.split_last() else {
        return Ok(Usage("name the resource to read".into()).exit());
    };
    let url = before.first().map(String::as_str);
    let source = match Source::open(url, &args.layer, &args.principal, &args.server, false).await {
        Ok(source) => source,
        Err(code) => return Ok(code),
    };
    let uri = match (&source, choice::workspace_roots(&args.layer)) {
        (Source::Layer { .. }, Some(roots)) if !uri.contains("://") => {
            let path = roots[0].join(uri);
            match std::fs::canonicalize(&path) {
                Ok(path) => duet::file_uri::from_path(&path),
                Err(e) => return Ok(failure(format_args!("{}: {e}", path.display()))),
            }
        }
        _ => uri.clone(),
    };
    let read = source.read(&uri).await;
    source.close().await;
    let contents = match read {
        Ok(contents) => contents,
        Err(message) => return Ok(failure(message)),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&contents)?);
        return Ok(ExitCode::SUCCESS);
    }
    for item in &contents {
        match &item.body {
            ResourceBody::Text(text) => println!("{text}"),
            ResourceBody::Blob(_) => println!("{}", serde_json::to_string(item)?),
        }
    }
    Ok(ExitCode::SUCCESS)
}
