//! `duet serve`: checks the options, builds the layer and the engine, then runs a transport
//! until it ends: stdin closes, or SIGTERM / SIGINT stops it gracefully (no new requests,
//! those in flight get `--shutdown-grace` to finish, exit 0); a second signal exits at once.
//! With `--metrics-addr` the metrics endpoint runs beside any transport.

use crate::choice;
use crate::cli::{HttpArgs, ProxyHeader, ServeArgs, Transport};
use crate::usage::Usage;
use anyhow::Context as _;
use duet::auth::TokenAuth;
use duet::protocol::{RateLimits, Server, ServerOptions};
use duet::trace::Tracer;
use duet::transport::http::{HttpConfig, HttpServer};
use duet::transport::stdio::StdioOptions;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

pub(crate) async fn run(args: ServeArgs, tracer: Option<Tracer>) -> anyhow::Result<ExitCode> {
    let http = match args.transport {
        Transport::Stdio => stdio_only(&args.http).map(|()| None),
        transport => http_config(&args.http, transport).map(|mut config| {
            config.max_body_bytes = args.max_message_bytes.unwrap_or(config.max_body_bytes);
            Some(config)
        }),
    };
    let shared = match crate::replicas::shared(&args.replicas).await {
        Ok(shared) => shared,
        Err(usage) => return Ok(usage.exit()),
    };
    let (layer, http) = match (choice::served(&args.layer, &shared.backplane), http) {
        (Ok(layer), Ok(http)) => (layer, http),
        (Err(usage), _) | (_, Err(usage)) => return Ok(usage.exit()),
    };
    let rate_limits = match rate_limits(&args.http) {
        Ok(limits) => limits,
        Err(usage) => return Ok(usage.exit()),
    };
    let (scopes, http) = match crate::oauth_args::apply(&args.oauth, args.transport, http).await {
        Ok(applied) => applied,
        Err(usage) => return Ok(usage.exit()),
    };
    let metrics = match &args.metrics_addr {
        Some(addr) => Some(crate::metrics::serve(addr).await?),
        None => None,
    };
    // No client is asked for roots that the layer does not read.
    let client_roots = choice::reads_client_roots(&args.layer);
    let options = ServerOptions {
        page_size: args.page_size,
        client_roots,
        state_keys: shared.state_keys,
        backplane: shared.backplane,
        tracer,
        tasks: args.tasks.options(),
        max_batch_items: args.max_batch_items as usize,
        max_batch_answer_bytes: args.max_batch_answer_bytes as usize,
        max_subscriptions: args.max_subscriptions as usize,
        max_subscription_uri_bytes: args.max_subscription_uri_bytes as usize,
        rate_limits,
        scopes,
        ..ServerOptions::default()
    };
    let server = Server::new(layer, options);
    let grace = Duration::from_secs(args.shutdown_grace);
    match http {
        None => {
            let mut options = StdioOptions { shutdown_grace: grace, ..StdioOptions::default() };
            options.max_message_bytes = args.max_message_bytes.unwrap_or(options.max_message_bytes);
            let stop = options.stop.clone();
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                // Someone typed `duet serve`: say what it does, since it will sit silent.
                crate::logging::notice(
                    "duet MCP server (stdio): waiting for an MCP client's JSON-RPC messages on stdin. A client \
                     starts duet itself: `duet config --client …` prints the entry to give it. Ctrl-D ends.",
                );
            }
            tokio::spawn(async move {
                shutdown_signal().await;
                stop.cancel();
                exit_on_second_signal();
            });
            duet::transport::stdio::serve_stdio(server, options).await?
        }
        Some(config) => serve_http(server, config, args.transport, grace).await?,
    }
    if let Some(metrics) = metrics {
        metrics.shutdown().await;
    }
    Ok(ExitCode::SUCCESS)
}

