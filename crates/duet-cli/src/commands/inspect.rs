//! `duet tools`, `duet resources`, `duet prompts`: what a principal would see listed, as a
//! table or as the exact wire objects of the list methods.

use crate::choice;
use crate::cli::ListArgs;
use duet::layer::{Layer, Principal};
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

/// Lists, for the layer and principal the options name, the wire objects `listed` gives
/// (with `--json`) or its table of names and descriptions.
fn show(
    args: ListArgs,
    listed: impl FnOnce(&dyn Layer, &Principal) -> (Value, Vec<(String, String)>),
) -> anyhow::Result<ExitCode> {
    let layer = match choice::layer(&args.layer) {
        Ok(layer) => layer,
        Err(usage) => return Ok(usage.exit()),
    };
    let (wire, rows) = listed(&*layer, &choice::principal(&args.principal));
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

pub(crate) fn tools(args: ListArgs) -> anyhow::Result<ExitCode> {
    show(args, |layer, who| {
        let tools = layer.tools(who);
        let rows = tools.iter().map(|t| (t.name.clone(), shorten(t.about.description.as_deref()))).collect();
        (json!(*tools), rows)
    })
}

pub(crate) fn resources(args: ListArgs) -> anyhow::Result<ExitCode> {
    show(args, |layer, who| {
        let (resources, templates) = (layer.resources(who), layer.templates(who));
        let rows = resources
            .iter()
            .map(|r| (r.uri.clone(), shorten(r.about.description.as_deref().or(Some(&r.name)))))
            .chain(
                templates
                    .iter()
                    .map(|t| (t.uri_template.clone(), shorten(t.about.description.as_deref().or(Some(&t.name))))),
            )
            .collect();
        (json!({"resources": *resources, "resourceTemplates": *templates}), rows)
    })
}

pub(crate) fn prompts(args: ListArgs) -> anyhow::Result<ExitCode> {
    show(args, |layer, who| {
        let prompts = layer.prompts(who);
        let rows = prompts
            .iter()
            .map(|p| {
                let args: Vec<String> =
                    p.arguments.iter().map(|a| format!("{}{}", a.name, if a.required { "*" } else { "" })).collect();
                (format!("{}({})", p.name, args.join(", ")), shorten(p.about.description.as_deref()))
            })
            .collect();
        (json!(*prompts), rows)
    })
}
