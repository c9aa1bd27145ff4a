//! The manifest layer end to end: manifests parsed from text, tools run as real child
//! processes through the `Layer` trait, and every load-time check failing with the file,
//! line and field in its message. This file holds the helpers the tests share: a registry
//! from a manifest's body, request contexts, and calling a tool or reading a resource.

mod bad_manifests;
mod confirmation;
mod examples;
mod prompts;
mod resources;
mod skills;
mod tasks;
mod tools;

use super::parse;
use duet::layer::{ContentKind, Layer, LayerError, Principal, Registry, Reply, RequestCx, ToolResult};
use serde_json::{Map, Value, json};
use std::path::Path;

const SERVER: &str = "[server]\nname = \"test\"\nversion = \"1.0.0\"\n";

fn manifest(body: &str) -> String {
    format!("{SERVER}{body}")
}

fn registry(body: &str) -> Registry {
    registry_in(Path::new("."), body)
}

/// A registry whose manifest sits in `dir` (for `cwd` and `file`).
fn registry_in(dir: &Path, body: &str) -> Registry {
    parse(&manifest(body), &dir.join("duet.toml")).unwrap_or_else(|e| panic!("the manifest should load: {e}"))
}

fn cx() -> RequestCx {
    RequestCx::builder(Principal::local()).build()
}

fn cx_with(capabilities: Value, inputs: Value) -> RequestCx {
    let inputs = inputs.as_object().cloned().unwrap_or_default();
    RequestCx::builder(Principal::local()).client_capabilities(capabilities).input_responses(inputs).build()
}

fn object(args: Value) -> Map<String, Value> {
    args.as_object().cloned().unwrap_or_else(|| panic!("arguments must be an object: {args}"))
}

async fn call_with(r: &Registry, tool: &str, args: Value, cx: &RequestCx) -> ToolResult {
    match r.call_tool(tool, object(args), cx.clone()).await {
        Ok(Reply::Complete(result)) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

async fn call(r: &Registry, tool: &str, args: Value) -> ToolResult {
    call_with(r, tool, args, &cx()).await
}

fn text(result: &ToolResult) -> String {
    result
        .content
        .iter()
        .map(|c| match &c.kind {
            ContentKind::Text { text } => text.as_str(),
            _ => "",
        })
        .collect()
}

/// The text of a successful result.
fn ok(result: ToolResult) -> String {
    assert!(!result.is_error, "the tool failed: {}", text(&result));
    text(&result)
}

/// The text of a tool error.
fn failed(result: ToolResult) -> String {
    assert!(result.is_error, "the tool should have failed, it printed {:?}", text(&result));
    text(&result)
}

/// The contents of `uri`, which must read without an error.
async fn read(r: &Registry, uri: &str) -> Vec<duet::layer::ResourceContents> {
    match r.read_resource(uri, cx()).await {
        Ok(Reply::Complete(contents)) => contents,
        other => panic!("expected contents, got {other:?}"),
    }
}
