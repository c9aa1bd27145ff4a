//! A tool's typed arguments (`[tool.args.NAME]`): checks each declaration, then turns them
//! into the tool's `inputSchema` (the Registry validates every call against it) and the
//! defaults filled in before the command is built. An argument with `header = "Name"` is
//! mirrored in the HTTP header `Mcp-Param-Name` (`x-mcp-header`), checked by the library's
//! rules. Properties are listed in the order the manifest declares them.

use super::Problem;
use super::locate::{Locator, Place};
use super::schema::{ArgDecl, ArgType};
use super::template::valid_name;
use duet::layer::mirrored_args;
use regex::Regex;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// What a tool's arguments compile to.
pub(super) struct Args {
    /// The `inputSchema`: an object with one property per argument and no others.
    pub schema: Value,
    /// The value of each argument that has a default.
    pub defaults: Map<String, Value>,
}

/// Checks the declarations of tool `tool`, found at `at` (its `args` table).
pub(super) fn compile(
    tool: &str,
    decls: &BTreeMap<String, ArgDecl>,
    at: &Place,
    locator: &Locator,
) -> Result<Args, Problem> {
    let mut ordered: Vec<_> = decls.iter().collect();
    ordered.sort_by_key(|(name, _)| locator.offset(&at.key(name)));
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut defaults = Map::new();
    for (name, decl) in ordered {
        let here = at.key(name);
        let fail = |field: &str, message: String| {
            let place = if field.is_empty() { here.clone() } else { here.key(field) };
            Problem::new(place, format!("tool {tool:?}: argument {name}: {message}"))
        };
        let property = property(name, decl).map_err(|(field, message)| fail(field, message))?;
        if decl.required {
            required.push(Value::from(name.as_str()));
        }
        if let Some(default) = property.get("default") {
            defaults.insert(name.clone(), default.clone());
        }
        properties.insert(name.clone(), property);
    }
    let mut schema = json!({"type": "object", "properties": properties, "additionalProperties": false});
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    // Each declaration was checked alone; what is left is that no two share a header.
    mirrored_args(&schema).map_err(|why| Problem::new(at.clone(), format!("tool {tool:?}: {why}")))?;
    Ok(Args { schema, defaults })
}

