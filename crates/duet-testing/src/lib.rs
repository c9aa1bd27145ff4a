//! Test support shared by duet's test suites: checks that what duet sends at a protocol
//! version is valid under that version's normative JSON Schema, read from the project's
//! shared folder (never copied into the repository), and a recording sink whose messages
//! are checked that way. Without that folder the checks are skipped, so that a clone on its
//! own still runs every other test.

pub mod process;
mod recorder;
mod schema;

pub use recorder::Recorder;
pub use schema::Schemas;
