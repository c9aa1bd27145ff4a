//! The authorization scenarios (`auth/…`): the client meets a protected server and gets a
//! token from the scenario's authorization server.

use crate::{Outcome, Run};

/// Runs scenario `run.scenario`.
pub(crate) async fn run(run: &Run) -> Outcome {
    Err(format!("no such scenario: {}", run.scenario).into())
}
