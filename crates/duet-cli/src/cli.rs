//! The command line, as clap types: `duet serve` and its options.

use clap::{Parser, Subcommand, ValueEnum};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "duet",
    version,
    about = "One MCP server for both protocol eras"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve MCP to one client over stdio.
    Serve(ServeArgs),
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// What to serve: the test registry or the conformance-suite fixtures.
    #[arg(long, value_enum)]
    pub fixtures: Option<Fixtures>,
    /// Items per page of list results (0 = no paging).
    #[arg(long, default_value_t = 100)]
    pub page_size: usize,
    /// Level of duet's own log on stderr.
    #[arg(long, value_enum, ignore_case = true, default_value_t = LogLevel::Warning)]
    pub log_level: LogLevel,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fixtures {
    Testkit,
    Conformance,
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
