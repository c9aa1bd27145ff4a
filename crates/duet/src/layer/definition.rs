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
    pub name: String,
    pub version: String,
    pub title: Option<String>,
    /// How to use this server, for the model; sent beside `serverInfo`, never inside it.
    #[serde(skip)]
    pub instructions: Option<String>,
}

impl ServerInfo {
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ServerInfo { name: name.into(), version: version.into(), title: None, instructions: None }
    }

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    pub src: String,
    pub mime_type: Option<String>,
    pub sizes: Option<Vec<String>>,
    pub theme: Option<String>,
}

/// Hints about a tool's behaviour; untrusted by clients, useful to them all the same.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    pub title: Option<String>,
    pub read_only_hint: Option<bool>,
    pub destructive_hint: Option<bool>,
    pub idempotent_hint: Option<bool>,
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
    pub title: Option<String>,
    pub description: Option<String>,
    pub icons: Option<Vec<Icon>>,
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    #[serde(flatten)]
    pub about: About,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
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
    pub task_support: TaskSupport,
}

/// Whether a tool's calls may run as tasks: never (the default), when the client allows it
/// (the engine then answers with a task once the call outlasts a moment, or when its
/// handler asks, see `RequestCx::become_task`), or only as tasks (a client that cannot
/// take a task gets an error instead).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    #[default]
    Forbidden,
    Optional,
    Required,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    pub uri: String,
    pub name: String,
    #[serde(flatten)]
    pub about: About,
    pub mime_type: Option<String>,
    pub size: Option<u64>,
    pub annotations: Option<super::Annotations>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    pub uri_template: String,
    pub name: String,
    #[serde(flatten)]
    pub about: About,
    pub mime_type: Option<String>,
    pub annotations: Option<super::Annotations>,
}

/// One argument of a prompt.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    pub name: String,
    #[serde(flatten)]
    pub about: About,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
}
