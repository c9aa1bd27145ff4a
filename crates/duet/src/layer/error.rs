//! Failures a layer reports to the engine, and the JSON-RPC codes they become.
//!
//! Tool execution failures are not here: a failing tool answers a result with
//! `isError: true`. These are protocol-level failures: an unknown primitive, bad arguments
//! to a resource or prompt, a denied or rate-limited caller, a capability the client lacks.

use duet_wire::jsonrpc::{RpcError, code};
use serde_json::Value;

/// Code of a request the caller may not make.
pub const ACCESS_DENIED: i64 = -31001;
/// Code of a request refused because the caller made too many.
pub const RATE_LIMITED: i64 = -31029;

/// Why a layer could not answer a request: each becomes a JSON-RPC error ([`LayerError::to_rpc`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LayerError {
    /// No such tool, prompt or resource (or the caller may not see it).
    #[error("{0}")]
    NotFound(String),
    /// The arguments (or a cursor) do not fit what the primitive takes: -32602.
    #[error("{message}")]
    InvalidArguments {
        /// What is wrong with them.
        message: String,
        /// Details for the client (the error's `data`).
        data: Option<Value>,
    },
    /// The caller may not make this request: [`ACCESS_DENIED`].
    #[error("{0}")]
    AccessDenied(String),
    /// The caller made too many requests: [`RATE_LIMITED`].
    #[error("{0}")]
    RateLimited(String),
    /// The request needs a client capability the request did not declare (2026: -32021).
    #[error("{message}")]
    MissingCapability {
        /// What the client lacks, in words.
        message: String,
        /// The capabilities needed, as a `ClientCapabilities` object.
        required: Value,
    },
    /// The layer failed: -32603.
    #[error("{0}")]
    Internal(String),
}

impl LayerError {
    /// Invalid arguments, with no details for the client.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        LayerError::InvalidArguments { message: message.into(), data: None }
    }

    /// The JSON-RPC error for this failure (the engine adjusts not-found per method and era).
    pub fn to_rpc(&self) -> RpcError {
        match self {
            LayerError::NotFound(m) => RpcError::invalid_params(m.clone()),
            LayerError::InvalidArguments { message, data } => {
                let e = RpcError::invalid_params(message.clone());
                match data {
                    Some(d) => e.with_data(d.clone()),
                    None => e,
                }
            }
            LayerError::AccessDenied(m) => RpcError::new(ACCESS_DENIED, m.clone()),
            LayerError::RateLimited(m) => RpcError::new(RATE_LIMITED, m.clone()),
            LayerError::MissingCapability { message, required } => {
                RpcError::new(code::MISSING_CLIENT_CAPABILITY, message.clone())
                    .with_data(serde_json::json!({ "requiredCapabilities": required }))
            }
            LayerError::Internal(m) => RpcError::new(code::INTERNAL_ERROR, m.clone()),
        }
    }
}

/// What a handler may fail with: any error. A [`LayerError`] keeps its meaning; anything
/// else becomes a tool execution error (tools) or an internal error (resources, prompts).
pub type HandlerError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Recovers a [`LayerError`] from a handler error, if that is what it is.
pub fn as_layer_error(error: &HandlerError) -> Option<&LayerError> {
    error.downcast_ref::<LayerError>()
}
