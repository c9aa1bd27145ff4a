//! duet as an OAuth 2.1 resource server. [`OAuth`] validates access tokens issued by one
//! authorization server: JWTs locally against its JWKS (cached, refreshed on an unknown key
//! id at a bounded rate), opaque tokens through RFC 7662 introspection (with a short cache).
//! Either way a token must name this server's canonical URI as its audience (RFC 8707): a
//! token minted for another resource is refused, so it cannot be replayed here, and duet
//! never forwards a caller's token. [`ProtectedResource`](crate::auth::ProtectedResource)
//! publishes the Protected Resource Metadata and builds the challenges.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use duet::auth::oauth::{OAuth, OAuthConfig};
//! let oauth = OAuth::discover(OAuthConfig::new("https://auth.example.com")).await?;
//! # Ok(()) }
//! ```

pub mod discovery;
mod introspection;
mod jwks;
mod jwt;

pub use discovery::AuthorizationServerMetadata;
pub use jsonwebtoken::Algorithm;

use super::{AuthError, Authenticator};
use crate::layer::Principal;
use async_trait::async_trait;
use introspection::Introspector;
use jwks::Jwks;
use serde_json::{Map, Value};
use std::fmt;
use std::time::Duration;

/// How duet authenticates to the introspection endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct IntrospectionConfig {
    /// `None`: the `introspection_endpoint` of the authorization server's metadata.
    pub endpoint: Option<String>,
    /// duet's client id at the authorization server.
    pub client_id: String,
    /// Its secret (HTTP Basic authentication).
    pub client_secret: String,
}

impl fmt::Debug for IntrospectionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionConfig")
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .finish()
    }
}

/// Settings of the token validator.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// The authorization server's issuer identifier; tokens must carry exactly this `iss`.
    pub issuer: String,
    /// `None`: the `jwks_uri` of the authorization server's metadata.
    pub jwks_uri: Option<String>,
    /// Opaque tokens are introspected when set.
    pub introspection: Option<IntrospectionConfig>,
    /// Clock skew tolerated on `exp` and `nbf`.
    pub leeway: Duration,
    /// Signature algorithms accepted.
    pub algorithms: Vec<Algorithm>,
    /// The least time between two JWKS fetches caused by unknown key ids.
    pub jwks_min_refresh: Duration,
    /// Keys older than this are fetched again on use.
    pub jwks_max_age: Duration,
    /// How long an introspection answer is reused (never past the token's `exp`).
    pub introspection_cache_ttl: Duration,
    /// Introspection calls to the authorization server at once; a token not in the cache
    /// waits for its turn past them, so however many made-up tokens arrive, the
    /// authorization server sees at most this many calls from duet at a time.
    pub max_introspections: usize,
    /// Time limit of each call to the authorization server.
    pub timeout: Duration,
    /// Whether `http://` authorization-server URLs off the loopback interface are refused.
    pub require_https: bool,
}

impl OAuthConfig {
    /// Tokens of `issuer`, with its metadata's endpoints and the default limits.
    pub fn new(issuer: impl Into<String>) -> Self {
        OAuthConfig {
            issuer: issuer.into(),
            jwks_uri: None,
            introspection: None,
            leeway: Duration::from_secs(30),
            algorithms: vec![
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
                Algorithm::ES256,
                Algorithm::ES384,
                Algorithm::EdDSA,
            ],
            jwks_min_refresh: Duration::from_secs(10),
            jwks_max_age: Duration::from_secs(3600),
            introspection_cache_ttl: Duration::from_secs(30),
            max_introspections: 16,
            timeout: Duration::from_secs(10),
            require_https: true,
        }
    }
}

/// Why the validator cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthSetupError {
    /// The configuration is not usable (a URL that is not https, no way to check tokens).
    #[error("{0}")]
    Config(String),
    /// What the authorization server publishes could not be fetched or used (its metadata,
    /// its keys).
    #[error("{0}")]
    Discovery(String),
}

