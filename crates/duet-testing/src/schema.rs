//! Validation of results and notifications against `mcp-schema/<version>/schema.json`.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// The shared folder beside the repository (`DUET_SHARED_DIR` overrides it).
pub fn shared_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("DUET_SHARED_DIR") {
        return PathBuf::from(dir);
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    repo.join("../shared")
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
        "subscriptions/listen" => "SubscriptionsListenResult",
        _ => "EmptyResult",
    }
}

/// Compiled validators, one per (version, definition), built on first use.
pub struct Schemas {
    documents: HashMap<String, Value>,
    compiled: Mutex<HashMap<(String, String), std::sync::Arc<jsonschema::Validator>>>,
}

impl Schemas {
    /// The process-wide set of the five revisions' schemas.
    pub fn get() -> &'static Schemas {
        static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
        SCHEMAS.get_or_init(|| {
            let dir = shared_dir().join("mcp-schema");
            let mut documents = HashMap::new();
            for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"] {
                let path = dir.join(version).join("schema.json");
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("cannot read {}: {e} (set DUET_SHARED_DIR)", path.display()));
                let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                documents.insert(version.to_string(), doc);
            }
            Schemas { documents, compiled: Mutex::new(HashMap::new()) }
        })
    }

    fn validator(&self, version: &str, definition: &str) -> std::sync::Arc<jsonschema::Validator> {
        let key = (version.to_string(), definition.to_string());
        let mut compiled = self.compiled.lock().unwrap();
        if let Some(v) = compiled.get(&key) {
            return v.clone();
        }
        let mut doc = self.documents.get(version).unwrap_or_else(|| panic!("no schema for {version}")).clone();
        let defs = if doc.get("$defs").is_some() { "$defs" } else { "definitions" };
        assert!(doc[defs].get(definition).is_some(), "{version} has no definition {definition}");
        doc["allOf"] = json!([{ "$ref": format!("#/{defs}/{definition}") }]);
        let validator = std::sync::Arc::new(jsonschema::validator_for(&doc).expect("the MCP schema compiles"));
        compiled.insert(key, validator.clone());
        validator
    }

    /// Panics with every violation when `value` is not a valid `definition` at `version`.
    pub fn assert_valid(&self, version: &str, definition: &str, value: &Value) {
        let validator = self.validator(version, definition);
        let errors: Vec<String> =
            validator.iter_errors(value).map(|e| format!("  at {}: {e}", e.instance_path())).collect();
        assert!(errors.is_empty(), "invalid {definition} for {version}:\n{}\nvalue: {value}", errors.join("\n"));
    }

    /// Checks the result of `method` at `version` (an `input_required` result on 2026 too).
    pub fn assert_result(&self, version: &str, method: &str, result: &Value) {
        let definition = if result.get("resultType") == Some(&json!("input_required")) {
            "InputRequiredResult"
        } else {
            result_definition(method)
        };
        self.assert_valid(version, definition, result);
    }

    /// Checks a notification the server sent at `version`.
    pub fn assert_notification(&self, version: &str, notification: &Value) {
        self.assert_valid(version, "ServerNotification", notification);
    }

    /// Checks an error response's error object (`JSONRPCError` differs across versions; the
    /// error object's shape does not).
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
