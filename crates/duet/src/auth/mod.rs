//! Who may call over HTTP. stdio trusts the local user; an HTTP endpoint has to decide
//! who is on the other end before any message is decoded. Behind one [`Authenticator`]
//! trait: the static bearer tokens (`--auth-token`) that map a secret to a
//! [`Principal`](crate::layer::Principal), and OAuth access tokens ([`oauth`]) validated as
//! a resource server. [`scopes`] maps scopes to the primitives they open, and
//! [`ScopedLayer`] shows each principal only those.

pub mod authenticator;
pub mod oauth;
pub mod resolver;
mod scoped;
pub mod scopes;
pub mod tokens;

pub use authenticator::{AuthChain, AuthError, Authenticator};
pub use scoped::ScopedLayer;
pub use scopes::ScopeMap;
pub use tokens::{TokenAuth, TokenSpec, TokenSpecError, bearer_token, parse_token_spec, parse_token_spec_with};
