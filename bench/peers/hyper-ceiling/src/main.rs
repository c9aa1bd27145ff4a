//! The references of the benchmark: bare hyper HTTP/1.1 servers on 127.0.0.1 that do no
//! MCP work at all.
//! - `hyper-ceiling [--port N]`, the ceiling: reads each request body and answers one fixed
//!   JSON-RPC result (what an echo `tools/call` returns).
//! - `hyper-ceiling --echo [--port N]`, the JSON floor: parses each body into a
//!   `serde_json::Value` and answers with its id and its arguments echoed, as a JSON-RPC
//!   server written the usual way does, with no MCP work (no envelope, no schema, no session).
//!
//! Prints `listening on http://127.0.0.1:PORT/mcp` on stderr.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::convert::Infallible;

const REPLY: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"text\":\"hi\"}"}],"structuredContent":{"text":"hi"},"isError":false}}"#;

async fn answer(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    // Read the whole body, as any JSON-RPC server must.
    let _ = req.into_body().collect().await;
    Ok(json_response(Bytes::from_static(REPLY)))
}

async fn echo(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = req.into_body().collect().await.map(|c| c.to_bytes()).unwrap_or_default();
    let message: Value = serde_json::from_slice(&body).unwrap_or_default();
    let arguments = message.pointer("/params/arguments").cloned().unwrap_or_default();
    let reply = json!({"jsonrpc": "2.0", "id": message.get("id"), "result": {
        "content": [{"type": "text", "text": arguments.to_string()}],
        "structuredContent": arguments,
        "isError": false,
    }});
    Ok(json_response(serde_json::to_vec(&reply).unwrap_or_default().into()))
}

fn json_response(body: Bytes) -> Response<Full<Bytes>> {
    let mut res = Response::new(Full::new(body));
    res.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    res
}

#[tokio::main]
async fn main() {
    let (mut port, mut echoes) = (0u16, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => port = args.next().and_then(|p| p.parse().ok()).expect("--port N"),
            "--echo" => echoes = true,
            other => panic!("unknown argument {other}; usage: hyper-ceiling [--echo] [--port N]"),
        }
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
    eprintln!("listening on http://{}/mcp", listener.local_addr().unwrap());
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let http = http1::Builder::new();
            let _ = if echoes {
                http.serve_connection(TokioIo::new(stream), service_fn(echo)).await
            } else {
                http.serve_connection(TokioIo::new(stream), service_fn(answer)).await
            };
        });
    }
}
