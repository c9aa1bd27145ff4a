//! The authorization server's token endpoint: the grants the client uses (an authorization
//! code with its PKCE verifier, a refresh token, client credentials, a JWT assertion),
//! each with the
//! resource (RFC 8707) and the client's authentication (`client_secret_basic`,
//! `client_secret_post`, `private_key_jwt`, or only its ID), and a DPoP proof where the
//! token is to be bound (again with the nonce, when the server asks for one).

use super::answer::document;
use super::assertion::{JWT_BEARER, SigningKey};
use super::discovery::ServerMetadata;
use super::dpop::{DPOP, Dpop, Party, nonce_of};
use super::jwt_bearer::GRANT_TYPE;
use super::registration::{AuthMethod, Registered};
use crate::error::Error;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};
use url::form_urlencoded;

/// What a token endpoint granted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Tokens {
    pub(crate) access_token: String,
    /// `Bearer`, or `DPoP` for a token bound to the client's key.
    #[serde(default)]
    pub(crate) token_type: Option<String>,
    pub(crate) refresh_token: Option<String>,
    /// The granted scope (the one asked for when the server did not say).
    pub(crate) scope: Option<String>,
    /// When the access token expires, in seconds since the epoch.
    pub(crate) expires_at: Option<u64>,
}

/// What the client trades for tokens.
#[derive(Debug)]
pub(crate) enum Grant<'a> {
    /// An authorization code, with the redirect URI and PKCE verifier of its request.
    Code { code: &'a str, redirect_uri: &'a str, verifier: &'a str },
    /// A refresh token.
    Refresh(&'a str),
    /// The client's own credentials (a machine, no person).
    ClientCredentials,
    /// An assertion (RFC 7523): a workload's identity, an enterprise's ID-JAG.
    JwtBearer(&'a str),
}

impl Tokens {
    /// Whether the token is bound to the client's DPoP key.
    pub(crate) fn is_dpop(&self) -> bool {
        self.token_type.as_deref().is_some_and(|kind| kind.eq_ignore_ascii_case("dpop"))
    }
}

/// A client at a token endpoint.
#[derive(Debug)]
pub(crate) struct TokenEndpoint<'a> {
    pub(crate) http: &'a reqwest::Client,
    pub(crate) server: &'a ServerMetadata,
    pub(crate) client: &'a Registered,
    /// The client's key, for `private_key_jwt`.
    pub(crate) key: Option<&'a SigningKey>,
    /// The key to bind the token to, if it is to be bound.
    pub(crate) dpop: Option<&'a Dpop>,
}

/// Trades `grant` for tokens at `endpoint`, for `resource` with `scope`.
pub(crate) async fn request(
    endpoint: &TokenEndpoint<'_>,
    grant: Grant<'_>,
    resource: &str,
    scope: Option<&str>,
) -> Result<Tokens, Error> {
    let TokenEndpoint { http, server, client, key, dpop } = *endpoint;
    // The form is not kept across an await: its serializer is not Send, and every request
    // future of the client must be.
    let post = {
        let mut form = form_urlencoded::Serializer::new(String::new());
        match grant {
            Grant::Code { code, redirect_uri, verifier } => form
                .append_pair("grant_type", "authorization_code")
                .append_pair("code", code)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("code_verifier", verifier),
            Grant::Refresh(token) => {
                form.append_pair("grant_type", "refresh_token").append_pair("refresh_token", token)
            }
            Grant::ClientCredentials => form.append_pair("grant_type", "client_credentials"),
            Grant::JwtBearer(assertion) => {
                form.append_pair("grant_type", GRANT_TYPE).append_pair("assertion", assertion)
            }
        };
        form.append_pair("resource", resource);
        if let Some(scope) = scope.filter(|_| !matches!(grant, Grant::Code { .. })) {
            form.append_pair("scope", scope);
        }
        let mut post = http.post(&server.token_endpoint).header(reqwest::header::ACCEPT, "application/json");
        let secret = client.client_secret.as_deref().unwrap_or_default();
        match client.method {
            AuthMethod::ClientSecretBasic => {
                let encode = |text: &str| form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
                let credentials = STANDARD.encode(format!("{}:{}", encode(&client.client_id), encode(secret)));
                post = post.header(reqwest::header::AUTHORIZATION, format!("Basic {credentials}"));
            }
            AuthMethod::ClientSecretPost => {
                form.append_pair("client_id", &client.client_id).append_pair("client_secret", secret);
            }
            AuthMethod::PrivateKeyJwt => {
                let key =
                    key.ok_or_else(|| Error::Invalid("private_key_jwt needs the client's private key".to_owned()))?;
                form.append_pair("client_id", &client.client_id)
                    .append_pair("client_assertion_type", JWT_BEARER)
                    .append_pair("client_assertion", &key.assertion(&client.client_id, &server.issuer)?);
            }
            AuthMethod::None => {
                form.append_pair("client_id", &client.client_id);
            }
        }
        post.header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded").body(form.finish())
    };
    let send = |post: reqwest::RequestBuilder| async {
        let post = match dpop {
            Some(dpop) => {
                post.header(DPOP, dpop.proof(Party::AuthorizationServer, "POST", &server.token_endpoint, None)?)
            }
            None => post,
        };
        post.send().await.map_err(Error::transport)
    };
    let again = post.try_clone();
    let mut response = send(post).await?;
    if let (Some(dpop), Some(again)) = (dpop, again)
        && response.status() == reqwest::StatusCode::BAD_REQUEST
        && let Some(nonce) = nonce_of(response.headers())
    {
        dpop.set_nonce(Party::AuthorizationServer, &nonce);
        response = send(again).await?;
    }
    #[derive(Deserialize)]
    struct Answer {
        access_token: String,
        token_type: Option<String>,
        refresh_token: Option<String>,
        scope: Option<String>,
        expires_in: Option<u64>,
    }
    let answer: Answer = document(response, &format!("the token endpoint {}", server.token_endpoint)).await?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|since| since.as_secs()).unwrap_or_default();
    Ok(Tokens {
        access_token: answer.access_token,
        token_type: answer.token_type,
        refresh_token: answer.refresh_token,
        scope: answer.scope.or_else(|| scope.map(str::to_owned)),
        expires_at: answer.expires_in.map(|seconds| now + seconds),
    })
}
