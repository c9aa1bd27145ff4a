//! The deprecated HTTP+SSE transport (`/sse` and `/messages/?session_id=`): methods the
//! endpoints do not take, session ids missing, unknown, closed or of the other transport,
//! bodies that are not messages (answered 400 at once), and messages that are (accepted, their
//! errors sent on the session's stream).

use crate::*;
use reqwest::Method;
use tokio::io::AsyncWriteExt;

#[tokio::test]
async fn legacy() {
    let mut bench = Bench::start(HttpConfig { enable_sse: true, ..config() }, None).await;
    let closed = {
        let client = bench.ts.client("2024-11-05");
        let mut stream = client.request(Method::GET, "/sse").header("accept", "text/event-stream").stream().await;
        let endpoint = stream.next_event().await.expect("the endpoint event");
        let sessions = bench.ts.session_count();
        drop(stream);
        eventually("the dropped stream's session ending", || async { bench.ts.session_count() < sessions }).await;
        endpoint.data.trim_start_matches("/messages/?session_id=").to_string()
    };
    let live = bench.legacy_session().to_string();
    let to = |target: &str| bench.raw("POST", target).header("content-type", "application/json");
    let message = |body: &str| to(&format!("/messages/?session_id={live}")).body(body.to_string());
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let unknown = "0123456789abcdef0123456789abcdef";
    let gone = || refused(404, "Session not found");
    let no_id = || refused(400, "session_id query parameter is required");
    let no_events = || refused(406, "Not Acceptable: GET requires Accept: text/event-stream");
    let not_json = || refused(415, "Content-Type must be application/json");
    let not_allowed = |allow: &str| refused(405, "Method Not Allowed").with_header("allow", allow);
    let rows: Vec<Case> = vec![
        // Methods the endpoints do not take.
        ("a POST to /sse", bench.raw("POST", "/sse").body(ping), not_allowed("GET")),
        ("a DELETE of /sse", bench.raw("DELETE", "/sse"), not_allowed("GET")),
        (
            "a GET of the message endpoint",
            bench.raw("GET", &format!("/messages/?session_id={live}")),
            not_allowed("POST"),
        ),
        (
            "a PUT to the message endpoint",
            bench.raw("PUT", &format!("/messages/?session_id={live}")).body(ping),
            not_allowed("POST"),
        ),
        (
            "a GET of /sse that accepts only JSON",
            bench.raw("GET", "/sse").header("accept", "application/json"),
            no_events(),
        ),
        ("a GET of /sse that accepts HTML", bench.raw("GET", "/sse").header("accept", "text/html"), no_events()),
        // The session id.
        ("no query", to("/messages/").body(ping), no_id()),
        ("an empty session_id", to("/messages/?session_id=").body(ping), no_id()),
        ("session_id without a value", to("/messages/?session_id").body(ping), no_id()),
        ("sessionId instead of session_id", to(&format!("/messages/?sessionId={live}")).body(ping), no_id()),
        ("session_id in another case", to(&format!("/messages/?Session_Id={live}")).body(ping), no_id()),
        ("an unknown session", to(&format!("/messages/?session_id={unknown}")).body(ping), gone()),
        ("a closed session", to(&format!("/messages/?session_id={closed}")).body(ping), gone()),
        ("a percent-encoded session id that is not UTF-8", to("/messages/?session_id=%ff%fe").body(ping), gone()),
        (
            "an unknown session_id before the right one",
            to(&format!("/messages/?session_id={unknown}&session_id={live}")).body(ping),
            gone(),
        ),
        ("a Streamable HTTP session", to(&format!("/messages/?session_id={}", bench.session)).body(ping), gone()),
        ("the legacy session on the MCP endpoint", bench.post(ping).header("mcp-session-id", &live), gone()),
        (
            "a GET stream of the legacy session",
            bench.raw("GET", "/mcp").header("accept", "text/event-stream").header("mcp-session-id", &live),
            gone(),
        ),
        ("a DELETE of the legacy session", bench.raw("DELETE", "/mcp").header("mcp-session-id", &live), gone()),
        // Bodies that are not messages.
        ("a text/plain body", message(ping).set("content-type", "text/plain"), not_json()),
        ("a body without a Content-Type", message(ping).without("content-type"), not_json()),
        ("a form", message(ping).set("content-type", "application/x-www-form-urlencoded"), not_json()),
        ("not JSON", message("{x"), error(400, -32700, Value::Null, "Parse error")),
        ("an empty body", message(""), error(400, -32700, Value::Null, "Parse error")),
        ("a number", message("5"), refused(400, "Invalid Request")),
        ("null", message("null"), refused(400, "Invalid Request")),
        // Messages, whose errors go to the stream.
        (
            "jsonrpc 1.0",
            message(r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#),
            streamed(-32600, json!(2), "Invalid Request"),
        ),
        (
            "id null",
            message(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            streamed(-32600, Value::Null, "Invalid Request: bad id"),
        ),
        (
            "method a number",
            message(r#"{"jsonrpc":"2.0","id":2,"method":5}"#),
            streamed(-32600, json!(2), "Invalid Request: method must be a string"),
        ),
        (
            "params an array",
            message(r#"{"jsonrpc":"2.0","id":2,"method":"ping","params":[1]}"#),
            streamed(-32602, json!(2), "params must be an object"),
        ),
        (
            "an unknown method",
            message(r#"{"jsonrpc":"2.0","id":2,"method":"no/such"}"#),
            streamed(-32601, json!(2), "Method not found"),
        ),
        (
            "an unknown tool",
            message(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}"#),
            streamed(-32602, json!(2), "Unknown tool: nope"),
        ),
        (
            "initialize again",
            message(
                r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
            ),
            streamed(-32600, json!(2), "Session already initialized"),
        ),
        (
            "the 2026 envelope",
            message(&request("tools/list", enveloped(json!({}))).to_string()),
            streamed(
                -32600,
                json!(ID),
                "this session negotiated its protocol version with initialize; requests must not carry the 2026-07-28 _meta envelope",
            ),
        ),
        ("an empty batch", message("[]"), streamed(-32600, Value::Null, "Invalid Request: empty batch")),
        ("a response to nothing", message(r#"{"jsonrpc":"2.0","id":77,"result":{}}"#), posted()),
        ("an unknown notification", message(r#"{"jsonrpc":"2.0","method":"notifications/nope"}"#), posted()),
    ];
    bench.run(rows).await;
    bench.stop().await;
}

/// A POST for a session nobody holds is answered 404 once its body has arrived, so the
/// connection stays open for the client's next request. Answered on the head alone, the
/// body arriving after the answer ended the connection, and a client reusing it lost its
/// next request ("Server disconnected without sending a response").
#[tokio::test]
async fn a_404_for_an_unknown_session_keeps_the_connection() {
    let bench = Bench::start(HttpConfig { enable_sse: true, ..config() }, None).await;
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    for session in ["0123456789abcdef0123456789abcdef", "0000"] {
        let head = format!(
            "POST /messages/?session_id={session} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            bench.ts.addr,
            ping.len()
        );
        let mut stream = tokio::net::TcpStream::connect(bench.ts.addr).await.unwrap();
        for _ in 0..2 {
            stream.write_all(head.as_bytes()).await.unwrap();
            // The body a moment after the head, as a client writing them apart sends it.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            stream.write_all(ping.as_bytes()).await.expect("the connection is still open");
            let answer = read_response(&mut stream).await;
            assert_eq!(answer.status(), 404, "session {session:?}: {answer:?}");
        }
    }
    bench.stop().await;
}
