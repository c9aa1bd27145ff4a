//! Runs the MCP endpoint standalone: binds a TCP listener (port 0 picks a free port),
//! accepts connections with TCP_NODELAY, serves HTTP/1.1 through hyper with header size
//! and time limits and connection caps (for the server, and per peer address: `peers.rs`),
//! reaps idle sessions, and shuts down cleanly.
//!
//! A connection over a cap is refused at once, by hand rather than through hyper: its
//! first read (waited for at most a second) is answered 200 when it asks for the health
//! endpoint, so probes see a live server, and 503 otherwise; then it is closed. When the
//! process is out of descriptors, `accept` is retried after a growing pause, and the
//! descriptor held in reserve lets the waiting connection be taken and refused
//! (`descriptors.rs`).

use super::config::HttpConfig;
use super::descriptors::{self, Exhaustion, Reserve};
use super::forwarded::PeerAddr;
use super::guard::is_loopback;
use super::peers::Peers;
use super::service::McpService;
use crate::protocol::Server;
use crate::signals;
use duet_wire::jsonrpc::{Response, RpcError};
use futures::FutureExt;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};
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

    /// The address bound (with the port picked, when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The endpoint's URL, e.g. `http://127.0.0.1:8765/mcp` (IPv6 hosts bracketed).
    pub fn url(&self) -> String {
        format!("http://{}{}", self.local_addr, self.path)
    }

    /// The service that answers its requests.
    pub fn service(&self) -> &McpService {
        &self.service
    }

    /// Shuts down gracefully, within `grace`: stops accepting; ends listen streams with their
    /// final result and the sessions' GET streams; lets requests in flight finish (idle
    /// keep-alive connections close, busy ones after their answer); then ends the sessions,
    /// cancelling what still runs, and waits for the connections to close.
    pub async fn shutdown(self, grace: Duration) {
        let deadline = tokio::time::Instant::now() + grace;
        self.stop.cancel();
        let shared = &self.service.shared;
        shared.server.close_listens();
        shared.sessions.close_standing_streams();
        let settled = async {
            while shared.sessions.inflight() > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        let _ = tokio::time::timeout_at(deadline, settled).await;
        self.service.close();
        let mut task = self.task;
        if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
            tracing::info!("shutdown grace over; closing the connections still open");
            task.abort();
        }
    }
}

/// Connections refused at once, at most (each holds a descriptor for up to a second or two).
const REFUSING: usize = descriptors::RESERVED / 2;

/// How long an over-cap connection may take to send its request line.
const REFUSAL_WAIT: Duration = Duration::from_secs(1);

async fn accept_loop(listener: TcpListener, service: McpService, stop: CancellationToken) {
    let config = service.config().clone();
    let connections = Arc::new(Semaphore::new(descriptors::connection_budget(config.max_connections)));
    let peers = Peers::new(config.connections_per_peer());
    let refusing = Arc::new(Semaphore::new(REFUSING));
    let health = Arc::new(config.health_path.clone());
    let (mut reserve, mut exhaustion) = (Reserve::new(), Exhaustion::new());
    // The connections' tasks: aborted with this loop's task when a shutdown's grace is over.
    let mut tasks = JoinSet::new();
    let graceful = GracefulShutdown::new();
    let reap_every = (config.session_idle_timeout / 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
    let mut reaper = tokio::time::interval(reap_every);
    // Each request learns its peer's address only when a trusted proxy may vouch for it:
    // the extension costs an allocation a request.
    let record_peers = !config.trusted_proxies.is_empty();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            _ = reaper.tick() => {
                let reaped = service.reap_idle_sessions();
                if reaped > 0 {
                    tracing::debug!(reaped, "ended idle sessions");
                }
            }
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok((stream, peer)) => {
                        exhaustion.recovered();
                        reserve.restore();
                        (stream, peer)
                    }
                    Err(e) if descriptors::exhausted(&e) => {
                        let pause = exhaustion.failed(&e);
                        // The reserve makes room to take one waiting connection and refuse it;
                        // its socket, shut, is the reserve from then on.
                        if reserve.release() {
                            match listener.accept().now_or_never() {
                                Some(Ok((stream, _))) => {
                                    let _ = stream.try_write(&refusal(Some(TOO_MANY)));
                                    match stream.into_std() {
                                        Ok(socket) => {
                                            let _ = socket.shutdown(std::net::Shutdown::Both);
                                            reserve.keep(socket.into());
                                        }
                                        Err(_) => reserve.restore(),
                                    }
                                }
                                _ => reserve.restore(),
                            }
                        }
                        tokio::select! {
                            _ = stop.cancelled() => break,
                            _ = tokio::time::sleep(pause) => {}
                        }
                        continue;
                    }
                    Err(e) => {
                        tracing::debug!("accept failed: {e}");
                        continue;
                    }
                };
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!("TCP_NODELAY not set: {e}");
                }
                // A full server says so, whoever asks; one with room refuses a peer at its cap.
                let Ok(permit) = connections.clone().try_acquire_owned() else {
                    refuse_over_cap(&mut tasks, &refusing, stream, &health, "connections", TOO_MANY);
                    continue;
                };
                let Some(peer_slot) = peers.enter(peer.ip()) else {
                    refuse_over_cap(&mut tasks, &refusing, stream, &health, "connections_per_peer", TOO_MANY_FROM_PEER);
                    continue;
                };
                let endpoint = FromPeer { service: service.clone(), peer: record_peers.then_some(peer) };
                // A write the client does not read for `write_timeout` ends the connection,
                // and with it the answer it holds.
                let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
                stream.set_write_timeout(Some(config.write_timeout));
                let stream = TokioIo::new(Box::pin(stream));
                let conn = builder(&config).serve_connection(stream, TowerToHyperService::new(endpoint));
                let conn = graceful.watch(conn);
                let open = metrics::gauge!(signals::CONNECTIONS_ACTIVE);
                open.increment(1);
                tasks.spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!("connection ended: {e}");
                    }
                    open.decrement(1);
                    drop((permit, peer_slot));
                });
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

