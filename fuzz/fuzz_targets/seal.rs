//! Sealed `requestState`. Input: six lines: a TTL in seconds (at least 1), the principal,
//! the method, the target, the arguments (JSON, else taken as a string), and a token as a
//! client might send it. A token the fuzzer wrote never opens (it was not sealed with the
//! server's key); a state the server sealed opens to what it sealed, but not with another
//! key, not for another principal, and not once any one of its bytes is changed.
#![no_main]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use duet::fuzzing::{Binding, Seal};
use duet::state_key::{StateKey, StateKeys};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::time::Duration;

fn sealer(key: u8, ttl: Duration) -> Seal {
    Seal::new(StateKeys::new(StateKey::from_bytes([key; 32])), ttl)
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let [ttl, principal, method, target, arguments, token] = text.splitn(6, '\n').collect::<Vec<_>>()[..] else {
        return;
    };
    // At least a second, so that nothing expires between sealing and opening.
    let Ok(ttl) = ttl.parse::<u64>().map(|secs| Duration::from_secs(secs.max(1))) else { return };
    let arguments = serde_json::from_str(arguments).unwrap_or_else(|_| Value::from(arguments));
    let binding = Binding::new(principal, method, target, &arguments);
    let server = sealer(7, ttl);
    assert!(server.open(token, &binding).is_err(), "a token the server did not seal never opens");

    let asked = vec![target.to_owned(), method.to_owned()];
    let sealed = server.seal(&binding, asked.clone(), Some(arguments.clone()));
    assert_eq!(server.open(&sealed, &binding), Ok((asked, Some(arguments.clone()))), "what was sealed opens");
    assert!(sealer(8, ttl).open(&sealed, &binding).is_err(), "another key does not open it");
    let mallory = Binding::new(&format!("{principal}!"), method, target, &arguments);
    assert!(server.open(&sealed, &mallory).is_err(), "another principal cannot use it");
    let raw = URL_SAFE_NO_PAD.decode(&sealed).expect("a sealed state is base64");
    let at = bytes.len() % raw.len();
    let mut altered = raw.clone();
    altered[at] ^= 1 << (bytes.len() % 8);
    assert!(server.open(&URL_SAFE_NO_PAD.encode(&altered), &binding).is_err(), "byte {at} was changed");
});
