//! What every part of the HTTP endpoint shares: the engine, the settings, the gates' state,
//! the sessions held here and the resumable streams ([`HttpShared`]), and a request as it
//! leaves the gates ([`Gated`]). Handlers take it; nothing here knows a handler.

use super::answers::http_error;
use super::body::Body;
use super::config::HttpConfig;
use super::forwarded::CanonicalHosts;
use super::guard::OriginHostGuard;
use super::resume::Streams;
use crate::auth::{ChallengeError, ProtectedResource, bearer};
use crate::backplane::Subscriber;
use crate::layer::Principal;
use crate::protocol::Server;
use crate::protocol::session::table::SessionTable;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use std::borrow::Cow;
use std::sync::Arc;

pub(crate) struct HttpShared {
    pub server: Server,
    pub config: HttpConfig,
    pub guard: OriginHostGuard,
    pub sessions: Arc<SessionTable>,
    /// The hosts a trusted proxy may make a request's canonical URI with.
    pub canonical_hosts: CanonicalHosts,
    /// The resumable streams this replica writes or reads.
    pub(super) streams: Arc<Streams>,
    /// Receives what other replicas tell this one's sessions; kept alive here, the bus
    /// holds it weakly.
    pub(super) _routed: Arc<Subscriber>,
}

/// A request after the gates: its head, who sends it, and its body; and the canonical URI
/// it was made to when a trusted proxy says it differs from the configured one.
pub(crate) struct Gated<B> {
    pub parts: http::request::Parts,
    pub principal: Arc<Principal>,
    pub body: B,
    pub canonical: Option<String>,
}

impl HttpShared {
    /// The protected resource a request sees: the configured one, or, when a trusted proxy
    /// forwarded the name the client used and the canonical URI follows it, the same at
    /// `canonical`.
    pub(super) fn resource_at(&self, canonical: Option<&str>) -> Option<Cow<'_, ProtectedResource>> {
        let configured = self.config.resource.as_ref()?;
        Some(match canonical {
            Some(url) => Cow::Owned(ProtectedResource { resource: url.to_string(), ..configured.clone() }),
            None => Cow::Borrowed(configured),
        })
    }

    /// 403 `insufficient_scope`, naming every scope the operation needs in one challenge,
    /// for a request made to `canonical` (see [`Gated`]).
    pub(crate) fn insufficient_scope(
        &self,
        required: &[String],
        what: &str,
        canonical: Option<&str>,
    ) -> Response<Body> {
        let description = format!("{what} requires the scopes: {}", required.join(" "));
        let mut response = http_error(StatusCode::FORBIDDEN, &format!("Forbidden: {description}"));
        let challenge = match self.resource_at(canonical) {
            Some(resource) => resource.challenge(Some(ChallengeError::InsufficientScope(&description)), Some(required)),
            None => bearer(&[
                ("realm", "duet".into()),
                ("error", "insufficient_scope".into()),
                ("error_description", description.clone()),
                ("scope", required.join(" ")),
            ]),
        };
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}
