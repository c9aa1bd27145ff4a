//! Behind a reverse proxy, the name a client used and its scheme reach duet in `Forwarded`
//! (RFC 7239) or `X-Forwarded-Host` / `X-Forwarded-Proto`, which anyone can send. duet
//! believes them only from the proxies `HttpConfig::trusted_proxies` names (by the
//! connection's peer address, which the listener records as [`PeerAddr`]): then the
//! forwarded host is what the Host/Origin guard checks, and, when the canonical URI was not
//! configured, the forwarded scheme and host make it (the metadata, the challenges and the
//! audience a token must name). From anyone else they are ignored. Of several proxies in a
//! row, the last entry is the one the nearest (trusted) proxy added.

use http::HeaderMap;
use http::request::Parts;
use ipnet::IpNet;
use std::net::SocketAddr;

/// The peer address of a request's connection, as a request extension. duet's listener
/// sets it; a program that mounts [`McpService`](super::McpService) in its own server
/// inserts it for `trusted_proxies` to apply.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub SocketAddr);

/// What a trusted proxy says the client asked for.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Forwarded {
    pub host: Option<String>,
    pub proto: Option<String>,
}

impl Forwarded {
    /// What the request's forwarding headers say, if its peer is one of `trusted`.
    pub fn of(parts: &Parts, trusted: &[IpNet]) -> Forwarded {
        let peer = parts.extensions.get::<PeerAddr>().map(|p| p.0.ip());
        if !peer.is_some_and(|ip| trusted.iter().any(|net| net.contains(&ip))) {
            return Forwarded::default();
        }
        Forwarded::read(&parts.headers)
    }

    fn read(headers: &HeaderMap) -> Forwarded {
        let last = |name: &str| {
            let values = headers.get_all(name).into_iter().filter_map(|v| v.to_str().ok());
            values.flat_map(|v| v.split(',')).map(str::trim).rfind(|v| !v.is_empty()).map(str::to_owned)
        };
        if let Some(element) = last("forwarded") {
            let mut forwarded = Forwarded::default();
            for pair in element.split(';') {
                let Some((key, value)) = pair.split_once('=') else { continue };
                let value = value.trim().trim_matches('"').to_string();
                match key.trim().to_ascii_lowercase().as_str() {
                    "host" => forwarded.host = Some(value),
                    "proto" => forwarded.proto = Some(value.to_ascii_lowercase()),
                    _ => {}
                }
            }
            return forwarded;
        }
        Forwarded { host: last("x-forwarded-host"), proto: last("x-forwarded-proto").map(|p| p.to_ascii_lowercase()) }
    }

    /// The canonical URI of the endpoint at `path` as the client reached it, when a trusted
    /// proxy named the host: `https` when the proxy says so, else `http` (the scheme duet
    /// itself was reached with).
    pub fn canonical(&self, path: &str) -> Option<String> {
        let host = self.host.as_deref()?;
        let scheme = if self.proto.as_deref() == Some("https") { "https" } else { "http" };
        Some(format!("{scheme}://{host}{path}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(peer: &str, headers: &[(&str, &str)]) -> Parts {
        let mut request = http::Request::builder().uri("/mcp");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let (mut parts, ()) = request.body(()).unwrap().into_parts();
        parts.extensions.insert(PeerAddr(peer.parse().unwrap()));
        parts
    }

    #[test]
    fn only_trusted_peers_are_believed() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()];
        let headers = [("x-forwarded-host", "evil.example, mcp.example.com"), ("x-forwarded-proto", "HTTPS")];
        let believed = Forwarded::of(&parts("10.1.2.3:5000", &headers), &trusted);
        assert_eq!(believed, Forwarded { host: Some("mcp.example.com".into()), proto: Some("https".into()) });
        assert_eq!(Forwarded::of(&parts("192.168.1.9:5000", &headers), &trusted), Forwarded::default());
        assert_eq!(Forwarded::of(&parts("[::1]:5000", &headers), &trusted).host.as_deref(), Some("mcp.example.com"));
        let mut unknown = parts("10.1.2.3:5000", &headers);
        unknown.extensions.clear();
        assert_eq!(Forwarded::of(&unknown, &trusted), Forwarded::default(), "no peer address, no trust");
    }

    #[test]
    fn forwarded_wins_and_its_last_element_counts() {
        let trusted: Vec<IpNet> = vec!["127.0.0.0/8".parse().unwrap()];
        let headers = [
            ("forwarded", "for=1.2.3.4;host=evil.example, for=5.6.7.8;host=\"mcp.example.com\";proto=http"),
            ("x-forwarded-host", "ignored.example"),
        ];
        let f = Forwarded::of(&parts("127.0.0.1:1", &headers), &trusted);
        assert_eq!(f, Forwarded { host: Some("mcp.example.com".into()), proto: Some("http".into()) });
        assert_eq!(f.canonical("/mcp").as_deref(), Some("http://mcp.example.com/mcp"));
        let https = Forwarded { host: Some("mcp.example.com".into()), proto: Some("https".into()) };
        assert_eq!(https.canonical("/mcp").as_deref(), Some("https://mcp.example.com/mcp"));
    }
}
