//! Where a protected server's authorization server is and what it offers: the server's
//! Protected Resource Metadata (RFC 9728: the challenge's `resource_metadata`, else the
//! path-based then the root well-known URL), whose `resource` must be this server, then
//! the authorization server's metadata (RFC 8414 and OpenID Connect Discovery, with the
//! path-insertion variants), whose `issuer` must be the one its URL was built from. A
//! server without Protected Resource Metadata is of the 2025-03-26 revision: its origin is
//! the authorization server, whose metadata is at the origin's well-known URL, else whose
//! endpoints are `/authorize`, `/token` and `/register` there.

use super::challenge::Challenge;
use crate::error::Error;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use url::Url;

/// A server's Protected Resource Metadata (the fields the client uses).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResourceMetadata {
    /// The resource identifier: the server's URL, or a prefix of it.
    pub(crate) resource: String,
    /// The authorization servers' issuers; the client uses the first.
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    /// The scopes the server knows.
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// The DPoP proof algorithms the server accepts (RFC 9449 §5.1), if it takes DPoP.
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) dpop_bound_access_tokens_required: bool,
}

/// An authorization server's metadata (the fields the client uses).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Option<String>,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: bool,
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl ServerMetadata {
    /// The 2025-03-26 default endpoints of an authorization server at `origin` that
    /// publishes no metadata.
    fn defaults(origin: &str) -> ServerMetadata {
        ServerMetadata {
            issuer: origin.to_owned(),
            authorization_endpoint: Some(format!("{origin}/authorize")),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            scopes_supported: None,
            token_endpoint_auth_methods_supported: None,
            code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
            authorization_response_iss_parameter_supported: false,
            client_id_metadata_document_supported: false,
            dpop_signing_alg_values_supported: None,
        }
    }

    /// Whether the server lists token endpoint auth method `method` (RFC 8414: unlisted,
    /// only `client_secret_basic`).
    pub(crate) fn supports_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(methods) => methods.iter().any(|listed| listed == method),
            None => method == "client_secret_basic",
        }
    }

    /// Whether the server binds tokens to DPoP proofs signed the way the client signs them.
    pub(crate) fn supports_dpop(&self) -> bool {
        self.dpop_signing_alg_values_supported.iter().flatten().any(|alg| alg == super::dpop::ALGORITHM)
    }

    /// Whether the server lists scope `scope`.
    pub(crate) fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported.as_ref().is_some_and(|scopes| scopes.iter().any(|listed| listed == scope))
    }
}

/// What discovery found for one server.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The `resource` (RFC 8707) the tokens are for.
    pub(crate) resource: String,
    /// The server's Protected Resource Metadata scopes, if it published them.
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// Whether the server takes DPoP-bound tokens (it said so in its challenge or metadata).
    pub(crate) takes_dpop: bool,
    /// The authorization server.
    pub(crate) server: ServerMetadata,
}

/// Discovers the authorization server of the server at `url`, which answered `challenge`.
pub(crate) async fn discover(http: &reqwest::Client, url: &Url, challenge: &Challenge) -> Result<Discovered, Error> {
    let origin = url.origin().ascii_serialization();
    let Some(resource) = resource_metadata(http, url, challenge).await? else {
        let server =
            match get::<ServerMetadata>(http, &format!("{origin}/.well-known/oauth-authorization-server")).await {
                Some(server) => checked(server, &origin)?,
                None => ServerMetadata::defaults(&origin),
            };
        return Ok(Discovered {
            resource: resource_of(url),
            scopes_supported: None,
            takes_dpop: challenge.dpop,
            server,
        });
    };
    if !covers(&resource.resource, url) {
        return Err(Error::Authorization(format!(
            "the protected resource metadata is for {}, not for {url}",
            resource.resource
        )));
    }
    let issuer = resource.authorization_servers.first().ok_or_else(|| {
        Error::Authorization("the protected resource metadata names no authorization server".to_owned())
    })?;
    let server = server_metadata(http, issuer).await?;
    let takes_dpop = challenge.dpop
        || resource.dpop_bound_access_tokens_required
        || resource.dpop_signing_alg_values_supported.is_some_and(|algs| !algs.is_empty());
    Ok(Discovered { resource: resource.resource, scopes_supported: resource.scopes_supported, takes_dpop, server })
}

/// The server's Protected Resource Metadata: at the challenge's URL, else at the
/// well-known URLs; `None` when it has none (a 2025-03-26 server).
async fn resource_metadata(
    http: &reqwest::Client,
    url: &Url,
    challenge: &Challenge,
) -> Result<Option<ResourceMetadata>, Error> {
    if let Some(at) = &challenge.resource_metadata {
        return match get(http, at).await {
            Some(metadata) => Ok(Some(metadata)),
            None => Err(Error::Authorization(format!("no protected resource metadata at {at}"))),
        };
    }
    for at in resource_metadata_urls(url) {
        if let Some(metadata) = get(http, &at).await {
            return Ok(Some(metadata));
        }
    }
    Ok(None)
}

