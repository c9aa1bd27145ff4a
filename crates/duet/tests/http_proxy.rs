//! Behind a reverse proxy, over real sockets: `X-Forwarded-Host` / `X-Forwarded-Proto`, or
//! `Forwarded`, whichever the trusted proxy is configured to set, from a trusted peer feed
//! the Host/Origin guard and the canonical URI of the Protected Resource Metadata; from
//! anyone else, or the other header, they change nothing.

pub mod http_support;

use duet::auth::ProtectedResource;
use duet::transport::http::{HttpConfig, ProxyHeader};
use http_support::*;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// A server that answers to `mcp.example.com` only, trusting proxies in `trusted`, with a
/// protected resource whose canonical URI is left to the bind (so it may follow a proxy).
fn behind(trusted: &str) -> HttpConfig {
    HttpConfig {
        allowed_hosts: Some(vec!["mcp.example.com".into()]),
        trusted_proxies: vec![trusted.parse().expect("a CIDR")],
        resource: Some(ProtectedResource::new("", vec!["https://auth.example.com".into()])),
        ..config()
    }
}

#[tokio::test]
async fn a_trusted_proxy_names_the_host_the_guard_checks() {
    let ts = TestServer::start(behind("127.0.0.0/8")).await;
    let client = ts.modern();
    let ping = || client.post("tools/list", json!({}));
    // Host is the replica's own address: not a name this server answers to.
    ping().send().await.expect_http_error(StatusCode::MISDIRECTED_REQUEST, "Invalid Host header");
    ping().header("x-forwarded-host", "mcp.example.com").send().await.expect_status(StatusCode::OK);
    // The proxy sets X-Forwarded-Host (the default), so a Forwarded is the client's own.
    let rfc = || ping().header("forwarded", "for=192.0.2.1;host=mcp.example.com;proto=https");
    rfc().send().await.expect_http_error(StatusCode::MISDIRECTED_REQUEST, "Invalid Host header");
    let evil = ping().header("x-forwarded-host", "evil.example").send().await;
    evil.expect_http_error(StatusCode::MISDIRECTED_REQUEST, "Invalid Host header");
    // Same-origin is the forwarded host's.
    let page = ping().header("x-forwarded-host", "mcp.example.com").header("origin", "https://mcp.example.com");
    page.send().await.expect_status(StatusCode::OK);
    ts.stop().await;
}

/// A proxy that sets `Forwarded`: its last element counts, and an `X-Forwarded-Host` is
/// the client's own.
#[tokio::test]
async fn a_proxy_that_sets_forwarded_is_read_there_only() {
    let ts = TestServer::start(HttpConfig { proxy_header: ProxyHeader::Forwarded, ..behind("127.0.0.0/8") }).await;
    let client = ts.modern();
    let ping = || client.post("tools/list", json!({}));
    let appended = "for=192.0.2.1;host=evil.example, for=10.0.0.1;host=mcp.example.com;proto=https";
    ping().header("forwarded", appended).send().await.expect_status(StatusCode::OK);
    let forged = ping().header("x-forwarded-host", "mcp.example.com").send().await;
    forged.expect_http_error(StatusCode::MISDIRECTED_REQUEST, "Invalid Host header");
    ts.stop().await;
}

#[tokio::test]
async fn an_untrusted_peer_forwards_nothing() {
    let ts = TestServer::start(behind("10.0.0.0/8")).await;
    let forged = ts.modern().post("tools/list", json!({})).header("x-forwarded-host", "mcp.example.com");
    forged.send().await.expect_http_error(StatusCode::MISDIRECTED_REQUEST, "Invalid Host header");
    ts.stop().await;
}

#[tokio::test]
async fn the_canonical_uri_follows_a_trusted_proxy() {
    let open = |trusted: &str| HttpConfig {
        allowed_hosts: Some(vec!["mcp.example.com".into(), "127.0.0.1:*".into()]),
        ..behind(trusted)
    };
    let ts = TestServer::start(open("127.0.0.0/8")).await;
    let metadata = |proto: &str| {
        let req = ts.client(LATEST).request(Method::GET, "/.well-known/oauth-protected-resource/mcp");
        req.header("x-forwarded-host", "mcp.example.com").header("x-forwarded-proto", proto)
    };
    assert_eq!(document(metadata("https")).await["resource"], "https://mcp.example.com/mcp");
    assert_eq!(document(metadata("http")).await["resource"], "http://mcp.example.com/mcp");
    // A pattern lets a host past the guard but never makes the canonical URI: only names.
    let bound = |host: &str| {
        let req = ts.client(LATEST).request(Method::GET, "/.well-known/oauth-protected-resource/mcp");
        req.header("x-forwarded-host", host)
    };
    let resource = document(bound("127.0.0.1:9999")).await["resource"].as_str().unwrap_or_default().to_string();
    assert!(resource.starts_with("http://127.0.0.1:") && !resource.contains(":9999/"), "{resource}");
    ts.stop().await;
    // Untrusted: the bound address, whatever the headers say.
    let ts = TestServer::start(open("10.0.0.0/8")).await;
    let doc = ts.client(LATEST).request(Method::GET, "/.well-known/oauth-protected-resource/mcp");
    let doc = document(doc.header("x-forwarded-host", "mcp.example.com")).await;
    let resource = doc["resource"].as_str().expect("a resource").to_string();
    assert!(resource.starts_with("http://127.0.0.1:") && resource.ends_with("/mcp"), "{resource}");
    ts.stop().await;
}

/// The JSON document a GET answers.
async fn document(request: Req) -> Value {
    let response = request.response().await;
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("a JSON document")
}
