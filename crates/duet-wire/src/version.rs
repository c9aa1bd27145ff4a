//! The protocol revisions duet speaks, their eras, and what each one allows.

use std::fmt;

/// A protocol revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// `2024-11-05`: the first, with the HTTP+SSE transport.
    V2024_11_05,
    /// `2025-03-26`: Streamable HTTP, batches, audio, completions.
    V2025_03_26,
    /// `2025-06-18`: structured output, elicitation, no batches.
    V2025_06_18,
    /// `2025-11-25`: experimental tasks, stream polling.
    V2025_11_25,
    /// `2026-07-28`: stateless, a `_meta` envelope on every request.
    V2026_07_28,
}

/// The two eras: `initialize` and sessions, or a `_meta` envelope on every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize`, then a session: 2024-11-05 to 2025-11-25.
    Handshake,
    /// Every request carries its terms: 2026-07-28.
    Modern,
}

/// Every revision's name, oldest first, in the order of [`Version::ALL`].
const NAMES: [&str; 5] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

impl Version {
    /// Every revision duet speaks, oldest first.
    pub const ALL: [Version; 5] =
        [Version::V2024_11_05, Version::V2025_03_26, Version::V2025_06_18, Version::V2025_11_25, Version::V2026_07_28];
    /// The revisions carried per request in the `_meta` envelope.
    pub const MODERN: [Version; 1] = [Version::V2026_07_28];
    /// What `initialize` answers when the client asks for a revision duet does not speak.
    pub const LATEST_HANDSHAKE: Version = Version::V2025_11_25;
    /// What an HTTP request without `MCP-Protocol-Version` is taken to speak.
    pub const DEFAULT_HTTP: Version = Version::V2025_03_26;

    /// The revision named `s`, if duet speaks it.
    pub fn parse(s: &str) -> Option<Version> {
        NAMES.iter().position(|v| *v == s).map(|i| Self::ALL[i])
    }

    /// Its name: `2025-06-18`...
    pub fn as_str(self) -> &'static str {
        NAMES[self as usize]
    }

    /// The era it belongs to.
    pub fn era(self) -> Era {
        if self == Version::V2026_07_28 { Era::Modern } else { Era::Handshake }
    }

    /// Whether it is 2026-07-28's era.
    pub fn is_modern(self) -> bool {
        self.era() == Era::Modern
    }

    /// Whether its Streamable HTTP streams start with a priming event and may be ended by
    /// the server for the client to poll (SEP-1699).
    pub fn primes_streams(self) -> bool {
        self == Version::V2025_11_25
    }

    /// JSON-RPC batches were allowed up to 2025-03-26.
    pub fn allows_batches(self) -> bool {
        self <= Version::V2025_03_26
    }

    /// `completions` became a capability in 2025-03-26.
    pub fn has_completions_capability(self) -> bool {
        self >= Version::V2025_03_26
    }

    /// Audio content arrived in 2025-03-26.
    pub fn has_audio(self) -> bool {
        self >= Version::V2025_03_26
    }

    /// `resource_link` content, `structuredContent` and `outputSchema` arrived in 2025-06-18.
    pub fn has_structured_output(self) -> bool {
        self >= Version::V2025_06_18
    }

    /// 2025-11-25 carried experimental tasks in the core protocol (`tasks/get`,
    /// `tasks/result`, `tasks/list`, `tasks/cancel`, `execution.taskSupport`); 2026-07-28
    /// moved them to an extension.
    pub fn has_core_tasks(self) -> bool {
        self == Version::V2025_11_25
    }

    /// The 2026 revision accepts any JSON value as `structuredContent`; earlier ones an object.
    pub fn structured_content_any(self) -> bool {
        self.is_modern()
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Version {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Version::parse(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown protocol version {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_round_trip_and_order() {
        assert!(Version::ALL.iter().all(|v| Version::parse(v.as_str()) == Some(*v)));
        assert_eq!(Version::parse("2099-01-01"), None);
        assert!(Version::V2025_03_26.allows_batches() && !Version::V2025_06_18.allows_batches());
        assert!(!Version::V2024_11_05.has_completions_capability());
        assert_eq!(Version::V2026_07_28.era(), Era::Modern);
        assert!(Version::MODERN.iter().all(|v| v.is_modern()));
    }
}
