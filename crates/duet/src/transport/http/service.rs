//! The MCP endpoint as a `tower::Service`, so a program can mount it in its own axum or
//! hyper app; `listener` runs it standalone. This file is the dispatch order every request
//! passes: Host/Origin guard, OPTIONS, health, Protected Resource Metadata, bearer token
//! (401 with a challenge that points at the metadata), principal, routing.

use super::answers::{http_error, json, method_not_allowed};
use super::body::{self, Body};
use super::config::HttpConfig;
use super::forwarded::{CanonicalHosts, Forwarded};
use super::guard::OriginHostGuard;
use super::headers::header;
use super::resume::{GetStreams, Streams};
use super::shared::{Gated, HttpShared};
use super::{legacy, post, stream};
use crate::auth::{AuthError, Authenticator, bearer_token};
use crate::auth::{ChallengeError, ProtectedResource, RequestInfo, resolve};
use crate::backplane::{Event, Published, Subscriber};
use crate::layer::Principal;
use crate::protocol::Server;
use crate::protocol::session::table::{SessionLimits, SessionTable};
use crate::signals;
use futures::future::BoxFuture;
use http::header::{self, HeaderValue};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use std::convert::Infallible;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

const ALLOW_ENDPOINT: &str = "GET, POST, DELETE";
const CORS_ALLOW_HEADERS: &str =
    "Content-Type, Authorization, Accept, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID";

/// The Streamable HTTP endpoint (and, when enabled, the legacy HTTP+SSE endpoints).
#[derive(Clone)]
pub struct McpService {
    pub(crate) shared: Arc<HttpShared>,
}

impl McpService {
    /// The endpoint of `server` as `config` describes it; it joins the server's backplane
    /// bus for what other replicas tell this one's sessions and streams.
    pub fn new(server: Server, config: HttpConfig) -> Self {
        let guard = OriginHostGuard::new(
            &config.host,
            config.allowed_origins.as_deref(),
            config.allowed_hosts.as_deref(),
            &config.cors_origins,
        );
        let (backplane, replica) = (server.options().backplane.clone(), server.replica_id());
        let streams = Arc::new(Streams::new(backplane, replica, config.event_retention, config.session_idle_timeout));
        let limits = SessionLimits {
            max_sessions: config.max_sessions,
            max_per_principal: config.max_sessions_per_principal,
            idle_timeout: config.session_idle_timeout,
        };
        let sessions = Arc::new(SessionTable::new(server.clone(), Arc::new(GetStreams(streams.clone())), limits));
        let canonical_hosts = CanonicalHosts::new(&config);
        let shared = Arc::new_cyclic(|weak: &Weak<HttpShared>| {
            let weak = weak.clone();
            let routed: Arc<Subscriber> = Arc::new(move |published: &Published| {
                let Some(shared) = weak.upgrade() else { return };
                let elsewhere = published.origin != shared.server.replica_id();
                match &published.event {
                    Event::Routed(routed) if elsewhere => legacy::receive(&shared, routed.clone()),
                    Event::Session { session, state, stream, revision } if elsewhere => {
                        shared.sessions.receive_state(session, state.as_ref(), *stream, *revision)
                    }
                    Event::Logged { stream } => shared.streams.logged(stream),
                    Event::Resuming { stream } => shared.streams.resuming(stream),
                    _ => {}
                }
            });
            server.options().backplane.bus.subscribe(&routed);
            HttpShared { server, config, guard, sessions, canonical_hosts, streams, _routed: routed }
        });
        McpService { shared }
    }

    /// The endpoint's settings.
    pub fn config(&self) -> &HttpConfig {
        &self.shared.config
    }

    /// The number of live handshake-era sessions.
    pub fn session_count(&self) -> usize {
        self.shared.sessions.len()
    }

    /// Ends sessions idle longer than the configured timeout (the listener runs this).
    pub fn reap_idle_sessions(&self) -> usize {
        self.shared.sessions.reap()
    }

