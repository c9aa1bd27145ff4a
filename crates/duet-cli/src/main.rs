//! The `duet` binary: parses the command line, sets up logging on stderr, and runs a
//! command. stdout carries results (or protocol lines) only.

mod choice;
mod cli;
mod commands;
#[cfg(feature = "fixtures")]
mod fixtures;
mod logging;
mod manifest;
mod metrics;
mod oauth_args;
mod replicas;
mod serve;
mod usage;

use clap::{CommandFactory, FromArgMatches};
// The manifest's tools ask the user to confirm the way the workspace's write tools do.
use duet_workspace::confirm;
use std::process::ExitCode;
use usage::Usage;

/// mimalloc: the server allocates and frees many small objects per request, which it does
/// several times faster than the system allocator (measured in bench/RESULTS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long the process waits, once its command has returned, for blocking work still
/// running before it exits anyway.
const ABANDON_BLOCKED_WORK_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

fn main() -> ExitCode {
    let cli = match cli::Cli::command().try_get_matches().and_then(|m| cli::Cli::from_arg_matches(&m)) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() && cli::Cli::requested_format() == cli::LogFormat::Json => {
            let rendered = e.render().to_string();
            let message = rendered.strip_prefix("error: ").unwrap_or(&rendered).trim_end();
            return early_usage(cli::LogFormat::Json, Usage(message.into()));
        }
        Err(e) => e.exit(),
    };
    let otlp = match cli.otlp() {
        Ok(otlp) => otlp,
        Err(usage) => return early_usage(cli.log_format(), usage),
    };
    if !matches!(cli.command, cli::Command::Serve(_)) {
        // A listing piped into `head` ends quietly, as other command-line tools do.
        // SAFETY: restores the default disposition of SIGPIPE before any thread starts.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let telemetry = match logging::init(cli.log_level(), cli.log_format(), otlp.as_ref()) {
        Ok(telemetry) => telemetry,
        Err(e) => {
            logging::error(format_args!("cannot set up logging and tracing: {e:#}"));
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            logging::error(format_args!("cannot start the async runtime: {e}"));
            return ExitCode::FAILURE;
        }
    };
    let code = match runtime.block_on(cli.run(telemetry.tracer())) {
        Ok(code) => code,
        Err(e) => {
            logging::error(format_args!("{e:#}"));
            ExitCode::FAILURE
        }
    };
    // The runtime first: a task still in a span must not hold it past the exporter. Work
    // on a blocking thread that is stuck (a read the kernel never finishes) is abandoned,
    // not waited for: the command has ended, and its grace with it.
    runtime.shutdown_timeout(ABANDON_BLOCKED_WORK_AFTER);
    telemetry.shutdown();
    code
}

/// A usage error found before the log is set up, written in the format asked for.
fn early_usage(format: cli::LogFormat, usage: Usage) -> ExitCode {
    // The process ends here: the log needs no exporter, and failing to set it up leaves text.
    let _ = logging::init("warn", format, None);
    usage.exit()
}
