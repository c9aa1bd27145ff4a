//! Who is asking. Every request runs for one principal; listings, calls and sessions are
//! bound to it. Transports resolve it (stdio: the local user; HTTP: a token or anonymous).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// The id of the anonymous principal.
const ANONYMOUS: &str = "anonymous";

/// An authenticated (or anonymous) caller: an id, roles and free-form attributes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    pub id: String,
    pub roles: BTreeSet<String>,
    pub attributes: Map<String, Value>,
}

impl Principal {
    /// A principal with the given id and roles; `default` is always among the roles.
    pub fn new<I, S>(id: impl Into<String>, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut roles: BTreeSet<String> = roles.into_iter().map(Into::into).collect();
        roles.insert("default".into());
        Principal { id: id.into(), roles, attributes: Map::new() }
    }

    /// The user who started the process (stdio and in-process calls).
    pub fn local() -> Self {
        Principal::new("local", ["local"])
    }

    /// A caller nobody vouched for.
    pub fn anonymous() -> Self {
        Principal::new(ANONYMOUS, std::iter::empty::<String>())
    }

    /// Whether this is the caller nobody vouched for: every client of a server without
    /// authentication, all of them one principal.
    pub fn is_anonymous(&self) -> bool {
        self.id == ANONYMOUS
    }

    pub fn with_attribute(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }

    pub fn has_role(&self, role: &str) -> bool {
        self.roles.contains(role)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_principals() {
        let local = Principal::local();
        assert_eq!(local.id, "local");
        assert!(local.has_role("local") && local.has_role("default"));
        let anon = Principal::anonymous();
        assert_eq!((anon.id.as_str(), anon.roles.len()), ("anonymous", 1));
    }
}