    /// Closes listen streams and ends every session (at shutdown).
    pub fn close(&self) {
        self.shared.server.close_listens();
        self.shared.sessions.close_all();
    }

    /// Handles one request.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<Body>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let origin = request.headers().get(header::ORIGIN).cloned();
        let mut response = self.shared.dispatch(request).await;
        if let Some(origin) = origin.filter(|o| self.shared.is_cors_origin(o)) {
            cors_headers(&mut response, origin);
        }
        response.headers_mut().insert(header::SERVER, HeaderValue::from_static("duet"));
        response
    }
}

impl<B> tower_service::Service<Request<B>> for McpService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let service = self.clone();
        Box::pin(async move { Ok(service.handle(request).await) })
    }
}

impl HttpShared {
    async fn dispatch<B>(self: &Arc<Self>, request: Request<B>) -> Response<Body>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        let forwarded = Forwarded::of(&parts, &self.config.trusted_proxies, self.config.proxy_header);
        if let Err(rejection) = self.guard.check_head(&parts, forwarded.host.as_deref()) {
            signals::rejected(rejection.status, "guard");
            let status = StatusCode::from_u16(rejection.status).unwrap_or(StatusCode::FORBIDDEN);
            let mut response = http_error(status, rejection.message);
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
        if parts.method == Method::OPTIONS {
            return self.preflight(&parts);
        }
        let path = parts.uri.path();
        if parts.method == Method::GET && self.config.health_path.as_deref() == Some(path) {
            return json(StatusCode::OK, r#"{"status":"ok"}"#.to_string());
        }
        let canonical = forwarded.canonical(&self.config.path, &self.canonical_hosts);
        let resource = self.resource_at(canonical.as_deref());
        if let Some(resource) = resource.as_deref()
            && resource.is_metadata_path(path, &self.config.path)
        {
            let varies = self.canonical_hosts.follow().then(|| self.config.proxy_header.vary());
            return match parts.method {
                Method::GET | Method::HEAD => metadata(resource, varies),
                _ => method_not_allowed("GET"),
            };
        }
        let token_principal = match &self.config.auth {
            None => None,
            Some(auth) => match self.authenticate(auth.as_ref(), &parts.headers, resource.as_deref()).await {
                Ok(principal) => Some(principal),
                Err(refused) => {
                    signals::rejected(refused.status().as_u16(), "auth");
                    return closing_unless_read(*refused, &body);
                }
            },
        };
        let legacy_path = self.config.enable_sse && path == self.config.sse_path;
        let message_path = self.config.enable_sse && is_message_path(path, &self.config.message_path);
        let info = RequestInfo {
            transport: if legacy_path || message_path { "sse" } else { "http" },
            headers: &parts.headers,
            principal: token_principal.as_ref(),
        };
        let principal = resolve(self.config.principal_resolver.as_ref(), &info);
        let method = parts.method.clone();
        drop(resource);
        let gated = Gated { parts, principal, body, canonical };
        if gated.parts.uri.path() == self.config.path {
            match method {
                Method::POST => post::handle(self, gated).await,
                Method::GET => stream::get(self, gated).await,
                Method::DELETE => stream::delete(self, gated).await,
                _ => method_not_allowed(ALLOW_ENDPOINT),
            }
        } else if legacy_path && method == Method::GET {
            legacy::open(self, gated).await
        } else if message_path && method == Method::POST {
            legacy::post(self, gated).await
        } else if legacy_path || message_path {
            method_not_allowed(if legacy_path { "GET" } else { "POST" })
        } else {
            http_error(StatusCode::NOT_FOUND, "Not Found")
        }
    }

    /// The principal of the request's bearer token (which must name `resource` as its
    /// audience), or the response that refuses it. The token goes no further than the
    /// authenticator.
    async fn authenticate(
        &self,
        auth: &dyn Authenticator,
        headers: &HeaderMap,
        resource: Option<&ProtectedResource>,
    ) -> Result<Principal, Box<Response<Body>>> {
        let authorization = header(headers, header::AUTHORIZATION);
        let Some(token) = authorization.as_deref().and_then(bearer_token) else {
            metrics::counter!(signals::AUTH_FAILURES, "reason" => "missing").increment(1);
            return Err(Box::new(unauthorized(resource, None)));
        };
        match auth.authenticate(token, resource.map(|r| r.resource.as_str())).await {
            Ok(principal) => Ok(principal),
            Err(AuthError::Invalid(why)) => {
                tracing::debug!(reason = %why, "bearer token refused");
                metrics::counter!(signals::AUTH_FAILURES, "reason" => "invalid").increment(1);
                Err(Box::new(unauthorized(resource, Some(&why))))
            }
            Err(AuthError::Unavailable(why)) => {
                tracing::warn!(reason = %why, "cannot check a bearer token");
                let mut response = http_error(StatusCode::SERVICE_UNAVAILABLE, &format!("Service Unavailable: {why}"));
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                Err(Box::new(response))
            }
        }
    }

    fn is_cors_origin(&self, origin: &HeaderValue) -> bool {
        let origin = origin.to_str().unwrap_or_default();
        self.config.cors_origins.iter().any(|o| o.eq_ignore_ascii_case(origin))
    }

    fn preflight(&self, parts: &http::request::Parts) -> Response<Body> {
        match parts.headers.get(header::ORIGIN).filter(|o| self.is_cors_origin(o)) {
            Some(_) => {
                let mut response = Response::new(body::empty());
                *response.status_mut() = StatusCode::NO_CONTENT;
                let h = response.headers_mut();
                h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, DELETE, OPTIONS"));
                h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static(CORS_ALLOW_HEADERS));
                h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
                response
            }
            None => method_not_allowed(ALLOW_ENDPOINT),
        }
    }
}

