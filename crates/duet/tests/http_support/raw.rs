//! Raw sockets, for the requests `reqwest` will not send (malformed, slow or cut short):
//! [`RawResponse`] read off a socket, a whole raw exchange, and waiting for the server to
//! close a connection.

use super::sse::parse_event;
use super::{bounded, within};
use duet_testing::Schemas;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A raw HTTP response read off a socket.
#[derive(Debug)]
pub struct RawResponse {
    /// `HTTP/1.1 200 OK`.
    pub status_line: String,
    /// The status line and the headers.
    pub head: String,
    /// The body, as text.
    pub body: String,
}

impl RawResponse {
    /// The status code.
    pub fn status(&self) -> u16 {
        let code = self.status_line.split(' ').nth(1).unwrap_or_default();
        code.parse().unwrap_or_else(|_| panic!("a bad status line {:?}", self.status_line))
    }

    /// The value of the first header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The body as JSON, which it must be.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    /// The JSON-RPC message of the body: a JSON document, or the one `message` event of an
    /// event stream.
    pub fn message(&self) -> Value {
        let content_type = self.header("content-type").unwrap_or_default();
        if !content_type.starts_with("text/event-stream") {
            return self.json();
        }
        let text = self.body.replace("\r\n", "\n");
        let events: Vec<_> = text.split("\n\n").filter_map(parse_event).filter(|e| !e.is_priming()).collect();
        match &events[..] {
            [one] if one.event.as_deref() == Some("message") => one.json(),
            _ => panic!("expected one message event: {:?}", self.body),
        }
    }

    /// The body is an HTTP-level JSON-RPC error (id null, -32600) with `message`.
    pub fn expect_http_error(&self, status: u16, message: &str) {
        let error = self.expect_rpc_error(status, -32600, &Value::Null);
        assert_eq!(error["message"], message, "{self:?}");
    }

    /// The answer is a JSON-RPC error with `code` for request `id`, sent with `status`; its
    /// error object (checked against the schema).
    pub fn expect_rpc_error(&self, status: u16, code: i64, id: &Value) -> Value {
        assert_eq!(self.status(), status, "{self:?}");
        let message = self.message();
        Schemas::get().assert_error(&message["error"]);
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        assert_eq!((&message["id"], &message["error"]["code"]), (id, &json!(code)), "{message}");
        message["error"].clone()
    }
}

/// Reads one response (head, then `Content-Length` bytes of body or up to EOF) within
/// [`WAIT`].
pub async fn read_response<R: AsyncReadExt + Unpin>(reader: &mut R) -> RawResponse {
    try_read_response(reader).await.expect("the connection closed before a response")
}

/// Like [`read_response`], but `None` when the peer closes the connection (EOF or reset)
/// before sending a byte.
async fn try_read_response<R: AsyncReadExt + Unpin>(reader: &mut R) -> Option<RawResponse> {
    bounded("a raw response", async {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 8192];
        let head_end = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            let n = match reader.read(&mut chunk).await {
                Ok(0) | Err(_) if buf.is_empty() => return None,
                read => read.expect("reading the response fails"),
            };
            assert!(n > 0, "the connection closed before a response head: {:?}", String::from_utf8_lossy(&buf));
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8(buf[..head_end].to_vec()).expect("the head is UTF-8");
        let mut body = buf[head_end + 4..].to_vec();
        let mut response =
            RawResponse { status_line: head.lines().next().unwrap_or_default().to_string(), head, body: String::new() };
        match response.header("content-length").map(|n| n.parse::<usize>().expect("a numeric Content-Length")) {
            Some(length) => {
                while body.len() < length {
                    let n = reader.read(&mut chunk).await.expect("reading the body fails");
                    assert!(n > 0, "the connection closed inside the body");
                    body.extend_from_slice(&chunk[..n]);
                }
                body.truncate(length);
            }
            None if response.header("transfer-encoding").is_none() => {
                // No length: the body runs to the end of the connection.
                let _ = reader.read_to_end(&mut body).await;
            }
            None => panic!("a chunked raw response is not expected here: {}", response.head),
        }
        response.body = String::from_utf8(body).expect("the body is UTF-8");
        Some(response)
    })
    .await
}

/// Sends `request` on a new connection while reading the answer (so an early answer is
/// not lost to a reset), and returns the answer.
pub async fn raw_exchange(addr: SocketAddr, request: Vec<u8>) -> RawResponse {
    raw_answer(addr, request).await.expect("the server closed the connection without answering")
}

/// Like [`raw_exchange`], but `None` when the server closes the connection without
/// answering.
pub async fn raw_answer(addr: SocketAddr, request: Vec<u8>) -> Option<RawResponse> {
    let stream = bounded("connecting", TcpStream::connect(addr)).await.expect("connect");
    let (mut reader, mut writer) = stream.into_split();
    let writing = tokio::spawn(async move {
        // The server may answer and close before it read everything.
        let _ = writer.write_all(&request).await;
        writer
    });
    let response = try_read_response(&mut reader).await;
    let _ = writing.await;
    response
}

/// Reads until the peer closes the connection (EOF or reset); the bytes read.
pub async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Vec<u8> {
    within(limit, "the server closing the connection", async {
        let mut out = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return out,
                Ok(n) => out.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await
}
