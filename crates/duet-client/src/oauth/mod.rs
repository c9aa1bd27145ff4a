//! OAuth 2.1 for a protected server, as the MCP authorization spec has it: an
//! [`Authorizer`] that an [`HttpTransport`](crate::HttpTransport) consults. Each request
//! carries its token; a 401 makes it discover the authorization server (`discovery.rs`),
//! become known there (`registration.rs`), get a token (a person's authorization code with
//! PKCE through a [`UserAgent`], the client's own credentials, or a JWT assertion: a
//! workload's, an enterprise's ID-JAG) and have the request retried; a 403
//! `insufficient_scope` makes it ask again for the scopes held joined with the challenged
//! ones (step-up), unless it holds them already (asking again would not help: that is the
//! retry limit). A token that stops working is refreshed when there is a refresh token; an
//! authorization server that changed (the server migrated) means registering anew. Where
//! both servers take DPoP, tokens are bound to a key of the client's (`dpop.rs`). Tokens
//! live in a [`TokenStore`].
//!
//! ```no_run
//! # async fn run() -> Result<(), duet_client::Error> {
//! use duet_client::oauth::{Authorizer, Loopback, TokenStore};
//! use duet_client::{Client, HttpTransport, Negotiate};
//! use std::sync::Arc;
//! // The person opens the printed URL; the browser comes back to 127.0.0.1.
//! let agent = Loopback::bind(0).await?;
//! let authorizer = Authorizer::new(Arc::new(agent))
//!     .client_name("my-tool")
//!     .store(TokenStore::File("tokens.json".into()));
//! let transport = HttpTransport::new("https://mcp.example.com/mcp")?.with_authorizer(Arc::new(authorizer));
//! let client = Client::connect(transport, Negotiate::Auto).await?;
//! # Ok(()) }
//! ```

mod answer;
mod assertion;
mod authorization_code;
mod challenge;
mod discovery;
mod dpop;
mod jwt_bearer;
mod loopback;
mod pkce;
mod registration;
mod scope;
mod store;
mod token;

pub use assertion::SigningKey;
pub use authorization_code::UserAgent;
pub use jwt_bearer::Assertion;
pub use loopback::Loopback;
pub use registration::AuthMethod;
pub use store::TokenStore;

use crate::error::Error;
use challenge::Challenge;
use discovery::Discovered;
use dpop::{Dpop, Party};
use registration::{Identity, Registered};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use std::sync::{Arc, Mutex};
use store::Saved;
use token::{Grant, TokenEndpoint, Tokens};
use url::Url;

/// Gets and keeps the tokens a client presents to one protected server. Its `Debug` says
/// how it gets them, never a token, a secret or an assertion.
pub struct Authorizer {
    http: reqwest::Client,
    flow: Flow,
    identity: Identity,
    store: TokenStore,
    /// The token requests carry now.
    current: Mutex<Option<Current>>,
    /// The key DPoP-bound tokens are bound to (none when none could be made).
    dpop: Option<Dpop>,
    /// The last authorization, held while a challenge is answered (one at a time).
    saved: tokio::sync::Mutex<Option<Saved>>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let flow = match &self.flow {
            Flow::Person(_) => "a person's authorization",
            Flow::Machine { .. } => "client credentials",
            Flow::JwtBearer(_) => "a JWT assertion",
        };
        let holding = self.current.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).is_some();
        f.debug_struct("Authorizer")
            .field("flow", &flow)
            .field("client_name", &self.identity.name)
            .field("store", &self.store)
            .field("holding_a_token", &holding)
            .field("dpop", &self.dpop.is_some())
            .finish_non_exhaustive()
    }
}

/// The access token in use.
struct Current {
    /// The resource it is for.
    resource: String,
    token: String,
    /// Whether it is bound to the DPoP key (presented as `DPoP`, not `Bearer`).
    dpop: bool,
}

impl Current {
    fn of(saved: &Saved) -> Current {
        let tokens = &saved.tokens;
        Current { resource: saved.resource.clone(), token: tokens.access_token.clone(), dpop: tokens.is_dpop() }
    }
}

/// How the client gets a token.
enum Flow {
    /// A person authorizes through this user agent.
    Person(Arc<dyn UserAgent>),
    /// The client's own credentials, a machine's (the client is pre-registered).
    Machine { key: Option<SigningKey>, method: AuthMethod },
    /// A JWT assertion from elsewhere (the client is pre-registered).
    JwtBearer(Assertion),
}

impl Authorizer {
    /// Tokens a person authorizes through `agent` (the authorization code flow). The client
    /// registers dynamically unless told otherwise ([`Authorizer::metadata_document`],
    /// [`Authorizer::pre_registered`]).
    pub fn new(agent: Arc<dyn UserAgent>) -> Authorizer {
        Authorizer::with_flow(Flow::Person(agent), None)
    }

    /// Tokens for the client itself (the client credentials grant), which authenticates
    /// with `client_secret_basic`.
    pub fn client_secret(client_id: &str, client_secret: &str) -> Authorizer {
        let flow = Flow::Machine { key: None, method: AuthMethod::ClientSecretBasic };
        Authorizer::with_flow(flow, Some((client_id.to_owned(), Some(client_secret.to_owned()))))
    }