/// `response`, saying the connection closes when it answers a request whose body may not
/// all have arrived: hyper ends such a connection once the answer is sent, and a client
/// reusing it would lose its next request ("Server disconnected"). The first request of an
/// OAuth client is such a one (a POST without a token, answered 401); told, the client
/// sends its next one on a new connection.
fn closing_unless_read<B: http_body::Body>(mut response: Response<Body>, body: &B) -> Response<Body> {
    if !body.is_end_stream() {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// 401 with a challenge: `Bearer realm="duet"` for static tokens, else one that points at
/// the Protected Resource Metadata (with `error="invalid_token"` when a token was presented
/// and refused).
fn unauthorized(resource: Option<&ProtectedResource>, refused: Option<&str>) -> Response<Body> {
    let mut response = http_error(StatusCode::UNAUTHORIZED, "Unauthorized");
    let challenge = match resource {
        Some(resource) => resource.challenge(refused.map(ChallengeError::InvalidToken), None),
        None => "Bearer realm=\"duet\"".to_string(),
    };
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The Protected Resource Metadata document (RFC 9728 §3.2): shared caches may keep it
/// when it is the same for every request; when its `resource` follows a proxy's headers
/// (`varies`, their names), no cache keeps it, lest one client's headers make another's.
fn metadata(resource: &ProtectedResource, varies: Option<&'static str>) -> Response<Body> {
    let mut response = json(StatusCode::OK, resource.document().to_string());
    let h = response.headers_mut();
    match varies {
        None => {
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
        }
        Some(names) => {
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
            h.insert(header::VARY, HeaderValue::from_static(names));
        }
    }
    response
}

fn is_message_path(path: &str, message_path: &str) -> bool {
    path == message_path || path == message_path.trim_end_matches('/')
}

fn cors_headers(response: &mut Response<Body>, origin: HeaderValue) {
    let h = response.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    h.append(header::VARY, HeaderValue::from_static("Origin"));
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate"),
    );
}