/// What a connection over the server's cap is told.
const TOO_MANY: &str = "Too many connections";
/// What a connection over its address's cap is told.
const TOO_MANY_FROM_PEER: &str = "Too many connections from this address";

/// Refuses a connection over a cap (counted as rejected for `reason`), answering it with
/// `why`; refusals are capped too: beyond them a connection is closed unread.
fn refuse_over_cap(
    tasks: &mut JoinSet<()>,
    refusing: &Arc<Semaphore>,
    stream: TcpStream,
    health: &Arc<Option<String>>,
    reason: &'static str,
    why: &'static str,
) {
    signals::rejected(503, reason);
    match refusing.clone().try_acquire_owned() {
        Ok(permit) => {
            tasks.spawn(refuse(stream, health.clone(), why, permit));
        }
        Err(_) => drop(stream),
    }
}

/// Answers a connection over a cap and closes it: 200 to a request for the health
/// endpoint, 503 with `why` to anything else, or to nothing within [`REFUSAL_WAIT`].
async fn refuse(
    mut stream: TcpStream,
    health: Arc<Option<String>>,
    why: &'static str,
    _permit: tokio::sync::OwnedSemaphorePermit,
) {
    let mut head = [0u8; 1024];
    let read = tokio::time::timeout(REFUSAL_WAIT, stream.read(&mut head)).await;
    let head = match read {
        Ok(Ok(n)) => &head[..n],
        _ => &[][..],
    };
    let asks_health = health.as_deref().is_some_and(|path| {
        let line = head.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or_default();
        line.strip_prefix(b"GET ")
            .and_then(|rest| rest.strip_prefix(path.as_bytes()))
            .is_some_and(|rest| rest.starts_with(b" "))
    });
    let answer = if asks_health { refusal(None) } else { refusal(Some(why)) };
    if stream.write_all(&answer).await.is_ok() {
        // Closing with the request unread would reset the connection and lose the answer.
        let _ = stream.shutdown().await;
        let mut sink = [0u8; 1024];
        let drain = async { while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {} };
        let _ = tokio::time::timeout(REFUSAL_WAIT, drain).await;
    }
}

/// The whole HTTP response refusing a connection over a cap with `why`, or, for `None`, the
/// health answer.
fn refusal(why: Option<&str>) -> Vec<u8> {
    let (status, body) = match why {
        None => ("200 OK", r#"{"status":"ok"}"#.to_string()),
        Some(why) => ("503 Service Unavailable", Response::error(None, RpcError::invalid_request(why)).to_line()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nserver: duet\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    [head.into_bytes(), body.into_bytes()].concat()
}

/// The endpoint as one connection serves it: each request carries the connection's peer
/// address ([`PeerAddr`]) when `peer` is set.
#[derive(Clone)]
struct FromPeer {
    service: McpService,
    peer: Option<SocketAddr>,
}

impl<B> tower_service::Service<http::Request<B>> for FromPeer
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = <McpService as tower_service::Service<http::Request<B>>>::Response;
    type Error = <McpService as tower_service::Service<http::Request<B>>>::Error;
    type Future = <McpService as tower_service::Service<http::Request<B>>>::Future;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        tower_service::Service::<http::Request<B>>::poll_ready(&mut self.service, cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        if let Some(peer) = self.peer {
            request.extensions_mut().insert(PeerAddr(peer));
        }
        self.service.call(request)
    }
}
