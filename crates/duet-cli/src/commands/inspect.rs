//! `duet tools`, `duet resources`, `duet prompts`: what a principal would see listed, as a
//! table or as the exact wire objects of the list methods.

use crate::choice;
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

fn print_json(value: &Value) {
    println!("{}", serde_json::to_string_pretty(value).unwrap_or_default());
}

fn print_table(rows: &[(String, String)]) {
    let width = rows.iter().map(|(name, _)| name.chars().count()).max().unwrap_or(0);
    for (name, description) in rows {
        println!("{name:width$}  {description}");
    }
}

pub fn tools(args: ListArgs) -> anyhow::Result<ExitCode> {
    let layer = match choice::layer(&args.layer, false) {
        Ok(layer) => layer,
        Err(usage) => return Ok(usage.exit()),
    };
    let tools = layer.tools(&choice::principal(&args.principal));
    if args.json {
        print_json(&json!(*tools));
    } else {
        print_table(
            &tools.iter().map(|t| (t.name.clone(), shorten(t.about.description.as_deref()))).collect::<Vec<_>>(),
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn resources(args: ListArgs) -> anyhow::Result<ExitCode> {
    let layer = match choice::layer(&args.layer, false) {
        Ok(layer) => layer,
        Err(usage) => return Ok(usage.exit()),
    };
    let who = choice::principal(&args.principal);
    let (resources, templates) = (layer.resources(&who), layer.templates(&who));
    if args.json {
        print_json(&json!({"resources": *resources, "resourceTemplates": *templates}));
    } else {
        let rows = resources
            .iter()
            .map(|r| (r.uri.clone(), shorten(r.about.description.as_deref().or(Some(&r.name)))))
            .chain(
                templates
                    .iter()
                    .map(|t| (t.uri_template.clone(), shorten(t.about.description.as_deref().or(Some(&t.name))))),
            )
            .collect::<Vec<_>>();
        print_table(&rows);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn prompts(args: ListArgs) -> anyhow::Result<ExitCode> {
    let layer = match choice::layer(&args.layer, false) {
        Ok(layer) => layer,
        Err(usage) => return Ok(usage.exit()),
    };
    let prompts = layer.prompts(&choice::principal(&args.principal));
    if args.json {
        print_json(&json!(*prompts));
    } else {
        let rows = prompts
            .iter()
            .map(|p| {
                let args: Vec<String> =
                    p.arguments.iter().map(|a| format!("{}{}", a.name, if a.required { "*" } else { "" })).collect();
                (format!("{}({})", p.name, args.join(", ")), shorten(p.about.description.as_deref()))
            })
            .collect::<Vec<_>>();
        print_table(&rows);
    }
    Ok(ExitCode::SUCCESS)
}
