//! Who may call, and what they may see. stdio trusts the local user; an HTTP endpoint has to
//! decide who is on the other end before any message is decoded. Behind one `Authenticator`
//! trait (the `http` feature): the static bearer tokens (`--auth-token`) that map a secret to
//! a [`Principal`](crate::layer::Principal), and OAuth access tokens (`oauth`, with the
//! `oauth` feature) validated as a resource server that publishes its `ProtectedResource`
//! metadata. [`ScopeMap`] maps scopes to the primitives they open, and [`ScopedLayer`] shows
//! each principal only those, on any transport.

#[cfg(feature = "http")]
mod authenticator;
#[cfg(feature = "oauth")]
pub mod oauth;
#[cfg(feature = "http")]
mod resolver;
#[cfg(feature = "http")]
mod resource;
mod scoped;
mod scopes;
#[cfg(feature = "http")]
mod tokens;

#[cfg(feature = "http")]
pub use authenticator::{AuthChain, AuthError, Authenticator};
#[cfg(feature = "http")]
pub use resolver::{PrincipalResolver, RequestInfo};
#[cfg(feature = "http")]
pub use resource::{ChallengeError, ProtectedResource, check_resource_uri};
pub use scoped::ScopedLayer;
pub(crate) use scopes::operation;
pub use scopes::{ScopeMap, ScopeMapError};
#[cfg(feature = "http")]
pub use tokens::{TokenAuth, TokenSpec, TokenSpecError, bearer_token, parse_token_spec, parse_token_spec_with};
#[cfg(feature = "http")]
pub(crate) use {
    resolver::resolve,
    resource::{bearer, endpoint_url},
};
