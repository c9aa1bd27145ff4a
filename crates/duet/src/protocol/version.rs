//! The protocol revisions duet speaks, their eras, and what each one allows.

use crate::jsonrpc::{BATCH_VERSIONS, SUPPORTED_VERSIONS};
use std::fmt;

/// A protocol revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

/// The two eras: `initialize` and sessions, or a `_meta` envelope on every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    Handshake,
    Modern,
}

impl Version {
    pub const ALL: [Version; 5] =
        [Version::V2024_11_05, Version::V2025_03_26, Version::V2025_06_18, Version::V2025_11_25, Version::V2026_07_28];

    pub fn parse(s: &str) -> Option<Version> {
        SUPPORTED_VERSIONS.iter().position(|v| *v == s).map(|i| Self::ALL[i])
    }

    pub fn as_str(self) -> &'static str {
        SUPPORTED_VERSIONS[self as usize]
    }

    pub fn era(self) -> Era {
        if self == Version::V2026_07_28 { Era::Modern } else { Era::Handshake }
    }

    pub fn is_modern(self) -> bool {
        self.era() == Era::Modern
    }

    pub fn allows_batches(self) -> bool {
        BATCH_VERSIONS.contains(&self.as_str())
    }

    /// `completions` became a capability in 2025-03-26.
    pub fn has_completions_capability(self) -> bool {
        self >= Version::V2025_03_26
    }

    pub fn has_audio(self) -> bool {
        self >= Version::V2025_03_26
    }

    /// `resource_link` content, `structuredContent` and `outputSchema` arrived in 2025-06-18.
    pub fn has_structured_output(self) -> bool {
        self >= Version::V2025_06_18
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_round_trip_and_order() {
        for v in Version::ALL {
            assert_eq!(Version::parse(v.as_str()), Some(v));
        }
        assert_eq!(Version::parse("2099-01-01"), None);
        assert!(Version::V2025_03_26.allows_batches() && !Version::V2025_06_18.allows_batches());
        assert!(!Version::V2024_11_05.has_completions_capability());
        assert_eq!(Version::V2026_07_28.era(), Era::Modern);
    }
}