    /// Tokens for the client itself (the client credentials grant), which authenticates
    /// with `private_key_jwt`, signing with `key`.
    pub fn private_key_jwt(client_id: &str, key: SigningKey) -> Authorizer {
        let flow = Flow::Machine { key: Some(key), method: AuthMethod::PrivateKeyJwt };
        Authorizer::with_flow(flow, Some((client_id.to_owned(), None)))
    }

    /// Tokens for an assertion (the JWT-bearer grant): a workload's identity token, or an
    /// ID-JAG an enterprise's identity provider issues. The client is `client_id`, with
    /// its secret if it is confidential.
    pub fn jwt_bearer(client_id: &str, client_secret: Option<&str>, assertion: Assertion) -> Authorizer {
        let pre_registered = Some((client_id.to_owned(), client_secret.map(str::to_owned)));
        Authorizer::with_flow(Flow::JwtBearer(assertion), pre_registered)
    }

    fn with_flow(flow: Flow, pre_registered: Option<(String, Option<String>)>) -> Authorizer {
        Authorizer {
            http: reqwest::Client::new(),
            flow,
            identity: Identity { name: "duet".to_owned(), metadata_document: None, pre_registered },
            store: TokenStore::Memory,
            current: Mutex::new(None),
            dpop: Dpop::new().ok(),
            saved: tokio::sync::Mutex::new(None),
        }
    }

    /// The `client_name` the client registers with (`duet` unless told).
    pub fn client_name(mut self, name: &str) -> Authorizer {
        self.identity.name = name.to_owned();
        self
    }

    /// The URL of the client's metadata document, its client ID where the authorization
    /// server accepts those (instead of registering).
    pub fn metadata_document(mut self, url: &str) -> Authorizer {
        self.identity.metadata_document = Some(url.to_owned());
        self
    }

    /// Credentials registered with the authorization server beforehand (a public client
    /// has no secret): no registration.
    pub fn pre_registered(mut self, client_id: &str, client_secret: Option<&str>) -> Authorizer {
        self.identity.pre_registered = Some((client_id.to_owned(), client_secret.map(str::to_owned)));
        self
    }

