//! The RFC 5424 levels of `notifications/message`, least severe first: the threshold a client
//! asks for (`logging/setLevel`, or the 2026 envelope's `logLevel`) and the level a handler
//! logs at.

use serde::Serialize;

/// A log message's severity, ordered least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but worth noticing.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
    /// A failure of a part of the system.
    Critical,
    /// Someone must act now.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// Its name on the wire: `debug`, `info`...
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level of one of the eight names, exactly as MCP spells them.
    pub fn parse(name: &str) -> Option<LogLevel> {
        Self::ALL.into_iter().find(|l| l.as_str() == name)
    }

    /// The level a handler most likely means: any case, and the aliases `warn`, `fatal`,
    /// `exception` and `trace`; anything else is `info`.
    pub fn lenient(name: &str) -> LogLevel {
        let lower = name.to_ascii_lowercase();
        let name = match lower.as_str() {
            "warn" => "warning",
            "fatal" => "critical",
            "exception" => "error",
            "trace" => "debug",
            other => other,
        };
        Self::parse(name).unwrap_or(LogLevel::Info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases() {
        for level in LogLevel::ALL {
            assert_eq!(LogLevel::parse(level.as_str()), Some(level));
        }
        assert_eq!(LogLevel::parse("warn"), None);
        assert_eq!(LogLevel::lenient("fatal"), LogLevel::Critical);
        assert_eq!(LogLevel::lenient("bogus"), LogLevel::Info);
        assert_eq!(LogLevel::lenient("Debug"), LogLevel::Debug);
        assert!(LogLevel::Debug < LogLevel::Emergency);
    }
}
