//! The one error a client's request can end in, saying what went wrong: the transport,
//! the server's JSON-RPC error, or a server that broke the protocol.

use duet_wire::jsonrpc::RpcError;
use std::time::Duration;

/// Why a request (or connecting) failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The transport failed: spawning or talking to the process, the connection, the HTTP
    /// exchange.
    #[error("transport: {0}")]
    Transport(String),
    /// The HTTP server answered a failure status without a JSON-RPC error in its body.
    #[error("HTTP status {status}: {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The start of the body, as text.
        body: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("the server answered error {}: {}", .0.code, .0.message)]
    Rpc(RpcError),
    /// The server broke the protocol: an answer that does not decode, is too large, is of a
    /// revision the client does not speak, or does not match what the server listed.
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// The caller's handler did not answer what the server asked (or the client has none
    /// for it): the request that needed the answer fails.
    #[error("no answer to the server's {method}: {}", .error.message)]
    Handler {
        /// What the server asked (`elicitation/create`...).
        method: String,
        /// Why there is no answer.
        error: RpcError,
    },
    /// The request could not be made as given (its arguments are not an object...).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// Getting a token from the server's authorization server failed, or what it answered
    /// is not to be trusted (another resource's metadata, another issuer...).
    #[error("authorization: {0}")]
    Authorization(String),
    /// A task did not end within the wait the caller allowed
    /// ([`TaskOptions::max_wait`](crate::TaskOptions::max_wait)); it may still run on the
    /// server, under its id.
    #[error("task {task_id} did not end within {waited:?}")]
    TaskWait {
        /// The task's id, to poll or cancel it later.
        task_id: String,
        /// How long the client waited.
        waited: Duration,
    },
    /// The connection is gone: the client closed it, or the server went away.
    #[error("the connection is closed")]
    Closed,
}

impl Error {
    /// The JSON-RPC error code, when the server answered with one.
    pub fn code(&self) -> Option<i64> {
        match self {
            Error::Rpc(error) => Some(error.code),
            _ => None,
        }
    }

    /// A transport error from anything that says what went wrong.
    pub(crate) fn transport(what: impl std::fmt::Display) -> Error {
        Error::Transport(what.to_string())
    }

    /// A transport error from an error and the causes under it, each after a colon (an
    /// HTTP client's "error sending request" says why only in its causes).
    pub(crate) fn transport_with_causes(error: &dyn std::error::Error) -> Error {
        let mut text = error.to_string();
        let mut cause = error.source();
        while let Some(under) = cause {
            text.push_str(": ");
            text.push_str(&under.to_string());
            cause = under.source();
        }
        Error::Transport(text)
    }
}
