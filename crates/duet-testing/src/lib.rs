//! Test support shared by duet's test suites: checks that what duet sends at a protocol
//! version is valid under that version's normative JSON Schema, read from the project's
//! shared folder (never copied into the repository).

mod schema;

pub use schema::{Schemas, shared_dir};
