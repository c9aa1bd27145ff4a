//! Tool arguments mirrored in HTTP headers (SEP-2243). A property of a tool's input schema
//! that carries `"x-mcp-header": "Region"` is sent twice by a 2026-07-28 client over
//! Streamable HTTP: in the arguments, and as the header `Mcp-Param-Region`, so a proxy can
//! route on it without reading the body. This module reads those declarations out of a
//! schema, refusing the invalid ones (a tool that declares one is not registered), finds the
//! value each one mirrors in a call's arguments. Both sides read them with the same rules:
//! duet's server keeps each listing's declarations by tool name and checks the headers a
//! request brings; duet's client sends them.
//!
//! What is valid, as the revision says: the name is a non-empty HTTP token (RFC 9110 `tchar`s:
//! no spaces, colons, control or non-ASCII characters), unique among the schema's
//! declarations ignoring case; the property's `type` is `string`, `integer` or `boolean`; and
//! the property is reached from the root through `properties` alone (never through `items`,
//! `oneOf`/`anyOf`/`allOf`/`not`, `if`/`then`/`else`, `$ref` or definitions).

use serde_json::{Map, Value};

/// The schema keyword that declares a mirrored argument.
pub const KEYWORD: &str = "x-mcp-header";

/// One argument a request must mirror in a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirroredArg {
    /// The header's name as declared: `Mcp-Param-{name}`.
    pub header: String,
    /// The property names from the schema's root to the argument.
    pub path: Vec<String>,
}

impl MirroredArg {
    /// The argument's value in a call's arguments: a string, a number or a boolean; `None`
    /// when it is absent, `null` or something no header can carry (then no header is
    /// expected, and the input schema refuses what is not `null` or absent).
    pub fn value_in<'a>(&self, arguments: &'a Value) -> Option<&'a Value> {
        let value = self.path.iter().try_fold(arguments, |at, key| at.get(key))?;
        matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_)).then_some(value)
    }

    /// The argument's path, dotted: `region`, `target.region`.
    pub fn argument(&self) -> String {
        self.path.join(".")
    }
}

/// The arguments a tool's input schema mirrors in headers, by property path, or why its
/// declarations are invalid.
pub fn mirrored_args(schema: &Value) -> Result<Vec<MirroredArg>, String> {
    let mut found = Vec::new();
    visit(schema, Some(&[]), &mut found)?;
    for (i, arg) in found.iter().enumerate() {
        if let Some(twin) = found[..i].iter().find(|a| a.header.eq_ignore_ascii_case(&arg.header)) {
            return Err(format!(
                "{KEYWORD} {:?} of '{}' repeats {:?} of '{}' (header names are compared ignoring case)",
                arg.header,
                arg.argument(),
                twin.header,
                twin.argument()
            ));
        }
    }
    Ok(found)
}

/// Collects the declarations under `schema`; `reachable` is its property path when the
/// schema is reached from the root through `properties` alone.
fn visit(schema: &Value, reachable: Option<&[String]>, found: &mut Vec<MirroredArg>) -> Result<(), String> {
    let Value::Object(keywords) = schema else { return Ok(()) };
    if let Some(declared) = keywords.get(KEYWORD) {
        found.push(declaration(declared, keywords, reachable)?);
    }
    for (keyword, value) in keywords {
        match (keyword.as_str(), value) {
            ("properties", Value::Object(properties)) => {
                for (name, property) in properties {
                    let path = reachable.map(|p| [p, std::slice::from_ref(name)].concat());
                    visit(property, path.as_deref(), found)?;
                }
            }
            // Maps of subschemas.
            ("patternProperties" | "$defs" | "definitions" | "dependentSchemas" | "dependencies", Value::Object(m)) => {
                for sub in m.values() {
                    visit(sub, None, found)?;
                }
            }
            // Lists of subschemas (`items` was one in older drafts).
            ("allOf" | "anyOf" | "oneOf" | "prefixItems" | "items", Value::Array(subs)) => {
                for sub in subs {
                    visit(sub, None, found)?;
                }
            }
            // Single subschemas.
            (
                "items"
                | "additionalItems"
                | "additionalProperties"
                | "unevaluatedItems"
                | "unevaluatedProperties"
                | "contains"
                | "propertyNames"
                | "contentSchema"
                | "not"
                | "if"
                | "then"
                | "else",
                sub,
            ) => visit(sub, None, found)?,
            _ => {}
        }
    }
    Ok(())
}

