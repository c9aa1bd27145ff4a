//! Which scope an authorization asks for (the MCP authorization spec's scope selection):
//! the challenge's `scope`, else every scope of the server's Protected Resource Metadata,
//! else none; joined with what was asked before (a step-up keeps what it had), and with
//! `offline_access` when the authorization server lists it and a person authorizes (a
//! refresh token spares them authorizing again; a machine's grants get none).

use super::discovery::Discovered;

/// The scope to ask for, `None` to leave it out; `refreshable` when the grant can come
/// with a refresh token.
pub(crate) fn choose(
    challenged: Option<&str>,
    discovered: &Discovered,
    before: Option<&str>,
    refreshable: bool,
) -> Option<String> {
    let wanted = match challenged {
        Some(scope) => Some(scope.to_owned()),
        None => discovered.scopes_supported.as_ref().map(|scopes| scopes.join(" ")),
    };
    let mut scope = union(before, wanted.as_deref())?;
    if refreshable && discovered.server.supports_scope("offline_access") && !contains(&scope, "offline_access") {
        scope.push_str(" offline_access");
    }
    Some(scope)
}

/// The scopes of `one` and of `other`, each once, in their order; `None` when neither has any.
pub(crate) fn union(one: Option<&str>, other: Option<&str>) -> Option<String> {
    let mut scopes: Vec<&str> = Vec::new();
    for scope in one.into_iter().chain(other).flat_map(str::split_whitespace) {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// Whether every scope of `wanted` is among those of `held`.
pub(crate) fn covers(held: Option<&str>, wanted: Option<&str>) -> bool {
    let held = held.unwrap_or_default();
    wanted.unwrap_or_default().split_whitespace().all(|scope| contains(held, scope))
}

/// Whether space-separated `scopes` has `scope`.
fn contains(scopes: &str, scope: &str) -> bool {
    scopes.split_whitespace().any(|listed| listed == scope)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::discovery::ServerMetadata;

    fn discovered(resource_scopes: Option<&[&str]>, server_scopes: Option<&[&str]>) -> Discovered {
        let mut server = serde_json::json!({"issuer": "https://as", "token_endpoint": "https://as/token"});
        if let Some(scopes) = server_scopes {
            server["scopes_supported"] = serde_json::json!(scopes);
        }
        let server: ServerMetadata = serde_json::from_value(server).unwrap();
        let scopes_supported = resource_scopes.map(|scopes| scopes.iter().map(|scope| scope.to_string()).collect());
        Discovered { resource: "https://h/mcp".into(), scopes_supported, takes_dpop: false, server }
    }

    #[test]
    fn the_challenge_comes_first_then_the_resource_scopes_then_none() {
        let found = discovered(Some(&["a", "b"]), None);
        assert_eq!(choose(Some("c"), &found, None, true).as_deref(), Some("c"));
        assert_eq!(choose(None, &found, None, true).as_deref(), Some("a b"));
        assert_eq!(choose(None, &discovered(None, None), None, true), None);
    }

    #[test]
    fn offline_access_is_added_when_the_server_lists_it_and_refreshes_the_grant() {
        let offline = discovered(Some(&["a"]), Some(&["a", "offline_access"]));
        assert_eq!(choose(None, &offline, None, true).as_deref(), Some("a offline_access"));
        assert_eq!(choose(None, &offline, None, false).as_deref(), Some("a"));
        assert_eq!(choose(None, &discovered(Some(&["a"]), Some(&["a"])), None, true).as_deref(), Some("a"));
    }

    #[test]
    fn a_step_up_keeps_what_was_asked_before() {
        assert_eq!(choose(Some("w"), &discovered(None, None), Some("r w"), true).as_deref(), Some("r w"));
        assert_eq!(union(Some("r"), Some("w r")).as_deref(), Some("r w"));
        assert!(covers(Some("r w"), Some("w")));
        assert!(!covers(Some("r"), Some("w")));
        assert!(covers(None, None));
    }
}
