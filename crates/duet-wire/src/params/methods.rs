//! One struct per request a client sends that carries params, named after its method;
//! field names are the wire's. Optional parameters are `Option`s, skipped when absent.

use super::fields::{lenient, non_empty, object_or, present, string_arguments, string_or};
use super::{Params, missing_or_invalid};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The revision the client asks for.
    pub protocol_version: String,
    /// What the client can do (anything but an object is taken as none).
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Map<String, Value>>,
    /// The client's name and version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<Value>,
}

impl Params for InitializeParams {}

/// `logging/setLevel`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SetLevelParams {
    /// The least severe level the client wants (`debug` … `emergency`).
    #[serde(deserialize_with = "level")]
    pub level: String,
}

impl SetLevelParams {
    /// What a request whose level is `value` is told when that names no level.
    pub fn refusal(value: &Value) -> String {
        format!("Invalid log level: {}", value.to_string().replace('"', "'"))
    }
}

fn level<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    string_or(d, SetLevelParams::refusal)
}

impl Params for SetLevelParams {
    fn refused(_: &str, why: Option<&serde_json::Error>) -> String {
        why.map_or_else(|| "Invalid log level: missing".into(), ToString::to_string)
    }
}

/// The list methods (`tools/list`, `resources/list`, `resources/templates/list`,
/// `prompts/list`, `skills/list`, `tasks/list`): the page asked for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListParams {
    /// The cursor of the page, from the previous page; none for the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

impl Params for ListParams {
    fn refused(_: &str, _: Option<&serde_json::Error>) -> String {
        "Invalid cursor".into()
    }
}

/// What a 2026 request that retries one answered `input_required` brings back; the
/// requests that may ask for input (`tools/call`, `prompts/get`, `resources/read`) carry it.
const REQUEST_STATE: &str = "requestState";

/// The refusal shared by the requests that may retry: `requestState` has its own message.
fn refused_retry(field: &str) -> String {
    match field {
        REQUEST_STATE => "requestState must be a string".into(),
        field => missing_or_invalid(field),
    }
}

/// `tools/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams {
    /// The tool.
    #[serde(deserialize_with = "non_empty")]
    pub name: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// 2025-11-25: run the call as a task.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskMetadata>,
    /// 2026: the client's answers to what an `input_required` result asked, by key.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Map<String, Value>>,
    /// 2026: the state that `input_required` result carried, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl Params for CallToolParams {
    fn refused(field: &str, _: Option<&serde_json::Error>) -> String {
        match field {
            "arguments" => "arguments must be an object".into(),
            "task" => "task must be an object, such as {\"ttl\": 60000}".into(),
            field => refused_retry(field),
        }
    }
}

/// 2025-11-25: what a client asks of the task a call runs as.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskMetadata {
    /// How long the task's record should be kept, in milliseconds (anything but a whole
    /// number is taken as none).
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

/// `prompts/get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptParams {
    /// The prompt.
    #[serde(deserialize_with = "non_empty")]
    pub name: String,
    /// Its arguments, strings (numbers and booleans are read as their text).
    #[serde(default, deserialize_with = "string_arguments", skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// 2026: the client's answers to what an `input_required` result asked, by key.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Map<String, Value>>,
    /// 2026: the state that `input_required` result carried, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl Params for GetPromptParams {
    fn refused(field: &str, why: Option<&serde_json::Error>) -> String {
        match (field, why) {
            ("arguments", Some(why)) => why.to_string(),
            (field, _) => refused_retry(field),
        }
    }
}

/// `resources/read`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceParams {
    /// The resource.
    #[serde(deserialize_with = "non_empty")]
    pub uri: String,
    /// 2026: the client's answers to what an `input_required` result asked, by key.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<Map<String, Value>>,
    /// 2026: the state that `input_required` result carried, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

impl Params for ReadResourceParams {
    fn refused(field: &str, _: Option<&serde_json::Error>) -> String {
        refused_retry(field)
    }
}

/// The methods that name one resource and nothing else: `resources/subscribe`,
/// `resources/unsubscribe`, the skills extension's `skills/get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceParams {
    /// The resource.
    #[serde(deserialize_with = "non_empty")]
    pub uri: String,
}

