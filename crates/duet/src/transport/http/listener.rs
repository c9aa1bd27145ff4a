//! Runs the MCP endpoint standalone: binds a TCP listener (port 0 picks a free port),
//! accepts connections with TCP_NODELAY, serves HTTP/1.1 through hyper with header size
//! and time limits and a connection cap, reaps idle sessions, and shuts down cleanly.

use super::body;
use super::config::HttpConfig;
use super::guard::is_loopback;
use super::service::{McpService, http_error};
use crate::protocol::Server;
use http::StatusCode;
use http::header::{CONNECTION, HeaderValue};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A running HTTP server.
pub struct HttpServer {
    local_addr: SocketAddr,
    path: String,
    service: McpService,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl HttpServer {
    /// Binds and starts serving in the background.
    pub async fn bind(server: Server, mut config: HttpConfig) -> io::Result<HttpServer> {
        let listener = TcpListener::bind((config.host.as_str(), config.port)).await?;
        let local_addr = listener.local_addr()?;
        config.resolve_resource(local_addr.port());
        if !is_loopback(&config.host) && config.auth.is_none() {
            tracing::warn!(
                host = %config.host,
                "serving on a non-loopback address without authentication: anyone who can reach it can use it"
            );
        }
        let path = config.path.clone();
        let service = McpService::new(server, config);
        let stop = CancellationToken::new();
        let task = tokio::spawn(accept_loop(listener, service.clone(), stop.clone()));
        Ok(HttpServer { local_addr, path, service, stop, task })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The endpoint's URL, e.g. `http://127.0.0.1:8765/mcp` (IPv6 hosts bracketed).
    pub fn url(&self) -> String {
        format!("http://{}{}", self.local_addr, self.path)
    }

    pub fn service(&self) -> &McpService {
        &self.service
    }

    /// Stops accepting, closes listen streams and sessions, and waits for open connections
    /// (at most `grace`).
    pub async fn shutdown(self, grace: Duration) {
        self.service.close();
        self.stop.cancel();
        let _ = tokio::time::timeout(grace, self.task).await;
    }
}

async fn accept_loop(listener: TcpListener, service: McpService, stop: CancellationToken) {
    let config = service.config().clone();
    let connections = Arc::new(Semaphore::new(config.max_connections));
    let graceful = GracefulShutdown::new();
    let reap_every = (config.session_idle_timeout / 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
    let mut reaper = tokio::time::interval(reap_every);
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = reaper.tick() => {
                let reaped = service.reap_idle_sessions();
                if reaped > 0 {
                    tracing::debug!(reaped, "ended idle sessions");
                }
            }
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        continue;
                    }
                };
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!("TCP_NODELAY not set: {e}");
                }
                match connections.clone().try_acquire_owned() {
                    Ok(permit) => {
                        let conn = builder(&config).serve_connection(TokioIo::new(stream), TowerToHyperService::new(service.clone()));
                        let conn = graceful.watch(conn);
                        tokio::spawn(async move {
                            if let Err(e) = conn.await {
                                tracing::debug!("connection ended: {e}");
                            }
                            drop(permit);
                        });
                    }
                    Err(_) => {
                        tokio::spawn(refuse(stream, config.clone()));
                    }
                }
            }
        }
    }
    drop(listener);
    graceful.shutdown().await;
}

fn builder(config: &HttpConfig) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_timeout)
        .max_header_size(config.max_header_bytes)
        .max_buf_size(config.max_header_bytes.max(8192))
        .keep_alive(true);
    builder
}

/// Answers one request on a connection over the cap with 503 and closes it.
async fn refuse(stream: TcpStream, config: HttpConfig) {
    let service = hyper::service::service_fn(|_req| async {
        let mut response = http_error(StatusCode::SERVICE_UNAVAILABLE, "Too many connections");
        response.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
        Ok::<_, std::convert::Infallible>(response.map(|b| b as body::Body))
    });
    let mut builder = builder(&config);
    builder.keep_alive(false);
    let _ = builder.serve_connection(TokioIo::new(stream), service).await;
}
