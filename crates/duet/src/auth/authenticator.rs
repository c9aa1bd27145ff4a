//! One question every bearer token answers: who does it stand for, here? Static tokens
//! ([`TokenAuth`](super::TokenAuth)) and OAuth access tokens ([`OAuth`](super::oauth::OAuth))
//! answer it behind the same trait, so the HTTP transport never knows which kind it holds;
//! [`AuthChain`] asks several in turn.
//!
//! A rejection says why in words a client may read (it becomes the `error_description` of
//! the 401 challenge) and never contains the token.

use crate::layer::Principal;
use async_trait::async_trait;
use std::fmt;
use std::sync::Arc;

/// Why a bearer token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The token is not valid for this server (unknown, expired, for another resource, badly
    /// signed ...): answered with 401 and `error="invalid_token"`.
    #[error("{0}")]
    Invalid(String),
    /// The token could not be checked (the authorization server or its keys are out of
    /// reach): answered with 503, so a client keeps its token and retries later.
    #[error("{0}")]
    Unavailable(String),
}

impl AuthError {
    /// The token is not good: answered with 401.
    pub fn invalid(reason: impl Into<String>) -> Self {
        AuthError::Invalid(reason.into())
    }

    /// The token could not be checked: answered with 503.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        AuthError::Unavailable(reason.into())
    }
}

/// Turns a bearer token into the principal it stands for.
#[async_trait]
pub trait Authenticator: Send + Sync + 'static {
    /// Validates `token` as presented to `resource`, the canonical URI of this server (the
    /// RFC 8707 resource, and so the audience a token must name), when one is configured.
    /// The returned principal never holds the token.
    async fn authenticate(&self, token: &str, resource: Option<&str>) -> Result<Principal, AuthError>;
}

/// Several authenticators asked in order; the first that accepts wins. When all refuse, the
/// last refusal is the answer, except that "could not check" outranks "invalid" (the token
/// may be good once the authorization server is back).
#[derive(Clone, Default)]
pub struct AuthChain {
    links: Vec<Arc<dyn Authenticator>>,
}

impl fmt::Debug for AuthChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthChain").field("links", &self.links.len()).finish()
    }
}

impl AuthChain {
    /// The chain with `link` asked last.
    pub fn with(mut self, link: Arc<dyn Authenticator>) -> Self {
        self.links.push(link);
        self
    }

    /// How many authenticators it asks.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether it asks none.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// The chain as one authenticator: itself, or its only link.
    pub fn into_authenticator(mut self) -> Option<Arc<dyn Authenticator>> {
        match self.links.len() {
            0 => None,
            1 => self.links.pop(),
            _ => Some(Arc::new(self)),
        }
    }
}

#[async_trait]
impl Authenticator for AuthChain {
    async fn authenticate(&self, token: &str, resource: Option<&str>) -> Result<Principal, AuthError> {
        let mut refusal = AuthError::invalid("unknown token");
        for link in &self.links {
            match link.authenticate(token, resource).await {
                Ok(principal) => return Ok(principal),
                Err(e @ AuthError::Unavailable(_)) => refusal = e,
                Err(e) if !matches!(refusal, AuthError::Unavailable(_)) => refusal = e,
                Err(_) => {}
            }
        }
        Err(refusal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::TokenAuth;

    struct Down;

    #[async_trait]
    impl Authenticator for Down {
        async fn authenticate(&self, _: &str, _: Option<&str>) -> Result<Principal, AuthError> {
            Err(AuthError::unavailable("authorization server unreachable"))
        }
    }

    #[tokio::test]
    async fn a_chain_asks_each_link_in_turn() {
        let tokens: Arc<dyn Authenticator> = Arc::new(TokenAuth::from_specs(["tok:analyst:alice"]).expect("spec"));
        let chain = AuthChain::default().with(Arc::new(Down)).with(tokens.clone());
        assert_eq!(chain.authenticate("tok", None).await.map(|p| p.id), Ok("token:alice".into()));
        assert_eq!(
            chain.authenticate("other", None).await,
            Err(AuthError::unavailable("authorization server unreachable"))
        );
        let only_tokens = AuthChain::default().with(tokens);
        assert!(matches!(only_tokens.authenticate("other", None).await, Err(AuthError::Invalid(_))));
        assert_eq!(AuthChain::default().into_authenticator().map(|_| ()), None);
    }
}
