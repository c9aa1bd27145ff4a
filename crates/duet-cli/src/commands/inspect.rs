//! `duet tools`, `duet resources`, `duet prompts`: what a principal would see listed, or
//! what another server lists, as a table or as the exact wire objects of the list methods.

use super::failure;
use super::source::Source;
use crate::cli::ListArgs;
use serde_json::{Value, json};
use std::process::ExitCode;

/// The width a description gets in a table.
const DESCRIPTION: usize = 90;

fn shorten(text: Option<&str>) -> String {
    let line = text.unwrap_or_default().lines().next().unwrap_or_default();
    if line.chars().count() <= DESCRIPTION {
        return line.to_string();
    }
    let cut: String = line.chars().take(DESCRIPTION - 1).collect();
    format!("{cut}…")
}

/// A listing: its wire objects, and its table's rows of names and descriptions.
type Listed = (Value, Vec<(String, String)>);

/// Lists, from the source the options name, the wire objects `listed` gives (with `--json`)
/// or its table of names and descriptions.
async fn show(args: ListArgs, listed: impl AsyncFnOnce(&Source) -> Result<Listed, String>) -> anyhow::Result<ExitCode> {
    let source = match Source::open(args.url.as_deref(), &args.layer, &args.principal, &args.server, false).await {
        Ok(source) => source,
        Err(code) => return Ok(code),
    };
    let result = listed(&source).await;
    source.close().await;
    let (wire, rows) = match result {
        Ok(listed) => listed,
        Err(message) => return Ok(failure(message)),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&wire).unwrap_or_default());
    } else {
        let width = rows.iter().map(|(name, _)| name.chars().count()).max().unwrap_or(0);
        for (name, description) in rows {
            println!("{name:width$}  {description}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) async fn tools(args: ListArgs) -> anyhow::Result<ExitCode> {
    show(args, async |source| {
        let tools = source.tools().await?;
        let rows = tools.iter().map(|t| (t.name.clone(), shorten(t.about.description.as_deref()))).collect();
        Ok((json!(tools), rows))
    })
    .await
}

pub(crate) async fn resources(args: ListArgs) -> anyhow::Result<ExitCode> {
    show(args, async |source| {
        let (resources, templates) = source.resources().await?;
        let rows = resources
            .iter()
            .map(|r| (r.uri.clone(), shorten(r.about.description.as_deref().or(Some(&r.name)))))
            .chain(
                templates
                    .iter()
                    .map(|t| (t.uri_template.clone(), shorten(t.about.description.as_deref().or(Some(&t.name))))),
            )
            .collect();
        Ok((json!({"resources": resources, "resourceTemplates": templates}), rows))
    })
    .await
}

pub(crate) async fn prompts(args: ListArgs) -> anyhow::Result<ExitCode> {
    show(args, async |source| {
        let prompts = source.prompts().await?;
        let rows = prompts
            .iter()
            .map(|p| {
                let args: Vec<String> =
                    p.arguments.iter().map(|a| format!("{}{}", a.name, if a.required { "*" } else { "" })).collect();
                (format!("{}({})", p.name, args.join(", ")), shorten(p.about.description.as_deref()))
            })
            .collect();
        Ok((json!(prompts), rows))
    })
    .await
}
