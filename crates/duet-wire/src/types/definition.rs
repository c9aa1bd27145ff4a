//! The descriptions a server lists: itself, its tools, resources, templates and prompts.
//! These are the wire shapes of `tools/list` and friends, newest revision first. What every
//! listed primitive may say about itself besides its name is one type, [`About`]. Absent
//! optional fields are left out of the JSON.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use serde_with::skip_serializing_none;

/// Name, version and instructions of the server, sent in `initialize` and `server/discover`.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    /// The server's name, for a program.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its name for people.
    pub title: Option<String>,
    /// How to use this server, for the model; sent beside `serverInfo`, never inside it.
    #[serde(skip)]
    pub instructions: Option<String>,
}

impl ServerInfo {
    /// A server named `name` at `version`, with no title or instructions.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ServerInfo { name: name.into(), version: version.into(), title: None, instructions: None }
    }

    /// The server with a title for people.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// The server with instructions for the model.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }
}

/// An icon a client may show beside a server, tool, resource or prompt.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// Where the icon is: an `https:` or `data:` URI.
    pub src: String,
    /// Its media type, when the URI does not say.
    pub mime_type: Option<String>,
    /// The sizes it comes in (`48x48`, `any`...).
    pub sizes: Option<Vec<String>>,
    /// The theme it is drawn for: `light` or `dark`.
    pub theme: Option<String>,
}

/// Hints about a tool's behaviour; untrusted by clients, useful to them all the same.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A name for people.
    pub title: Option<String>,
    /// The tool changes nothing.
    pub read_only_hint: Option<bool>,
    /// The tool may destroy or overwrite something (meaningful when it is not read-only).
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    pub idempotent_hint: Option<bool>,
    /// The tool reaches outside the server (the web, other systems).
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// A tool that only reads, always gives the same answer, and stays inside the server.
    pub fn read_only() -> Self {
        ToolAnnotations {
            title: None,
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(false),
        }
    }
}

/// What a listed primitive may say about itself besides its name: a title for people, a
/// description for the model, icons, and free-form `_meta`.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct About {
    /// A name for people.
    pub title: Option<String>,
    /// What it is, for the model.
    pub description: Option<String>,
    /// Icons a client may show.
    pub icons: Option<Vec<Icon>>,
    /// Metadata for the client (`_meta`), passed through as given.
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
}

/// A tool as `tools/list` lists it.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The name a call gives.
    pub name: String,
    /// Its title, description, icons and `_meta`.
    #[serde(flatten)]
    pub about: About,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    /// The JSON Schema of its structured output, if it has one.
    pub output_schema: Option<Value>,
    /// Hints about its behaviour.
    pub annotations: Option<ToolAnnotations>,
    /// Whether calls may run as tasks; listed to 2025-11-25 clients only (2026-07-28 moved
    /// tasks to an extension, where the server decides per call).
    pub execution: Option<ToolExecution>,
}

impl Tool {
    /// Whether a call of this tool may run as a task.
    pub fn task_support(&self) -> TaskSupport {
        self.execution.as_ref().map_or(TaskSupport::Forbidden, |e| e.task_support)
    }
}

/// How a tool runs, as 2025-11-25 lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Whether calls may run as tasks.
    pub task_support: TaskSupport,
}

/// Whether a tool's calls may run as tasks: never (the default), when the client allows it
/// (the engine then answers with a task once the call outlasts a moment, or when its
/// handler asks, see `RequestCx::become_task`), or only as tasks (a client that cannot
/// take a task gets an error instead).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never: calls always answer directly.
    #[default]
    Forbidden,
    /// When the client asks or allows it.
    Optional,
    /// Always: a client that cannot take a task gets an error.
    Required,
}

/// A resource as `resources/list` lists it.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its name, for a program.
    pub name: String,
    /// Its title, description, icons and `_meta`.
    #[serde(flatten)]
    pub about: About,
    /// Its media type, when known.
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    pub size: Option<u64>,
    /// Who it is for and how much it matters.
    pub annotations: Option<super::Annotations>,
}

/// A family of resources as `resources/templates/list` lists it: URIs made from a template.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The RFC 6570 URI template.
    pub uri_template: String,
    /// Its name, for a program.
    pub name: String,
    /// Its title, description, icons and `_meta`.
    #[serde(flatten)]
    pub about: About,
    /// The media type of the resources it makes, when all share one.
    pub mime_type: Option<String>,
    /// Who they are for and how much they matter.
    pub annotations: Option<super::Annotations>,
}

/// One argument of a prompt.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// Its name, as `prompts/get` gives it.
    pub name: String,
    /// A name for people.
    pub title: Option<String>,
    /// What the argument is for.
    pub description: Option<String>,
    /// Whether `prompts/get` must give it.
    #[serde(default)]
    pub required: bool,
}

/// A prompt as `prompts/list` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// The name `prompts/get` gives.
    pub name: String,
    /// Its title, description, icons and `_meta`.
    #[serde(flatten)]
    pub about: About,
    /// The arguments it takes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
}
