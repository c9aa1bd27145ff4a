//! `duet serve` as an OAuth resource server: the `--oauth-*` and `--scope-map` options,
//! checked and turned into the HTTP configuration (validator, Protected Resource Metadata,
//! scope map) and the scope-filtered layer. Everything that cannot work is refused at start
//! with a message that says why (exit 2): a bad URL, a missing credential, an authorization
//! server without metadata or keys, an unreadable scope map.

use crate::cli::Transport;
use crate::usage::Usage;
use duet::auth::oauth::{IntrospectionConfig, OAuth, OAuthConfig};
use duet::auth::{AuthChain, Authenticator, ScopeMap};
use duet::auth::{ProtectedResource, check_resource_uri};
use duet::transport::http::HttpConfig;
use std::path::PathBuf;
use std::sync::Arc;

/// The client id duet introspects tokens with.
pub(crate) const CLIENT_ID_ENV: &str = "DUET_OAUTH_CLIENT_ID";
/// Its secret (only ever read from the environment).
pub(crate) const CLIENT_SECRET_ENV: &str = "DUET_OAUTH_CLIENT_SECRET";

/// OAuth resource-server options of `duet serve` (HTTP transports only).
#[derive(clap::Args, Debug, Default)]
pub(crate) struct OAuthArgs {
    /// Accept OAuth access tokens issued by this authorization server (its issuer URL);
    /// serves Protected Resource Metadata naming it.
    #[arg(long, value_name = "URL")]
    pub oauth_issuer: Option<String>,
    /// The canonical URL of this server: the audience tokens must name (default: the URL
    /// duet listens at, e.g. http://127.0.0.1:8765/mcp).
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub oauth_audience: Option<String>,
    /// The authorization server's JWKS (default: `jwks_uri` from its metadata).
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub oauth_jwks_url: Option<String>,
    /// Introspect opaque tokens here (RFC 7662), authenticating with DUET_OAUTH_CLIENT_ID
    /// and DUET_OAUTH_CLIENT_SECRET (default with those set: `introspection_endpoint` from
    /// the metadata).
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub oauth_introspection_url: Option<String>,
    /// Introspection calls to the authorization server at once; a token not in the cache
    /// waits for its turn. [default: 16]
    #[arg(long, value_name = "N", requires = "oauth_issuer", value_parser = clap::value_parser!(u64).range(1..))]
    pub oauth_max_introspections: Option<u64>,
    /// A TOML file of the scopes each tool, prompt and resource needs.
    #[arg(long, value_name = "FILE")]
    pub scope_map: Option<PathBuf>,
}

impl OAuthArgs {
    fn first_given(&self) -> Option<&'static str> {
        [
            ("--oauth-issuer", self.oauth_issuer.is_some()),
            ("--oauth-audience", self.oauth_audience.is_some()),
            ("--oauth-jwks-url", self.oauth_jwks_url.is_some()),
            ("--oauth-introspection-url", self.oauth_introspection_url.is_some()),
            ("--oauth-max-introspections", self.oauth_max_introspections.is_some()),
            ("--scope-map", self.scope_map.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }
}

/// Introspection credentials from the environment: both or neither.
fn client_credentials(env: &impl Fn(&str) -> Option<String>) -> Result<Option<(String, String)>, Usage> {
    let read = |name: &str| env(name).filter(|v| !v.is_empty());
    match (read(CLIENT_ID_ENV), read(CLIENT_SECRET_ENV)) {
        (Some(id), Some(secret)) => Ok(Some((id, secret))),
        (None, None) => Ok(None),
        (Some(_), None) => Err(Usage(format!("{CLIENT_ID_ENV} is set but {CLIENT_SECRET_ENV} is not"))),
        (None, Some(_)) => Err(Usage(format!("{CLIENT_SECRET_ENV} is set but {CLIENT_ID_ENV} is not"))),
    }
}

fn unspecified(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_unspecified())
}

/// The validator's settings from the options, before anything is fetched.
fn oauth_config(args: &OAuthArgs, issuer: &str, env: &impl Fn(&str) -> Option<String>) -> Result<OAuthConfig, Usage> {
    let credentials = client_credentials(env)?;
    if args.oauth_introspection_url.is_some() && credentials.is_none() {
        return Err(Usage(format!(
            "--oauth-introspection-url needs the client credentials duet introspects with: set {CLIENT_ID_ENV} and {CLIENT_SECRET_ENV}"
        )));
    }
    let mut config = OAuthConfig::new(issuer);
    config.jwks_uri = args.oauth_jwks_url.clone();
    if let Some(n) = args.oauth_max_introspections {
        config.max_introspections = n as usize;
    }
    config.introspection = credentials.map(|(client_id, client_secret)| IntrospectionConfig {
        endpoint: args.oauth_introspection_url.clone(),
        client_id,
        client_secret,
    });
    Ok(config)
}