/// The metadata of the authorization server `issuer`, from the first of its well-known
/// URLs that has it; it must name `issuer` as its issuer.
async fn server_metadata(http: &reqwest::Client, issuer: &str) -> Result<ServerMetadata, Error> {
    let urls = server_metadata_urls(issuer)
        .ok_or_else(|| Error::Authorization(format!("the authorization server {issuer:?} is no URL")))?;
    for at in urls {
        if let Some(server) = get::<ServerMetadata>(http, &at).await {
            return checked(server, issuer);
        }
    }
    Err(Error::Authorization(format!("no metadata for the authorization server {issuer}")))
}

/// `server` when its issuer is `issuer` (compared as strings, RFC 8414 §3.3).
fn checked(server: ServerMetadata, issuer: &str) -> Result<ServerMetadata, Error> {
    if server.issuer != issuer {
        return Err(Error::Authorization(format!(
            "the authorization server metadata names issuer {}, not {issuer}",
            server.issuer
        )));
    }
    Ok(server)
}

/// A JSON document at `url`, or `None` when there is none (any failure).
async fn get<T: DeserializeOwned>(http: &reqwest::Client, url: &str) -> Option<T> {
    let response = http.get(url).header(reqwest::header::ACCEPT, "application/json").send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json().await.ok()
}

/// Where a server at `url` may publish its Protected Resource Metadata, in the order to
/// try (RFC 9728 §3.1): under its path, then at its origin's root.
pub(crate) fn resource_metadata_urls(url: &Url) -> Vec<String> {
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let root = format!("{origin}/.well-known/oauth-protected-resource");
    if path.is_empty() { vec![root] } else { vec![format!("{root}{path}"), root] }
}

/// Where authorization server `issuer` may publish its metadata, in the order to try:
/// RFC 8414 then OpenID Connect with the path inserted after the well-known prefix, then
/// OpenID Connect's path-appended form. `None` when `issuer` is no URL.
pub(crate) fn server_metadata_urls(issuer: &str) -> Option<Vec<String>> {
    let url = Url::parse(issuer).ok()?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    Some(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// Whether resource identifier `resource` covers the server at `url`: the same origin, and
/// a path that is `url`'s or a prefix of it at a segment boundary.
pub(crate) fn covers(resource: &str, url: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else { return false };
    let prefix = resource.path().trim_end_matches('/');
    let path = url.path();
    resource.origin() == url.origin()
        && (path.trim_end_matches('/') == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/')))
}

/// The canonical resource identifier of the server at `url` (RFC 8707: no fragment).
pub(crate) fn resource_of(url: &Url) -> String {
    let mut url = url.clone();
    url.set_fragment(None);
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn resource_metadata_is_looked_for_under_the_path_then_at_the_root() {
        assert_eq!(
            resource_metadata_urls(&url("https://h:8443/api/mcp")),
            [
                "https://h:8443/.well-known/oauth-protected-resource/api/mcp",
                "https://h:8443/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(resource_metadata_urls(&url("https://h/")), ["https://h/.well-known/oauth-protected-resource"]);
    }

    #[test]
    fn server_metadata_urls_insert_then_append_the_path() {
        assert_eq!(
            server_metadata_urls("https://as.example/tenant1").unwrap(),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            server_metadata_urls("http://127.0.0.1:9000").unwrap(),
            [
                "http://127.0.0.1:9000/.well-known/oauth-authorization-server",
                "http://127.0.0.1:9000/.well-known/openid-configuration"
            ]
        );
        assert_eq!(server_metadata_urls("not a url"), None);
    }

    #[test]
    fn a_resource_covers_its_url_and_the_paths_under_it() {
        let server = url("http://h:1/mcp");
        assert!(covers("http://h:1/mcp", &server));
        assert!(covers("http://h:1/mcp/", &server));
        assert!(covers("http://h:1", &server));
        assert!(!covers("http://h:1/mc", &server));
        assert!(!covers("https://evil.example.com/mcp", &server));
        assert!(!covers("http://h:2/mcp", &server));
        assert!(!covers("http://h:1/mcp/other", &server));
    }

    #[test]
    fn the_resource_drops_a_fragment() {
        assert_eq!(resource_of(&url("https://h/mcp#x")), "https://h/mcp");
    }

    #[test]
    fn unlisted_auth_methods_default_to_basic() {
        let mut server = ServerMetadata::defaults("https://h");
        assert!(server.supports_auth_method("client_secret_basic"));
        assert!(!server.supports_auth_method("none"));
        server.token_endpoint_auth_methods_supported = Some(vec!["none".to_owned()]);
        assert!(server.supports_auth_method("none"));
    }
}
