//! The commands that are not `serve`: inspect, call and read what a layer serves without a
//! client, or what any other server serves as its client (`source.rs`), and print the
//! snippets that register duet with MCP clients. stdout carries the result
//! only; exit code 0, 1 (the tool or read failed) or 2 (usage).

pub(crate) mod authorization;
pub(crate) mod call;
pub(crate) mod config;
pub(crate) mod inspect;
mod progress;
pub(crate) mod read;
mod source;

use std::fmt::Display;
use std::process::ExitCode;

/// Prints `Error: …` on stderr and gives exit code 1: the tool or the read failed.
fn failure(message: impl Display) -> ExitCode {
    crate::logging::error(message);
    ExitCode::FAILURE
}
