//! Who is asking. Every request runs for one principal; listings, calls and sessions are
//! bound to it. Transports resolve it (stdio: the local user; HTTP: a token or anonymous).
//!
//! A principal's id keys everything kept for it (sessions, tasks, sealed states,
//! idempotency keys, limits, metrics), so ids of different kinds of credential must never
//! meet: the constructors of credentials qualify the id by its kind (and issuer), once, here.
//! A static token `alice` is `token:alice`, an OAuth subject `alice` of
//! `https://as.example` is `oauth:https://as.example#alice`, a client acting for itself
//! `oauth-client:https://as.example#c1`; `local` and `anonymous` are none of these.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// The id of the anonymous principal.
const ANONYMOUS: &str = "anonymous";

/// An authenticated (or anonymous) caller: an id, roles and free-form attributes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// Who it is: sessions, tasks and keys are kept apart by it.
    pub id: String,
    /// What it may see: a primitive registered for roles is shown only to their holders.
    pub roles: BTreeSet<String>,
    /// What the authenticator said of it besides (an OAuth token's scopes and issuer...).
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

    /// The principal of a static bearer token (`--auth-token`) named `name`: id
    /// `token:NAME`.
    pub fn token<I, S>(name: &str, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Principal::new(format!("token:{name}"), roles)
    }

    /// The principal of an OAuth access token of `issuer` for the end user `subject` (its
    /// `sub`): id `oauth:ISSUER#SUB`.
    pub fn oauth_subject<I, S>(issuer: &str, subject: &str, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Principal::new(format!("oauth:{issuer}#{subject}"), roles)
    }

    /// The principal of an OAuth access token of `issuer` that names a client and no subject
    /// (a client acting for itself, as with the client-credentials grant): id
    /// `oauth-client:ISSUER#CLIENT_ID`.
    pub fn oauth_client<I, S>(issuer: &str, client_id: &str, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Principal::new(format!("oauth-client:{issuer}#{client_id}"), roles)
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

    /// The principal with one more attribute.
    pub fn with_attribute(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }

    /// Whether it holds `role`.
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

    #[test]
    fn credentials_of_different_kinds_never_share_an_id() {
        let ids = [
            Principal::anonymous().id,
            Principal::local().id,
            Principal::token("alice", ["x"]).id,
            Principal::oauth_subject("https://as.example", "alice", ["x"]).id,
            Principal::oauth_subject("https://other.example", "alice", ["x"]).id,
            Principal::oauth_client("https://as.example", "alice", ["x"]).id,
            Principal::token("anonymous", ["x"]).id,
            Principal::token("local", ["x"]).id,
        ];
        assert_eq!(ids[2], "token:alice");
        assert_eq!(ids[3], "oauth:https://as.example#alice");
        assert_eq!(ids[5], "oauth-client:https://as.example#alice");
        assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), ids.len());
    }
}
