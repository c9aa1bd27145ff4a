//! HTTP framing: request lines, line endings and head sizes the HTTP layer refuses itself,
//! connections that never finish a head, and bodies whose framing lies (Content-Length and
//! Transfer-Encoding that disagree, chunk sizes that are wrong, bodies cut short or over the
//! limit), each sent byte for byte.

use crate::*;
use std::time::Duration;

/// The head of a POST to the MCP endpoint up to its framing headers.
const POST: &str = "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
                    Accept: application/json, text/event-stream\r\n";

/// A 40-byte (0x28) request that needs a session: a body read whole draws [`READ`].
const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

/// What a body read whole and parsed draws without a session.
const READ: &str = "Bad Request: Mcp-Session-Id header is required";

/// A POST whose framing headers and body are `rest`.
fn post(rest: &str) -> Vec<u8> {
    format!("{POST}{rest}").into_bytes()
}

/// A head with `line` as its request line, a valid `Host`, and nothing else.
fn line(line: &str) -> Vec<u8> {
    format!("{line}\r\nHost: {{host}}\r\n\r\n").into_bytes()
}

fn text(text: &str) -> Vec<u8> {
    text.as_bytes().to_vec()
}

#[tokio::test]
async fn http_framing() {
    let timeouts = Duration::from_millis(300);
    let config = HttpConfig { header_timeout: timeouts, body_timeout: timeouts, max_body_bytes: 4096, ..config() };
    let mut bench = Bench::start(config, None).await;
    let timed_out = || refused(408, "Request Timeout");
    let unreadable = |why: &str| refused(400, format!("Bad Request: error reading a body from connection: {why}"));
    let parse_error = || error(400, -32700, Value::Null, "Parse error");
    let not_allowed = |allow: &str| refused(405, "Method Not Allowed").with_header("allow", allow);
    let big = "x".repeat(70 * 1024);
    let many: String = (0..101).map(|i| format!("X-{i}: a\r\n")).collect();
    let over = "x".repeat(5000);
    let rows: Vec<(&str, Vec<u8>, Expect)> = vec![
        // The request line.
        ("not HTTP at all", text("GARBAGE\r\n\r\n"), bare(400)),
        ("no HTTP version", line("GET /mcp"), bare(400)),
        ("HTTP/1.2", line("GET /mcp HTTP/1.2"), bare(400)),
        ("HTTP/2.0 in a request line", line("GET /mcp HTTP/2.0"), bare(400)),
        ("HTTP/3.0", line("GET /mcp HTTP/3.0"), bare(400)),
        ("a lowercase version", line("GET /mcp http/1.1"), bare(400)),
        ("a space inside the target", line("GET /m cp HTTP/1.1"), bare(400)),
        ("a tab for the spaces", line("GET\t/mcp\tHTTP/1.1"), bare(400)),
        ("two spaces after the method", line("GET  /mcp HTTP/1.1"), bare(400)),
        ("a space after the version", line("GET /mcp HTTP/1.1 "), bare(400)),
        ("a space before the method", line(" GET /mcp HTTP/1.1"), bare(400)),
        ("a slash in the method", line("GE/T /mcp HTTP/1.1"), bare(400)),
        ("a non-ASCII byte in the target", b"GET /m\xffcp HTTP/1.1\r\nHost: {host}\r\n\r\n".to_vec(), bare(400)),
        ("a control byte in the target", b"GET /m\x01cp HTTP/1.1\r\nHost: {host}\r\n\r\n".to_vec(), bare(400)),
        ("a lowercase method", line("get /mcp HTTP/1.1"), not_allowed("GET, POST, DELETE")),
        ("an unknown method", line("BREW /mcp HTTP/1.1"), not_allowed("GET, POST, DELETE")),
        ("TRACE", line("TRACE /mcp HTTP/1.1"), not_allowed("GET, POST, DELETE")),
        ("OPTIONS *", line("OPTIONS * HTTP/1.1"), not_allowed("GET, POST, DELETE")),
        ("CONNECT", line("CONNECT {host} HTTP/1.1"), refused(404, "Not Found")),
        ("a target of 70 KiB", line(&format!("GET /{big} HTTP/1.1")), bare(431)),
        ("an HTTP/2 preface", text("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), closed()),
        (
            "a TLS ClientHello",
            b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\x00\x00\x00\x00\x00\x00".to_vec(),
            bare(400),
        ),
        // Line endings and the end of the head.
        ("bare CR line endings", text("GET /mcp HTTP/1.1\rHost: {host}\r\r"), bare(400)),
        ("a head that never starts (empty lines)", text("\r\n\r\n"), closed()),
        ("a head cut short", text("POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Ty"), closed()),
        ("nothing at all", Vec::new(), closed()),
        // The size of the head.
        ("a 70 KiB header", text(&format!("GET /mcp HTTP/1.1\r\nHost: {{host}}\r\nX-Big: {big}\r\n\r\n")), bare(431)),
        ("101 header lines", text(&format!("GET /mcp HTTP/1.1\r\nHost: {{host}}\r\n{many}\r\n")), bare(431)),
        // Content-Length.
        ("a Content-Length that is not a number", post("Content-Length: forty\r\n\r\n"), bare(400)),
        ("a negative Content-Length", post("Content-Length: -1\r\n\r\n"), bare(400)),
        ("a Content-Length with a plus sign", post(&format!("Content-Length: +40\r\n\r\n{PING}")), bare(400)),
        ("a Content-Length past u64", post("Content-Length: 99999999999999999999999\r\n\r\n"), bare(400)),
        (
            "two Content-Lengths that differ",
            post(&format!("Content-Length: 40\r\nContent-Length: 41\r\n\r\n{PING}")),
            bare(400),
        ),
        ("a Content-Length list", post(&format!("Content-Length: 40, 40\r\n\r\n{PING}")), bare(400)),
        ("a Content-Length shorter than the body", post(&format!("Content-Length: 1\r\n\r\n{PING}")), parse_error()),
        ("a Content-Length longer than the body", post(&format!("Content-Length: 41\r\n\r\n{PING}")), timed_out()),
        ("Content-Length 0", post("Content-Length: 0\r\n\r\n"), parse_error()),
        ("a body without any framing", post(&format!("\r\n{PING}")), parse_error()),
        ("a Content-Length over the limit", post("Content-Length: 4097\r\n\r\n"), refused(413, "Payload Too Large")),
        (
            "a body over the limit",
            post(&format!("Content-Length: 5000\r\n\r\n{over}")),
            refused(413, "Payload Too Large"),
        ),
        ("well framed", post(&format!("Content-Length: 40\r\n\r\n{PING}")), refused(400, READ)),
        // Transfer-Encoding.
        ("Transfer-Encoding gzip", post(&format!("Transfer-Encoding: gzip\r\n\r\n{PING}")), bare(400)),
        (
            "chunked not the last coding",
            post(&format!("Transfer-Encoding: chunked, gzip\r\n\r\n28\r\n{PING}\r\n0\r\n\r\n")),
            bare(400),
        ),
        ("an empty Transfer-Encoding", post("Transfer-Encoding: \r\n\r\n"), bare(400)),
        (
            "chunked on HTTP/1.0",
            text(&format!(
                "POST /mcp HTTP/1.0\r\nHost: {{host}}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n28\r\n{PING}\r\n0\r\n\r\n"
            )),
            bare(400),
        ),
        (
            "Transfer-Encoding and Content-Length",
            post(&format!("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n28\r\n{PING}\r\n0\r\n\r\n")),
            refused(400, READ).with_header("connection", "close"),
        ),
        (
            "a chunk size that is not hex",
            post("Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"),
            unreadable("Invalid chunk size line: missing size digit"),
        ),
        (
            "a negative chunk size",
            post("Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n"),
            unreadable("Invalid chunk size line: missing size digit"),
        ),
        (
            "a chunk size past u64",
            post(&format!("Transfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n{PING}\r\n0\r\n\r\n")),
            unreadable("invalid chunk size: overflow"),
        ),
        (
            "a chunk longer than its size",
            post(&format!("Transfer-Encoding: chunked\r\n\r\n2\r\n{PING}\r\n0\r\n\r\n")),
            unreadable("Invalid chunk body CR"),
        ),
        (
            "a chunk without its CRLF",
            post(&format!("Transfer-Encoding: chunked\r\n\r\n28\r\n{PING}0\r\n\r\n")),
            unreadable("Invalid chunk body CR"),
        ),
        (
            "a chunk shorter than its size",
            post("Transfer-Encoding: chunked\r\n\r\n64\r\nhello\r\n0\r\n\r\n"),
            timed_out(),
        ),
        ("no last chunk", post(&format!("Transfer-Encoding: chunked\r\n\r\n28\r\n{PING}\r\n")), timed_out()),
        (
            "chunks over the limit",
            post(&format!("Transfer-Encoding: chunked\r\n\r\n1388\r\n{over}\r\n0\r\n\r\n")),
            refused(413, "Payload Too Large"),
        ),
        (
            "a chunk extension",
            post(&format!("Transfer-Encoding: chunked\r\n\r\n28;x=y\r\n{PING}\r\n0\r\n\r\n")),
            refused(400, READ),
        ),
        (
            "a trailer",
            post(&format!("Transfer-Encoding: chunked\r\n\r\n28\r\n{PING}\r\n0\r\nX-T: 1\r\n\r\n")),
            refused(400, READ),
        ),
        (
            "well chunked",
            post(&format!("Transfer-Encoding: chunked\r\n\r\n28\r\n{PING}\r\n0\r\n\r\n")),
            refused(400, READ),
        ),
    ];
    let host = bench.ts.host();
    bench.run(rows.into_iter().map(|(what, bytes, expect)| (what, Raw::verbatim(&bytes, &host), expect))).await;
    bench.stop().await;
}
