//! Tools' output schemas as the client last listed them, and the check of a call's
//! `structuredContent` against its tool's schema: a result that is not an error must carry
//! structured content that the schema accepts. A tool the client has not listed, or whose
//! schema does not compile, is not checked.

use crate::error::Error;
use duet_wire::types::{Tool, ToolResult};
use jsonschema::Validator;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The compiled output schemas, by tool name.
#[derive(Debug, Default)]
pub(crate) struct OutputSchemas {
    by_tool: Mutex<HashMap<String, Arc<Validator>>>,
}

impl OutputSchemas {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Validator>>> {
        self.by_tool.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Learns the schemas of `tools`; `whole` when they are the whole listing, which then
    /// replaces what was known.
    pub(crate) fn learn(&self, tools: &[Tool], whole: bool) {
        let mut by_tool = self.lock();
        if whole {
            by_tool.clear();
        }
        for tool in tools {
            match tool.output_schema.as_ref().and_then(|schema| jsonschema::validator_for(schema).ok()) {
                Some(validator) => by_tool.insert(tool.name.clone(), Arc::new(validator)),
                None => by_tool.remove(&tool.name),
            };
        }
    }

    /// Whether `result` of tool `name` matches the tool's output schema, when known.
    pub(crate) fn check(&self, name: &str, result: &ToolResult) -> Result<(), Error> {
        let Some(validator) = self.lock().get(name).cloned() else { return Ok(()) };
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
        let schemas = OutputSchemas::default();
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        schemas.learn(&[tool("count", Some(schema)), tool("free", None)], true);
        assert!(schemas.check("count", &ToolResult::structured(json!({"n": 1}))).is_ok());
        assert!(matches!(schemas.check("count", &ToolResult::structured(json!({"n": "x"}))), Err(Error::Protocol(_))));
        assert!(matches!(schemas.check("count", &ToolResult::text("1")), Err(Error::Protocol(_))));
        assert!(schemas.check("count", &ToolResult::error("boom")).is_ok(), "an error result has no structure");
        assert!(schemas.check("free", &ToolResult::text("anything")).is_ok());
        assert!(schemas.check("unlisted", &ToolResult::text("anything")).is_ok());
        schemas.learn(&[], true);
        assert!(schemas.check("count", &ToolResult::text("1")).is_ok(), "a new listing replaces the old");
    }
}