/// Validates access tokens of one authorization server.
pub struct OAuth {
    issuer: String,
    jwks: Option<Jwks>,
    introspection: Option<Introspector>,
    leeway: Duration,
    algorithms: Vec<Algorithm>,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("issuer", &self.issuer)
            .field("jwks_uri", &self.jwks.as_ref().map(Jwks::uri))
            .field("introspection_endpoint", &self.introspection.as_ref().map(Introspector::endpoint))
            .finish()
    }
}

/// Checks an authorization-server URL: absolute, and https unless on the loopback
/// interface (or `require_https` is off).
pub(crate) fn check_server_url(what: &str, url: &str, require_https: bool) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{what} {url:?} is not an absolute URL: {e}"))?;
    let Some(host) = parsed.host_str() else { return Err(format!("{what} {url:?} has no host")) };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback =
        bare.eq_ignore_ascii_case("localhost") || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback || !require_https => Ok(()),
        "http" => Err(format!("{what} {url:?} must use https (plain http is accepted on the loopback interface only)")),
        other => Err(format!("{what} {url:?} must be an https URL, not {other}:")),
    }
}

impl OAuth {
    /// A validator with every endpoint given in `config` (no metadata fetched): needs a
    /// `jwks_uri`, an introspection endpoint, or both. Keys are fetched on first use.
    pub fn new(config: OAuthConfig) -> Result<OAuth, OAuthSetupError> {
        let jwks_uri = config.jwks_uri.clone();
        let introspection_endpoint = config.introspection.as_ref().and_then(|i| i.endpoint.clone());
        Self::build(config, jwks_uri, introspection_endpoint)
    }

    /// A validator whose missing endpoints come from the authorization server's metadata
    /// (RFC 8414 or OpenID Connect Discovery). The keys are fetched now, so a wrong URL
    /// fails here rather than on the first request.
    pub async fn discover(config: OAuthConfig) -> Result<OAuth, OAuthSetupError> {
        check_server_url("the issuer", &config.issuer, config.require_https).map_err(OAuthSetupError::Config)?;
        let wants_endpoint = config.introspection.as_ref().is_some_and(|i| i.endpoint.is_none());
        let mut jwks_uri = config.jwks_uri.clone();
        let mut introspection_endpoint = config.introspection.as_ref().and_then(|i| i.endpoint.clone());
        if jwks_uri.is_none() || wants_endpoint {
            let client = discovery::client(config.timeout).map_err(OAuthSetupError::Config)?;
            let metadata = discovery::discover(&client, &config.issuer).await.map_err(OAuthSetupError::Discovery)?;
            jwks_uri = jwks_uri.or(metadata.jwks_uri);
            if wants_endpoint {
                introspection_endpoint = Some(metadata.introspection_endpoint.ok_or_else(|| {
                    OAuthSetupError::Discovery(format!(
                        "the authorization server {} publishes no introspection_endpoint: name one with --oauth-introspection-url",
                        config.issuer
                    ))
                })?);
            }
        }
        let oauth = Self::build(config, jwks_uri, introspection_endpoint)?;
        if let Some(jwks) = &oauth.jwks {
            let count =
                jwks.load().await.map_err(|e| OAuthSetupError::Discovery(format!("cannot load the JWKS: {e}")))?;
            if count == 0 {
                return Err(OAuthSetupError::Discovery(format!(
                    "the JWKS at {} holds no usable signing key",
                    jwks.uri()
                )));
            }
        }
        Ok(oauth)
    }

