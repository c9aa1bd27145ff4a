//! Authentication and scopes: bearer tokens missing, malformed, unknown or sent where tokens
//! do not go, each answered 401 with the challenge that points at the Protected Resource
//! Metadata, and calls of tools, prompts and resources whose scopes the caller lacks (403
//! `insufficient_scope`, naming every scope the call needs).

use crate::*;
use duet::auth::{ProtectedResource, ScopeMap, TokenAuth};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

const SCOPES: &str = r#"
    [tools]
    refund_order = ["payments"]
    stats = ["analyst", "ops"]
    [prompts]
    greet = ["prompts"]
    [resources]
    "test://items/*" = ["items"]
"#;

#[tokio::test]
async fn auth() {
    let auth = TokenAuth::from_specs(["tok-a:analyst", "tok-b"]).expect("token specs");
    let mut resource = ProtectedResource::new("", vec!["https://auth.example".into()]);
    resource.scopes_supported = vec!["items".into()];
    let scopes = ScopeMap::from_toml(SCOPES).expect("a scope map");
    let config = HttpConfig { auth: Some(Arc::new(auth)), resource: Some(resource), ..config() };
    let options = ServerOptions { scopes: Some(Arc::new(scopes)), ..ServerOptions::default() };
    let mut bench = Bench::start_with(config, options, Some("tok-a")).await;
    let metadata = format!("http://{}/.well-known/oauth-protected-resource/mcp", bench.ts.host());
    let challenged = |challenge: String| refused(401, "Unauthorized").with_header("www-authenticate", challenge);
    let unauthorized = || challenged(format!(r#"Bearer scope="items", resource_metadata="{metadata}""#));
    let invalid = |why: &str| {
        challenged(format!(
            r#"Bearer error="invalid_token", error_description="{why}", scope="items", resource_metadata="{metadata}""#
        ))
    };
    let forbidden = |what: &str, scopes: &str| {
        let description = format!("{what} requires the scopes: {scopes}");
        let challenge = format!(
            r#"Bearer error="insufficient_scope", error_description="{description}", scope="{scopes}", resource_metadata="{metadata}""#
        );
        refused(403, format!("Forbidden: {description}")).with_header("www-authenticate", challenge)
    };
    let list = || bench.handshake("tools/list", json!({}));
    let token = |value: &[u8]| list().set("authorization", value);
    let refund = json!({"name": "refund_order", "arguments": {"order_id": "A1", "amount_cents": 500}});
    let rows: Vec<Case> = vec![
        // No usable token.
        ("no Authorization", list().without("authorization"), unauthorized()),
        (
            "no Authorization on a GET",
            bench.raw("GET", "/mcp").without("authorization").header("mcp-session-id", &bench.session),
            unauthorized(),
        ),
        (
            "no Authorization on a DELETE",
            bench.raw("DELETE", "/mcp").without("authorization").header("mcp-session-id", &bench.session),
            unauthorized(),
        ),
        (
            "no Authorization for a path that does not exist",
            bench.raw("GET", "/nope").without("authorization"),
            unauthorized(),
        ),
        ("an empty Authorization", token(b""), unauthorized()),
        ("Bearer without a token", token(b"Bearer"), unauthorized()),
        ("Bearer and spaces", token(b"Bearer    "), unauthorized()),
        ("Basic credentials", token(b"Basic dG9rLWE6"), unauthorized()),
        ("another scheme", token(b"Token tok-a"), unauthorized()),
        ("no space after Bearer", token(b"Bearertok-a"), unauthorized()),
        (
            "the token in the query",
            bench
                .raw("POST", "/mcp?access_token=tok-a")
                .without("authorization")
                .header("content-type", "application/json")
                .body(request("tools/list", json!({})).to_string()),
            unauthorized(),
        ),
        // A token that is not one.
        ("an unknown token", token(b"Bearer wrong"), invalid("unknown token")),
        ("a token in other case", token(b"Bearer TOK-A"), invalid("unknown token")),
        ("a token with more after it", token(b"Bearer tok-a extra"), invalid("unknown token")),
        ("a token with a comma", token(b"Bearer tok-a,"), invalid("unknown token")),
        ("a token that is not ASCII", token(b"Bearer tok-\xffa"), invalid("unknown token")),
        (
            "two tokens, the first valid",
            token(b"Bearer tok-a").header("authorization", "Bearer wrong"),
            invalid("unknown token"),
        ),
        (
            "two tokens, the second valid",
            token(b"Bearer wrong").header("authorization", "Bearer tok-a"),
            invalid("unknown token"),
        ),
        (
            "the valid token twice",
            token(b"Bearer tok-a").header("authorization", "Bearer tok-a"),
            invalid("unknown token"),
        ),
        ("a token of 4 KiB", token(format!("Bearer {}", "t".repeat(4096)).as_bytes()), invalid("unknown token")),
        ("the scheme in lower case", token(b"bearer tok-a"), served()),
        ("the scheme in capitals, spaces around the token", token(b"BEARER  tok-a "), served()),
        // Where no token is needed, or none helps.
        (
            "a POST to the metadata",
            bench.raw("POST", "/.well-known/oauth-protected-resource/mcp").body("{}"),
            refused(405, "Method Not Allowed").with_header("allow", "GET"),
        ),
        // Scopes.
        (
            "a tool that needs a scope",
            bench.modern("tools/call", refund.clone()),
            forbidden("Tool refund_order", "payments"),
        ),
        (
            "a tool that needs two scopes, one held",
            bench.modern("tools/call", json!({"name": "stats", "arguments": {}})),
            forbidden("Tool stats", "analyst ops"),
        ),
        (
            "a scoped tool on a session",
            bench.handshake("tools/call", refund.clone()),
            forbidden("Tool refund_order", "payments"),
        ),
        (
            "a scoped tool named in base64",
            bench.modern("tools/call", refund.clone()).set("mcp-name", "=?base64?cmVmdW5kX29yZGVy?="),
            forbidden("Tool refund_order", "payments"),
        ),
        (
            "a scoped prompt",
            bench.modern("prompts/get", json!({"name": "greet", "arguments": {"name": "a"}})),
            forbidden("Prompt greet", "prompts"),
        ),
        (
            "a scoped resource",
            bench.modern("resources/read", json!({"uri": "test://items/alpha"})),
            forbidden("Resource test://items/alpha", "items"),
        ),
        (
            "a subscription to a scoped resource",
            bench.handshake("resources/subscribe", json!({"uri": "test://items/beta"})),
            forbidden("Resource test://items/beta", "items"),
        ),
        (
            "a batch with a scoped tool",
            bench.in_session(
                json!([
                    request("tools/call", json!({"name": "echo", "arguments": {"text": "x"}})),
                    request("tools/call", refund)
                ])
                .to_string(),
            ),
            forbidden("Tool refund_order", "payments"),
        ),
    ];
    bench.run(rows).await;
    bench.stop().await;
}

/// A POST without a token, answered 401 before its body has all arrived, says the connection
/// closes: hyper ends it after the answer, and an OAuth client that reused it for its next
/// request (the metadata, or the POST again with a token) lost that request ("Server
/// disconnected without sending a response"). A 401 to a GET, which has no body, keeps the
/// connection.
#[tokio::test]
async fn a_401_before_the_body_arrived_says_the_connection_closes() {
    let auth = TokenAuth::from_specs(["tok-a"]).expect("token specs");
    let bench = Bench::start(HttpConfig { auth: Some(Arc::new(auth)), ..config() }, Some("tok-a")).await;
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
        bench.ts.host(),
        ping.len()
    );
    let mut stream = tokio::net::TcpStream::connect(bench.ts.addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let answer = read_response(&mut stream).await;
    assert_eq!(answer.status(), 401, "{answer:?}");
    assert_eq!(answer.header("connection"), Some("close"), "{answer:?}");
    let get = format!("GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\r\n", bench.ts.host());
    let answer = raw_exchange(bench.ts.addr, get.into_bytes()).await;
    assert_eq!(answer.status(), 401, "{answer:?}");
    assert_eq!(answer.header("connection"), None, "{answer:?}");
    bench.stop().await;
}
