//! A `[[tool]]` entry: checks it (name, command template, arguments, paths, environment)
//! and turns it into a `ToolSpec` whose handler fills in defaults, asks the user to confirm
//! when the manifest says so, then runs the command.
//!
//! Confirmation goes through `crate::confirm`, as for the workspace's write tools: the
//! command runs only once the user said yes to the rendered `confirm` message.

use super::args;
use super::command::{Command, Limits};
use super::locate::{Locator, Place};
use super::schema::{AnnotationsDecl, ArgType, TaskDecl, ToolDecl};
use super::template::{Argv, Template, ends_options, text_of};
use super::{Problem, check_roles};
use crate::confirm::Question;
use duet::layer::{HandlerError, Reply, RequestCx, TaskSupport, ToolAnnotations, ToolResult, ToolSpec};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Seconds a command may run when the manifest does not say.
const DEFAULT_TIMEOUT: u64 = 60;

/// Checks a tool's declaration (found at `at`) and builds its spec.
pub(super) fn compile(decl: ToolDecl, at: &Place, dir: &Path, locator: &Locator) -> Result<ToolSpec, Problem> {
    let name = decl.name.clone();
    let fail = |place: Place, message: String| Problem::new(place, format!("tool {name:?}: {message}"));
    if !valid_tool_name(&name) {
        return Err(fail(at.key("name"), "invalid name: use 1 to 128 of A-Z a-z 0-9 _ . -".into()));
    }

    let command_at = at.key("command");
    let Some((program, rest)) = decl.command.split_first() else {
        return Err(fail(
            command_at,
            "command is empty: give the program and its arguments, e.g. [\"git\", \"status\"]".into(),
        ));
    };
    // No placeholders: the rendering only turns `{{` and `}}` into braces.
    let program = Template::parse(program)
        .ok()
        .and_then(|t| t.render(|_| None).ok())
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| {
            fail(command_at.index(0), "the program (the first element of command) must be fixed text".into())
        })?;
    let mut elements = Vec::with_capacity(rest.len());
    let mut used = BTreeSet::new();
    // The arguments whose values can begin an element before any `--`, where a leading `-`
    // would make them an option.
    let mut leading = BTreeSet::new();
    for (i, element) in rest.iter().enumerate() {
        let here = command_at.index(i + 1);
        let template =
            Template::parse(element).map_err(|e| fail(here.clone(), format!("command element {element:?}: {e}")))?;
        for arg in template.placeholders() {
            match decl.args.get(arg) {
                None => {
                    return Err(fail(
                        here,
                        format!(
                            "unknown argument placeholder {{{arg}}} in command (declare it under [tool.args.{arg}])"
                        ),
                    ));
                }
                Some(a) if a.kind == ArgType::Array && template.whole_arg().is_none() => {
                    return Err(fail(
                        here,
                        format!(
                            "array argument {arg} must be a whole command element (\"{{{arg}}}\"): each item becomes one element"
                        ),
                    ));
                }
                Some(_) => used.insert(arg.to_string()),
            };
        }
        if !elements.iter().any(ends_options) {
            leading.extend(template.leading_args().map(str::to_string));
        }
        elements.push(template);
    }
    if let Some(unused) = decl.args.keys().find(|a| !used.contains(*a)) {
        return Err(fail(
            at.key("args").key(unused),
            format!("argument {unused} is declared but command never uses it (add {{{unused}}} to command)"),
        ));
    }
    let args = args::compile(&name, &decl.args, &at.key("args"), locator)?;
    for arg in leading.iter().filter(|a| !decl.args[*a].allow_leading_dash) {
        let decl = &decl.args[arg];
        let default = decl.default.iter().find(|v| dashed(v)).map(|v| ("default", v));
        let choice = decl.choices.iter().flatten().find(|v| dashed(v)).map(|v| ("enum", v));
        if let Some((field, value)) = default.or(choice) {
            return Err(fail(
                at.key("args").key(arg).key(field),
                format!(
                    "argument {arg}: {field} value {value} starts with \"-\", which the command would read as an \
                     option: set allow_leading_dash = true if it is meant as one, or put \"--\" before {{{arg}}}"
                ),
            ));
        }
    }
    let dashes = decl.args.iter().filter(|(_, a)| a.allow_leading_dash).map(|(n, _)| n.clone()).collect();

    let confirm = match &decl.confirm {
        Some(message) => {
            let template = Template::parse(message).map_err(|e| fail(at.key("confirm"), format!("confirm: {e}")))?;
            if let Some(arg) = template.placeholders().find(|a| !decl.args.contains_key(*a)) {
                return Err(fail(
                    at.key("confirm"),
                    format!("unknown argument placeholder {{{arg}}} in confirm (declare it under [tool.args.{arg}])"),
                ));
            }
            Some(template)
        }
        None => None,
    };

    let cwd = match &decl.cwd {
        Some(cwd) => {
            let path = dir.join(cwd);
            if !path.is_dir() {
                return Err(fail(
                    at.key("cwd"),
                    format!("cwd {cwd:?} is not a directory (relative paths start at {})", dir.display()),
                ));
            }
            Some(path)
        }
        None => None,
    };
    for (i, var) in decl.env.iter().enumerate() {
        if !valid_env_name(var) {
            return Err(fail(at.key("env").index(i), format!("env: invalid variable name {var:?}")));
        }
    }
    if let Some(var) = decl.env_set.keys().find(|v| !valid_env_name(v)) {
        return Err(fail(at.key("env_set").key(var), format!("env_set: invalid variable name {var:?}")));
    }
    let timeout = decl.timeout.unwrap_or(DEFAULT_TIMEOUT);
    if timeout == 0 {
        return Err(fail(at.key("timeout"), "timeout must be at least 1 (seconds)".into()));
    }
    check_roles(&decl.roles, at, &format!("tool {name:?}"))?;

    let command = Command {
        tool: name.clone(),
        program,
        args: Argv::new(elements, dashes),
        cwd,
        env: decl.env,
        env_set: decl.env_set,
        limits: Limits { timeout: Duration::from_secs(timeout), ..Limits::default() },
        output: decl.output,
    };
    let tool = Arc::new(ManifestTool { name: name.clone(), command, defaults: args.defaults, confirm });
    let mut spec = ToolSpec::new(name, move |args, cx| {
        let tool = tool.clone();
        async move { Ok::<_, HandlerError>(tool.call(args, cx).await) }
    })
    .description(decl.description)
    .input_schema(args.schema);
    if let Some(title) = decl.title {
        spec = spec.title(title);
    }
    if let Some(annotations) = decl.annotations {
        spec = spec.annotations(tool_annotations(annotations));
    }
    if let Some(task) = decl.task {
        spec = spec.task_support(match task {
            TaskDecl::Optional => TaskSupport::Optional,
            TaskDecl::Required => TaskSupport::Required,
        });
    }
    if !decl.roles.is_empty() {
        spec = spec.roles(decl.roles);
    }
    Ok(spec)
}

