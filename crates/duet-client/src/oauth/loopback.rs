//! The [`UserAgent`] of a program a person runs on their own machine: it prints the
//! authorization URL for them to open in a browser and waits for the browser's redirect on
//! a loopback port (RFC 8252 §7.3).

use super::authorization_code::UserAgent;
use crate::error::Error;
use futures::future::BoxFuture;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// The path the redirect comes back to.
const CALLBACK: &str = "/callback";
/// The most bytes of a request line read from a connection to the loopback port.
const MAX_REQUEST_LINE: u64 = 8 * 1024;
/// How long a connection to the loopback port has to send its request line.
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// A loopback listener that receives the authorization redirect.
#[derive(Debug)]
pub struct Loopback {
    listener: TcpListener,
    port: u16,
}

impl Loopback {
    /// Listens on `127.0.0.1:port` (0: any free port).
    pub async fn bind(port: u16) -> Result<Loopback, Error> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(Error::transport)?;
        let port = listener.local_addr().map_err(Error::transport)?.port();
        Ok(Loopback { listener, port })
    }

    /// Waits for the browser's request to the callback path; its URL.
    async fn redirect(&self) -> Result<String, Error> {
        loop {
            let (stream, _) = self.listener.accept().await.map_err(Error::transport)?;
            let mut stream = BufReader::new(stream);
            // Any local process may connect: what one sends is bounded, and one that sends
            // nothing is given up on, so neither holds the real redirect off.
            let mut line = String::new();
            let mut limited = (&mut stream).take(MAX_REQUEST_LINE);
            if !matches!(tokio::time::timeout(READ_TIMEOUT, limited.read_line(&mut line)).await, Ok(Ok(_))) {
                continue;
            }
            let target = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
            let (status, text) = if target.starts_with(CALLBACK) {
                ("200 OK", "Authorized: you may close this window.")
            } else {
                ("404 Not Found", "Not the authorization callback.")
            };
            let answer = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = stream.get_mut().write_all(answer.as_bytes()).await;
            if target.starts_with(CALLBACK) {
                return Ok(format!("http://127.0.0.1:{}{target}", self.port));
            }
        }
    }
}

impl UserAgent for Loopback {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK}", self.port)
    }

    fn authorize(&self, url: String) -> BoxFuture<'_, Result<String, Error>> {
        Box::pin(async move {
            eprintln!("Open this URL in a browser to authorize the client:\n{url}");
            self.redirect().await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_redirect_comes_back_on_the_loopback_port() {
        let agent = Loopback::bind(0).await.unwrap();
        let root = agent.redirect_uri().replace(CALLBACK, "/favicon.ico");
        let callback = format!("{}?code=c&state=s", agent.redirect_uri());
        let port = agent.port;
        let browser = tokio::spawn(async move {
            // A local process that floods the port, and one that sends nothing, hold nothing off.
            let mut flood = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            let _ = flood.write_all(&vec![b'x'; 64 * 1024]).await;
            let _silent = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            let other = reqwest::get(root).await.unwrap().status();
            (other, reqwest::get(callback).await.unwrap().status())
        });
        let redirect = agent.authorize("https://as.example/authorize".to_owned()).await.unwrap();
        assert_eq!(redirect, format!("{}?code=c&state=s", agent.redirect_uri()));
        let (other, callback) = browser.await.unwrap();
        assert_eq!((other.as_u16(), callback.as_u16()), (404, 200));
    }
}
