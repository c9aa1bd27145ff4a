//! The JWT-bearer grant (RFC 7523 §2.1) a machine or an enterprise uses instead of a
//! person's authorization: the client trades an assertion for a token. The assertion is
//! one it holds (a workload's identity token, SEP-1933), or an identity assertion
//! authorization grant (ID-JAG, SEP-990) the enterprise's identity provider issues in a
//! token exchange (RFC 8693) for the person's ID token, for this authorization server and
//! resource.

use super::answer::document;
use crate::error::Error;
use serde::Deserialize;
use url::form_urlencoded;

/// The `grant_type` of the JWT-bearer grant.
pub(crate) const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// Where the JWT a JWT-bearer grant presents comes from. Its `Debug` shows no token.
#[derive(Clone)]
pub enum Assertion {
    /// A JWT the client holds, whose audience is the authorization server (a workload's
    /// identity token).
    Given(String),
    /// An ID-JAG the enterprise's identity provider issues for the person's ID token.
    IdJag {
        /// The identity provider's token endpoint.
        token_endpoint: String,
        /// The client's ID at the identity provider.
        client_id: String,
        /// The person's ID token from the identity provider.
        id_token: String,
    },
}

impl std::fmt::Debug for Assertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Assertion::Given(_) => f.write_str("Assertion::Given(..)"),
            Assertion::IdJag { token_endpoint, client_id, .. } => f
                .debug_struct("Assertion::IdJag")
                .field("token_endpoint", token_endpoint)
                .field("client_id", client_id)
                .finish_non_exhaustive(),
        }
    }
}

impl Assertion {
    /// The assertion to present to authorization server `issuer` for `resource`.
    pub(crate) async fn for_server(
        &self,
        http: &reqwest::Client,
        issuer: &str,
        resource: &str,
    ) -> Result<String, Error> {
        let (token_endpoint, client_id, id_token) = match self {
            Assertion::Given(jwt) => return Ok(jwt.clone()),
            Assertion::IdJag { token_endpoint, client_id, id_token } => (token_endpoint, client_id, id_token),
        };
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange")
            .append_pair("requested_token_type", "urn:ietf:params:oauth:token-type:id-jag")
            .append_pair("audience", issuer)
            .append_pair("resource", resource)
            .append_pair("subject_token", id_token)
            .append_pair("subject_token_type", "urn:ietf:params:oauth:token-type:id_token")
            .append_pair("client_id", client_id)
            .finish();
        let response = http
            .post(token_endpoint)
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .map_err(Error::transport)?;
        #[derive(Deserialize)]
        struct Exchanged {
            access_token: String,
        }
        let what = format!("the identity provider's token exchange at {token_endpoint}");
        let exchanged: Exchanged = document(response, &what).await?;
        Ok(exchanged.access_token)
    }
}
