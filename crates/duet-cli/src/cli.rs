//! The command line, as clap types: `duet serve` and its options.

use crate::usage::Usage;
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use duet::trace::Tracer;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "duet", version, about = "One MCP server for both protocol eras")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Serve MCP over stdio (default) or HTTP.
    ///
    /// Without a layer option, duet serves the working directory read-only (or the duet.toml
    /// manifest there, when there is one). --allow-write adds the tools write_file,
    /// edit_file, create_directory and move_file, which change the tree only after the user
    /// confirms that change through the client (an elicitation form); clients that cannot
    /// ask the user get a tool error.
    Serve(Box<ServeArgs>),
    /// List the tools (a table, or the `tools/list` wire objects with --json), of duet's own
    /// layers or of any server (a URL, or a command after --).
    Tools(ListArgs),
    /// List the resources and resource templates.
    Resources(ListArgs),
    /// List the prompts (`*` marks required arguments).
    Prompts(ListArgs),
    /// Call a tool, in process or on any server, and print its result (exit 1 when the tool
    /// fails).
    Call(CallArgs),
    /// Read a resource, in process or on any server, and print its contents.
    Read(ReadArgs),
    /// Print the snippet that registers duet with an MCP client.
    Config(ConfigArgs),
}

/// What to serve. Without an option: the `duet.toml` manifest in the working directory
/// when there is one, else the working directory as a workspace.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct LayerArgs {
    /// A built-in registry: the test registry, the conformance-suite fixtures, or the
    /// benchmark tools.
    // Its conflicts are declared here, so that a build without it names none (clap's
    // conflicts go both ways).
    #[cfg(feature = "fixtures")]
    #[arg(long, value_enum, conflicts_with_all = ["manifest", "roots", "allow_write", "follow_hard_links"])]
    pub fixtures: Option<crate::fixtures::Fixtures>,
    /// A manifest of commands, resources and prompts.
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<std::path::PathBuf>,
    /// A directory to serve (repeatable; default: the working directory).
    #[arg(long = "root", value_name = "DIR", conflicts_with = "manifest")]
    pub roots: Vec<std::path::PathBuf>,
    /// Also serve write_file, edit_file, create_directory and move_file, which change files
    /// under the roots once the user confirms each change through the client.
    #[arg(long, conflicts_with = "manifest")]
    pub allow_write: bool,
    /// Also serve files that have other hard links. By default they are refused (and left
    /// out of searches and resource lists): another name of the same file may lie outside
    /// the roots or be excluded by .gitignore.
    #[arg(long, conflicts_with = "manifest")]
    pub follow_hard_links: bool,
}

/// Who the in-process commands act as: the local user unless a role or id is given.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct PrincipalArgs {
    /// A role of the caller (repeatable).
    #[arg(long = "role", value_name = "ROLE")]
    pub roles: Vec<String>,
    /// The caller's id.
    #[arg(long, value_name = "ID")]
    pub principal_id: Option<String>,
}

/// Another MCP server the commands talk to instead of duet's own layers: a URL (given
/// among the command's words) or a command spawned over stdio, in the era it speaks.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct ServerArgs {
    /// The revision to speak to the server, and no other (default: 2026-07-28 when the
    /// server speaks it, else the handshake revision it agrees on).
    #[arg(long, value_name = "VERSION")]
    pub protocol_version: Option<String>,
    #[command(flatten)]
    pub authorization: crate::commands::authorization::AuthorizationArgs,
    /// A server to spawn and talk to over stdio: its command and arguments, after --.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub(crate) struct ListArgs {
    /// The Streamable HTTP URL of a server to list (default: duet's own layers).
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    #[command(flatten)]
    pub layer: LayerArgs,
    #[command(flatten)]
    pub principal: PrincipalArgs,
    #[command(flatten)]
    pub server: ServerArgs,
    /// Print the wire objects as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub(crate) struct CallArgs {
    /// A server's URL (optional), the tool to call, and its arguments as NAME=VALUE (a
    /// string) or NAME:=JSON.
    #[arg(value_name = "[URL] TOOL [NAME=VALUE]", required = true)]
    pub words: Vec<String>,
    /// The arguments: a JSON object, @FILE, or - for stdin (NAME=VALUE words are added).
    #[arg(long, value_name = "JSON|@FILE|-")]
    pub args: Option<String>,
    /// Print the whole CallToolResult as JSON.
    #[arg(long, visible_alias = "json")]
    pub raw: bool,
    #[command(flatten)]
    pub layer: LayerArgs,
    #[command(flatten)]
    pub principal: PrincipalArgs,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(clap::Args, Debug)]