    fn build(
        config: OAuthConfig,
        jwks_uri: Option<String>,
        introspection_endpoint: Option<String>,
    ) -> Result<OAuth, OAuthSetupError> {
        let https = config.require_https;
        check_server_url("the issuer", &config.issuer, https).map_err(OAuthSetupError::Config)?;
        let client = discovery::client(config.timeout).map_err(OAuthSetupError::Config)?;
        let jwks = match jwks_uri {
            Some(uri) => {
                check_server_url("the JWKS URL", &uri, https).map_err(OAuthSetupError::Config)?;
                Some(Jwks::new(uri, client.clone(), config.jwks_min_refresh, config.jwks_max_age))
            }
            None => None,
        };
        let introspection = match (config.introspection, introspection_endpoint) {
            (Some(creds), Some(endpoint)) => {
                check_server_url("the introspection URL", &endpoint, https).map_err(OAuthSetupError::Config)?;
                if creds.client_id.is_empty() || creds.client_secret.is_empty() {
                    return Err(OAuthSetupError::Config("introspection needs a client id and a client secret".into()));
                }
                if config.max_introspections == 0 {
                    return Err(OAuthSetupError::Config("introspection needs at least one call at a time".into()));
                }
                let bounds = (config.introspection_cache_ttl, config.max_introspections);
                Some(Introspector::new(endpoint, creds.client_id, creds.client_secret, client, bounds))
            }
            (Some(_), None) => {
                return Err(OAuthSetupError::Config("introspection needs the introspection endpoint's URL".into()));
            }
            (None, _) => None,
        };
        if jwks.is_none() && introspection.is_none() {
            return Err(OAuthSetupError::Config(format!(
                "no way to validate tokens of {}: it publishes no jwks_uri (name one with --oauth-jwks-url) and introspection is not configured",
                config.issuer
            )));
        }
        Ok(OAuth { issuer: config.issuer, jwks, introspection, leeway: config.leeway, algorithms: config.algorithms })
    }

    /// The authorization server's issuer identifier.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Where its signing keys are fetched, when JWTs are verified here.
    pub fn jwks_uri(&self) -> Option<&str> {
        self.jwks.as_ref().map(Jwks::uri)
    }

    /// Where tokens are introspected, when they are.
    pub fn introspection_endpoint(&self) -> Option<&str> {
        self.introspection.as_ref().map(Introspector::endpoint)
    }

    /// The claims of a valid token: verified locally when it is a JWT and keys are known,
    /// introspected otherwise.
    pub async fn validate(&self, token: &str, resource: &str) -> Result<(Map<String, Value>, &'static str), AuthError> {
        match (&self.jwks, &self.introspection) {
            (Some(jwks), _) if jwt::looks_like_jwt(token) => {
                let expect = jwt::Expectations {
                    issuer: &self.issuer,
                    resource,
                    leeway: self.leeway,
                    algorithms: &self.algorithms,
                };
                jwt::verify(jwks, token, &expect).await.map(|c| (c, "jwt"))
            }
            (_, Some(introspector)) => {
                let expect = introspection::Expectations { issuer: &self.issuer, resource, leeway: self.leeway };
                introspector.check(token, &expect).await.map(|c| (c, "opaque"))
            }
            (Some(_), None) => Err(AuthError::invalid("malformed token")),
            (None, None) => Err(AuthError::invalid("token validation is not configured")),
        }
    }
}

