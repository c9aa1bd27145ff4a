//! Behind a reverse proxy, the name a client used and its scheme reach duet in the header
//! the proxy sets: `X-Forwarded-Host` / `X-Forwarded-Proto`, or `Forwarded` (RFC 7239),
//! which anyone can also send. duet believes them only from the proxies
//! `HttpConfig::trusted_proxies` names (by the connection's peer address, which the listener
//! records as [`PeerAddr`]), and reads only the one `HttpConfig::proxy_header` says that
//! proxy sets: a proxy passes on what it does not set itself, so the other is the client's.
//! Of several entries, the last is the one the nearest (trusted) proxy added; earlier ones
//! came from further away, the client included.
//!
//! The forwarded host is what the Host/Origin guard checks. When the canonical URI was not
//! configured, it also makes the canonical URI of the request (the metadata, the challenges
//! and the audience a token must name), but only for the hosts of [`CanonicalHosts`]:
//! names the operator gave, port and all, never a pattern; any other host leaves the
//! canonical URI the one the server is bound at.

use super::config::{HttpConfig, ProxyHeader};
use super::guard::{LOOPBACK_NAMES, is_loopback};
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
    /// What the request's `header` says, if its peer is one of `trusted`.
    pub(super) fn of(parts: &Parts, trusted: &[IpNet], header: ProxyHeader) -> Forwarded {
        let peer = parts.extensions.get::<PeerAddr>().map(|p| p.0.ip());
        if !peer.is_some_and(|ip| trusted.iter().any(|net| net.contains(&ip))) {
            return Forwarded::default();
        }
        Forwarded::read(&parts.headers, header)
    }

    fn read(headers: &HeaderMap, header: ProxyHeader) -> Forwarded {
        let last = |name: &str| {
            let values = headers.get_all(name).into_iter().filter_map(|v| v.to_str().ok());
            values.flat_map(|v| v.split(',')).map(str::trim).rfind(|v| !v.is_empty()).map(str::to_owned)
        };
        match header {
            ProxyHeader::XForwarded => Forwarded {
                host: last("x-forwarded-host"),
                proto: last("x-forwarded-proto").map(|p| p.to_ascii_lowercase()),
            },
            ProxyHeader::Forwarded => {
                let mut forwarded = Forwarded::default();
                for pair in last("forwarded").iter().flat_map(|element| element.split(';')) {
                    let Some((key, value)) = pair.split_once('=') else { continue };
                    let value = value.trim().trim_matches('"').to_string();
                    match key.trim().to_ascii_lowercase().as_str() {
                        "host" => forwarded.host = Some(value),
                        "proto" => forwarded.proto = Some(value.to_ascii_lowercase()),
                        _ => {}
                    }
                }
                forwarded
            }
        }
    }

    /// The canonical URI of the endpoint at `path` as the client reached it, when a trusted
    /// proxy named one of `hosts`: `https` when the proxy says so, else `http` (the scheme
    /// duet itself was reached with).
    pub(super) fn canonical(&self, path: &str, hosts: &CanonicalHosts) -> Option<String> {
        let host = self.host.as_deref().filter(|host| hosts.contains(host))?;
        let scheme = if self.proto.as_deref() == Some("https") { "https" } else { "http" };
        Some(format!("{scheme}://{host}{path}"))
    }
}

/// The hosts (`name[:port]`, compared case-insensitively and exactly: a port is part of the
/// host) a forwarded host may make the canonical URI with. Empty when the canonical URI
/// never follows a proxy: it was configured, or no proxy is trusted.
#[derive(Debug, Clone, Default)]
pub(crate) struct CanonicalHosts(Vec<String>);

impl CanonicalHosts {
    /// The `--allowed-host` entries that are names rather than patterns, as written; without
    /// any, the host and port the server is bound at, and on a loopback bind the other
    /// loopback names at that port (never another port).
    pub(super) fn new(config: &HttpConfig) -> Self {
        let bound = config.resource.as_ref().and_then(|r| url::Url::parse(&r.resource).ok());
        let follows = config.canonical_follows_proxy && !config.trusted_proxies.is_empty();
        let Some(bound) = bound.filter(|_| follows) else {
            return CanonicalHosts::default();
        };
        let names: Vec<String> =
            config.allowed_hosts.iter().flatten().filter(|h| !h.contains(['*', '?', '['])).cloned().collect();
        if !names.is_empty() {
            return CanonicalHosts(names);
        }
        let (Some(host), Some(port)) = (bound.host_str(), bound.port_or_known_default()) else {
            return CanonicalHosts::default();
        };
        let mut hosts = vec![format!("{host}:{port}")];
        if is_loopback(host) {
            hosts.extend(LOOPBACK_NAMES.iter().map(|name| format!("{name}:{port}")));
        }
        CanonicalHosts(hosts)
    }

    /// Whether a request's canonical URI may follow a proxy at all (so its metadata
    /// depends on the request).
    pub(super) fn follow(&self) -> bool {
        !self.0.is_empty()
    }

