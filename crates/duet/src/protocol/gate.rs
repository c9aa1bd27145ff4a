//! The gate every message passes on its way in, whichever transport carried it (stdio, a
//! Streamable HTTP POST, a legacy SSE POST, a POST another replica routed here): a batch no
//! longer than the server takes, then the principal's limits (`limits.rs`), then its trace
//! starts. What the gate refuses never reaches a session or a method; each transport says
//! so in its own way (over HTTP a status, 400 or 429; on stdio a JSON-RPC error line).
//!
//! Scopes are the engine's too, but not a step of the gate: the layer is wrapped in
//! [`ScopedLayer`](crate::auth::ScopedLayer), which refuses each call it does not allow on
//! every path, and [`Server::lacking_scopes`] names what a message lacks for a transport
//! that can ask the client to step up before anything runs (HTTP's 403 challenge).

use super::batch;
use super::limits::{self, InFlight};
use super::owed::Owed;
use super::shared::Server;
use crate::layer::Principal;
use crate::trace::{RequestTrace, TraceContext};
use duet_wire::jsonrpc::{Response, RpcError};
use duet_wire::message::Message;

/// A message through the gate: its trace, and the slots it holds in flight until dropped.
pub(crate) struct Admitted {
    pub trace: RequestTrace,
    pub in_flight: Option<InFlight>,
}

/// Why the gate turned a message away.
#[derive(Debug)]
pub(crate) enum Refused {
    /// A batch of more messages than the server takes, refused whole before any is counted.
    OverCap(RpcError),
    /// A single message over one of its principal's limits.
    Limited(limits::Refusal),
}

impl Refused {
    /// The JSON-RPC answer: the error, for the message's request when it is a single one.
    pub(crate) fn answer(&self, message: &Message) -> Response {
        match self {
            Refused::OverCap(error) => Response::error(None, error.clone()),
            Refused::Limited(refusal) => {
                crate::signals::rejected(429, "rate_limited");
                // The error answers the request of a single message; a batch's are answered
                // one by one (see `limits.rs`), so what refuses a batch whole names none.
                let id = match Owed::of(message) {
                    Owed::One(id) => Some(id),
                    Owed::Nothing | Owed::Batch(_) => None,
                };
                Response::error(id, refusal.error())
            }
        }
    }
}

/// What a message asks for that its principal's scopes do not cover: every scope the
/// message's operations need (so a client steps up once), and the first operation refused.
#[cfg(feature = "http")]
#[derive(Debug)]
pub(crate) struct LackingScopes {
    pub required: Vec<String>,
    /// The operation refused, e.g. `tool deploy`.
    pub what: String,
}

impl Server {
    /// Lets `message` from `principal` in, or says why not. `transport` gives the caller's
    /// trace context when the message's `_meta` has none (over HTTP, the headers'). A batch
    /// request over a limit is replaced by its error, which answers it, while the others
    /// run.
    pub(crate) fn admit(
        &self,
        principal: &Principal,
        message: &mut Message,
        transport: impl FnOnce() -> Option<TraceContext>,
    ) -> Result<Admitted, Refused> {
        if let Message::Batch(items) = &message
            && let Some(error) = batch::over_cap(items.len(), self.options().max_batch_items)
        {
            return Err(Refused::OverCap(error));
        }
        let in_flight = self.shared.limiter.admit(&principal.id, message).map_err(Refused::Limited)?;
        let trace = RequestTrace::start(self.options().tracer(), message, &principal.id, transport);
        Ok(Admitted { trace, in_flight })
    }

    /// What `message` asks for beyond `principal`'s scopes, under the server's scope map
    /// (`None` without one, or when everything is covered). Over HTTP only, whose 403 lets a
    /// client step up before anything runs.
    #[cfg(feature = "http")]
    pub(crate) fn lacking_scopes(&self, message: &Message, principal: &Principal) -> Option<LackingScopes> {
        let map = self.options().scopes.as_ref()?;
        let mut required: Vec<String> = Vec::new();
        let mut lacking: Option<(duet_wire::method::Primitive, &str)> = None;
        for (kind, name) in message.requests().filter_map(crate::auth::operation) {
            for scope in map.required(kind, name) {
                if !required.contains(scope) {
                    required.push(scope.clone());
                }
            }
            if lacking.is_none() && !map.allows(kind, name, principal) {
                lacking = Some((kind, name));
            }
        }
        let (kind, name) = lacking?;
        tracing::debug!(principal = %principal.id, %name, "refused for missing scopes");
        Some(LackingScopes { required, what: format!("{} {name}", kind.label()) })
    }
}