pub(crate) struct ReadArgs {
    /// A server's URL (optional), then the resource URI.
    #[arg(value_name = "[URL] URI", required = true, num_args = 1..=2)]
    pub words: Vec<String>,
    /// Print the contents as their wire JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub layer: LayerArgs,
    #[command(flatten)]
    pub principal: PrincipalArgs,
    #[command(flatten)]
    pub server: ServerArgs,
}

#[derive(clap::Args, Debug)]
pub(crate) struct ConfigArgs {
    /// The client to register duet with.
    #[arg(long, value_enum)]
    pub client: Client,
    /// The server's name in the client.
    #[arg(long, default_value = "duet")]
    pub name: String,
    /// How the client reaches duet.
    #[arg(long, value_enum, default_value_t = ConfigTransport::Stdio)]
    pub transport: ConfigTransport,
    /// The URL of a running HTTP server (with --transport http).
    #[arg(long, default_value = "http://127.0.0.1:8765/mcp")]
    pub url: String,
    /// With --transport http: the environment variable that holds duet's bearer token. The
    /// client sends `Authorization: Bearer` with its value, written in the client's own
    /// syntax for variables; the token itself is never written.
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// The duet command the client runs (default: this executable).
    #[arg(long)]
    pub command: Option<String>,
    /// Directories to serve (default: the working directory).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<std::path::PathBuf>,
    /// A manifest to serve instead of directories.
    #[arg(long, value_name = "FILE", conflicts_with = "roots")]
    pub manifest: Option<std::path::PathBuf>,
    /// Let the client change files (each change confirmed by the user): `serve --allow-write`.
    #[arg(long, conflicts_with = "manifest")]
    pub allow_write: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConfigTransport {
    Stdio,
    Http,
}

#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    pub layer: LayerArgs,
    /// stdio, or HTTP (`http` = `streamable-http`; `sse` adds the legacy /sse endpoints).
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    pub transport: Transport,
    /// Items per page of list results (0 = no paging).
    #[arg(long, default_value_t = 1000)]
    pub page_size: usize,
    /// Level of duet's own log on stderr.
    #[arg(long, value_enum, ignore_case = true, default_value_t = LogLevel::Warning)]
    pub log_level: LogLevel,
    /// `text` for people, `json` for a log pipeline: one object a line, with the request's
    /// method, id, principal id and trace id from its span.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Seconds requests in flight may take to finish after SIGTERM or SIGINT (or, over
    /// stdio, end of input); a second signal exits at once.
    #[arg(long, default_value_t = 10)]
    pub shutdown_grace: u64,
    /// Largest message in bytes: a stdio line, an HTTP request body (default 4 MiB).
    #[arg(long, visible_alias = "max-body-bytes")]
    pub max_message_bytes: Option<usize>,
    /// Most messages one JSON-RPC batch may hold (2025-03-26 and before); a longer batch is
    /// refused whole, and a batch's messages run at most 16 at a time.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_batch_items: u64,
    /// Most bytes the answer of one JSON-RPC batch may reach (it is held whole until it is
    /// sent): once the answers so far reach it, the batch's other requests are answered
    /// with an error (-32029) instead of running.
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_batch_answer_bytes: u64,
    /// Most resource subscriptions one session (`resources/subscribe`) or one listen stream
    /// (`resourceSubscriptions`) may hold; one more is refused (-32602).
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_subscriptions: u64,
    /// Longest URI, in bytes, a resource subscription may name (-32602 beyond).
    #[arg(long, value_name = "BYTES", default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_subscription_uri_bytes: u64,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics, on a listener of its own
    /// (no MCP auth; on a loopback address only loopback Host names). Any transport.
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics_addr: Option<String>,
    /// Export request spans over OTLP/HTTP (protobuf) to this collector URL
    /// (`/v1/traces` is added to a URL without a path). Any transport.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// The share of traces that start at duet to export (0 to 1); a caller's sampled or
    /// unsampled `traceparent` is followed whatever it is.
    #[arg(long, value_name = "RATIO", default_value_t = 1.0, requires = "otlp_endpoint")]
    pub otlp_sample_ratio: f64,
    #[command(flatten)]
    pub replicas: ReplicaArgs,
    #[command(flatten)]
    pub tasks: TaskArgs,
    #[command(flatten)]
    pub http: HttpArgs,
    #[command(flatten)]
    pub oauth: crate::oauth_args::OAuthArgs,
}

