//! duet as a protected resource (RFC 9728): its canonical URI, the authorization servers
//! that issue tokens for it, the Protected Resource Metadata document that says so, and the
//! `WWW-Authenticate` challenges (RFC 6750 §3) that point clients at that document.

use serde_json::{Value, json};
use url::Url;

/// Where the metadata of a resource lives: this prefix, then the resource's path.
pub(super) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// What the server publishes about itself as an OAuth protected resource.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProtectedResource {
    /// The canonical URI of the MCP endpoint (`https://mcp.example.com/mcp`): the RFC 8707
    /// `resource` clients ask tokens for, and the audience every token must name. Empty
    /// means "the URL the server is bound at", filled in by `HttpServer::bind`; a program
    /// that mounts `McpService` in its own app sets it (until then no token is accepted).
    pub resource: String,
    /// Issuer identifiers of the authorization servers (at least one).
    pub authorization_servers: Vec<String>,
    /// The scopes a client should ask for (PRM `scopes_supported`, and `scope=` of the 401
    /// challenge).
    pub scopes_supported: Vec<String>,
    /// A name for people (PRM `resource_name`).
    pub resource_name: Option<String>,
    /// Where people read about it (PRM `resource_documentation`, a URL).
    pub resource_documentation: Option<String>,
}

/// An `error` of a bearer challenge and its description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeError<'a> {
    /// The presented token was rejected (401).
    InvalidToken(&'a str),
    /// The token lacks scopes the operation needs (403); `scope` then lists all of them.
    InsufficientScope(&'a str),
}

impl ProtectedResource {
    /// The metadata of `resource`, whose tokens `authorization_servers` issue.
    pub fn new(resource: impl Into<String>, authorization_servers: Vec<String>) -> Self {
        ProtectedResource { resource: resource.into(), authorization_servers, ..Self::default() }
    }

    /// The path-inserted well-known path (RFC 9728 §3.1): `/mcp` →
    /// `/.well-known/oauth-protected-resource/mcp`; a resource at the root gets the root form.
    pub fn metadata_path(&self) -> String {
        let path = Url::parse(&self.resource).map(|u| u.path().trim_end_matches('/').to_owned()).unwrap_or_default();
        format!("{WELL_KNOWN}{path}")
    }

    /// The absolute URL of the metadata document, as named in challenges.
    pub fn metadata_url(&self) -> String {
        match Url::parse(&self.resource) {
            Ok(url) => format!("{}{}", url.origin().ascii_serialization(), self.metadata_path()),
            Err(_) => self.metadata_path(),
        }
    }

    /// Whether a GET of `path` asks for the metadata: the root form, the path-inserted form
    /// of the canonical URI, or that of the endpoint path the server serves (they differ
    /// behind a proxy that rewrites paths).
    pub fn is_metadata_path(&self, path: &str, endpoint_path: &str) -> bool {
        let path = path.trim_end_matches('/');
        path == WELL_KNOWN
            || path == self.metadata_path()
            || path.strip_prefix(WELL_KNOWN).is_some_and(|rest| rest == endpoint_path.trim_end_matches('/'))
    }

    /// The Protected Resource Metadata document (RFC 9728 §2).
    pub fn document(&self) -> Value {
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            doc["scopes_supported"] = json!(self.scopes_supported);
        }
        if let Some(name) = &self.resource_name {
            doc["resource_name"] = json!(name);
        }
        if let Some(docs) = &self.resource_documentation {
            doc["resource_documentation"] = json!(docs);
        }
        doc
    }

    /// A `WWW-Authenticate` value: `Bearer` with the error (if any), the scopes (all those
    /// the operation needs for `insufficient_scope`, else the supported ones), and the
    /// metadata URL.
    pub fn challenge(&self, error: Option<ChallengeError<'_>>, scope: Option<&[String]>) -> String {
        let mut params: Vec<(&str, String)> = Vec::new();
        match error {
            Some(ChallengeError::InvalidToken(why)) => {
                params.push(("error", "invalid_token".into()));
                params.push(("error_description", why.into()));
            }
            Some(ChallengeError::InsufficientScope(why)) => {
                params.push(("error", "insufficient_scope".into()));
                params.push(("error_description", why.into()));
            }
            None => {}
        }
        let scope = scope.unwrap_or(&self.scopes_supported);
        if !scope.is_empty() {
            params.push(("scope", scope.join(" ")));
        }
        params.push(("resource_metadata", self.metadata_url()));
        bearer(&params)
    }
}

