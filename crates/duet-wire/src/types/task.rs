//! Tasks on the wire, as both eras share them (the 2026 `io.modelcontextprotocol/tasks`
//! extension, SEP-2663, and 2025-11-25's experimental tasks): the extension's identifier
//! and a task's status. duet's server records tasks in it; its client reads it back.

use serde::{Deserialize, Serialize};

/// The extension's identifier, under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Its request is being processed.
    Working,
    /// It waits for the client's answers to what it asked.
    InputRequired,
    /// It ended with a result (a tool error included, in 2026).
    Completed,
    /// It ended with a JSON-RPC error (in 2025-11-25, a tool error too).
    Failed,
    /// It was cancelled before it ended.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task has ended: completed, failed or cancelled.
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}