/// What the replicas of one server share.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct ReplicaArgs {
    /// The store replicas share (idempotency keys, sessions, tasks, change events):
    /// redis://[USER:PASSWORD@]HOST:PORT/DB, or rediss:// for Redis over TLS. Needs a shared
    /// state key; everything stored and published is authenticated with a key derived from it.
    #[arg(long, env = "DUET_STORE", value_name = "URL")]
    pub store: Option<String>,
    /// The prefix of the store's keys and channel, so several servers can share one Redis.
    /// Default: `duet:` and 8 hex digits derived from the state key (`duet:1a2b3c4d:`), so
    /// deployments with different keys never mix; it changes when the key is rotated.
    #[arg(long, value_name = "PREFIX", requires = "store")]
    pub store_prefix: Option<String>,
    /// A file holding the key(s) that seal multi round-trip state, CURRENT[,PREVIOUS], each
    /// 32 bytes in base64 or hex; replaces DUET_STATE_KEY. Replicas need the same key.
    #[arg(long, value_name = "FILE")]
    pub state_key_file: Option<std::path::PathBuf>,
}

/// How tasks (tool calls that run on after their request, polled by the client) live, and
/// how many there may be.
#[derive(clap::Args, Debug)]
pub(crate) struct TaskArgs {
    /// Seconds a task lives from its creation: work still running then is stopped and the
    /// task fails; a task counts against its principal's bound until then.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600, value_parser = clap::value_parser!(u64).range(1..))]
    pub task_ttl: u64,
    /// Unexpired tasks one principal may keep, across replicas.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tasks_per_principal: u64,
    /// Tasks this replica runs at once, for all principals.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_running_tasks: u64,
    /// Seconds a replica's claim on a task it runs lasts unless renewed: a task whose
    /// replica stopped fails this long after.
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub task_lease: u64,
}

impl TaskArgs {
    pub(crate) fn options(&self) -> duet::protocol::TaskOptions {
        duet::protocol::TaskOptions {
            ttl: std::time::Duration::from_secs(self.task_ttl),
            max_per_principal: self.max_tasks_per_principal as usize,
            max_running: self.max_running_tasks as usize,
            lease: std::time::Duration::from_secs(self.task_lease),
            ..duet::protocol::TaskOptions::default()
        }
    }
}

/// Options of the HTTP transports; refused with `--transport stdio`.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct HttpArgs {
    /// Address to bind.
    #[arg(long)]
    pub host: Option<String>,
    /// Port to bind (0 picks a free one).
    #[arg(long)]
    pub port: Option<u16>,
    /// Path of the MCP endpoint.
    #[arg(long)]
    pub path: Option<String>,
    /// A bearer token: TOKEN[:ROLES[:ID]] or env:VAR[:ROLES[:ID]], no field holding ':'; its
    /// principal is token:ID. Repeatable.
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
    /// A reverse proxy (address or CIDR) whose --proxy-header is believed: the guard checks
    /// the forwarded host, and unless --oauth-audience names one, the canonical URL follows
    /// it when it is an --allowed-host name (exactly, port included; by default the bound
    /// host and port). Repeatable.
    #[arg(long = "trusted-proxy", value_name = "CIDR")]
    pub trusted_proxies: Vec<String>,
    /// The header the trusted proxy sets, overwriting what clients send: x-forwarded
    /// (X-Forwarded-Host and X-Forwarded-Proto) or forwarded (RFC 7239). The other is never
    /// read. [default: x-forwarded]
    #[arg(long, value_enum, value_name = "HEADER", requires = "trusted_proxies")]
    pub proxy_header: Option<ProxyHeader>,
    /// Never answer POSTs with SSE.
    #[arg(long)]
    pub json_response: bool,
    /// No sessions: every request stands alone.
    #[arg(long)]
    pub stateless: bool,
    /// Seconds an idle session lives.
    #[arg(long)]
    pub session_idle_timeout: Option<u64>,
    /// Most sessions at once.
    #[arg(long)]
    pub max_sessions: Option<usize>,
    /// Most sessions per principal (the least recently used idle one is ended). Without
    /// authentication every client is the one anonymous principal: its sessions are
    /// capped by --max-sessions alone, the least recently used idle one ended.
    #[arg(long)]
    pub max_sessions_per_principal: Option<usize>,
    /// Most open connections.
    #[arg(long)]
    pub max_connections: Option<usize>,
    /// Most open connections from one peer: an IPv4 address, or an IPv6 /64 (default: an
    /// eighth of --max-connections, 64 of 512; 0 = no cap). Behind a reverse proxy every
    /// connection comes from the proxy: raise it or set 0 there.
    #[arg(long, value_name = "N")]
    pub max_connections_per_peer: Option<usize>,
    /// Requests per second per principal (429 with Retry-After beyond).
    #[arg(long, value_name = "RPS")]
    pub rate_limit: Option<f64>,
    /// Calls per second per principal of one tool: NAME=RPS. Repeatable.
    #[arg(long = "tool-rate-limit", value_name = "NAME=RPS")]
    pub tool_rate_limits: Vec<String>,
    /// Requests one principal may have running at once on this replica; a task counts
    /// until it ends (requests about tasks are not held back by them).
    #[arg(long)]
    pub max_in_flight_per_principal: Option<usize>,
    /// Seconds to receive a request head (also the keep-alive idle limit).
    #[arg(long)]
    pub header_timeout: Option<u64>,
    /// Seconds to receive a request body.
    #[arg(long)]
    pub body_timeout: Option<u64>,
    /// Seconds a write may wait for the client to read before its connection is closed
    /// (default 60): an answer nobody reads is not held.
    #[arg(long, value_name = "SECONDS")]
    pub write_timeout: Option<u64>,
    /// Seconds of silence before an SSE keep-alive comment.
    #[arg(long)]
    pub keepalive_interval: Option<u64>,
    /// Seconds after which a 2025-11-25 POST's SSE stream still waiting for its answer is
    /// ended, for the client to pick up the rest with a GET (SEP-1699 polling); by default
    /// a stream stays open until its answer.
    #[arg(long, value_name = "SECONDS")]
    pub sse_close_after: Option<f64>,
}

