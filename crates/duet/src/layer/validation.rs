//! A tool's JSON Schemas at work: its arguments are checked against its input schema before
//! the handler runs, and its structured output against its output schema after. A mismatch
//! is a tool error that names every problem, so the model can correct its call.

use super::{RegistryError, ToolResult};
use jsonschema::Validator;
use serde_json::Value;

/// A tool's compiled schemas.
pub(crate) struct Schemas {
    input: Validator,
    output: Option<Validator>,
}

impl Schemas {
    /// Compiles a tool's schemas; the input schema's root must be `type: object`.
    pub(super) fn compile(tool: &str, input: &Value, output: Option<&Value>) -> Result<Self, RegistryError> {
        let compile = |which, schema: &Value| {
            jsonschema::validator_for(schema).map_err(|e| RegistryError::InvalidSchema {
                tool: tool.to_string(),
                which,
                reason: e.to_string(),
            })
        };
        if input.get("type") != Some(&Value::from("object")) {
            return Err(RegistryError::InvalidSchema {
                tool: tool.to_string(),
                which: "inputSchema",
                reason: "its root must be `type: object`".into(),
            });
        }
        let input = compile("inputSchema", input)?;
        let output = output.map(|s| compile("outputSchema", s)).transpose()?;
        Ok(Schemas { input, output })
    }

    /// Why `arguments` do not fit the input schema; `None` when they do.
    pub(super) fn argument_problems(&self, arguments: &Value) -> Option<String> {
        problems(&self.input, arguments)
    }

    /// `result` if its structured content fits the output schema (or there is none, or it is
    /// a tool error already), else the tool error that says why.
    pub(super) fn check_output(&self, tool: &str, result: ToolResult) -> ToolResult {
        let (Some(validator), false) = (&self.output, result.is_error) else {
            return result;
        };
        let problem = match &result.structured_content {
            None => Some("it returned no structured content".to_string()),
            Some(v) => problems(validator, v),
        };
        match problem {
            None => result,
            Some(p) => {
                tracing::warn!(tool, "tool output does not match its outputSchema: {p}");
                ToolResult::error(format!("Tool {tool} produced output that does not match its outputSchema: {p}"))
            }
        }
    }
}

/// Why `instance` does not match the schema, every problem in one line; `None` when it does
/// (checked first, without collecting errors).
fn problems(validator: &Validator, instance: &Value) -> Option<String> {
    if validator.is_valid(instance) {
        return None;
    }
    Some(validator.iter_errors(instance).map(|e| describe(&e)).collect::<Vec<_>>().join("; "))
}

fn describe(error: &jsonschema::ValidationError<'_>) -> String {
    let path = error.instance_path().to_string();
    if path.is_empty() { error.to_string() } else { format!("{}: {error}", path.trim_start_matches('/')) }
}