/// `--rate-limit`, `--tool-rate-limit NAME=RPS` and `--max-in-flight-per-principal`.
fn rate_limits(http: &HttpArgs) -> Result<RateLimits, Usage> {
    let rate = |flag: &str, rate: Option<f64>, given: &str| match rate {
        Some(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(Usage(format!("{flag} needs a positive number of requests a second, not {given:?}"))),
    };
    let mut limits = RateLimits { max_in_flight: http.max_in_flight_per_principal, ..RateLimits::default() };
    if let Some(rps) = http.rate_limit {
        limits.requests_per_second = Some(rate("--rate-limit", Some(rps), &rps.to_string())?);
    }
    for spec in &http.tool_rate_limits {
        let Some((name, rps)) = spec.split_once('=').filter(|(name, _)| !name.is_empty()) else {
            return Err(Usage(format!("--tool-rate-limit takes NAME=RPS, not {spec:?}")));
        };
        let rps = rate("--tool-rate-limit", rps.parse().ok(), rps)?;
        limits.tool_calls_per_second.insert(name.to_string(), rps);
    }
    if limits.max_in_flight == Some(0) {
        return Err(Usage("--max-in-flight-per-principal must be at least 1".into()));
    }
    Ok(limits)
}

/// HTTP-only options make no sense over stdio: refuse them rather than ignore them.
fn stdio_only(http: &HttpArgs) -> Result<(), Usage> {
    let given = [
        ("--host", http.host.is_some()),
        ("--port", http.port.is_some()),
        ("--path", http.path.is_some()),
        ("--auth-token", !http.auth_tokens.is_empty()),
        ("--allowed-origin", !http.allowed_origins.is_empty()),
        ("--allowed-host", !http.allowed_hosts.is_empty()),
        ("--cors-origin", !http.cors_origins.is_empty()),
        ("--trusted-proxy", !http.trusted_proxies.is_empty()),
        ("--proxy-header", http.proxy_header.is_some()),
        ("--json-response", http.json_response),
        ("--stateless", http.stateless),
        ("--rate-limit", http.rate_limit.is_some()),
        ("--tool-rate-limit", !http.tool_rate_limits.is_empty()),
        ("--max-in-flight-per-principal", http.max_in_flight_per_principal.is_some()),
        ("--max-connections-per-peer", http.max_connections_per_peer.is_some()),
        ("--sse-close-after", http.sse_close_after.is_some()),
        ("--write-timeout", http.write_timeout.is_some()),
    ];
    match given.iter().find(|(_, set)| *set) {
        Some((flag, _)) => Err(Usage(format!("{flag} applies to the HTTP transports; add --transport http"))),
        None => Ok(()),
    }
}

fn http_config(http: &HttpArgs, transport: Transport) -> Result<HttpConfig, Usage> {
    if transport == Transport::Sse && http.stateless {
        return Err(Usage(
            "--stateless cannot serve --transport sse: the legacy HTTP+SSE transport needs sessions".into(),
        ));
    }
    let mut config = HttpConfig { enable_sse: transport == Transport::Sse, ..HttpConfig::default() };
    if let Some(host) = &http.host {
        config.host = host.clone();
    }
    if let Some(port) = http.port {
        config.port = port;
    }
    if let Some(path) = &http.path {
        if !path.starts_with('/') {
            return Err(Usage(format!("--path must start with '/': {path:?}")));
        }
        config.path = path.clone();
    }
    config.auth = auth_tokens(&http.auth_tokens)?.map(|tokens| tokens as Arc<dyn duet::auth::Authenticator>);
    config.allowed_origins = (!http.allowed_origins.is_empty()).then(|| http.allowed_origins.clone());
    config.allowed_hosts = (!http.allowed_hosts.is_empty()).then(|| http.allowed_hosts.clone());
    config.cors_origins = http.cors_origins.clone();
    config.trusted_proxies = trusted_proxies(&http.trusted_proxies)?;
    config.proxy_header = match http.proxy_header {
        Some(ProxyHeader::Forwarded) => duet::transport::http::ProxyHeader::Forwarded,
        Some(ProxyHeader::XForwarded) | None => duet::transport::http::ProxyHeader::XForwarded,
    };
    config.json_response = http.json_response;
    config.stateless = http.stateless;
    let secs = Duration::from_secs;
    let positive = |name: &str, v: Option<u64>| match v {
        Some(0) => Err(Usage(format!("{name} must be at least 1"))),
        other => Ok(other),
    };
    if let Some(n) = positive("--session-idle-timeout", http.session_idle_timeout)? {
        config.session_idle_timeout = secs(n);
    }
    if let Some(n) = http.max_sessions {
        config.max_sessions = n;
    }
    if let Some(n) = http.max_sessions_per_principal {
        config.max_sessions_per_principal = n;
    }
    if let Some(n) = positive("--max-connections", http.max_connections.map(|n| n as u64))? {
        config.max_connections = n as usize;
    }
    config.max_connections_per_peer = http.max_connections_per_peer;
    if let Some(n) = positive("--header-timeout", http.header_timeout)? {
        config.header_timeout = secs(n);
    }
    if let Some(n) = positive("--body-timeout", http.body_timeout)? {
        config.body_timeout = secs(n);
    }
    if let Some(n) = positive("--write-timeout", http.write_timeout)? {
        config.write_timeout = secs(n);
    }
    if let Some(n) = positive("--keepalive-interval", http.keepalive_interval)? {
        config.keepalive_interval = secs(n);
    }
    if let Some(seconds) = http.sse_close_after {
        let after = Duration::try_from_secs_f64(seconds).ok().filter(|d| !d.is_zero());
        let refused = || Usage(format!("--sse-close-after takes a positive number of seconds, not {seconds}"));
        config.sse_close_after = Some(after.ok_or_else(refused)?);
    }
    Ok(config)
}

/// `--trusted-proxy`: CIDRs, or single addresses.
fn trusted_proxies(specs: &[String]) -> Result<Vec<ipnet::IpNet>, Usage> {
    let parse = |spec: &String| {
        spec.parse::<ipnet::IpNet>()
            .or_else(|_| spec.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
            .map_err(|_| Usage(format!("--trusted-proxy takes an address or CIDR such as 10.0.0.0/8, not {spec:?}")))
    };
    specs.iter().map(parse).collect()
}

/// Tokens from `--auth-token` (each value may hold several, split on whitespace) and
/// `DUET_AUTH_TOKENS`; `None` when there are none.
fn auth_tokens(flags: &[String]) -> Result<Option<Arc<TokenAuth>>, Usage> {
    let from_env = std::env::var("DUET_AUTH_TOKENS").ok();
    let mut specs: Vec<&str> = Vec::new();
    for value in flags.iter().map(String::as_str).chain(from_env.as_deref()) {
        if value.trim().is_empty() {
            return Err(Usage("Invalid value for --auth-token: Empty auth token".into()));
        }
        specs.extend(value.split_whitespace());
    }
    if specs.is_empty() {
        return Ok(None);
    }
    TokenAuth::from_specs(specs)
        .map(|auth| Some(Arc::new(auth)))
        .map_err(|e| Usage(format!("Invalid value for --auth-token: {e}")))
}

async fn serve_http(server: Server, config: HttpConfig, transport: Transport, grace: Duration) -> anyhow::Result<()> {
    // Every connection is a descriptor: take all the process may have.
    match duet::transport::http::raise_open_files_limit() {
        Ok(limit) => tracing::debug!(limit, "open-files limit"),
        Err(e) => tracing::warn!("cannot raise the open-files limit: {e}"),
    }
    let address = if config.host.contains(':') {
        format!("[{}]:{}", config.host, config.port)
    } else {
        format!("{}:{}", config.host, config.port)
    };
    let sse_path = config.sse_path.clone();
    let bound = HttpServer::bind(server, config).await.with_context(|| format!("cannot listen on {address}"))?;
    let word = match transport {
        Transport::Sse => "sse",
        Transport::StreamableHttp => "streamable-http",
        _ => "http",
    };
    crate::logging::notice(format_args!("duet MCP server ({word}) listening on {}", bound.url()));
    if transport == Transport::Sse {
        let addr = bound.local_addr();
        crate::logging::notice(format_args!(
            "duet legacy HTTP+SSE endpoint (2024-11-05 clients): http://{addr}{sse_path}"
        ));
    }
    shutdown_signal().await;
    tracing::info!(grace_secs = grace.as_secs(), "shutting down: requests in flight may finish");
    exit_on_second_signal();
    bound.shutdown(grace).await;
    Ok(())
}

/// After the first signal began a graceful shutdown, a second one ends the process at once.
fn exit_on_second_signal() {
    tokio::spawn(async {
        shutdown_signal().await;
        crate::logging::notice("duet: second signal, exiting without waiting");
        std::process::exit(130);
    });
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return ctrl_c.await.unwrap_or(()),
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    ctrl_c.await.unwrap_or(());
}
