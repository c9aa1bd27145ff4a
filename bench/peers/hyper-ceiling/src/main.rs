//! The ceiling of the benchmark: a bare hyper HTTP/1.1 server on 127.0.0.1 that reads each
//! request body and answers it with one fixed JSON-RPC result (what an echo `tools/call`
//! returns), doing no MCP work at all. Usage: `hyper-ceiling [--port N]`; prints
//! `listening on http://127.0.0.1:PORT/mcp` on stderr.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;

const REPLY: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"text\":\"hi\"}"}],"structuredContent":{"text":"hi"},"isError":false}}"#;

async fn answer(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    // Read the whole body, as any JSON-RPC server must.
    let _ = req.into_body().collect().await;
    let mut res = Response::new(Full::new(Bytes::from_static(REPLY)));
    res.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    Ok(res)
}

#[tokio::main]
async fn main() {
    let mut port = 0u16;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--port" {
            port = args.next().and_then(|p| p.parse().ok()).expect("--port N");
        }
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
    eprintln!("listening on http://{}/mcp", listener.local_addr().unwrap());
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service_fn(answer)).await;
        });
    }
}
