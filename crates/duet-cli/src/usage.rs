//! Usage errors: the command line asked for something that cannot work. Printed as
//! `Error: …` on stderr with exit code 2, before anything starts.

use std::process::ExitCode;

#[derive(Debug)]
pub struct Usage(pub String);

impl Usage {
    pub fn exit(self) -> ExitCode {
        eprintln!("Error: {}", self.0);
        ExitCode::from(2)
    }
}
