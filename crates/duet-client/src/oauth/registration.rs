//! How the client becomes known to an authorization server: credentials registered
//! beforehand, a Client ID Metadata Document (its URL is the client ID) when the server
//! accepts those, else Dynamic Client Registration (RFC 7591) as a native application.
//! A client is known to one issuer: another issuer (the server migrated) means registering
//! anew, never presenting the old credentials.

use super::answer::document;
use super::discovery::ServerMetadata;
use crate::error::Error;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMethod {
    /// HTTP Basic with the client ID and secret.
    ClientSecretBasic,
    /// The client ID and secret in the form.
    ClientSecretPost,
    /// A JWT assertion signed with the client's private key (RFC 7523).
    PrivateKeyJwt,
    /// A public client: only its ID.
    None,
}

impl AuthMethod {
    /// The name authorization server metadata lists it by.
    pub(crate) fn name(self) -> &'static str {
        match self {
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
            AuthMethod::None => "none",
        }
    }

    /// The method a client with a secret (or without) uses at `server`: the first of the
    /// ones it can use that the server lists.
    pub(crate) fn for_server(server: &ServerMetadata, has_secret: bool) -> AuthMethod {
        let usable: &[AuthMethod] = if has_secret {
            &[AuthMethod::ClientSecretBasic, AuthMethod::ClientSecretPost]
        } else {
            &[AuthMethod::None]
        };
        usable.iter().copied().find(|method| server.supports_auth_method(method.name())).unwrap_or(usable[0])
    }
}

/// What the client is called and how it registers.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    /// `client_name` in a registration.
    pub(crate) name: String,
    /// The URL of the client's metadata document, used as its ID where accepted.
    pub(crate) metadata_document: Option<String>,
    /// Credentials registered beforehand: the ID and, for a confidential client, the secret.
    pub(crate) pre_registered: Option<(String, Option<String>)>,
}

/// A client an authorization server knows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Registered {
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<String>,
    pub(crate) method: AuthMethod,
}

/// The client as `server` knows it, registering it there if need be (with `redirect_uri`).
pub(crate) async fn register(
    http: &reqwest::Client,
    server: &ServerMetadata,
    identity: &Identity,
    redirect_uri: &str,
) -> Result<Registered, Error> {
    if let Some((client_id, client_secret)) = &identity.pre_registered {
        let method = AuthMethod::for_server(server, client_secret.is_some());
        return Ok(Registered { client_id: client_id.clone(), client_secret: client_secret.clone(), method });
    }
    if let Some(document) = identity.metadata_document.as_ref().filter(|_| server.client_id_metadata_document_supported)
    {
        return Ok(Registered { client_id: document.clone(), client_secret: None, method: AuthMethod::None });
    }
    let Some(endpoint) = &server.registration_endpoint else {
        return Err(Error::Authorization(format!(
            "the authorization server {} allows no registration: the client needs credentials registered beforehand",
            server.issuer
        )));
    };
    let wanted = [AuthMethod::None, AuthMethod::ClientSecretBasic, AuthMethod::ClientSecretPost]
        .into_iter()
        .find(|method| server.supports_auth_method(method.name()))
        .unwrap_or(AuthMethod::None);
    let request = json!({
        "client_name": identity.name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": wanted.name(),
        "application_type": "native",
    });
    let response = http.post(endpoint).json(&request).send().await.map_err(Error::transport)?;
    #[derive(Deserialize)]
    struct Answer {
        client_id: String,
        client_secret: Option<String>,
        token_endpoint_auth_method: Option<AuthMethod>,
    }
    let answer: Answer = document(response, &format!("the registration endpoint {endpoint}")).await?;
    let method = answer.token_endpoint_auth_method.unwrap_or(match answer.client_secret {
        Some(_) => AuthMethod::for_server(server, true),
        None => AuthMethod::None,
    });
    Ok(Registered { client_id: answer.client_id, client_secret: answer.client_secret, method })
}
