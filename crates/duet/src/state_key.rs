//! The server's secret keys: 32 bytes each, the current one and, during a rotation, the
//! previous one. They seal multi round-trip request state (`mrtr/seal.rs`) and, derived
//! per use, authenticate what replicas share through Redis (`backplane/mac.rs`), so one
//! secret configures both. Read from `DUET_STATE_KEY` or given by the program.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use std::fmt;

/// The environment variable holding the state key(s): `CURRENT[,PREVIOUS]`, each 32 bytes
/// in base64 or hex.
pub const STATE_KEY_ENV: &str = "DUET_STATE_KEY";

/// A 256-bit key. Its `Debug` never shows the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct StateKey([u8; 32]);

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateKey(..)")
    }
}

/// Why a state key (or `DUET_STATE_KEY`) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// It decodes to this many bytes, not 32.
    #[error("a state key must be 32 bytes written as base64 or hex (the one given has length {0})")]
    Length(usize),
    /// It is neither hex nor base64.
    #[error("a state key must be 32 bytes written as base64 or hex")]
    Encoding,
    /// The variable holds more than two keys.
    #[error("{STATE_KEY_ENV} holds at most two keys: CURRENT[,PREVIOUS]")]
    TooMany,
}

impl StateKey {
    /// A new random key (the thread's CSPRNG, seeded by the operating system).
    pub fn random() -> Self {
        StateKey(rand::random())
    }

    /// The key of these bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        StateKey(bytes)
    }

    /// The key's bytes: the sealing key itself, and what the keys of other uses derive from.
    pub(crate) fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Reads 32 bytes from hex (64 digits) or base64 (standard or URL-safe).
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let text = text.trim();
        let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            hex::decode(text).map_err(|_| KeyError::Encoding)?
        } else {
            STANDARD
                .decode(text)
                .or_else(|_| URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')))
                .map_err(|_| KeyError::Encoding)?
        };
        let len = bytes.len();
        bytes.try_into().map(StateKey).map_err(|_| KeyError::Length(len))
    }
}

/// The key that seals and, during a rotation, the previous key that still opens.
#[derive(Debug, Clone)]
pub struct StateKeys {
    /// Seals, and opens.
    pub current: StateKey,
    /// Only opens: the key before a rotation, for the states sealed with it.
    pub previous: Option<StateKey>,
}

impl StateKeys {
    /// One key, and no previous one.
    pub fn new(current: StateKey) -> Self {
        StateKeys { current, previous: None }
    }

    /// The keys with `previous` opening too.
    pub fn with_previous(mut self, previous: StateKey) -> Self {
        self.previous = Some(previous);
        self
    }

    /// Parses `CURRENT[,PREVIOUS]`.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let parts: Vec<&str> = text.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
        match parts.as_slice() {
            [current] => Ok(StateKeys::new(StateKey::parse(current)?)),
            [current, previous] => {
                Ok(StateKeys::new(StateKey::parse(current)?).with_previous(StateKey::parse(previous)?))
            }
            [] => Err(KeyError::Encoding),
            _ => Err(KeyError::TooMany),
        }
    }

    /// The keys in [`STATE_KEY_ENV`], if set.
    pub fn from_env() -> Result<Option<Self>, KeyError> {
        match std::env::var(STATE_KEY_ENV) {
            Ok(text) => Self::parse(&text).map(Some),
            Err(_) => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_parsing() {
        let hex_key = "00".repeat(32);
        assert_eq!(StateKey::parse(&hex_key).unwrap(), StateKey::from_bytes([0; 32]));
        assert_eq!(StateKey::parse(&STANDARD.encode([9u8; 32])).unwrap(), StateKey::from_bytes([9; 32]));
        assert_eq!(StateKey::parse(&STANDARD.encode([9u8; 16])), Err(KeyError::Length(16)));
        assert_eq!(StateKey::parse("***"), Err(KeyError::Encoding));
        let both = format!("{},{}", "11".repeat(32), "22".repeat(32));
        let keys = StateKeys::parse(&both).unwrap();
        assert_eq!(
            (keys.current, keys.previous),
            (StateKey::from_bytes([0x11; 32]), Some(StateKey::from_bytes([0x22; 32])))
        );
        assert_eq!(StateKeys::parse("a,b,c").unwrap_err(), KeyError::TooMany);
        assert_eq!(format!("{:?}", StateKey::from_bytes([5; 32])), "StateKey(..)");
    }
}
