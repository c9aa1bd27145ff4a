//! The in-process commands: inspect, call and read what a layer serves without a client,
//! and print the snippets that register duet with MCP clients. stdout carries the result
//! only; exit code 0, 1 (the tool or read failed) or 2 (usage).

pub mod call;
pub mod config;
pub mod inspect;
pub mod read;