/// Whether a manifest value (a default, an enum value) would begin an element with `-`.
fn dashed(value: &toml::Value) -> bool {
    match value {
        toml::Value::String(s) => s.starts_with('-'),
        toml::Value::Integer(i) => *i < 0,
        toml::Value::Float(f) => *f < 0.0,
        toml::Value::Array(items) => items.iter().any(dashed),
        _ => false,
    }
}

/// The name rule of the Registry, checked here so the error can point at the line.
fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0'])
}

fn tool_annotations(decl: AnnotationsDecl) -> ToolAnnotations {
    ToolAnnotations {
        title: None,
        read_only_hint: decl.read_only,
        destructive_hint: decl.destructive,
        idempotent_hint: decl.idempotent,
        open_world_hint: decl.open_world,
    }
}

/// What a tool's handler holds.
struct ManifestTool {
    name: String,
    command: Command,
    defaults: Map<String, Value>,
    confirm: Option<Template>,
}

impl ManifestTool {
    /// Runs the tool for arguments the Registry already validated against its schema.
    async fn call(&self, mut args: Map<String, Value>, cx: RequestCx) -> Reply<ToolResult> {
        for (name, value) in &self.defaults {
            args.entry(name.as_str()).or_insert_with(|| value.clone());
        }
        if let Some(confirm) = &self.confirm {
            let question = Question {
                tool: self.name.clone(),
                message: confirm.render_lenient(|arg| args.get(arg).and_then(text_of)),
                subject: Value::Null,
                untouched: None,
            };
            if let Err(reply) = question.confirmed(&cx) {
                return reply;
            }
        }
        self.command.run(&args, &cx).await.into()
    }
}
