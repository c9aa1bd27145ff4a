//! Finding out what the authorization server offers: its metadata (RFC 8414, or OpenID
//! Connect Discovery), which names the JWKS and the introspection endpoint. Also the small
//! HTTP helper every call to the authorization server goes through: bounded in time and
//! size, no redirects followed, and errors that name the URL but never a credential.

use reqwest::{Client, Url};
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;

/// The most bytes read from any authorization-server response.
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// What duet needs from the authorization server's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier, which must be the one asked about.
    pub issuer: String,
    /// Where its signing keys are (a JWK Set).
    #[serde(default)]
    pub jwks_uri: Option<String>,
    /// Where tokens are introspected (RFC 7662).
    #[serde(default)]
    pub introspection_endpoint: Option<String>,
    /// Where clients get tokens.
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// The scopes it issues.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// The HTTP client for calls to the authorization server.
pub(crate) fn client(timeout: Duration) -> Result<Client, String> {
    Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("duet/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))
}

/// Reads a JSON response body of at most [`MAX_RESPONSE_BYTES`].
pub(crate) async fn json_body(url: &str, mut response: reqwest::Response) -> Result<Value, String> {
    let status = response.status();
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                    return Err(format!("{url} answered more than {MAX_RESPONSE_BYTES} bytes"));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => return Err(format!("reading {url} failed: {}", without_url(&e))),
        }
    }
    if !status.is_success() {
        return Err(format!("{url} answered HTTP {}", status.as_u16()));
    }
    serde_json::from_slice(&body).map_err(|e| format!("{url} did not answer JSON: {e}"))
}

/// GETs a JSON document.
pub(crate) async fn get_json(client: &Client, url: &str) -> Result<Value, String> {
    let response = client
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("cannot reach {url}: {}", without_url(&e)))?;
    json_body(url, response).await
}

/// A reqwest error's text without the URL it appends (the caller names the URL once).
pub(crate) fn without_url(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        text = text.replace(&format!(" for url ({url})"), "");
    }
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// Where an issuer's metadata may be, in the order clients try them: RFC 8414's
/// path-inserted `oauth-authorization-server`, then OpenID Connect's appended and
/// path-inserted `openid-configuration`.
pub fn metadata_urls(issuer: &str) -> Result<Vec<String>, String> {
    let url = Url::parse(issuer).map_err(|e| format!("the issuer {issuer:?} is not an absolute URL: {e}"))?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let mut urls = vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
        format!("{origin}/.well-known/openid-configuration{path}"),
    ];
    urls.dedup();
    Ok(urls)
}

/// Fetches the metadata of `issuer`. The document must name exactly that issuer (RFC 8414
/// §3.3), or it is refused.
pub async fn discover(client: &Client, issuer: &str) -> Result<AuthorizationServerMetadata, String> {
    let mut failures = Vec::new();
    for url in metadata_urls(issuer)? {
        let document = match get_json(client, &url).await {
            Ok(d) => d,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let metadata: AuthorizationServerMetadata =
            serde_json::from_value(document).map_err(|e| format!("{url} is not authorization server metadata: {e}"))?;
        if metadata.issuer != issuer {
            return Err(format!(
                "{url} names the issuer {:?}, not {issuer:?} (the issuer must match exactly)",
                metadata.issuer
            ));
        }
        return Ok(metadata);
    }
    Err(format!("no authorization server metadata for {issuer}: {}", failures.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_urls_follow_rfc_8414_then_oidc() {
        assert_eq!(
            metadata_urls("https://as.example.com").expect("valid"),
            [
                "https://as.example.com/.well-known/oauth-authorization-server",
                "https://as.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            metadata_urls("https://as.example.com/tenant1/").expect("valid"),
            [
                "https://as.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://as.example.com/tenant1/.well-known/openid-configuration",
                "https://as.example.com/.well-known/openid-configuration/tenant1",
            ]
        );
        assert!(metadata_urls("as.example.com").is_err());
    }
}
