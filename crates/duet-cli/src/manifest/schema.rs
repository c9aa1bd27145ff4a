//! The manifest as written: plain serde types, one per table. Unknown keys are errors so a
//! typo (`comand = [...]`) fails at load instead of being ignored. These types only say what
//! the file holds; the checks that need more than its shape (placeholders, paths, names)
//! live beside the code that turns each entry into a spec (`tool.rs`, `resource.rs`, ...).

use serde::Deserialize;
use std::collections::BTreeMap;

/// A whole manifest.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Manifest {
    pub server: ServerDecl,
    #[serde(default)]
    pub tool: Vec<ToolDecl>,
    #[serde(default)]
    pub resource: Vec<ResourceDecl>,
    #[serde(default)]
    pub prompt: Vec<PromptDecl>,
    #[serde(default)]
    pub skill: Vec<SkillDecl>,
}

/// `[server]`: who the server says it is.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ServerDecl {
    pub name: String,
    pub version: String,
    pub title: Option<String>,
    pub instructions: Option<String>,
}

/// `[[tool]]`: a command run with typed arguments, never through a shell.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ToolDecl {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    /// The argv template: the program, then its arguments, each with `{arg}` placeholders.
    pub command: Vec<String>,
    #[serde(default)]
    pub args: BTreeMap<String, ArgDecl>,
    /// The working directory, relative to the manifest's directory; duet's own when absent.
    pub cwd: Option<String>,
    /// The only variables of duet's environment the child gets.
    #[serde(default)]
    pub env: Vec<String>,
    /// Variables the child gets with fixed values.
    #[serde(default)]
    pub env_set: BTreeMap<String, String>,
    /// Seconds before the child is killed; 60 when absent.
    pub timeout: Option<u64>,
    #[serde(default)]
    pub output: Output,
    /// When present, the user confirms this message (with `{arg}` placeholders) first.
    pub confirm: Option<String>,
    /// Whether a call may run as a task the client polls or cancels: `optional` (when the
    /// client can take one and the command outlasts a moment) or `required`.
    pub task: Option<TaskDecl>,
    pub annotations: Option<AnnotationsDecl>,
    #[serde(default)]
    pub roles: Vec<String>,
}

/// `[tool.args.NAME]`: one argument, which becomes one property of the `inputSchema`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ArgDecl {
    #[serde(rename = "type")]
    pub kind: ArgType,
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
    pub default: Option<toml::Value>,
    #[serde(rename = "enum")]
    pub choices: Option<Vec<toml::Value>>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub pattern: Option<String>,
    /// Mirrors the argument in the HTTP header `Mcp-Param-{header}` (SEP-2243's
    /// `x-mcp-header`), so a proxy can route on it.
    pub header: Option<String>,
    /// Lets a value that starts with `-` begin a command element before any `--` (an
    /// option's value, a negative number); otherwise such a value is refused there, so that
    /// no argument is read as an option.
    #[serde(default)]
    pub allow_leading_dash: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum ArgType {
    String,
    Integer,
    Number,
    Boolean,
    /// An array of strings.
    Array,
}

impl ArgType {
    pub(super) fn name(self) -> &'static str {
        match self {
            ArgType::String => "string",
            ArgType::Integer => "integer",
            ArgType::Number => "number",
            ArgType::Boolean => "boolean",
            ArgType::Array => "array",
        }
    }
}

/// `task = "optional" | "required"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum TaskDecl {
    Optional,
    Required,
}

/// What a tool's stdout is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Output {
    /// Returned as one text block.
    #[default]
    Text,
    /// Parsed as JSON and returned as structured content (a value that is not an object is
    /// wrapped as `{"result": value}`, since structured content is always an object).
    Json,
}

/// `annotations = { ... }`: the behaviour hints clients see.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AnnotationsDecl {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

/// `[[resource]]`: fixed text, or a file read on each request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ResourceDecl {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    pub text: Option<String>,
    /// Relative to the manifest's directory.
    pub file: Option<String>,
    #[serde(default)]
    pub roles: Vec<String>,
}

/// `[[prompt]]`: a template rendered into one user message.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PromptDecl {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub template: String,
    #[serde(default)]
    pub args: BTreeMap<String, PromptArgDecl>,
    #[serde(default)]
    pub roles: Vec<String>,
}

/// `[prompt.args.NAME]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PromptArgDecl {
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
    /// Static completion values, offered when they start with what the user typed.
    #[serde(default)]
    pub completions: Vec<String>,
}

/// `[[skill]]`: a skill folder (SEP-2640), read once at load.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SkillDecl {
    /// The folder holding `SKILL.md`, relative to the manifest's directory; its name is the
    /// skill's.
    pub dir: String,
    /// Served as `skill://<prefix>/<name>/SKILL.md` rather than `skill://<name>/SKILL.md`.
    pub prefix: Option<String>,
    #[serde(default)]
    pub roles: Vec<String>,
}
