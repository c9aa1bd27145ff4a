//! Scopes mapped to primitives: which OAuth scopes (or static-token roles) a caller needs to
//! see and use each tool, prompt and resource. Loaded from a TOML file (`--scope-map`):
//!
//! ```toml
//! # Advertised in the Protected Resource Metadata and the 401 challenge (default: every
//! # scope named below).
//! scopes_supported = ["mcp:tools", "mcp:resources"]
//!
//! [implies]                       # scope hierarchy: holding the key grants the values
//! "files:admin" = ["files:write", "files:read"]
//!
//! [tools]                         # name (or glob) = the scopes a call needs, all of them
//! "*" = ["mcp:tools"]             # the default of the kind
//! write_file = ["mcp:tools", "files:write"]
//! "debug_*" = "mcp:debug"         # one scope may be a plain string
//!
//! [prompts]
//! "*" = []                        # an empty list: no scope needed
//!
//! [resources]                     # URI glob patterns (`*` also crosses `/`)
//! "file:///secret/*" = ["files:admin"]
//! "*" = ["mcp:resources"]
//! ```
//!
//! An exact name beats a pattern, a longer pattern beats a shorter one, and `"*"` applies
//! when nothing else matches. A kind without a matching entry needs no scope. A caller's
//! grants are its roles plus its `scopes` attribute (OAuth principals carry both), closed
//! under `[implies]`.
//!
//! Resource rules match canonical URIs ([`duet_wire::canonical_uri`]), the only spelling a
//! request's URI reaches them in; a key spelt otherwise is refused with its canonical
//! spelling. They hold for every way to a resource: see [`super::ScopedLayer`].

use crate::layer::Principal;
use duet_wire::canonical_uri::canonicalize;
use duet_wire::method::Primitive;
use glob::{MatchOptions, Pattern};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// A scope file that cannot be used, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeMapError {
    /// The file could not be read.
    #[error("cannot read the scope map {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// Why it could not be read.
        reason: String,
    },
    /// The map is not valid.
    #[error("invalid scope map{}: {reason}", path.as_deref().map(|p| format!(" {p}")).unwrap_or_default())]
    Invalid {
        /// The file, when it came from one.
        path: Option<String>,
        /// What is wrong with it.
        reason: String,
    },
}

const MATCH: MatchOptions =
    MatchOptions { case_sensitive: true, require_literal_separator: false, require_literal_leading_dot: false };

#[derive(Debug, Clone, Default)]
struct Rules {
    exact: HashMap<String, Vec<String>>,
    /// Patterns with their literal length (the longer, the more specific).
    patterns: Vec<(Pattern, usize, Vec<String>)>,
    default: Option<Vec<String>>,
}

impl Rules {
    fn required(&self, name: &str) -> &[String] {
        if let Some(scopes) = self.exact.get(name) {
            return scopes;
        }
        let best = self.patterns.iter().filter(|(p, _, _)| p.matches_with(name, MATCH)).max_by_key(|(_, len, _)| *len);
        match (best, &self.default) {
            (Some((_, _, scopes)), _) => scopes,
            (None, Some(scopes)) => scopes,
            (None, None) => &[],
        }
    }

    fn all(&self) -> impl Iterator<Item = &String> {
        let patterns = self.patterns.iter().flat_map(|(_, _, s)| s);
        self.exact.values().flatten().chain(patterns).chain(self.default.iter().flatten())
    }
}

/// Which scopes each primitive needs. Cheap to share behind an `Arc`.
#[derive(Debug, Clone, Default)]
pub struct ScopeMap {
    tools: Rules,
    prompts: Rules,
    resources: Rules,
    implies: BTreeMap<String, BTreeSet<String>>,
    scopes_supported: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    implies: BTreeMap<String, OneOrMany>,
    #[serde(default)]
    tools: BTreeMap<String, OneOrMany>,
    #[serde(default)]
    prompts: BTreeMap<String, OneOrMany>,
    #[serde(default)]
    resources: BTreeMap<String, OneOrMany>,
}

