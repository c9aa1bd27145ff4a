//! [`TestServer`]: a real `HttpServer` over the test registry on a free loopback port, and
//! the clients and raw connections that talk to it.

use super::{Client, MODERN, bounded};
use duet::backplane::Backplane;
use duet::fixtures::testkit;
use duet::layer::ChangeFeed;
use duet::protocol::{Server, ServerOptions};
use duet::transport::http::{HttpConfig, HttpServer};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;

/// A running server over the test registry. `stop` shuts it down; if a test fails
/// before that, `Drop` closes its sessions and listen streams and the test's runtime
/// ends the rest.
pub struct TestServer {
    http: Option<HttpServer>,
    /// The engine handed to `HttpServer::bind` (a clone shares its state).
    pub server: Server,
    /// The test registry's change feed, to raise changes with.
    pub feed: Arc<ChangeFeed>,
    /// The address it listens on.
    pub addr: SocketAddr,
    /// `http://127.0.0.1:<port>`
    pub base: String,
    /// The MCP endpoint's URL.
    pub url: String,
    http_client: reqwest::Client,
}

impl TestServer {
    /// A server of its own, on an in-process backplane.
    pub async fn start(config: HttpConfig) -> TestServer {
        TestServer::start_on(config, Backplane::memory()).await
    }

    /// A replica: a server of its own over the test registry, sharing `backplane` with the
    /// others started on it (as replicas share Redis).
    pub async fn start_on(config: HttpConfig, backplane: Backplane) -> TestServer {
        TestServer::start_with(config, ServerOptions { backplane, ..ServerOptions::default() }).await
    }

    /// A server with `options` (a replica of those on the same backplane).
    pub async fn start_with(config: HttpConfig, options: ServerOptions) -> TestServer {
        let registry = testkit::registry_on(options.backplane.keys.clone());
        let feed = registry.change_feed();
        let server = Server::new(Arc::new(registry), options);
        let http = HttpServer::bind(server.clone(), config).await.expect("the test server binds");
        let addr = http.local_addr();
        let url = http.url();
        let http_client = reqwest::Client::builder().no_proxy().build().expect("a reqwest client");
        TestServer { base: format!("http://{addr}"), url, addr, server, feed, http: Some(http), http_client }
    }

    /// The HTTP server, while it runs.
    pub fn http(&self) -> &HttpServer {
        self.http.as_ref().expect("the server is running")
    }

    /// Takes the server out (to shut it down concurrently with reading a stream).
    pub fn take_http(&mut self) -> HttpServer {
        self.http.take().expect("the server is running")
    }

    /// How many handshake-era sessions it holds.
    pub fn session_count(&self) -> usize {
        self.http().service().session_count()
    }

    /// Shuts the server down, within [`WAIT`].
    pub async fn stop(mut self) {
        let http = self.take_http();
        bounded("shutting the server down", http.shutdown(Duration::from_secs(2))).await;
    }

    /// A client speaking `version`, without a session.
    pub fn client(&self, version: &str) -> Client {
        Client::new(self.http_client.clone(), &self.base, &self.url, version)
    }

    /// A client with an initialized session at `version`.
    pub async fn session(&self, version: &str) -> Client {
        let mut client = self.client(version);
        client.initialize().await;
        client
    }

    /// A 2026-07-28 client: every request carries the envelope and the headers.
    pub fn modern(&self) -> Client {
        self.client(MODERN)
    }

    /// A raw TCP connection to the server.
    pub async fn connect(&self) -> TcpStream {
        bounded("connecting", TcpStream::connect(self.addr)).await.expect("connect")
    }

    /// The `Host` header value a well-behaved client sends.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(http) = self.http.take() {
            http.service().close();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(http.shutdown(Duration::ZERO));
            }
        }
    }
}
