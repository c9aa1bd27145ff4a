//! Who may call over HTTP. stdio trusts the local user; an HTTP endpoint has to decide
//! who is on the other end before any message is decoded. This module holds the static
//! bearer tokens (`--auth-token`) that map a secret to a [`Principal`](crate::layer::Principal).

pub mod resolver;
pub mod tokens;

pub use tokens::{TokenAuth, TokenSpec, TokenSpecError, bearer_token, parse_token_spec, parse_token_spec_with};
