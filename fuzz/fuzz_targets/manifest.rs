//! The manifest parser of `duet serve --manifest`. Input: a manifest's text. It is built
//! into a registry or refused with a `duet.toml:LINE:COLUMN: …` error whose line and column
//! point inside the text, never with a panic.
//!
//! The CLI is a binary only, so its `manifest` module (and `confirm`, which it uses from
//! duet-workspace) is compiled into this target from its source: the parser as `duet serve`
//! runs it, with no library split or visibility change in the CLI for the fuzzer's sake.
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/duet-workspace/src/confirm.rs"]
mod confirm;
#[allow(dead_code)]
#[path = "../../crates/duet-cli/src/manifest/mod.rs"]
mod manifest;

use libfuzzer_sys::fuzz_target;
use manifest::ManifestError;
use std::path::Path;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    match manifest::parse(text, Path::new("duet.toml")) {
        Ok(_) => {}
        Err(ManifestError::Invalid { line, column, message, .. }) => {
            let lines: Vec<&str> = text.split('\n').collect();
            assert!((1..=lines.len()).contains(&line), "line {line} of {}: {message}", lines.len());
            let width = lines[line - 1].chars().count();
            assert!((1..=width + 1).contains(&column), "column {column} of {width}: {message}");
        }
        Err(ManifestError::Read { .. }) => panic!("parse reads no manifest file"),
    }
});
