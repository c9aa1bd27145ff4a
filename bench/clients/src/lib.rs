//! What the benchmark's client programs share: how the harness (`bench/bench.py`, the
//! `client` case) drives them, so that each program is only its SDK's connect and call.
//!
//! A program is started as `PROGRAM URL ERA IN_FLIGHT`, where ERA is `2026` (the stateless
//! 2026-07-28, after `server/discover`) or `handshake` (an `initialize` session at
//! 2025-11-25). It connects, calls `echo` once and checks the answer (its structured content
//! `{"text": "hi"}`), prints
//! `ready VERSION` (the revision agreed) and then reads commands on stdin, one a line:
//! `run SECONDS` keeps IN_FLIGHT callers calling `echo` one after another until SECONDS
//! have passed and prints `done CALLS ERRORS`. At the end of stdin it closes the connection
//! and exits. The harness reads the program's CPU time from `/proc` around each measured
//! run, so the connection and the warm-up are not counted. `bench/clients/python_client_echo.py`
//! speaks the same for the Python SDK.

use futures::future::join_all;
use std::future::Future;
use std::io::{self, Write};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The text every call echoes.
pub const TEXT: &str = "hi";

/// The era a program is to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28, found with `server/discover`.
    Modern,
    /// An `initialize` session at 2025-11-25.
    Handshake,
}

/// What a program was started with.
#[derive(Debug, Clone)]
pub struct Args {
    /// The server's Streamable HTTP endpoint.
    pub url: String,
    /// The era to speak.
    pub era: Era,
    /// How many callers call at once.
    pub in_flight: usize,
}

impl Args {
    /// The program's arguments, `URL ERA IN_FLIGHT`.
    pub fn from_env() -> Result<Args, String> {
        let usage = || "usage: PROGRAM URL 2026|handshake IN_FLIGHT".to_string();
        let mut args = std::env::args().skip(1);
        let url = args.next().ok_or_else(usage)?;
        let era = match args.next().as_deref() {
            Some("2026") => Era::Modern,
            Some("handshake") => Era::Handshake,
            _ => return Err(usage()),
        };
        let in_flight = args.next().and_then(|n| n.parse().ok()).filter(|&n| n > 0).ok_or_else(usage)?;
        Ok(Args { url, era, in_flight })
    }
}

/// Prints `ready VERSION`, then answers the harness's `run SECONDS` commands until the end
/// of stdin, each by `in_flight` callers of `call` (which says whether the call succeeded).
pub async fn serve_runs<F, Fut>(version: &str, in_flight: usize, call: F) -> io::Result<()>
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    say(&format!("ready {version}"))?;
    let mut commands = BufReader::new(tokio::io::stdin()).lines();
    while let Some(command) = commands.next_line().await? {
        let seconds: f64 = command
            .strip_prefix("run ")
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("not a command: {command}")))?;
        let deadline = Instant::now() + Duration::from_secs_f64(seconds);
        let callers = (0..in_flight).map(|_| async {
            let (mut calls, mut errors) = (0u64, 0u64);
            while Instant::now() < deadline {
                calls += 1;
                errors += u64::from(!call().await);
            }
            (calls, errors)
        });
        let (calls, errors) =
            join_all(callers).await.into_iter().fold((0, 0), |(c, e), (calls, errors)| (c + calls, e + errors));
        say(&format!("done {calls} {errors}"))?;
    }
    Ok(())
}

fn say(line: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()
}
