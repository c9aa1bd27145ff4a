//! The `duet` binary: parses the command line, sets up logging on stderr, and runs a
//! command. stdout carries results (or protocol lines) only.

mod choice;
mod cli;
mod commands;
mod confirm;
mod manifest;
mod metrics;
mod oauth_args;
mod serve;
mod usage;
mod workspace;

use clap::Parser;
use std::process::ExitCode;

/// mimalloc: the server allocates and frees many small objects per request, which it does
/// several times faster than the system allocator (measured in bench/RESULTS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    init_logging(cli.log_level(), cli.log_format());
    if !matches!(cli.command, cli::Command::Serve(_)) {
        // A listing piped into `head` ends quietly, as other command-line tools do.
        // SAFETY: restores the default disposition of SIGPIPE before any thread starts.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(cli.run()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(level: &str, format: cli::LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("DUET_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("duet={level},duet_cli={level}")));
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        cli::LogFormat::Text => logs.with_target(false).init(),
        // The request's span holds its method, id, principal and trace: one object per line.
        cli::LogFormat::Json => logs.json().flatten_event(true).with_current_span(true).with_span_list(false).init(),
    }
}