/// A failed check: the field of the declaration (empty for the declaration itself) and why.
type Failure = (&'static str, String);

/// The JSON Schema of one argument, after checking its declaration.
fn property(name: &str, decl: &ArgDecl) -> Result<Value, Failure> {
    if !valid_name(name) {
        return Err(("", "invalid name: use a letter or _ followed by letters, digits, _ or -".into()));
    }
    let kind = decl.kind;
    let numeric = matches!(kind, ArgType::Integer | ArgType::Number);
    // Constraints of an array argument apply to its items (strings).
    let item = if kind == ArgType::Array { ArgType::String } else { kind };
    if decl.required && decl.default.is_some() {
        return Err(("default", "a required argument cannot have a default (drop one of them)".into()));
    }
    for (field, bound) in [("minimum", decl.minimum), ("maximum", decl.maximum)] {
        if bound.is_some_and(|b| !b.is_finite()) {
            return Err((field, format!("{field} must be a finite number")));
        }
        if bound.is_some() && !numeric {
            return Err((field, format!("{field} applies to integer and number arguments, not {}", kind.name())));
        }
    }
    if let (Some(min), Some(max)) = (decl.minimum, decl.maximum)
        && min > max
    {
        return Err(("maximum", format!("maximum {max} is below minimum {min}")));
    }
    let pattern = match &decl.pattern {
        Some(_) if item != ArgType::String => {
            return Err(("pattern", format!("pattern applies to string and array arguments, not {}", kind.name())));
        }
        Some(p) => Some(Regex::new(p).map_err(|e| ("pattern", format!("invalid pattern: {e}")))?),
        None => None,
    };
    let choices = match &decl.choices {
        Some(_) if kind == ArgType::Boolean => return Err(("enum", "enum does not apply to boolean arguments".into())),
        Some(values) if values.is_empty() => return Err(("enum", "enum is empty".into())),
        Some(values) => Some(
            values
                .iter()
                .map(|v| json_of(item, v).ok_or_else(|| ("enum", format!("enum value {v} is not {}", describe(item)))))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        None => None,
    };
    let checks = Checks { choices: choices.as_deref(), minimum: decl.minimum, maximum: decl.maximum, pattern };

    let mut constraints = Map::new();
    constraints.insert("type".into(), Value::from(item.name()));
    if let Some(choices) = &choices {
        constraints.insert("enum".into(), Value::Array(choices.clone()));
    }
    if let Some(p) = &decl.pattern {
        constraints.insert("pattern".into(), Value::from(p.as_str()));
    }
    if let Some(min) = decl.minimum {
        constraints.insert("minimum".into(), number(min));
    }
    if let Some(max) = decl.maximum {
        constraints.insert("maximum".into(), number(max));
    }
    let mut schema = if kind == ArgType::Array {
        let mut array = Map::new();
        array.insert("type".into(), Value::from("array"));
        array.insert("items".into(), Value::Object(constraints));
        array
    } else {
        constraints
    };
    if let Some(description) = &decl.description {
        schema.insert("description".into(), Value::from(description.as_str()));
    }
    if let Some(header) = &decl.header {
        schema.insert("x-mcp-header".into(), Value::from(header.as_str()));
        let alone = json!({"type": "object", "properties": {name: &schema}});
        mirrored_args(&alone).map_err(|why| ("header", why))?;
    }
    if let Some(default) = &decl.default {
        let value = json_of(kind, default)
            .ok_or_else(|| ("default", format!("default {default} is not {}", describe(kind))))?;
        let items = match &value {
            Value::Array(items) => items.as_slice(),
            one => std::slice::from_ref(one),
        };
        for v in items {
            checks.check(v).map_err(|why| ("default", format!("default {v} {why}")))?;
        }
        schema.insert("default".into(), value);
    }
    Ok(Value::Object(schema))
}

/// "a string", "an array of strings": what a value of `kind` is, in a message.
fn describe(kind: ArgType) -> &'static str {
    match kind {
        ArgType::String => "a string",
        ArgType::Integer => "an integer",
        ArgType::Number => "a number",
        ArgType::Boolean => "a boolean",
        ArgType::Array => "an array of strings",
    }
}

/// The constraints a default must meet (those of the schema it belongs to).
struct Checks<'a> {
    choices: Option<&'a [Value]>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    pattern: Option<Regex>,
}

impl Checks<'_> {
    fn check(&self, value: &Value) -> Result<(), String> {
        if let Some(choices) = self.choices
            && !choices.contains(value)
        {
            return Err("is not one of the enum values".into());
        }
        if let Some(n) = value.as_f64() {
            if self.minimum.is_some_and(|min| n < min) {
                return Err("is below the minimum".into());
            }
            if self.maximum.is_some_and(|max| n > max) {
                return Err("is above the maximum".into());
            }
        }
        if let (Some(pattern), Some(s)) = (&self.pattern, value.as_str())
            && !pattern.is_match(s)
        {
            return Err("does not match the pattern".into());
        }
        Ok(())
    }
}

/// A TOML value as the JSON value of an argument of type `kind`, if it is one.
fn json_of(kind: ArgType, value: &toml::Value) -> Option<Value> {
    match (kind, value) {
        (ArgType::String, toml::Value::String(s)) => Some(Value::from(s.as_str())),
        (ArgType::Integer | ArgType::Number, toml::Value::Integer(i)) => Some(Value::from(*i)),
        (ArgType::Number, toml::Value::Float(f)) => serde_json::Number::from_f64(*f).map(Value::Number),
        (ArgType::Boolean, toml::Value::Boolean(b)) => Some(Value::from(*b)),
        (ArgType::Array, toml::Value::Array(items)) => {
            items.iter().map(|i| json_of(ArgType::String, i)).collect::<Option<Vec<_>>>().map(Value::Array)
        }
        _ => None,
    }
}

/// A bound as JSON: integral values without a fraction.
fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}
