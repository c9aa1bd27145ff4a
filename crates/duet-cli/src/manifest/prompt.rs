//! A `[[prompt]]` entry: a template rendered into one user message, its arguments listed
//! with the prompt and completed from static values that start with what the user typed.

use super::locate::{Locator, Place};
use super::schema::PromptDecl;
use super::template::{Template, valid_name};
use super::{Problem, check_roles};
use duet::layer::{Content, HandlerError, PromptMessage, PromptResult, PromptSpec};
use std::collections::BTreeSet;

/// Checks a prompt's declaration (found at `at`) and builds its spec.
pub(super) fn compile(decl: PromptDecl, at: &Place, locator: &Locator) -> Result<PromptSpec, Problem> {
    let name = decl.name.clone();
    let fail = |place: Place, message: String| Problem::new(place, format!("prompt {name:?}: {message}"));
    if name.trim().is_empty() {
        return Err(fail(at.key("name"), "name is empty".into()));
    }
    let template = Template::parse(&decl.template).map_err(|e| fail(at.key("template"), format!("template: {e}")))?;
    let used: BTreeSet<&str> = template.placeholders().collect();
    if let Some(arg) = used.iter().find(|a| !decl.args.contains_key(**a)) {
        return Err(fail(
            at.key("template"),
            format!("unknown argument placeholder {{{arg}}} in template (declare it under [prompt.args.{arg}])"),
        ));
    }
    let args_at = at.key("args");
    let mut args: Vec<_> = decl.args.into_iter().collect();
    args.sort_by_key(|(arg, _)| locator.offset(&args_at.key(arg)));
    for (arg, _) in &args {
        if !valid_name(arg) {
            return Err(fail(
                args_at.key(arg),
                format!("argument {arg}: invalid name: use a letter or _ followed by letters, digits, _ or -"),
            ));
        }
        if !used.contains(arg.as_str()) {
            return Err(fail(
                args_at.key(arg),
                format!("argument {arg} is declared but template never uses it (add {{{arg}}} to template)"),
            ));
        }
    }
    check_roles(&decl.roles, at, &format!("prompt {name:?}"))?;

    let description = decl.description.clone();
    let mut spec = PromptSpec::new(name.clone(), move |values, _| {
        let text = template.render_lenient(|arg| values.get(arg).cloned());
        let result = PromptResult {
            description: Some(description.clone()),
            messages: vec![PromptMessage::user(Content::text(text))],
        };
        async move { Ok::<_, HandlerError>(result) }
    })
    .description(decl.description);
    if let Some(title) = decl.title {
        spec = spec.title(title);
    }
    for (arg, arg_decl) in args {
        spec = spec.argument(arg.clone(), arg_decl.description.unwrap_or_default(), arg_decl.required);
        if !arg_decl.completions.is_empty() {
            let values = arg_decl.completions;
            spec = spec.complete(arg, move |typed, _| {
                let typed = typed.to_lowercase();
                values.iter().filter(|v| v.to_lowercase().starts_with(&typed)).cloned().collect()
            });
        }
    }
    if !decl.roles.is_empty() {
        spec = spec.roles(decl.roles);
    }
    Ok(spec)
}