/// One declaration, checked: the property at `path` declares `declared`.
fn declaration(
    declared: &Value,
    property: &Map<String, Value>,
    path: Option<&[String]>,
) -> Result<MirroredArg, String> {
    let Some(path) = path.filter(|p| !p.is_empty()) else {
        return Err(format!(
            "{KEYWORD} {declared} annotates a schema that is not a property reached from the root through \
             \"properties\" alone (not the root, items, oneOf/anyOf/allOf/not, if/then/else, $ref or $defs)"
        ));
    };
    let argument = path.join(".");
    let Some(header) = declared.as_str() else {
        return Err(format!("{KEYWORD} of '{argument}' must be a string, not {declared}"));
    };
    if header.is_empty() {
        return Err(format!("{KEYWORD} of '{argument}' is empty"));
    }
    if let Some(bad) = header.chars().find(|c| !is_tchar(*c)) {
        return Err(format!(
            "{KEYWORD} {header:?} of '{argument}' is not an HTTP header name: {bad:?} is not allowed \
             (use letters, digits and !#$%&'*+-.^_`|~)"
        ));
    }
    match property.get("type").and_then(Value::as_str) {
        Some("string" | "integer" | "boolean") => Ok(MirroredArg { header: header.to_string(), path: path.to_vec() }),
        _ => Err(format!(
            "{KEYWORD} {header:?} annotates '{argument}', whose type is {}; only string, integer and boolean \
             arguments can be mirrored in a header",
            property.get("type").map_or_else(|| "not given".to_string(), Value::to_string)
        )),
    }
}

/// An RFC 9110 token character.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(properties: Value) -> Value {
        json!({"type": "object", "properties": properties})
    }

    fn error_of(properties: Value) -> String {
        mirrored_args(&schema(properties)).unwrap_err()
    }

    #[test]
    fn declarations_are_read_with_their_paths() {
        let s = schema(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
            "target": {"type": "object", "properties": {
                "tenant": {"type": "integer", "x-mcp-header": "Tenant-Id"},
                "dry": {"type": "boolean", "x-mcp-header": "Method"},
            }},
            "x-mcp-header": {"type": "string"},
        }));
        let args = mirrored_args(&s).unwrap();
        let found: Vec<(String, String)> = args.iter().map(|a| (a.header.clone(), a.argument())).collect();
        assert_eq!(
            found,
            [
                ("Region".into(), "region".into()),
                ("Method".into(), "target.dry".into()),
                ("Tenant-Id".into(), "target.tenant".into())
            ]
        );
        let call = json!({"region": "eu", "target": {"tenant": 7, "dry": null}});
        assert_eq!(args[0].value_in(&json!({"region": ["eu"]})), None, "no header carries an array");
        assert_eq!(args[0].value_in(&call), Some(&json!("eu")));
        assert_eq!(args[2].value_in(&call), Some(&json!(7)));
        assert_eq!(args[1].value_in(&call), None, "null is no value");
        assert_eq!(args[0].value_in(&json!({})), None);
        assert!(mirrored_args(&schema(json!({"a": {"type": "string"}}))).unwrap().is_empty());
    }

    #[test]
    fn invalid_declarations_are_refused_with_the_reason() {
        let e = error_of(json!({"r": {"type": "string", "x-mcp-header": ""}}));
        assert!(e.contains("'r' is empty"), "{e}");
        for bad in ["My Region", "Region:Primary", "Région", "Region\t1", "a\r\nb"] {
            let e = error_of(json!({"r": {"type": "string", "x-mcp-header": bad}}));
            assert!(e.contains("is not an HTTP header name"), "{bad}: {e}");
        }
        let e = error_of(json!({"r": {"type": "string", "x-mcp-header": 5}}));
        assert!(e.contains("must be a string"), "{e}");
        for kind in [json!("number"), json!("object"), json!("array"), json!("null"), json!(["string", "null"])] {
            let e = error_of(json!({"r": {"type": kind, "x-mcp-header": "R"}}));
            assert!(e.contains("only string, integer and boolean"), "{kind}: {e}");
        }
        let e = error_of(json!({"r": {"x-mcp-header": "R"}}));
        assert!(e.contains("type is not given"), "{e}");
        let e = error_of(json!({
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "string", "x-mcp-header": "REGION"},
        }));
        assert!(e.contains("repeats"), "{e}");
        for unreachable in [
            json!({"list": {"type": "array", "items": {"type": "string", "x-mcp-header": "R"}}}),
            json!({"one": {"oneOf": [{"type": "string", "x-mcp-header": "R"}]}}),
            json!({"cond": {"if": {"type": "string"}, "then": {"type": "string", "x-mcp-header": "R"}}}),
            json!({"map": {"type": "object", "additionalProperties": {"type": "string", "x-mcp-header": "R"}}}),
        ] {
            let e = error_of(unreachable.clone());
            assert!(e.contains("not a property reached from the root"), "{unreachable}: {e}");
        }
        let defs = json!({"type": "object", "$defs": {"r": {"type": "string", "x-mcp-header": "R"}}});
        assert!(mirrored_args(&defs).is_err());
        let root = json!({"type": "object", "x-mcp-header": "R"});
        assert!(mirrored_args(&root).is_err());
    }
}
