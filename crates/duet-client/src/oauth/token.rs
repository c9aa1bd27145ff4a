//! The authorization server's token endpoint: the grants the client uses (an authorization
//! code with its PKCE verifier, a refresh token, client credentials), each with the
//! resource (RFC 8707) and the client's authentication (`client_secret_basic`,
//! `client_secret_post`, `private_key_jwt`, or only its ID).

use super::assertion::{JWT_BEARER, SigningKey};
use super::discovery::ServerMetadata;
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
}

/// Trades `grant` for tokens at `server`'s token endpoint, as `client` (signing with `key`
/// for `private_key_jwt`), for `resource` with `scope`.
pub(crate) async fn request(
    http: &reqwest::Client,
    server: &ServerMetadata,
    client: &Registered,
    key: Option<&SigningKey>,
    grant: Grant<'_>,
    resource: &str,
    scope: Option<&str>,
) -> Result<Tokens, Error> {
    let mut form = form_urlencoded::Serializer::new(String::new());
    match grant {
        Grant::Code { code, redirect_uri, verifier } => form
            .append_pair("grant_type", "authorization_code")
            .append_pair("code", code)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_verifier", verifier),
        Grant::Refresh(token) => form.append_pair("grant_type", "refresh_token").append_pair("refresh_token", token),
        Grant::ClientCredentials => form.append_pair("grant_type", "client_credentials"),
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
            let key = key.ok_or_else(|| Error::Invalid("private_key_jwt needs the client's private key".to_owned()))?;
            form.append_pair("client_id", &client.client_id)
                .append_pair("client_assertion_type", JWT_BEARER)
                .append_pair("client_assertion", &key.assertion(&client.client_id, &server.issuer)?);
        }
        AuthMethod::None => {
            form.append_pair("client_id", &client.client_id);
        }
    }
    let response = post
        .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(form.finish())
        .send()
        .await
        .map_err(Error::transport)?;
    let status = response.status();
    if !status.is_success() {
        let body = response.text().await.unwrap_or_default();
        return Err(Error::Authorization(format!(
            "the token endpoint {} answered HTTP status {status}: {}",
            server.token_endpoint,
            body.chars().take(200).collect::<String>()
        )));
    }
    #[derive(Deserialize)]
    struct Answer {
        access_token: String,
        refresh_token: Option<String>,
        scope: Option<String>,
        expires_in: Option<u64>,
    }
    let answer: Answer = response
        .json()
        .await
        .map_err(|e| Error::Authorization(format!("the token endpoint's answer is not one: {e}")))?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|since| since.as_secs()).unwrap_or_default();
    Ok(Tokens {
        access_token: answer.access_token,
        refresh_token: answer.refresh_token,
        scope: answer.scope.or_else(|| scope.map(str::to_owned)),
        expires_at: answer.expires_in.map(|seconds| now + seconds),
    })
}