    /// Keeps the tokens in `store`, starting from what it holds.
    pub fn store(mut self, store: TokenStore) -> Authorizer {
        let saved = store.load();
        *self.current.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()) = saved.as_ref().map(Current::of);
        *self.saved.get_mut() = saved;
        self.store = store;
        self
    }

    /// Talks to authorization servers with `http` (its proxies, timeouts...).
    pub fn http_client(mut self, http: reqwest::Client) -> Authorizer {
        self.http = http;
        self
    }

    /// The access token for the server at `url`, if there is one.
    pub(crate) fn bearer(&self, url: &Url) -> Option<String> {
        let current = self.current.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        current
            .as_ref()
            .filter(|current| discovery::covers(&current.resource, url))
            .map(|current| current.token.clone())
    }

    /// The headers a `method` request to the server at `url` carries: `Authorization`, and
    /// `DPoP` with a fresh proof for a bound token.
    pub(crate) fn headers(&self, url: &Url, method: &str) -> Vec<(&'static str, String)> {
        let current = self.current.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(current) = current.as_ref().filter(|current| discovery::covers(&current.resource, url)) else {
            return Vec::new();
        };
        match self.dpop.as_ref().filter(|_| current.dpop) {
            Some(dpop) => {
                let proof = dpop.proof(Party::ResourceServer, method, url.as_str(), Some(&current.token));
                let mut headers = vec![("authorization", format!("DPoP {}", current.token))];
                headers.extend(proof.ok().map(|proof| (dpop::DPOP, proof)));
                headers
            }
            None => vec![("authorization", format!("Bearer {}", current.token))],
        }
    }

    /// Answers the server at `url` refusing a request that carried token `sent` with
    /// `status` and `headers`: whether the request is worth retrying (with the token there
    /// is now).
    pub(crate) async fn answer(
        &self,
        url: &Url,
        status: StatusCode,
        headers: &HeaderMap,
        sent: Option<&str>,
    ) -> Result<bool, Error> {
        let challenge = Challenge::of(headers);
        if let Some(dpop) = &self.dpop
            && challenge.error.as_deref() == Some("use_dpop_nonce")
            && let Some(nonce) = dpop::nonce_of(headers)
        {
            dpop.set_nonce(Party::ResourceServer, &nonce);
            return Ok(true);
        }
        let mut saved = self.saved.lock().await;
        if self.bearer(url).as_deref() != sent {
            return Ok(true);
        }
        let held = saved.as_ref().and_then(|saved| saved.tokens.scope.clone());
        if status == StatusCode::FORBIDDEN
            && (!challenge.insufficient_scope() || scope::covers(held.as_deref(), challenge.scope.as_deref()))
        {
            return Ok(false);
        }
        let discovered = discovery::discover(&self.http, url, &challenge).await?;
        let known = saved
            .take()
            .filter(|saved| saved.issuer == discovered.server.issuer && saved.resource == discovered.resource);
        if status == StatusCode::UNAUTHORIZED
            && let Some(known) = &known
            && let Some(tokens) = self.refreshed(&discovered, known).await
        {
            self.keep(&mut saved, Saved { tokens, ..known.clone() })?;
            return Ok(true);
        }
        let before = known.as_ref().and_then(|known| known.tokens.scope.as_deref());
        let refreshable = matches!(self.flow, Flow::Person(_));
        let scope = scope::choose(challenge.scope.as_deref(), &discovered, before, refreshable);
        let client = match known {
            Some(known) => known.client,
            None => self.client_at(&discovered).await?,
        };
        let tokens = self.tokens(&discovered, &client, scope.as_deref()).await?;
        let issuer = discovered.server.issuer.clone();
        self.keep(&mut saved, Saved { issuer, resource: discovered.resource, client, tokens })?;
        Ok(true)
    }

    /// The client as the discovered authorization server knows it.
    async fn client_at(&self, discovered: &Discovered) -> Result<Registered, Error> {
        match &self.flow {
            Flow::Person(agent) => {
                registration::register(&self.http, &discovered.server, &self.identity, &agent.redirect_uri()).await
            }
            Flow::Machine { .. } | Flow::JwtBearer(_) => {
                let (client_id, client_secret) = self.identity.pre_registered.clone().unwrap_or_default();
                let method = match &self.flow {
                    Flow::Machine { method, .. } => *method,
                    _ => AuthMethod::for_server(&discovered.server, client_secret.is_some()),
                };
                Ok(Registered { client_id, client_secret, method })
            }
        }
    }

    /// New tokens for `client` with `scope`: a person's authorization, or the client's own.
    async fn tokens(&self, discovered: &Discovered, client: &Registered, scope: Option<&str>) -> Result<Tokens, Error> {
        let (server, resource) = (&discovered.server, discovered.resource.as_str());
        let endpoint = self.token_endpoint(discovered, client);
        match &self.flow {
            Flow::Person(agent) => {
                let code =
                    authorization_code::authorize(agent.as_ref(), server, &client.client_id, resource, scope).await?;
                let grant = Grant::Code {
                    code: &code.code,
                    redirect_uri: &agent.redirect_uri(),
                    verifier: &code.pkce.verifier,
                };
                token::request(&endpoint, grant, resource, scope).await
            }
            Flow::Machine { .. } => token::request(&endpoint, Grant::ClientCredentials, resource, scope).await,
            Flow::JwtBearer(assertion) => {
                let assertion = assertion.for_server(&self.http, &server.issuer, resource).await?;
                token::request(&endpoint, Grant::JwtBearer(&assertion), resource, scope).await
            }
        }
    }

    /// `client` at the discovered token endpoint, with its private key if it signs, and the
    /// DPoP key if the authorization server binds tokens to one the protected server takes.
    fn token_endpoint<'a>(&'a self, discovered: &'a Discovered, client: &'a Registered) -> TokenEndpoint<'a> {
        let server = &discovered.server;
        let key = match &self.flow {
            Flow::Machine { key, .. } => key.as_ref(),
            Flow::Person(_) | Flow::JwtBearer(_) => None,
        };
        let dpop = self.dpop.as_ref().filter(|_| server.supports_dpop() && discovered.takes_dpop);
        TokenEndpoint { http: &self.http, server, client, key, dpop }
    }

    /// `known`'s tokens refreshed, when it has a refresh token the server still honours.
    async fn refreshed(&self, discovered: &Discovered, known: &Saved) -> Option<Tokens> {
        let refresh = known.tokens.refresh_token.as_deref()?;
        let endpoint = self.token_endpoint(discovered, &known.client);
        let scope = known.tokens.scope.as_deref();
        let mut tokens = token::request(&endpoint, Grant::Refresh(refresh), &discovered.resource, scope).await.ok()?;
        tokens.refresh_token = tokens.refresh_token.or_else(|| Some(refresh.to_owned()));
        Some(tokens)
    }

    /// Makes `new` the authorization in use: its token on the next requests, kept in the store.
    fn keep(&self, saved: &mut Option<Saved>, new: Saved) -> Result<(), Error> {
        *self.current.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(Current::of(&new));
        self.store.save(&new)?;
        *saved = Some(new);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_secret() {
        let machine = format!("{:?}", Authorizer::client_secret("client-7", "s3cr3t-value"));
        assert!(machine.contains("client credentials") && !machine.contains("s3cr3t-value"), "{machine}");
        let assertion = Assertion::Given("eyJhbGciOi.secret.jwt".into());
        let bearer =
            format!("{:?} {assertion:?}", Authorizer::jwt_bearer("client-7", Some("s3cr3t-value"), assertion.clone()));
        assert!(!bearer.contains("secret.jwt") && !bearer.contains("s3cr3t-value"), "{bearer}");
    }
}
