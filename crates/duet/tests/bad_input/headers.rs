//! Header fields: lines the HTTP layer cannot parse, `Host` and `Origin` (the DNS-rebinding
//! guard, which closes the connection), `Content-Type` and `Accept` of a POST, and the
//! `MCP-Protocol-Version` a handshake-era session request carries.

use crate::*;

#[tokio::test]
async fn headers() {
    let mut bench = Bench::start(config(), None).await;
    let port = bench.ts.addr.port();
    let host = bench.ts.host();
    // A GET without a session: what a well-formed head draws.
    let get = || bench.raw("GET", "/mcp");
    let head = |text: &[u8]| Raw::verbatim(text, &host);
    let absolute = |target: &str| Raw::new("GET", target).header("host", &host);
    let fine = || refused(405, "Method Not Allowed").with_header("allow", "POST, DELETE");
    let guarded = |status: u16, message: &str| refused(status, message).with_header("connection", "close");
    let list = || bench.handshake("tools/list", json!({}));
    let media = || refused(415, "Content-Type must be application/json");
    let unacceptable = || refused(406, "Not Acceptable: accept application/json or text/event-stream");
    let unsupported = |v: &str| refused(400, format!("Unsupported MCP-Protocol-Version: {v}"));
    let other_version =
        |v: &str| refused(400, format!("MCP-Protocol-Version {v} does not match the negotiated version {LATEST}"));
    let rows: Vec<Case> = vec![
        // Lines the HTTP layer cannot parse.
        ("a NUL in a header value", get().header("x-a", b"a\x00b"), bare(400)),
        ("a DEL in a header value", get().header("x-a", b"a\x7fb"), bare(400)),
        ("a CR inside a header value", get().header("x-a", b"a\rb"), bare(400)),
        ("a space in a header name", get().header("x a", "b"), bare(400)),
        ("an empty header name", get().header("", "b"), bare(400)),
        ("a non-ASCII header name", get().header("x-\u{e9}", "b"), bare(400)),
        ("a header line without a colon", head(b"GET /mcp HTTP/1.1\r\nHost: {host}\r\nNoColon\r\n\r\n"), bare(400)),
        ("a folded header line", head(b"GET /mcp HTTP/1.1\r\nHost: {host}\r\nX-A: a\r\n b\r\n\r\n"), bare(400)),
        ("a space before a header's colon", head(b"GET /mcp HTTP/1.1\r\nHost : {host}\r\n\r\n"), bare(400)),
        ("well-formed", get(), fine()),
        // Host.
        ("Host of another name", get().set("host", "evil.example"), guarded(421, "Invalid Host header")),
        (
            "Host of another name on our port",
            get().set("host", format!("evil.example:{port}")),
            guarded(421, "Invalid Host header"),
        ),
        (
            "Host of localhost with a suffix",
            get().set("host", "localhost.evil.example"),
            guarded(421, "Invalid Host header"),
        ),
        ("no Host on HTTP/1.0", head(b"GET /mcp HTTP/1.0\r\n\r\n"), guarded(421, "Invalid Host header")),
        ("an empty Host", get().set("host", ""), guarded(400, "Bad Request: malformed Host header")),
        (
            "Host with user information",
            get().set("host", format!("127.0.0.1:{port}@evil.example")),
            guarded(400, "Bad Request: malformed Host header"),
        ),
        (
            "Host with a path",
            get().set("host", format!("127.0.0.1:{port}/mcp")),
            guarded(400, "Bad Request: malformed Host header"),
        ),
        (
            "Host with two ports",
            get().set("host", format!("127.0.0.1:{port}:1")),
            guarded(400, "Bad Request: malformed Host header"),
        ),
        (
            "Host with a six-digit port",
            get().set("host", "127.0.0.1:123456"),
            guarded(400, "Bad Request: malformed Host header"),
        ),
        ("an IPv6 Host without brackets", get().set("host", "::1"), guarded(400, "Bad Request: malformed Host header")),
        ("a non-ASCII Host", get().set("host", b"127.0.0.\xff"), guarded(400, "Bad Request: malformed Host header")),
        ("two Hosts", get().header("host", "localhost"), guarded(400, "Bad Request: more than one Host header")),
        ("no Host", get().without("host"), guarded(400, "Bad Request: missing Host header")),
        ("a target of another authority", absolute("http://evil.example/mcp"), guarded(421, "Invalid Host header")),
        (
            "a target of another name on our port",
            absolute(&format!("http://evil.example:{port}/mcp")),
            guarded(421, "Invalid Host header"),
        ),
        (
            "a target with user information",
            absolute(&format!("http://u@{host}/mcp")),
            guarded(400, "Bad Request: malformed Host header"),
        ),
        (
            "a target in absolute form without Host",
            absolute(&format!("http://{host}/mcp")).without("host"),
            guarded(400, "Bad Request: missing Host header"),
        ),
        ("a target in absolute form", absolute(&format!("http://{host}/mcp")), fine()),
        ("localhost as Host", get().set("host", format!("localhost:{port}")), fine()),
        // Origin.
        ("a foreign Origin", get().header("origin", "https://evil.example"), guarded(403, "Forbidden: invalid Origin")),
        ("Origin null", get().header("origin", "null"), guarded(403, "Forbidden: invalid Origin")),
        (
            "Origin of a loopback name with a suffix",
            get().header("origin", "http://localhost.evil.example"),
            guarded(403, "Forbidden: invalid Origin"),
        ),
        (
            "Origin with a path",
            get().header("origin", "http://localhost:1/x"),
            guarded(403, "Forbidden: malformed Origin"),
        ),
        (
            "Origin with user information",
            get().header("origin", "http://localhost:1@evil.example"),
            guarded(403, "Forbidden: malformed Origin"),
        ),
        ("Origin without a scheme", get().header("origin", "localhost:1"), guarded(403, "Forbidden: malformed Origin")),
        ("a file:// Origin", get().header("origin", "file://"), guarded(403, "Forbidden: malformed Origin")),
        (
            "a non-ASCII Origin",
            get().header("origin", b"http://l\xf6calhost"),
            guarded(403, "Forbidden: malformed Origin"),
        ),
        (
            "two Origins",
            get().header("origin", "http://localhost:1").header("origin", "http://localhost:2"),
            guarded(403, "Forbidden: more than one Origin header"),
        ),
        ("a loopback Origin", get().header("origin", "http://localhost:1"), fine()),
        // Content-Type of a POST.
        ("no Content-Type", list().without("content-type"), media()),
        ("Content-Type text/plain", list().set("content-type", "text/plain"), media()),
        ("Content-Type of a form", list().set("content-type", "application/x-www-form-urlencoded"), media()),
        ("Content-Type multipart", list().set("content-type", "multipart/form-data; boundary=x"), media()),
        ("Content-Type text/json", list().set("content-type", "text/json"), media()),
        ("Content-Type application/json-seq", list().set("content-type", "application/json-seq"), media()),
        ("Content-Type without its subtype", list().set("content-type", "application"), media()),
        ("Content-Type with a space in it", list().set("content-type", "application /json"), media()),
        ("an empty Content-Type", list().set("content-type", ""), media()),
        ("Content-Type of parameters only", list().set("content-type", "; charset=utf-8"), media()),
        ("a non-ASCII Content-Type", list().set("content-type", b"application/j\xf6son"), media()),
        ("two Content-Types", list().header("content-type", "text/plain"), media()),
        ("Content-Type twice", list().header("content-type", "application/json"), media()),
        ("Content-Type with parameters", list().set("content-type", "application/json; charset=utf-8"), served()),
        ("Content-Type in capitals", list().set("content-type", "APPLICATION/JSON"), served()),
        // Accept of a POST.
        ("Accept text/html", list().set("accept", "text/html"), unacceptable()),
        ("Accept image/png", list().set("accept", "image/png"), unacceptable()),
        ("Accept of neither type", list().set("accept", "application/xml, text/plain"), unacceptable()),
        ("Accept of a longer subtype", list().set("accept", "application/jsonl"), unacceptable()),
        ("Accept text/event-streams", list().set("accept", "text/event-streams"), unacceptable()),
        ("Accept */*", list().set("accept", "*/*"), served()),
        ("no Accept", list().without("accept"), served()),
        // MCP-Protocol-Version on a handshake-era session.
        ("an unknown version", list().set("mcp-protocol-version", "1999-01-01"), unsupported("1999-01-01")),
        (
            "a list of versions",
            list().set("mcp-protocol-version", "2025-11-25, 2025-06-18"),
            unsupported("2025-11-25, 2025-06-18"),
        ),
        ("a version by name", list().set("mcp-protocol-version", "latest"), unsupported("latest")),
        ("an empty version", list().set("mcp-protocol-version", ""), unsupported("")),
        ("another handshake version", list().set("mcp-protocol-version", "2025-06-18"), other_version("2025-06-18")),
        ("the oldest version", list().set("mcp-protocol-version", "2024-11-05"), other_version("2024-11-05")),
        (
            "2026-07-28 on a handshake-era request",
            list().set("mcp-protocol-version", MODERN),
            error(
                400,
                -32602,
                json!(ID),
                "params._meta is missing the required envelope key(s): io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities",
            ),
        ),
        ("two versions", list().header("mcp-protocol-version", LATEST), unsupported("2025-11-25, 2025-11-25")),
        (
            "two versions that differ",
            list().header("mcp-protocol-version", "2025-06-18"),
            unsupported("2025-11-25, 2025-06-18"),
        ),
        ("a non-ASCII version", list().set("mcp-protocol-version", b"2025-11-2\xff"), unsupported("2025-11-2\u{fffd}")),
        ("a version with spaces around it", list().set("mcp-protocol-version", format!(" {LATEST} ")), served()),
        ("no version", list().without("mcp-protocol-version"), served()),
    ];
    bench.run(rows).await;
    bench.stop().await;
}