impl Params for ResourceParams {}

/// `resources/directory/read` (the skills extension): a page of a folder.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadDirectoryParams {
    /// The folder.
    #[serde(deserialize_with = "non_empty")]
    pub uri: String,
    /// The cursor of the page, from the previous page; none for the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

impl Params for ReadDirectoryParams {
    fn refused(field: &str, _: Option<&serde_json::Error>) -> String {
        match field {
            "cursor" => "Invalid cursor".into(),
            field => missing_or_invalid(field),
        }
    }
}

/// `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteParams {
    /// What is completed: a prompt's argument or a template's variable.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument and what the user typed of it.
    pub argument: CompletionArgument,
    /// What the other arguments already hold (anything but an object is taken as none).
    #[serde(default, deserialize_with = "context", skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
}

fn context<'de, D: Deserializer<'de>>(d: D) -> Result<Option<CompletionContext>, D::Error> {
    object_or(d, None)
}

impl Params for CompleteParams {
    fn refused(field: &str, why: Option<&serde_json::Error>) -> String {
        match (field, why) {
            ("ref", _) => "Invalid completion ref".into(),
            ("context", Some(why)) => why.to_string(),
            _ => "Invalid completion argument".into(),
        }
    }
}

/// What `completion/complete` completes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum CompletionReference {
    /// An argument of a prompt.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt.
        name: String,
    },
    /// A variable of a resource template.
    #[serde(rename = "ref/resource")]
    Resource {
        /// The template, as listed.
        uri: String,
    },
}

/// The argument `completion/complete` completes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionArgument {
    /// Its name.
    pub name: String,
    /// What the user typed of it so far (none is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// What the other arguments of a completion already hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionContext {
    /// Their values, strings (numbers and booleans are read as their text).
    #[serde(default, deserialize_with = "string_arguments", skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// `subscriptions/listen` (2026).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListenParams {
    /// What the stream should carry.
    #[serde(deserialize_with = "notifications")]
    pub notifications: ListenFilter,
}

/// What a listen request without a filter is told.
const NO_FILTER: &str = "subscriptions/listen requires a notifications filter";

fn notifications<'de, D: Deserializer<'de>>(d: D) -> Result<ListenFilter, D::Error> {
    object_or(d, Some(NO_FILTER)).map(Option::unwrap_or_default)
}

impl Params for ListenParams {
    fn refused(_: &str, why: Option<&serde_json::Error>) -> String {
        why.map_or_else(|| NO_FILTER.into(), ToString::to_string)
    }
}

/// What a listen stream asks for. Each flag is on only when it is `true`; a
/// `resourceSubscriptions` that is not an array is taken as none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// The URIs whose `notifications/resources/updated` it wants (the server checks each).
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<Value>>,
    /// With the tasks extension: the tasks whose status it follows (ids that are not
    /// strings are left out).
    #[serde(default, deserialize_with = "task_ids", skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<Value>>,
}

impl ListenFilter {
    /// The most tasks one listen stream may follow.
    pub const MAX_TASK_IDS: usize = 100;
}

fn task_ids<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Value>>, D::Error> {
    use serde::de::Error;
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Array(ids) if ids.len() <= ListenFilter::MAX_TASK_IDS => Ok(Some(ids)),
        _ => Err(D::Error::custom(format!(
            "notifications.taskIds must be an array of at most {} task ids",
            ListenFilter::MAX_TASK_IDS
        ))),
    }
}

/// The task methods that name one task: `tasks/get`, `tasks/cancel`, `tasks/result`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskParams {
    /// The task.
    #[serde(deserialize_with = "non_empty")]
    pub task_id: String,
}

impl Params for TaskParams {}

/// `tasks/update` (2026, the tasks extension): the client's answers to what a task asked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams {
    /// The task.
    #[serde(deserialize_with = "non_empty")]
    pub task_id: String,
    /// The answers, by the key of what was asked.
    pub input_responses: Map<String, Value>,
}

impl Params for UpdateTaskParams {
    fn refused(field: &str, _: Option<&serde_json::Error>) -> String {
        match field {
            "inputResponses" => "tasks/update needs inputResponses: the answers, by request key".into(),
            field => missing_or_invalid(field),
        }
    }
}
