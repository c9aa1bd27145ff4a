//! The client the official MCP conformance suite drives (`conformance client --command
//! duet-conformance-client`), built only on duet-client's public API: what a scenario
//! checks is what any program using the library gets. The suite starts a mock server,
//! passes its URL as the last argument, names the scenario in `MCP_CONFORMANCE_SCENARIO`,
//! the revision to speak in `MCP_CONFORMANCE_PROTOCOL_VERSION` and, for the scenarios that
//! need them (client credentials...), more facts as JSON in `MCP_CONFORMANCE_CONTEXT`.
//! The process exits 0 when the client did what the scenario asks, and 1 saying why not;
//! the suite's checks (of what the mock server saw) are the verdict.

mod auth;
mod core;

use duet_client::{Negotiate, Version};
use serde_json::Value;
use std::process::ExitCode;

/// What the suite asked for.
pub(crate) struct Run {
    /// The scenario's name.
    pub(crate) scenario: String,
    /// The mock server's URL.
    pub(crate) url: String,
    /// The revision to speak: the suite's, else whatever the server speaks.
    pub(crate) negotiate: Negotiate,
    /// `MCP_CONFORMANCE_CONTEXT`, or `null`.
    pub(crate) context: Value,
}

/// A scenario's failure, said on stderr.
pub(crate) type Outcome = Result<(), Box<dyn std::error::Error + Send + Sync>>;

fn main() -> ExitCode {
    let run = match read_run() {
        Ok(run) => run,
        Err(why) => {
            eprintln!("duet-conformance-client: {why}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("duet-conformance-client: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(core::run(&run));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("duet-conformance-client: scenario {}: {why}", run.scenario);
            ExitCode::FAILURE
        }
    }
}

/// The scenario, the URL and the revision, from the arguments and the environment.
fn read_run() -> Result<Run, String> {
    let url = std::env::args()
        .nth(1)
        .filter(|_| std::env::args().len() == 2)
        .ok_or("usage: duet-conformance-client URL (the scenario in MCP_CONFORMANCE_SCENARIO)")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").map_err(|_| "MCP_CONFORMANCE_SCENARIO is not set")?;
    let negotiate = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        Ok(version) => Negotiate::Pin(Version::parse(&version).ok_or_else(|| {
            format!("MCP_CONFORMANCE_PROTOCOL_VERSION {version:?} is no revision this client speaks")
        })?),
        Err(_) => Negotiate::Auto,
    };
    let context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(json) => serde_json::from_str(&json).map_err(|e| format!("MCP_CONFORMANCE_CONTEXT is not JSON: {e}"))?,
        Err(_) => Value::Null,
    };
    Ok(Run { scenario, url, negotiate, context })
}