/// The scopes of a token: `scope` (space-separated, RFC 9068 / RFC 7662) or `scp`.
pub(crate) fn scopes_of(claims: &Map<String, Value>) -> Vec<String> {
    let mut scopes: Vec<String> = match claims.get("scope").or_else(|| claims.get("scp")) {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    scopes.sort();
    scopes.dedup();
    scopes
}

/// The principal a token of `issuer` stands for: its subject (`sub`), or, for a token that
/// names only a client (`client_id`, a client acting for itself), that client, each qualified
/// by the issuer ([`Principal::oauth_subject`], [`Principal::oauth_client`]); with roles
/// `default` plus its scopes, and attributes `auth: "oauth"`, `scopes`, `iss`, `client_id`
/// and `token_format`. Never the token. A token that names neither stands for nobody, and is
/// refused rather than pooled with others under a shared id.
pub fn principal_from_claims(
    issuer: &str,
    claims: &Map<String, Value>,
    token_format: &str,
) -> Result<Principal, AuthError> {
    let text = |key: &str| claims.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    let scopes = scopes_of(claims);
    let principal = match (text("sub"), text("client_id")) {
        (Some(subject), _) => Principal::oauth_subject(issuer, subject, scopes.iter().cloned()),
        (None, Some(client)) => Principal::oauth_client(issuer, client, scopes.iter().cloned()),
        (None, None) => return Err(AuthError::invalid("token names no subject: it has neither sub nor client_id")),
    };
    let mut principal = principal
        .with_attribute("auth", "oauth")
        .with_attribute("scopes", scopes)
        .with_attribute("token_format", token_format);
    for key in ["iss", "client_id"] {
        if let Some(value) = text(key) {
            principal = principal.with_attribute(key, value);
        }
    }
    Ok(principal)
}

#[async_trait]
impl Authenticator for OAuth {
    async fn authenticate(&self, token: &str, resource: Option<&str>) -> Result<Principal, AuthError> {
        let Some(resource) = resource.filter(|r| !r.is_empty()) else {
            // Without a canonical URI no audience can be checked, and no token is accepted.
            return Err(AuthError::unavailable("this server has no canonical resource URI configured"));
        };
        let (claims, format) = self.validate(token, resource).await?;
        principal_from_claims(&self.issuer, &claims, format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn principals_carry_scopes_never_tokens() {
        let from =
            |claims: Value, format| principal_from_claims("https://as", claims.as_object().expect("object"), format);
        let claims = json!({"sub": "svc", "client_id": "c1", "iss": "https://as", "scope": "b a  a", "jti": "x"});
        let p = from(claims, "jwt").expect("a subject");
        assert_eq!(p.id, "oauth:https://as#svc");
        assert!(p.has_role("default") && p.has_role("a") && p.has_role("b"));
        assert_eq!(p.attributes["scopes"], json!(["a", "b"]));
        assert_eq!(p.attributes["client_id"], json!("c1"));
        let client_only = from(json!({"client_id": "c1", "scp": ["x"]}), "opaque").map(|p| p.id);
        assert_eq!(client_only.as_deref(), Ok("oauth-client:https://as#c1"));
        let nobody = AuthError::invalid("token names no subject: it has neither sub nor client_id");
        assert_eq!(from(json!({"scope": "x"}), "jwt"), Err(nobody.clone()));
        assert_eq!(from(json!({"sub": "", "client_id": 7}), "jwt"), Err(nobody));
    }

    #[test]
    fn server_urls_need_https_off_loopback() {
        assert!(check_server_url("the issuer", "https://as.example.com", true).is_ok());
        assert!(check_server_url("the issuer", "http://127.0.0.1:9000", true).is_ok());
        assert!(check_server_url("the issuer", "http://[::1]:9000", true).is_ok());
        assert!(check_server_url("the issuer", "http://localhost:9000", true).is_ok());
        let plain = check_server_url("the issuer", "http://as.example.com", true).err().unwrap_or_default();
        assert!(plain.contains("must use https"), "{plain}");
        assert!(check_server_url("the issuer", "http://as.example.com", false).is_ok());
        assert!(check_server_url("the issuer", "as.example.com", true).is_err());
    }

    #[test]
    fn setup_needs_a_way_to_validate() {
        let none = OAuth::new(OAuthConfig::new("https://as.example.com")).err().map(|e| e.to_string());
        assert!(none.as_deref().is_some_and(|e| e.contains("no way to validate tokens")), "{none:?}");
        let mut config = OAuthConfig::new("https://as.example.com");
        config.introspection = Some(IntrospectionConfig {
            endpoint: Some("https://as.example.com/introspect".into()),
            client_id: "rs".into(),
            client_secret: "hunter2".into(),
        });
        assert!(!format!("{config:?}").contains("hunter2"));
        let oauth = OAuth::new(config).expect("introspection only");
        assert_eq!(oauth.introspection_endpoint(), Some("https://as.example.com/introspect"));
        assert!(!format!("{oauth:?}").contains("hunter2"));
    }
}