/// `--proxy-header`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProxyHeader {
    XForwarded,
    Forwarded,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Transport {
    Stdio,
    Http,
    StreamableHttp,
    Sse,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogLevel {
    Debug,
    Info,
    Warning,
    Error,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogFormat {
    Text,
    Json,
}

impl Cli {
    /// The `--log-format` of a command line that does not parse, as far as it can be read.
    pub(crate) fn requested_format() -> LogFormat {
        let matches = Cli::command().ignore_errors(true).try_get_matches().ok();
        let serve = matches.as_ref().and_then(|m| m.subcommand_matches("serve"));
        serve.and_then(|m| m.get_one::<LogFormat>("log_format").copied()).unwrap_or(LogFormat::Text)
    }

    pub(crate) fn log_format(&self) -> LogFormat {
        match &self.command {
            Command::Serve(args) => args.log_format,
            _ => LogFormat::Text,
        }
    }

    /// Where spans are exported and which (`--otlp-endpoint`, `--otlp-sample-ratio`), checked;
    /// `None` when they are not.
    pub(crate) fn otlp(&self) -> Result<Option<duet_otlp::Export>, Usage> {
        let Command::Serve(args) = &self.command else { return Ok(None) };
        let Some(endpoint) = &args.otlp_endpoint else { return Ok(None) };
        duet_otlp::Export::new(endpoint, args.otlp_sample_ratio).map(Some).map_err(otlp_usage)
    }

    pub(crate) fn log_level(&self) -> &'static str {
        let level = match &self.command {
            Command::Serve(args) => args.log_level,
            _ => LogLevel::Warning,
        };
        match level {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warning => "warn",
            LogLevel::Error => "error",
        }
    }

    /// Runs the command; `tracer` makes each request's span while spans are exported.
    pub(crate) async fn run(self, tracer: Option<Tracer>) -> anyhow::Result<ExitCode> {
        use crate::commands;
        match self.command {
            Command::Serve(args) => crate::serve::run(*args, tracer).await,
            Command::Tools(args) => commands::inspect::tools(args).await,
            Command::Resources(args) => commands::inspect::resources(args).await,
            Command::Prompts(args) => commands::inspect::prompts(args).await,
            Command::Call(args) => commands::call::run(args).await,
            Command::Read(args) => commands::read::run(args).await,
            Command::Config(args) => commands::config::run(args),
        }
    }
}

/// A span export refused, said of the option that gave the value.
fn otlp_usage(refused: duet_otlp::Refused) -> Usage {
    let option = match refused {
        duet_otlp::Refused::Endpoint { .. } => "--otlp-endpoint",
        duet_otlp::Refused::SampleRatio(_) => "--otlp-sample-ratio",
    };
    Usage(format!("{option} {refused}"))
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::Parser as _;

    /// What `duet` says of `args`' span export, when it refuses it.
    fn refused(args: &[&str]) -> String {
        let cli = Cli::try_parse_from([&["duet", "serve"], args].concat()).expect("parsed");
        cli.otlp().expect_err("refused").0
    }

    #[test]
    fn a_refused_span_export_names_its_option() {
        assert_eq!(
            refused(&["--otlp-endpoint", "grpc://127.0.0.1:4317"]),
            r#"--otlp-endpoint "grpc://127.0.0.1:4317": an http:// or https:// URL is needed, as OTLP/HTTP takes"#
        );
        assert_eq!(
            refused(&["--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-sample-ratio", "1.5"]),
            "--otlp-sample-ratio 1.5: a ratio from 0 to 1 is needed"
        );
    }
}
