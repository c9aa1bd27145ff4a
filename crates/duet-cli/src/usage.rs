//! Usage errors: the command line asked for something that cannot work. Logged as
//! `Error: …` on stderr (`logging::error`) with exit code 2, before anything starts.

use std::process::ExitCode;

#[derive(Debug)]
pub(crate) struct Usage(pub String);

impl Usage {
    pub(crate) fn exit(self) -> ExitCode {
        crate::logging::error(&self.0);
        ExitCode::from(2)
    }
}