/// `Bearer k="v", …` with each value made a valid quoted string.
pub(crate) fn bearer(params: &[(&str, String)]) -> String {
    let parts: Vec<String> = params.iter().map(|(k, v)| format!("{k}=\"{}\"", quoted(v))).collect();
    if parts.is_empty() { "Bearer".into() } else { format!("Bearer {}", parts.join(", ")) }
}

/// RFC 6750 limits error descriptions to printable ASCII without `"` and `\`.
fn quoted(value: &str) -> String {
    let replace = |c: char| match c {
        '"' | '\\' => '\'',
        c if c == ' ' || c.is_ascii_graphic() => c,
        _ => ' ',
    };
    value.chars().map(replace).collect()
}

/// The URL of an endpoint on `host:port` (IPv6 literals bracketed).
pub(crate) fn endpoint_url(scheme: &str, host: &str, port: u16, path: &str) -> String {
    let host = if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.to_owned() };
    format!("{scheme}://{host}:{port}{path}")
}

/// Checks that `uri` can be a canonical resource URI: absolute http(s), no fragment.
pub fn check_resource_uri(uri: &str) -> Result<(), String> {
    let url = Url::parse(uri).map_err(|e| format!("{uri:?} is not an absolute URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{uri:?} must be an http or https URL"));
    }
    if url.fragment().is_some() {
        return Err(format!("{uri:?} must not have a fragment"));
    }
    if url.host_str().is_none() {
        return Err(format!("{uri:?} has no host"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource() -> ProtectedResource {
        let mut r = ProtectedResource::new("https://mcp.example.com/public/mcp", vec!["https://as.example.com".into()]);
        r.scopes_supported = vec!["mcp:tools".into(), "files:read".into()];
        r
    }

    #[test]
    fn metadata_lives_at_the_path_inserted_well_known_uri() {
        let r = resource();
        assert_eq!(r.metadata_path(), "/.well-known/oauth-protected-resource/public/mcp");
        assert_eq!(r.metadata_url(), "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp");
        assert!(r.is_metadata_path("/.well-known/oauth-protected-resource", "/mcp"));
        assert!(r.is_metadata_path("/.well-known/oauth-protected-resource/public/mcp", "/mcp"));
        assert!(r.is_metadata_path("/.well-known/oauth-protected-resource/mcp", "/mcp"));
        assert!(!r.is_metadata_path("/.well-known/oauth-protected-resource/other", "/mcp"));
        let root = ProtectedResource::new("https://mcp.example.com:8443", vec![]);
        assert_eq!(root.metadata_url(), "https://mcp.example.com:8443/.well-known/oauth-protected-resource");
    }

    #[test]
    fn the_document_names_resource_servers_scopes_and_methods() {
        let doc = resource().document();
        assert_eq!(
            doc,
            json!({
                "resource": "https://mcp.example.com/public/mcp",
                "authorization_servers": ["https://as.example.com"],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["mcp:tools", "files:read"],
            })
        );
    }

    #[test]
    fn challenges() {
        let r = resource();
        let meta = "resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp\"";
        assert_eq!(r.challenge(None, None), format!("Bearer scope=\"mcp:tools files:read\", {meta}"));
        assert_eq!(
            r.challenge(Some(ChallengeError::InvalidToken("token has \"expired\"\n")), None),
            format!(
                "Bearer error=\"invalid_token\", error_description=\"token has 'expired' \", scope=\"mcp:tools files:read\", {meta}"
            )
        );
        let needed = ["a".to_string(), "b".to_string()];
        assert_eq!(
            r.challenge(Some(ChallengeError::InsufficientScope("needs a b")), Some(&needed)),
            format!("Bearer error=\"insufficient_scope\", error_description=\"needs a b\", scope=\"a b\", {meta}")
        );
    }

    #[test]
    fn endpoint_urls_and_resource_uris() {
        assert_eq!(endpoint_url("http", "::1", 80, "/mcp"), "http://[::1]:80/mcp");
        assert!(check_resource_uri("https://x.example/mcp").is_ok());
        assert!(check_resource_uri("https://x.example/mcp#frag").is_err());
        assert!(check_resource_uri("/mcp").is_err());
        assert!(check_resource_uri("ftp://x.example").is_err());
    }
}
