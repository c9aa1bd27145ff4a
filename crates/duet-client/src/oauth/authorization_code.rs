//! The authorization code flow with PKCE (S256, which the server must support): the client sends a person's user agent to the
//! authorization endpoint (with the resource, RFC 8707, and the scope) and takes the code
//! from where the server redirects it back. How the person gets there and how the redirect
//! comes back is the caller's [`UserAgent`]. The redirect is checked before its code is
//! used: the `state` sent, no `error`, and the issuer (RFC 9207): an `iss` must be the
//! authorization server's issuer, compared as strings, and one the server promised must
//! be there.

use super::discovery::ServerMetadata;
use super::pkce::{Pkce, random};
use crate::error::Error;
use futures::future::BoxFuture;
use url::Url;

/// How a person authorizes the client: takes them to the authorization URL and brings
/// back the URL the authorization server redirected to (with the `code`). A desktop
/// program opens a browser and waits on a loopback redirect
/// ([`Loopback`](super::Loopback)); a test may fetch the URL itself.
pub trait UserAgent: Send + Sync + std::fmt::Debug {
    /// The redirect URI the client registers and sends.
    fn redirect_uri(&self) -> String;

    /// Has the person authorize at `url`; the URL the server redirected to, with its query.
    fn authorize(&self, url: String) -> BoxFuture<'_, Result<String, Error>>;
}

/// A code the authorization server issued, and the verifier to trade it with.
#[derive(Debug)]
pub(crate) struct Code {
    pub(crate) code: String,
    pub(crate) pkce: Pkce,
}

/// Has `agent` authorize client `client_id` at `server` for `resource` and `scope`.
pub(crate) async fn authorize(
    agent: &dyn UserAgent,
    server: &ServerMetadata,
    client_id: &str,
    resource: &str,
    scope: Option<&str>,
) -> Result<Code, Error> {
    if !server.code_challenge_methods_supported.iter().flatten().any(|method| method == "S256") {
        let issuer = &server.issuer;
        return Err(Error::Authorization(format!("the authorization server {issuer} does not support PKCE with S256")));
    }
    let endpoint = server.authorization_endpoint.as_deref().ok_or_else(|| {
        Error::Authorization(format!("the authorization server {} has no authorization endpoint", server.issuer))
    })?;
    let mut url = Url::parse(endpoint)
        .map_err(|e| Error::Authorization(format!("the authorization endpoint {endpoint:?}: {e}")))?;
    let (pkce, state) = (Pkce::new(), random());
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", client_id)
            .append_pair("redirect_uri", &agent.redirect_uri())
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state)
            .append_pair("resource", resource);
        if let Some(scope) = scope {
            query.append_pair("scope", scope);
        }
    }
    let redirect = agent.authorize(url.into()).await?;
    let code = code_of(&redirect, &state, server)?;
    Ok(Code { code, pkce })
}

/// The code in `redirect`, the answer to the request with `state` sent to `server`.
pub(crate) fn code_of(redirect: &str, state: &str, server: &ServerMetadata) -> Result<String, Error> {
    let redirect = Url::parse(redirect)
        .map_err(|e| Error::Authorization(format!("the authorization redirect {redirect:?}: {e}")))?;
    let param = |name: &str| redirect.query_pairs().find(|(key, _)| key == name).map(|(_, value)| value.into_owned());
    if let Some(error) = param("error") {
        let description = param("error_description").map(|text| format!(": {text}")).unwrap_or_default();
        return Err(Error::Authorization(format!("the authorization server refused: {error}{description}")));
    }
    if param("state").as_deref() != Some(state) {
        return Err(Error::Authorization("the authorization redirect's state is not the one sent".to_owned()));
    }
    match param("iss") {
        Some(iss) if iss != server.issuer => {
            return Err(Error::Authorization(format!(
                "the authorization redirect comes from issuer {iss}, not {}",
                server.issuer
            )));
        }
        None if server.authorization_response_iss_parameter_supported => {
            return Err(Error::Authorization(format!(
                "the authorization redirect has no iss, which {} promised",
                server.issuer
            )));
        }
        _ => {}
    }
    param("code").ok_or_else(|| Error::Authorization("the authorization redirect has no code".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(iss_supported: bool) -> ServerMetadata {
        serde_json::from_value(serde_json::json!({
            "issuer": "http://127.0.0.1:9000", "token_endpoint": "http://127.0.0.1:9000/token",
            "authorization_response_iss_parameter_supported": iss_supported,
        }))
        .unwrap()
    }

    #[test]
    fn the_code_comes_with_the_state_and_issuer() {
        let redirect = "http://localhost:3000/cb?code=c1&state=s1&iss=http%3A%2F%2F127.0.0.1%3A9000";
        assert_eq!(code_of(redirect, "s1", &server(true)).unwrap(), "c1");
        assert!(code_of(redirect, "s2", &server(true)).is_err());
    }

    #[test]
    fn a_wrong_or_normalized_issuer_is_refused_even_unadvertised() {
        for iss in ["https%3A%2F%2Fevil.example.com", "http%3A%2F%2F127.0.0.1%3A9000%2F"] {
            let redirect = format!("http://localhost:3000/cb?code=c&state=s&iss={iss}");
            assert!(code_of(&redirect, "s", &server(true)).is_err());
            assert!(code_of(&redirect, "s", &server(false)).is_err());
        }
    }

    #[test]
    fn a_missing_issuer_is_refused_only_when_promised() {
        let redirect = "http://localhost:3000/cb?code=c&state=s";
        assert!(code_of(redirect, "s", &server(true)).is_err());
        assert_eq!(code_of(redirect, "s", &server(false)).unwrap(), "c");
    }

    #[test]
    fn an_error_is_said() {
        let refused = code_of("http://l/cb?error=access_denied&state=s", "s", &server(false)).unwrap_err();
        assert!(refused.to_string().contains("access_denied"));
    }
}
