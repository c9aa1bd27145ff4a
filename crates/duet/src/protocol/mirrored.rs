//! Which arguments each listed tool mirrors in `Mcp-Param-*` headers, read out of the
//! listing's schemas once per listing rather than once per `tools/call`: every 2026 call
//! over HTTP is checked against them (`admission.rs`).

use crate::layer::memo::PerListing;
use crate::layer::{Layer, Listing, Principal, Tool};
use duet_wire::message::Request;
use duet_wire::method::Method;
use duet_wire::mirrored::{KEYWORD, MirroredArg, mirrored_args};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// The mirrored arguments of each tool of a listing, by tool name (tools that mirror none
/// are left out), made once per listing.
pub(crate) struct MirroredByTool {
    memo: PerListing<(), Arc<ByTool>>,
}

/// Tool names to what each mirrors.
type ByTool = HashMap<String, Arc<[MirroredArg]>>;

/// How many listings' declarations are kept before starting over.
const MAX_LISTINGS: usize = 256;

impl Default for MirroredByTool {
    fn default() -> Self {
        MirroredByTool { memo: PerListing::new(MAX_LISTINGS) }
    }
}

impl MirroredByTool {
    /// The arguments `request` must mirror: those its tool declares when it is a
    /// `tools/call` of a tool `who` sees; none otherwise.
    pub(crate) fn of_call(&self, request: &Request, layer: &dyn Layer, who: &Principal) -> Arc<[MirroredArg]> {
        match (&request.method, request.params.get("name").and_then(Value::as_str)) {
            (Method::ToolsCall, Some(tool)) => self.of(&layer.tools(who), tool),
            _ => Arc::new([]),
        }
    }

    /// What tool `name` of `listing` mirrors (empty for a tool that mirrors nothing or is
    /// not listed).
    pub(crate) fn of(&self, listing: &Listing<Tool>, name: &str) -> Arc<[MirroredArg]> {
        let by_tool = self.memo.get_or_make(listing, (), |_| Arc::new(by_tool(listing)));
        by_tool.get(name).cloned().unwrap_or_else(|| Arc::new([]))
    }
}

fn by_tool(listing: &[Tool]) -> ByTool {
    let mut by_tool = HashMap::new();
    for tool in listing {
        match mirrored_args(&tool.input_schema) {
            Ok(args) if args.is_empty() => {}
            Ok(args) => {
                by_tool.insert(tool.name.clone(), args.into());
            }
            // A registry refuses such a tool; another layer may list one. Clients must leave
            // it out, so no header is checked for it.
            Err(why) => tracing::warn!(tool = %tool.name, "a listed tool's {KEYWORD} is invalid: {why}"),
        }
    }
    by_tool
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(properties: Value) -> Value {
        json!({"type": "object", "properties": properties})
    }

    #[test]
    fn made_once_per_listing() {
        let tool = |name: &str, schema: Value| Tool {
            name: name.into(),
            about: Default::default(),
            input_schema: schema,
            output_schema: None,
            annotations: None,
            execution: None,
        };
        let listing: Listing<Tool> = Arc::new(vec![
            tool("plain", schema(json!({"a": {"type": "string"}}))),
            tool("routed", schema(json!({"region": {"type": "string", "x-mcp-header": "Region"}}))),
            tool("broken", schema(json!({"region": {"type": "number", "x-mcp-header": "Region"}}))),
        ]);
        let memo = MirroredByTool::default();
        assert_eq!(memo.of(&listing, "routed")[0].header, "Region");
        assert!(Arc::ptr_eq(&memo.of(&listing, "routed"), &memo.of(&listing, "routed")), "made once");
        assert!(memo.of(&listing, "plain").is_empty());
        assert!(memo.of(&listing, "broken").is_empty());
        assert!(memo.of(&listing, "unknown").is_empty());
    }
}
