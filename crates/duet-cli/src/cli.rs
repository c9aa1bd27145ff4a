//! The command line, as clap types: `duet serve` and its options (named as cloudg's).

use clap::{Parser, Subcommand, ValueEnum};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "duet", version, about = "One MCP server for both protocol eras")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve MCP over stdio (default) or HTTP.
    Serve(ServeArgs),
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// What to serve: the test registry or the conformance-suite fixtures.
    #[arg(long, value_enum)]
    pub fixtures: Option<Fixtures>,
    /// stdio, or HTTP (`http` = `streamable-http`; `sse` adds the legacy /sse endpoints).
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    pub transport: Transport,
    /// Items per page of list results (0 = no paging).
    #[arg(long, default_value_t = 100)]
    pub page_size: usize,
    /// Level of duet's own log on stderr.
    #[arg(long, value_enum, ignore_case = true, default_value_t = LogLevel::Warning)]
    pub log_level: LogLevel,
    #[command(flatten)]
    pub http: HttpArgs,
}

/// Options of the HTTP transports; refused with `--transport stdio`.
#[derive(clap::Args, Debug, Default)]
pub struct HttpArgs {
    /// Address to bind.
    #[arg(long)]
    pub host: Option<String>,
    /// Port to bind (0 picks a free one).
    #[arg(long)]
    pub port: Option<u16>,
    /// Path of the MCP endpoint.
    #[arg(long)]
    pub path: Option<String>,
    /// A bearer token: TOKEN[:ROLES[:ID]] or env:VAR[:ROLES[:ID]]. Repeatable.
    #[arg(long = "auth-token", value_name = "SPEC")]
    pub auth_tokens: Vec<String>,
    /// An allowed Origin pattern (replaces the loopback defaults). Repeatable.
    #[arg(long = "allowed-origin", value_name = "PATTERN")]
    pub allowed_origins: Vec<String>,
    /// An allowed Host pattern. Repeatable.
    #[arg(long = "allowed-host", value_name = "PATTERN")]
    pub allowed_hosts: Vec<String>,
    /// An origin granted CORS (and allowed). Repeatable.
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    pub cors_origins: Vec<String>,
    /// Never answer POSTs with SSE.
    #[arg(long)]
    pub json_response: bool,
    /// No sessions: every request stands alone.
    #[arg(long)]
    pub stateless: bool,
    /// Largest request body in bytes.
    #[arg(long)]
    pub max_body_bytes: Option<usize>,
    /// Seconds an idle session lives.
    #[arg(long)]
    pub session_idle_timeout: Option<u64>,
    /// Most sessions at once.
    #[arg(long)]
    pub max_sessions: Option<usize>,
    /// Most sessions per principal (the least recently used idle one is ended).
    #[arg(long)]
    pub max_sessions_per_principal: Option<usize>,
    /// Most open connections.
    #[arg(long)]
    pub max_connections: Option<usize>,
    /// Seconds to receive a request head (also the keep-alive idle limit).
    #[arg(long)]
    pub header_timeout: Option<u64>,
    /// Seconds to receive a request body.
    #[arg(long)]
    pub body_timeout: Option<u64>,
    /// Seconds of silence before an SSE keep-alive comment.
    #[arg(long)]
    pub keepalive_interval: Option<u64>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fixtures {
    Testkit,
    Conformance,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    Http,
    StreamableHttp,
    Sse,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    Debug,
    Info,
    Warning,
    Error,
}

impl Cli {
    pub fn log_level(&self) -> &'static str {
        let Command::Serve(args) = &self.command;
        match args.log_level {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warning => "warn",
            LogLevel::Error => "error",
        }
    }

    pub async fn run(self) -> anyhow::Result<ExitCode> {
        match self.command {
            Command::Serve(args) => crate::serve::run(args).await,
        }
    }
}
