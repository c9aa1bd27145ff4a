//! Test support shared by duet's test suites: checks that what duet sends at a protocol
//! version is valid under that version's normative JSON Schema, read from the project's
//! shared folder (never copied into the repository). Without that folder the checks are
//! skipped, so that a clone on its own still runs every other test.

mod schema;

pub use schema::Schemas;
