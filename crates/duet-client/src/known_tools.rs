//! What the client learned of each tool from the server's listing: its output schema,
//! against which a call's `structuredContent` is checked (a result that is not an error
//! must carry structured content that the schema accepts; a schema that does not compile is
//! not checked), and the arguments its input schema mirrors in headers (`x-mcp-header`,
//! SEP-2243), which a 2026 call over HTTP sends as `Mcp-Param-*`; and whether its calls may
//! run as tasks (2025-11-25's `execution.taskSupport`). A tool whose declarations
//! are invalid is left out of the listing, so no call can reach it with headers a server
//! would refuse. A tool the client has not listed is called without either.

use crate::error::Error;
use duet_wire::mirrored::{MirroredArg, mirrored_args};
use duet_wire::types::{TaskSupport, Tool, ToolResult};
use jsonschema::Validator;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// What one tool's listing said.
#[derive(Debug, Default)]
struct Known {
    output: Option<Validator>,
    mirrored: Vec<MirroredArg>,
    task_support: TaskSupport,
}

/// The tools learned from listings, by name.
#[derive(Debug, Default)]
pub(crate) struct KnownTools {
    by_tool: Mutex<HashMap<String, Arc<Known>>>,
}

impl KnownTools {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Known>>> {
        self.by_tool.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Learns `tools` and returns those the client can call: a tool whose `x-mcp-header`
    /// declarations are invalid is dropped. `whole` when they are the whole listing, which
    /// then replaces what was known.
    pub(crate) fn learn(&self, tools: Vec<Tool>, whole: bool) -> Vec<Tool> {
        let mut by_tool = self.lock();
        if whole {
            by_tool.clear();
        }
        tools
            .into_iter()
            .filter(|tool| {
                let Ok(mirrored) = mirrored_args(&tool.input_schema) else {
                    by_tool.remove(&tool.name);
                    return false;
                };
                let output = tool.output_schema.as_ref().and_then(|schema| jsonschema::validator_for(schema).ok());
                let task_support = tool.task_support();
                by_tool.insert(tool.name.clone(), Arc::new(Known { output, mirrored, task_support }));
                true
            })
            .collect()
    }

    fn known(&self, name: &str) -> Option<Arc<Known>> {
        self.lock().get(name).cloned()
    }

    /// The headers a call of tool `name` with `arguments` mirrors: `Mcp-Param-{name}` and
    /// the value's text (a number in decimal, a boolean as `true`/`false`); an argument
    /// absent or `null` has none.
    pub(crate) fn mirrored(&self, name: &str, arguments: &Value) -> Vec<(String, String)> {
        let Some(known) = self.known(name) else { return Vec::new() };
        known
            .mirrored
            .iter()
            .filter_map(|arg| {
                let text = match arg.value_in(arguments)? {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                Some((format!("{}{}", duet_wire::headers::PARAM_PREFIX, arg.header), text))
            })
            .collect()
    }

    /// Whether calls of tool `name` may run as tasks, as its listing said; `None` for a tool
    /// the client has not listed.
    pub(crate) fn task_support(&self, name: &str) -> Option<TaskSupport> {
        self.known(name).map(|known| known.task_support)
    }

    /// Whether `result` of tool `name` matches the tool's output schema, when known.
    pub(crate) fn check(&self, name: &str, result: &ToolResult) -> Result<(), Error> {
        let Some(known) = self.known(name) else { return Ok(()) };
        let Some(validator) = &known.output else { return Ok(()) };
        if result.is_error {
            return Ok(());
        }
        let Some(structured) = &result.structured_content else {
            return Err(Error::Protocol(format!(
                "tool {name} lists an outputSchema but its result has no structuredContent"
            )));
        };
        match validator.iter_errors(structured).next() {
            None => Ok(()),
            Some(error) => Err(Error::Protocol(format!(
                "the structuredContent of tool {name} does not match its outputSchema: {error}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, output_schema: Option<serde_json::Value>) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}, "outputSchema": output_schema}))
            .unwrap()
    }

    #[test]
    fn structured_content_is_checked_against_the_listed_schema() {
        let schemas = KnownTools::default();
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        schemas.learn(vec![tool("count", Some(schema)), tool("free", None)], true);
        assert!(schemas.check("count", &ToolResult::structured(json!({"n": 1}))).is_ok());
        assert!(matches!(schemas.check("count", &ToolResult::structured(json!({"n": "x"}))), Err(Error::Protocol(_))));
        assert!(matches!(schemas.check("count", &ToolResult::text("1")), Err(Error::Protocol(_))));
        assert!(schemas.check("count", &ToolResult::error("boom")).is_ok(), "an error result has no structure");
        assert!(schemas.check("free", &ToolResult::text("anything")).is_ok());
        assert!(schemas.check("unlisted", &ToolResult::text("anything")).is_ok());
        schemas.learn(Vec::new(), true);
        assert!(schemas.check("count", &ToolResult::text("1")).is_ok(), "a new listing replaces the old");
    }

    fn tool_with(name: &str, properties: serde_json::Value) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object", "properties": properties}}))
            .unwrap()
    }

    #[test]
    fn mirrored_arguments_become_headers_and_invalid_declarations_drop_the_tool() {
        let known = KnownTools::default();
        let listed = known.learn(
            vec![
                tool_with(
                    "route",
                    json!({
                        "region": {"type": "string", "x-mcp-header": "Region"},
                        "tries": {"type": "integer", "x-mcp-header": "Tries"},
                        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
                        "query": {"type": "string"}
                    }),
                ),
                tool_with("bad", json!({"score": {"type": "number", "x-mcp-header": "Score"}})),
            ],
            true,
        );
        assert_eq!(listed.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["route"]);
        let headers = known.mirrored("route", &json!({"region": "eu", "tries": 3, "dry": false, "query": "q"}));
        let expected = [("Mcp-Param-Dry", "false"), ("Mcp-Param-Region", "eu"), ("Mcp-Param-Tries", "3")];
        assert_eq!(headers, expected.map(|(h, v)| (h.to_string(), v.to_string())));
        assert!(known.mirrored("route", &json!({"region": null})).is_empty(), "null mirrors nothing");
        assert!(known.mirrored("bad", &json!({"score": 1.5})).is_empty(), "a dropped tool is unknown");
    }
}
