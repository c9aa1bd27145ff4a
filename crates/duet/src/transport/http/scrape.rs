//! The metrics scrape endpoint: `GET /metrics` on a listener of its own, answered with what
//! a recorder renders (the `duet` binary's is the Prometheus exporter). It is apart from the
//! MCP endpoint on purpose: a scraper holds no MCP token, and the MCP endpoint's auth must not
//! be what stands between the world and the metrics by accident. Its Host is checked as the
//! MCP endpoint's is (on a loopback bind only loopback names), so a page in a browser cannot
//! read it through DNS rebinding.

use super::body::{self, Body};
use super::guard::OriginHostGuard;
use http::{Method, Request, Response, StatusCode, header};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// The Prometheus text exposition format.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A running scrape endpoint.
pub struct MetricsEndpoint {
    local_addr: SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl MetricsEndpoint {
    /// Binds `addr` (port 0 picks a free port) and answers `GET /metrics` with `render()`.
    pub async fn bind(addr: &str, render: impl Fn() -> String + Send + Sync + 'static) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let guard = OriginHostGuard::new(&local_addr.ip().to_string(), None, None, &[]);
        let stop = CancellationToken::new();
        let task = tokio::spawn(serve(listener, Arc::new(guard), Arc::new(render), stop.clone()));
        Ok(MetricsEndpoint { local_addr, stop, task })
    }

    /// The address bound (with the port picked, when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting and ends the connections open.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

type Render = Arc<dyn Fn() -> String + Send + Sync>;

async fn serve(listener: TcpListener, guard: Arc<OriginHostGuard>, render: Render, stop: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        let stream = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::debug!("metrics: accept failed: {e}");
                    // Out of descriptors, say: let the MCP endpoint have them for a moment.
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        // Finished connections are reaped as new ones come, so the set stays small.
        while connections.try_join_next().is_some() {}
        let (guard, render) = (guard.clone(), render.clone());
        let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
            let (head, _) = request.into_parts();
            let response = answer(&guard, &render, &head);
            async move { Ok::<_, Infallible>(response) }
        });
        let stop = stop.clone();
        connections.spawn(async move {
            let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = conn => {}
            }
        });
    }
    connections.shutdown().await;
}

fn answer(guard: &OriginHostGuard, render: &Render, head: &http::request::Parts) -> Response<Body> {
    if let Err(rejection) = guard.check_head(head, None) {
        let status = StatusCode::from_u16(rejection.status).unwrap_or(StatusCode::FORBIDDEN);
        return text(status, "text/plain", rejection.message.to_owned());
    }
    match (&head.method, head.uri.path()) {
        (&Method::GET, "/metrics") => text(StatusCode::OK, TEXT_FORMAT, render()),
        (_, "/metrics") => text(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "Method Not Allowed: GET".into()),
        _ => text(StatusCode::NOT_FOUND, "text/plain", "Not Found: the metrics are at /metrics".into()),
    }
}

fn text(status: StatusCode, content_type: &'static str, body: String) -> Response<Body> {
    let mut response = Response::new(body::full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    response
}