/// RFC 6749 §3.3: `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`.
fn valid_scope(scope: &str) -> bool {
    !scope.is_empty() && scope.bytes().all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

fn checked(scopes: Vec<String>, whose: &str) -> Result<Vec<String>, String> {
    match scopes.iter().find(|s| !valid_scope(s)) {
        Some(bad) => Err(format!("{whose}: {bad:?} is not a valid OAuth scope (no spaces, quotes or backslashes)")),
        None => Ok(scopes),
    }
}

fn rules(kind: &str, entries: BTreeMap<String, OneOrMany>) -> Result<Rules, String> {
    let mut rules = Rules::default();
    for (key, scopes) in entries {
        let scopes = checked(scopes.into_vec(), &format!("[{kind}] {key:?}"))?;
        if key == "*" {
            rules.default = Some(scopes);
        } else if key.contains(['*', '?', '[']) {
            let pattern = Pattern::new(&key).map_err(|e| format!("[{kind}] {key:?} is not a valid pattern: {e}"))?;
            let literal = key.chars().filter(|c| !"*?[]".contains(*c)).count();
            rules.patterns.push((pattern, literal, scopes));
        } else {
            rules.exact.insert(key, scopes);
        }
    }
    Ok(rules)
}

/// Resource rules are matched against canonical URIs (the only spelling the engine lets
/// through, see [`duet_wire::canonical_uri`]): a key spelt otherwise would never match, so it
/// is refused with the spelling to write instead. Keys that are no URI (`"*"`, most
/// patterns) are kept as written.
fn canonical_keys(entries: BTreeMap<String, OneOrMany>) -> Result<BTreeMap<String, OneOrMany>, String> {
    for key in entries.keys() {
        if let Ok(canonical) = canonicalize(key)
            && canonical != *key
        {
            return Err(format!(
                "[resources] {key:?} would never match: URIs are matched in their canonical spelling, {canonical:?}"
            ));
        }
    }
    Ok(entries)
}

impl ScopeMap {
    /// A map from the text of a scope file.
    pub fn from_toml(text: &str) -> Result<Self, ScopeMapError> {
        Self::parse(text).map_err(|reason| ScopeMapError::Invalid { path: None, reason })
    }

    /// Reads and parses a scope file; errors name the file.
    pub fn load(path: &Path) -> Result<Self, ScopeMapError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScopeMapError::Read { path: shown.clone(), reason: e.to_string() })?;
        Self::parse(&text).map_err(|reason| ScopeMapError::Invalid { path: Some(shown), reason })
    }

    fn parse(text: &str) -> Result<Self, String> {
        let file: File = toml::from_str(text).map_err(|e| e.message().to_string())?;
        let mut implies = BTreeMap::new();
        for (scope, implied) in file.implies {
            let implied = checked(implied.into_vec(), &format!("[implies] {scope:?}"))?;
            checked(vec![scope.clone()], "[implies]")?;
            implies.insert(scope, implied.into_iter().collect());
        }
        let scopes_supported = file.scopes_supported.map(|s| checked(s, "scopes_supported")).transpose()?;
        Ok(ScopeMap {
            tools: rules("tools", file.tools)?,
            prompts: rules("prompts", file.prompts)?,
            resources: rules("resources", canonical_keys(file.resources)?)?,
            implies,
            scopes_supported,
        })
    }

    /// Every scope a call of `kind` named `name` (a tool or prompt name, a resource URI)
    /// needs.
    pub fn required(&self, kind: Primitive, name: &str) -> &[String] {
        match kind {
            Primitive::Tool => self.tools.required(name),
            Primitive::Prompt => self.prompts.required(name),
            Primitive::Resource => self.resources.required(name),
            // A task is its principal's alone; the tool that started it was guarded.
            Primitive::Task => &[],
        }
    }

    /// What `who` holds: its roles and its `scopes` attribute, with everything they imply.
    pub fn grants(&self, who: &Principal) -> BTreeSet<String> {
        let scopes = who.attributes.get("scopes").and_then(Value::as_array).into_iter().flatten();
        let mut held: BTreeSet<String> =
            who.roles.iter().cloned().chain(scopes.filter_map(Value::as_str).map(str::to_owned)).collect();
        let mut pending: Vec<String> = held.iter().cloned().collect();
        while let Some(scope) = pending.pop() {
            for implied in self.implies.get(&scope).into_iter().flatten() {
                if held.insert(implied.clone()) {
                    pending.push(implied.clone());
                }
            }
        }
        held
    }

    /// The required scopes `who` lacks for one primitive (empty: allowed).
    pub fn missing(&self, kind: Primitive, name: &str, who: &Principal) -> Vec<String> {
        let required = self.required(kind, name);
        if required.is_empty() {
            return Vec::new();
        }
        let held = self.grants(who);
        required.iter().filter(|s| !held.contains(*s)).cloned().collect()
    }

    /// Whether `who` holds every scope the map requires of `kind` `name`.
    pub fn allows(&self, kind: Primitive, name: &str, who: &Principal) -> bool {
        self.missing(kind, name, who).is_empty()
    }

    /// The scopes advertised to clients: the file's `scopes_supported`, or every scope it
    /// names, sorted.
    pub fn scopes_supported(&self) -> Vec<String> {
        if let Some(listed) = &self.scopes_supported {
            return listed.clone();
        }
        let implied = self.implies.iter().flat_map(|(k, v)| std::iter::once(k).chain(v));
        let all: BTreeSet<&String> =
            self.tools.all().chain(self.prompts.all()).chain(self.resources.all()).chain(implied).collect();
        all.into_iter().cloned().collect()
    }
}

