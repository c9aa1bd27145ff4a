//! Validation of results and notifications against `mcp-schema/<version>/schema.json`.
//!
//! The schemas are not part of the repository: they are read from the shared folder
//! (`DUET_SHARED_DIR`, or `shared` beside the repository). Where that folder has none, a
//! clone still tests everything else: [`Schemas::get`] says once on stderr that schema
//! checks are skipped, and its checks against the schemas do nothing.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// The variable naming the shared folder.
const SHARED_DIR_VARIABLE: &str = "DUET_SHARED_DIR";

/// The revisions whose schemas are read.
const VERSIONS: [&str; 5] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// The shared folder named by `DUET_SHARED_DIR`, if it is set.
fn chosen_shared_dir() -> Option<PathBuf> {
    std::env::var_os(SHARED_DIR_VARIABLE).filter(|dir| !dir.is_empty()).map(PathBuf::from)
}

/// The `shared` folder beside the repository (this crate is `<repository>/crates/duet-testing`).
fn default_shared_dir() -> PathBuf {
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(3);
    beside.expect("the repository sits in a folder").join("shared")
}

/// Every revision's schema document, by version. `None` when there is no `mcp-schema` in the
/// shared folder beside the repository (saying so on stderr, past the test harness's capture
/// of output so that it shows in every run); a folder `DUET_SHARED_DIR` names must hold them.
fn read_documents() -> Option<HashMap<String, Value>> {
    let chosen = chosen_shared_dir();
    let dir = chosen.clone().unwrap_or_else(default_shared_dir).join("mcp-schema");
    if chosen.is_none() && !dir.exists() {
        let _ = writeln!(
            std::io::stderr(),
            "MCP schema checks skipped: {} does not exist ({SHARED_DIR_VARIABLE} is not set); to enable them, set \
             {SHARED_DIR_VARIABLE} to a folder holding mcp-schema/<version>/schema.json",
            dir.display()
        );
        return None;
    }
    let mut documents = HashMap::new();
    for version in VERSIONS {
        let path = dir.join(version).join("schema.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("cannot read {}: {e} ({SHARED_DIR_VARIABLE} must name a folder holding mcp-schema/<version>/schema.json)", path.display())
        });
        let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        documents.insert(version.to_string(), doc);
    }
    Some(documents)
}

/// The result definition each method's result must satisfy.
fn result_definition(method: &str) -> &'static str {
    match method {
        "initialize" => "InitializeResult",
        "tools/list" => "ListToolsResult",
        "tools/call" => "CallToolResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "resources/read" => "ReadResourceResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "completion/complete" => "CompleteResult",
        "server/discover" => "DiscoverResult",
        "resources/directory/read" => "ListResourcesResult",
        "subscriptions/listen" => "SubscriptionsListenResult",
        // 2025-11-25's experimental tasks; `tasks/result` answers what `tools/call` would.
        "tasks/get" => "GetTaskResult",
        "tasks/cancel" => "CancelTaskResult",
        "tasks/list" => "ListTasksResult",
        "tasks/result" => "CallToolResult",
        _ => "EmptyResult",
    }
}

/// Compiled validators, one per (version, definition), built on first use.
pub struct Schemas {
    /// Each revision's schema document; `None` when they are not installed and every check
    /// against them is skipped.
    documents: Option<HashMap<String, Value>>,
    compiled: Mutex<HashMap<(String, String), Arc<jsonschema::Validator>>>,
}

impl Schemas {
    /// The process-wide set of the five revisions' schemas; without them (not installed) only
    /// `assert_error` checks anything.
    pub fn get() -> &'static Schemas {
        static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
        SCHEMAS.get_or_init(|| Schemas { documents: read_documents(), compiled: Mutex::new(HashMap::new()) })
    }

    /// The validator of `definition` at `version`; `None` when the schemas are not installed.
    fn validator(&self, version: &str, definition: &str) -> Option<Arc<jsonschema::Validator>> {
        let documents = self.documents.as_ref()?;
        let key = (version.to_string(), definition.to_string());
        let mut compiled = self.compiled.lock().unwrap();
        if let Some(v) = compiled.get(&key) {
            return Some(v.clone());
        }
        let mut doc = documents.get(version).unwrap_or_else(|| panic!("no schema for {version}")).clone();
        let defs = if doc.get("$defs").is_some() { "$defs" } else { "definitions" };
        assert!(doc[defs].get(definition).is_some(), "{version} has no definition {definition}");
        doc["allOf"] = json!([{ "$ref": format!("#/{defs}/{definition}") }]);
        let validator = Arc::new(jsonschema::validator_for(&doc).expect("the MCP schema compiles"));
        compiled.insert(key, validator.clone());
        Some(validator)
    }

    /// Panics with every violation when `value` is not a valid `definition` at `version`
    /// (skipped when the schemas are not installed).
    pub fn assert_valid(&self, version: &str, definition: &str, value: &Value) {
        let Some(validator) = self.validator(version, definition) else { return };
        let errors: Vec<String> =
            validator.iter_errors(value).map(|e| format!("  at {}: {e}", e.instance_path())).collect();
        assert!(errors.is_empty(), "invalid {definition} for {version}:\n{}\nvalue: {value}", errors.join("\n"));
    }

    /// Checks the result of `method` at `version` (an `input_required` result on 2026 too).
    /// The 2026 tasks extension's results (`resultType: "task"`, and its `tasks/*` methods)
    /// are defined by the extension, not by the core revision, and are not checked here.
    pub fn assert_result(&self, version: &str, method: &str, result: &Value) {
        let result_type = result.get("resultType").and_then(Value::as_str);
        let extension = result_type == Some("task") || (version == "2026-07-28" && method.starts_with("tasks/"));
        let definition = match result_type {
            _ if extension => return,
            Some("input_required") => "InputRequiredResult",
            _ if method == "tools/call" && result.get("task").is_some() => "CreateTaskResult",
            _ => result_definition(method),
        };
        self.assert_valid(version, definition, result);
    }

    /// Checks a notification the server sent at `version`.
    pub fn assert_notification(&self, version: &str, notification: &Value) {
        self.assert_valid(version, "ServerNotification", notification);
    }

    /// Checks a request the server sent its client at `version` (handshake era only).
    pub fn assert_request(&self, version: &str, request: &Value) {
        self.assert_valid(version, "ServerRequest", request);
    }

    /// Checks an error response's error object (`JSONRPCError` differs across versions; the
    /// error object's shape does not). Needs no schema, so it runs whether or not they are
    /// installed.
    pub fn assert_error(&self, error: &Value) {
        assert!(error["code"].is_i64(), "error code must be an integer: {error}");
        assert!(error["message"].is_string(), "error message must be a string: {error}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catches_an_invalid_result() {
        let schemas = Schemas::get();
        if schemas.documents.is_none() {
            return; // `get` said on stderr that schema checks are skipped, and how to enable them.
        }
        schemas.assert_result("2025-11-25", "tools/call", &json!({"content": [{"type": "text", "text": "x"}]}));
        let bad = std::panic::catch_unwind(|| {
            schemas.assert_result("2026-07-28", "tools/call", &json!({"content": [{"type": "text", "text": "x"}]}))
        });
        assert!(bad.is_err(), "a 2026 result without resultType must fail");
        let bad =
            std::panic::catch_unwind(|| schemas.assert_result("2024-11-05", "tools/call", &json!({"content": 5})));
        assert!(bad.is_err());
    }
}
