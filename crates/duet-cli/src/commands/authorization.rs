//! How `call`, `read` and the listings get past a server URL that asks for OAuth: the
//! options that pick duet-client's flow, turned into its `Authorizer`. A person authorizes
//! by default (the authorization URL printed on stderr, the browser's redirect awaited on
//! 127.0.0.1); `--client-id` names a client registered beforehand instead of registering
//! one; `--client-credentials` has a machine use that client's own credentials; and
//! `--token-file` keeps the tokens between runs. A secret is read from the environment
//! only, so it shows in no process list or shell history.

use crate::usage::Usage;
use duet_client::oauth::{Authorizer, Loopback, TokenStore};
use std::path::PathBuf;

/// The secret of the client `--client-id` names (only ever read from the environment).
pub(crate) const CLIENT_SECRET_ENV: &str = "DUET_CLIENT_SECRET";

/// The OAuth client options of the commands that talk to a server URL.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct AuthorizationArgs {
    /// A protected server's OAuth client registered beforehand with its authorization
    /// server (default: register one); its secret, if it has one, from DUET_CLIENT_SECRET.
    #[arg(long, value_name = "ID")]
    pub client_id: Option<String>,
    /// Get tokens with the --client-id client's own credentials (DUET_CLIENT_SECRET), no
    /// person and no browser involved: for machines.
    #[arg(long, requires = "client_id")]
    pub client_credentials: bool,
    /// Keep a protected server's tokens in this file (mode 0600), and use the ones it holds.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
}

impl AuthorizationArgs {
    /// The first of these options given, which only a server URL takes.
    pub(crate) fn first_given(&self) -> Option<&'static str> {
        [
            (self.client_id.is_some(), "--client-id"),
            (self.client_credentials, "--client-credentials"),
            (self.token_file.is_some(), "--token-file"),
        ]
        .into_iter()
        .find_map(|(given, option)| given.then_some(option))
    }

    /// The authorizer the options ask for, the client's secret read through `env`. `Err`
    /// with a usage error, or with the reason the loopback redirect cannot be listened for.
    pub(crate) async fn authorizer(&self, env: impl Fn(&str) -> Option<String>) -> Result<Authorizer, AuthorizerError> {
        let secret = env(CLIENT_SECRET_ENV).filter(|secret| !secret.is_empty());
        let authorizer = match (&self.client_id, self.client_credentials) {
            (Some(client_id), true) => {
                let secret = secret.ok_or_else(|| {
                    Usage(format!("--client-credentials needs the client's secret in {CLIENT_SECRET_ENV}"))
                })?;
                Authorizer::client_secret(client_id, &secret)
            }
            (client_id, _) => {
                let agent = Loopback::bind(0).await.map_err(|e| AuthorizerError::Loopback(e.to_string()))?;
                let authorizer = Authorizer::new(std::sync::Arc::new(agent));
                match client_id {
                    Some(client_id) => authorizer.pre_registered(client_id, secret.as_deref()),
                    None => authorizer,
                }
            }
        };
        Ok(match &self.token_file {
            Some(path) => authorizer.store(TokenStore::File(path.clone())),
            None => authorizer,
        })
    }
}

/// Why no authorizer was made.
#[derive(Debug)]
pub(crate) enum AuthorizerError {
    /// The options cannot work.
    Usage(Usage),
    /// The loopback port for the browser's redirect could not be listened on.
    Loopback(String),
}

impl From<Usage> for AuthorizerError {
    fn from(usage: Usage) -> AuthorizerError {
        AuthorizerError::Usage(usage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(client_id: Option<&str>, client_credentials: bool) -> AuthorizationArgs {
        AuthorizationArgs { client_id: client_id.map(str::to_owned), client_credentials, token_file: None }
    }

    #[tokio::test]
    async fn client_credentials_need_the_secret_from_the_environment() {
        let refused = args(Some("machine"), true).authorizer(|_| None).await;
        let Err(AuthorizerError::Usage(Usage(message))) = refused else { panic!("{refused:?}") };
        assert_eq!(message, "--client-credentials needs the client's secret in DUET_CLIENT_SECRET");
        let secret = |name: &str| (name == CLIENT_SECRET_ENV).then(|| "s".to_owned());
        assert!(args(Some("machine"), true).authorizer(secret).await.is_ok());
    }

    #[tokio::test]
    async fn a_person_authorizes_without_any_option() {
        assert_eq!(args(None, false).first_given(), None);
        assert!(args(None, false).authorizer(|_| None).await.is_ok());
        assert_eq!(args(Some("app"), false).first_given(), Some("--client-id"));
        assert!(args(Some("app"), false).authorizer(|_| None).await.is_ok());
    }
}