/// The guarded primitive a request uses, if any, by the method table: what `tools/call`,
/// `prompts/get`, `resources/read` and `resources/subscribe` name. The HTTP transport
/// checks it before the engine runs.
pub(crate) fn operation(request: &duet_wire::message::Request) -> Option<(Primitive, &str)> {
    let kind = request.method.traits().target?;
    let name = request.params.get(kind.param())?.as_str()?;
    Some((kind, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MAP: &str = r#"
        [implies]
        "files:admin" = ["files:write"]
        "files:write" = "files:read"

        [tools]
        "*" = ["mcp:tools"]
        write_file = ["mcp:tools", "files:write"]
        "debug_*" = "mcp:debug"
        "debug_deep_*" = ["mcp:debug", "mcp:deep"]

        [prompts]
        greet = []

        [resources]
        "file:///secret/*" = ["files:admin"]
        "*" = ["files:read"]
    "#;

    fn map() -> ScopeMap {
        ScopeMap::from_toml(MAP).expect("valid map")
    }

    fn oauth(scopes: &[&str]) -> Principal {
        Principal::new("client", scopes.iter().copied()).with_attribute("scopes", json!(scopes))
    }

    #[test]
    fn exact_beats_pattern_beats_default() {
        let m = map();
        assert_eq!(m.required(Primitive::Tool, "write_file"), ["mcp:tools", "files:write"]);
        assert_eq!(m.required(Primitive::Tool, "echo"), ["mcp:tools"]);
        assert_eq!(m.required(Primitive::Tool, "debug_x"), ["mcp:debug"]);
        assert_eq!(m.required(Primitive::Tool, "debug_deep_x"), ["mcp:debug", "mcp:deep"]);
        assert!(m.required(Primitive::Prompt, "greet").is_empty());
        assert!(m.required(Primitive::Prompt, "other").is_empty(), "no entry: no scope");
        assert_eq!(m.required(Primitive::Resource, "file:///secret/a/b.txt"), ["files:admin"]);
        assert_eq!(m.required(Primitive::Resource, "test://info"), ["files:read"]);
    }

    #[test]
    fn grants_follow_the_hierarchy() {
        let m = map();
        let admin = oauth(&["files:admin"]);
        assert!(m.grants(&admin).is_superset(&BTreeSet::from(["files:write".into(), "files:read".into()])));
        assert!(m.allows(Primitive::Resource, "test://x", &admin));
        assert_eq!(m.missing(Primitive::Tool, "write_file", &admin), ["mcp:tools"]);
        let nobody = Principal::anonymous();
        assert_eq!(m.missing(Primitive::Tool, "write_file", &nobody), ["mcp:tools", "files:write"]);
        let role = Principal::new("static", ["mcp:tools", "files:write"]);
        assert!(m.allows(Primitive::Tool, "write_file", &role), "static-token roles count as grants");
    }

    #[test]
    fn scopes_supported_defaults_to_every_named_scope() {
        let m = map();
        let all = ["files:admin", "files:read", "files:write", "mcp:debug", "mcp:deep", "mcp:tools"];
        assert_eq!(m.scopes_supported(), all);
        let listed = ScopeMap::from_toml("scopes_supported = [\"mcp:tools\"]\n[tools]\n\"*\" = \"mcp:tools\"")
            .expect("valid map");
        assert_eq!(listed.scopes_supported(), ["mcp:tools"]);
    }

    #[test]
    fn bad_files_say_why() {
        let unknown = ScopeMap::from_toml("[tool]\necho = []").err().map(|e| e.to_string());
        assert!(unknown.as_deref().is_some_and(|e| e.contains("unknown field") && e.contains("tool")), "{unknown:?}");
        let spaced = ScopeMap::from_toml("[tools]\necho = [\"a b\"]").err().map(|e| e.to_string());
        assert!(spaced.as_deref().is_some_and(|e| e.contains("not a valid OAuth scope")), "{spaced:?}");
        let spelt =
            ScopeMap::from_toml("[resources]\n\"FILE://localhost/secret/*\" = \"s\"").err().map(|e| e.to_string());
        let expected = r#"[resources] "FILE://localhost/secret/*" would never match: URIs are matched in their canonical spelling, "file:///secret/*""#;
        assert!(spelt.as_deref().is_some_and(|e| e.ends_with(expected)), "{spelt:?}");
        let missing = ScopeMap::load(Path::new("/surely/not/here.toml")).err().map(|e| e.to_string());
        assert!(missing.as_deref().is_some_and(|e| e.contains("/surely/not/here.toml")), "{missing:?}");
    }

    #[cfg(feature = "http")]
    #[test]
    fn operations_of_requests() {
        let request = |v: Value| match duet_wire::message::Message::from(v) {
            duet_wire::message::Message::One(duet_wire::message::Incoming::Request(r)) => r,
            other => panic!("{other:?}"),
        };
        let call = request(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}));
        assert_eq!(operation(&call), Some((Primitive::Tool, "echo")));
        let read =
            request(json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "test://info"}}));
        assert_eq!(operation(&read), Some((Primitive::Resource, "test://info")));
        let subscribe =
            request(json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "test://u"}}));
        assert_eq!(operation(&subscribe), Some((Primitive::Resource, "test://u")));
        assert_eq!(operation(&request(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))), None);
        assert_eq!(operation(&request(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}))), None);
    }
}
