//! The 2026 `_meta` envelope. Input: the `MCP-Protocol-Version` header a transport declared
//! (first line; empty for none), then the `_meta` object as JSON. The era is modern exactly
//! when `_meta` carries an envelope key or the header names a modern revision; reading the
//! envelope succeeds only with both keys, a modern version string and an object of
//! capabilities, which move into the terms; a refusal leaves `_meta` as it was, and says
//! "missing" exactly when a required key is absent.
#![no_main]

use duet::fuzzing::{EnvelopeError, era_of, read_envelope};
use duet::wire::message::Meta;
use duet::wire::{Era, Version};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let (header, json) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(mut meta) = serde_json::from_str::<Meta>(json) else { return };
    let declared = Version::parse(header);
    let keyed = meta.protocol_version.is_some() || meta.client_capabilities.is_some();
    let modern = keyed || declared.is_some_and(Version::is_modern);
    assert_eq!(era_of(&meta, declared) == Era::Modern, modern);
    let sent = meta.clone();
    match read_envelope(&mut meta) {
        Ok(terms) => {
            assert!(terms.version.is_modern());
            assert_eq!(sent.protocol_version.as_ref().and_then(Value::as_str), Some(terms.version.as_str()));
            assert_eq!(sent.client_capabilities.as_ref(), Some(&*terms.client_capabilities), "the capabilities sent");
            assert!(terms.client_capabilities.is_object());
            assert_eq!(meta.client_capabilities, None, "the capabilities moved into the terms");
            let level = sent.log_level.as_ref().filter(|l| !l.is_null());
            assert_eq!(level.is_some(), terms.log_level.is_some(), "a log level is read when one is sent");
        }
        Err(error) => {
            assert_eq!(meta, sent, "a refusal leaves _meta as it was");
            let missing = sent.protocol_version.is_none() || sent.client_capabilities.is_none();
            assert_eq!(matches!(error, EnvelopeError::Missing(_)), missing, "{error:?}");
        }
    }
});
