//! The prompts: `review_file` embeds one file as a resource and asks for a review;
//! `summarize_directory` lists a directory's tree and asks for a summary. Both complete
//! their `path` argument from the listing (the workspace's `complete` does, within the
//! client's roots).

use super::files::{self, Body, ReadError};
use super::in_force::InForce;
use super::listing::Want;
use super::paths::Kind;
use super::tree::Tree;
use super::{Cx, Shared, blocking, uri};
use duet::layer::{
    Content, HandlerError, LayerError, PromptMessage, PromptResult, PromptSpec, Registry, RegistryError,
    ResourceContents,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The most entries a directory summary lists.
const MAX_TREE_ENTRIES: usize = 300;
/// How deep a directory summary goes.
const TREE_DEPTH: usize = 4;

pub(crate) fn register(registry: &mut Registry<Arc<Shared>>) -> Result<(), RegistryError> {
    registry.prompt(
        spec("review_file", review_file)
            .title("Review a file")
            .description("Asks for a code review of one file of the workspace, with the file attached.")
            .argument("path", "The file to review.", true),
    )?;
    registry.prompt(
        spec("summarize_directory", summarize_directory)
            .title("Summarize a directory")
            .description("Asks for a summary of what a directory of the workspace holds, with its tree attached.")
            .argument("path", "The directory to summarize (default: the whole workspace).", false),
    )?;
    Ok(())
}

/// What the `path` argument of prompt `name` completes with: files, or directories.
pub(crate) fn completes(name: &str) -> Option<Want> {
    match name {
        "review_file" => Some(Want::Files),
        "summarize_directory" => Some(Want::Dirs),
        _ => None,
    }
}

/// A prompt whose blocking body gets the shared state, the roots in force and the
/// arguments.
fn spec<F>(name: &str, render: F) -> PromptSpec<Arc<Shared>>
where
    F: Fn(&Shared, &InForce, &BTreeMap<String, String>) -> Result<PromptResult, HandlerError>
        + Send
        + Sync
        + Copy
        + 'static,
{
    PromptSpec::new(name, move |args: BTreeMap<String, String>, cx: Cx| async move {
        let client = cx.client_roots().await;
        let render = move || {
            let shared = cx.state();
            render(shared, &shared.in_force(client.listed(), cx.reach_check()), &args)
        };
        blocking(render).await.map_err(LayerError::Internal)?
    })
}

fn invalid(message: String) -> HandlerError {
    LayerError::invalid_arguments(message).into()
}

fn review_file(
    shared: &Shared,
    in_force: &InForce,
    args: &BTreeMap<String, String>,
) -> Result<PromptResult, HandlerError> {
    let input = args.get("path").map_or("", String::as_str);
    let file = in_force.resolve(input).map_err(|e| e.to_layer())?;
    let name = shared.roots.display(file.root, &file.abs);
    if file.kind == Kind::Dir {
        return Err(invalid(format!("{name} is a directory; review_file reviews one file")));
    }
    let link = uri::from_path(&file.abs);
    let contents = match files::read_whole(&file.abs, shared.roots.get(file.root)) {
        Ok(Body::Text(text)) => ResourceContents::text(&link, files::mime_type(&file.abs, Some(true)), text),
        Ok(Body::Binary(bytes)) => ResourceContents::blob(&link, files::mime_type(&file.abs, Some(false)), &bytes),
        Err(e @ ReadError::TooLarge { .. }) => return Err(invalid(e.message(&name))),
        Err(e) => return Err(LayerError::Internal(e.message(&name)).into()),
    };
    let ask = format!(
        "Review {name}, attached above. Point out bugs, risky or unclear code, and missing error handling, \
         citing line numbers, and suggest concrete improvements. Say so if it looks fine."
    );
    Ok(PromptResult {
        description: Some(format!("Review of {name}")),
        messages: vec![PromptMessage::user(Content::resource(contents)), PromptMessage::user(Content::text(ask))],
    })
}

fn summarize_directory(
    shared: &Shared,
    in_force: &InForce,
    args: &BTreeMap<String, String>,
) -> Result<PromptResult, HandlerError> {
    let input = args.get("path").map(String::as_str).filter(|p| !p.is_empty()).unwrap_or(".");
    let scope = in_force.resolve_scope(input).map_err(|e| e.to_layer())?;
    if let [one] = scope.as_slice()
        && one.kind == Kind::File
    {
        return Err(invalid(format!("{input:?} is a file; summarize_directory summarizes a directory")));
    }
    let tree = Tree::walk(shared, &scope, &|entry| in_force.reachable(entry).is_ok(), TREE_DEPTH, MAX_TREE_ENTRIES);
    let mut lines = tree.lines();
    if tree.truncated {
        lines.push(format!("(the tree stops at {MAX_TREE_ENTRIES} entries)"));
    }
    let shown = match scope.as_slice() {
        [one] => shared.roots.display(one.root, &one.abs),
        _ => "the workspace".into(),
    };
    let ask = format!(
        "Summarize what {shown} contains: its purpose, how it is organized, and the most important files. \
         Read files with the read_file tool where the names alone do not tell."
    );
    Ok(PromptResult {
        description: Some(format!("Summary of {shown}")),
        messages: vec![
            PromptMessage::user(Content::text(format!("The tree of {shown}:\n{}", lines.join("\n")))),
            PromptMessage::user(Content::text(ask)),
        ],
    })
}