    fn contains(&self, host: &str) -> bool {
        self.0.iter().any(|h| h.eq_ignore_ascii_case(host))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::ProtectedResource;

    fn parts(peer: &str, headers: &[(&str, &str)]) -> Parts {
        let mut request = http::Request::builder().uri("/mcp");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let (mut parts, ()) = request.body(()).unwrap().into_parts();
        parts.extensions.insert(PeerAddr(peer.parse().unwrap()));
        parts
    }

    const X: ProxyHeader = ProxyHeader::XForwarded;
    const RFC: ProxyHeader = ProxyHeader::Forwarded;

    #[test]
    fn only_trusted_peers_are_believed() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()];
        let headers = [("x-forwarded-host", "evil.example, mcp.example.com"), ("x-forwarded-proto", "HTTPS")];
        let believed = Forwarded::of(&parts("10.1.2.3:5000", &headers), &trusted, X);
        assert_eq!(believed, Forwarded { host: Some("mcp.example.com".into()), proto: Some("https".into()) });
        assert_eq!(Forwarded::of(&parts("192.168.1.9:5000", &headers), &trusted, X), Forwarded::default());
        let v6 = Forwarded::of(&parts("[::1]:5000", &headers), &trusted, X);
        assert_eq!(v6.host.as_deref(), Some("mcp.example.com"));
        let mut unknown = parts("10.1.2.3:5000", &headers);
        unknown.extensions.clear();
        assert_eq!(Forwarded::of(&unknown, &trusted, X), Forwarded::default(), "no peer address, no trust");
    }

    /// Found by the security review: a client's own `Forwarded` beat the proxy's
    /// `X-Forwarded-Host`. Only the configured header is read, and of it the last entry.
    #[test]
    fn only_the_header_the_proxy_sets_counts_and_its_last_entry() {
        let trusted: Vec<IpNet> = vec!["127.0.0.0/8".parse().unwrap()];
        let headers = [
            ("forwarded", "for=1.2.3.4;host=evil.example, for=5.6.7.8;host=\"mcp.example.com\";proto=http"),
            ("x-forwarded-host", "client.example"),
            ("x-forwarded-host", "proxy.example"),
        ];
        let rfc = Forwarded::of(&parts("127.0.0.1:1", &headers), &trusted, RFC);
        assert_eq!(rfc, Forwarded { host: Some("mcp.example.com".into()), proto: Some("http".into()) });
        let x = Forwarded::of(&parts("127.0.0.1:1", &headers), &trusted, X);
        assert_eq!(x, Forwarded { host: Some("proxy.example".into()), proto: None });
        let only_rfc = [("forwarded", "host=evil.example")];
        assert_eq!(Forwarded::of(&parts("127.0.0.1:1", &only_rfc), &trusted, X), Forwarded::default());
        let only_x = [("x-forwarded-host", "evil.example")];
        assert_eq!(Forwarded::of(&parts("127.0.0.1:1", &only_x), &trusted, RFC), Forwarded::default());
    }

    fn following(allowed_hosts: Option<&[&str]>, bound: &str) -> CanonicalHosts {
        let config = HttpConfig {
            allowed_hosts: allowed_hosts.map(|hosts| hosts.iter().map(|h| h.to_string()).collect()),
            trusted_proxies: vec!["127.0.0.1/32".parse().unwrap()],
            resource: Some(ProtectedResource::new(bound, vec![])),
            canonical_follows_proxy: true,
            ..HttpConfig::default()
        };
        CanonicalHosts::new(&config)
    }

    fn at(host: &str, proto: Option<&str>) -> Forwarded {
        Forwarded { host: Some(host.into()), proto: proto.map(str::to_owned) }
    }

    #[test]
    fn the_canonical_uri_follows_only_named_hosts_with_their_port() {
        let named =
            following(Some(&["mcp.example.com", "*.example.com", "other.example:8443"]), "http://127.0.0.1:9001/mcp");
        let canonical = |host: &str| at(host, Some("https")).canonical("/mcp", &named);
        assert_eq!(canonical("MCP.example.com").as_deref(), Some("https://MCP.example.com/mcp"));
        assert_eq!(canonical("other.example:8443").as_deref(), Some("https://other.example:8443/mcp"));
        for refused in ["mcp.example.com:8443", "evil.example.com", "other.example", "127.0.0.1:9001"] {
            assert_eq!(canonical(refused), None, "{refused}");
        }
        assert_eq!(
            at("mcp.example.com", None).canonical("/mcp", &named).as_deref(),
            Some("http://mcp.example.com/mcp")
        );
    }

    /// Found by the security review: on a loopback bind any loopback host with any port made
    /// the audience (`X-Forwarded-Host: 127.0.0.1:9999`). Only the bound port does.
    #[test]
    fn loopback_defaults_follow_only_the_bound_port() {
        let hosts = following(None, "http://127.0.0.1:9001/mcp");
        for host in ["127.0.0.1:9001", "localhost:9001", "[::1]:9001"] {
            assert!(at(host, None).canonical("/mcp", &hosts).is_some(), "{host}");
        }
        for host in ["127.0.0.1:9999", "localhost", "127.0.0.1", "localhost:90011", "evil.example:9001"] {
            assert_eq!(at(host, None).canonical("/mcp", &hosts), None, "{host}");
        }
        let patterns_only = following(Some(&["*.example.com"]), "http://127.0.0.1:9001/mcp");
        assert!(at("127.0.0.1:9001", None).canonical("/mcp", &patterns_only).is_some());
        assert!(at("mcp.example.com", None).canonical("/mcp", &patterns_only).is_none());
    }

    #[test]
    fn a_configured_canonical_uri_never_follows() {
        let mut config = HttpConfig {
            trusted_proxies: vec!["127.0.0.1/32".parse().unwrap()],
            resource: Some(ProtectedResource::new("https://mcp.example.com/mcp", vec![])),
            ..HttpConfig::default()
        };
        assert!(!CanonicalHosts::new(&config).follow());
        config.canonical_follows_proxy = true;
        assert!(CanonicalHosts::new(&config).follow());
        config.trusted_proxies.clear();
        assert!(!CanonicalHosts::new(&config).follow(), "no trusted proxy, nothing to follow");
    }
}