/// The canonical URI: `--oauth-audience`, or empty for "the URL duet binds" (which a
/// wildcard address cannot tell).
fn audience(args: &OAuthArgs, config: &HttpConfig) -> Result<String, Usage> {
    match &args.oauth_audience {
        Some(audience) => {
            check_resource_uri(audience).map_err(|e| Usage(format!("--oauth-audience: {e}")))?;
            Ok(audience.trim_end_matches('/').to_owned())
        }
        None if unspecified(&config.host) => Err(Usage(format!(
            "--oauth-audience is required with --host {}: the URL clients reach duet at (the audience of its tokens) cannot be derived from a wildcard address",
            config.host
        ))),
        None => Ok(String::new()),
    }
}

/// Applies the options: the OAuth validator (discovered now, so a wrong issuer fails at
/// start) to the configuration; and the scope map, loaded, for the engine's options.
pub(crate) async fn apply(
    args: &OAuthArgs,
    transport: Transport,
    http: Option<HttpConfig>,
) -> Result<(Option<Arc<ScopeMap>>, Option<HttpConfig>), Usage> {
    let Some(mut config) = http else {
        return match (transport, args.first_given()) {
            (_, Some(flag)) => Err(Usage(format!("{flag} applies to the HTTP transports; add --transport http"))),
            _ => Ok((None, None)),
        };
    };
    let scopes = match &args.scope_map {
        Some(path) => Some(Arc::new(ScopeMap::load(path).map_err(|e| Usage(e.to_string()))?)),
        None => None,
    };
    if let Some(issuer) = &args.oauth_issuer {
        let env = |name: &str| std::env::var(name).ok();
        let resource = audience(args, &config)?;
        let oauth = OAuth::discover(oauth_config(args, issuer, &env)?)
            .await
            .map_err(|e| Usage(format!("cannot use the authorization server {issuer}: {e}")))?;
        let oauth: Arc<dyn Authenticator> = Arc::new(oauth);
        config.auth = match config.auth.take() {
            Some(tokens) => AuthChain::default().with(tokens).with(oauth).into_authenticator(),
            None => Some(oauth),
        };
        let mut protected = ProtectedResource::new(resource, vec![issuer.clone()]);
        protected.scopes_supported = scopes.as_ref().map(|s| s.scopes_supported()).unwrap_or_default();
        config.resource = Some(protected);
    }
    Ok((scopes, Some(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(issuer: Option<&str>) -> OAuthArgs {
        OAuthArgs { oauth_issuer: issuer.map(str::to_owned), ..OAuthArgs::default() }
    }

    #[test]
    fn credentials_come_in_pairs() {
        let none = |_: &str| None;
        assert!(matches!(client_credentials(&none), Ok(None)));
        let only_id = |n: &str| (n == CLIENT_ID_ENV).then(|| "rs".to_owned());
        let error = client_credentials(&only_id).err().map(|u| u.0);
        assert_eq!(error.as_deref(), Some("DUET_OAUTH_CLIENT_ID is set but DUET_OAUTH_CLIENT_SECRET is not"));
        let mut with_url = args(Some("https://as.example.com"));
        with_url.oauth_introspection_url = Some("https://as.example.com/introspect".into());
        let error = oauth_config(&with_url, "https://as.example.com", &none).err().map(|u| u.0);
        assert!(error.is_some_and(|e| e.contains("set DUET_OAUTH_CLIENT_ID and DUET_OAUTH_CLIENT_SECRET")));
    }

    #[test]
    fn audience_needs_a_real_url() {
        let config = HttpConfig::default();
        assert_eq!(audience(&args(Some("https://as")), &config).ok(), Some(String::new()));
        let wildcard = HttpConfig { host: "0.0.0.0".into(), ..HttpConfig::default() };
        let error = audience(&args(Some("https://as")), &wildcard).err().map(|u| u.0);
        assert!(error.is_some_and(|e| e.contains("--oauth-audience is required with --host 0.0.0.0")));
        let mut bad = args(Some("https://as"));
        bad.oauth_audience = Some("mcp.example.com/mcp".into());
        assert!(audience(&bad, &config).is_err());
        bad.oauth_audience = Some("https://mcp.example.com/mcp/".into());
        assert_eq!(audience(&bad, &config).ok().as_deref(), Some("https://mcp.example.com/mcp"));
    }
}
