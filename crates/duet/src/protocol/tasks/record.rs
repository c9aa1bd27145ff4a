//! A task as the store keeps it, and as each era shows it: the 2026 extension's
//! `DetailedTask` (status, with the result, the error or the outstanding input requests
//! inlined) and 2025-11-25's `Task` (`ttl` and `pollInterval`; the result comes from
//! `tasks/result`).

use crate::protocol::Version;
use duet_wire::jsonrpc::RpcError;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::time::{SystemTime, UNIX_EPOCH};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// How long a task's record stays after its time to live: a task whose work ran out of
/// time is marked failed at its TTL and can still be read that long.
pub(crate) const KEEP_MS: u64 = 60_000;

/// A task's status: the wire crate's, which the client reads too.
pub(crate) use duet_wire::types::TaskStatus as Status;

/// One task: whose it is, where it runs, where it stands, and what it asked or produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TaskRecord {
    pub id: String,
    /// The id of the principal that started it; no one else reaches it.
    pub owner: String,
    /// The version of the request that started it: its result is rendered for it.
    pub version: Version,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub created_ms: u64,
    pub updated_ms: u64,
    pub ttl_ms: u64,
    pub poll_ms: u64,
    /// The replica running it.
    pub runner: u64,
    /// How many times it asked for input: the prefix that keeps every key it asks under
    /// unique over its life.
    #[serde(default)]
    pub round: u32,
    /// What it waits for from the client, by key.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub input_requests: Map<String, Value>,
    /// Answers the client gave that the runner has not taken yet, by key.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub input_responses: Map<String, Value>,
    /// The result, rendered for `version` (completed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Box<RawValue>>,
    /// Whether the result is a tool error (`isError`), which 2025-11-25 reports as failed.
    #[serde(default)]
    pub tool_error: bool,
    /// The JSON-RPC error the request ended with (failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

impl TaskRecord {
    /// A task `id` of `owner` that starts working now, on replica `runner`.
    pub(crate) fn new(id: String, owner: &str, version: Version, ttl_ms: u64, poll_ms: u64, runner: u64) -> Self {
        let now = now_ms();
        TaskRecord {
            id,
            owner: owner.to_string(),
            version,
            status: Status::Working,
            message: None,
            created_ms: now,
            updated_ms: now,
            ttl_ms,
            poll_ms,
            runner,
            round: 0,
            input_requests: Map::new(),
            input_responses: Map::new(),
            result: None,
            tool_error: false,
            error: None,
        }
    }

    /// When the store drops the record.
    pub(crate) fn expires_ms(&self) -> u64 {
        self.created_ms + self.ttl_ms + KEEP_MS
    }

    /// Moves the task to `status`, saying why.
    pub(crate) fn set(&mut self, status: Status, message: Option<String>) {
        self.status = status;
        self.message = message;
        self.updated_ms = now_ms();
        if status != Status::InputRequired {
            self.input_requests.clear();
        }
    }

    /// Ends the task as failed with `error`.
    pub(crate) fn fail(&mut self, error: RpcError) {
        self.set(Status::Failed, Some(error.message.clone()));
        self.error = Some(error);
    }

    /// The 2026 `DetailedTask`: what `tasks/get` answers and `notifications/tasks` carries.
    pub(crate) fn detailed(&self) -> Detailed<'_> {
        let mut shown = self.created();
        match self.status {
            Status::InputRequired => shown.input_requests = Some(&self.input_requests),
            Status::Completed => shown.result = self.result.as_deref(),
            Status::Failed => shown.error = self.error.as_ref(),
            Status::Working | Status::Cancelled => {}
        }
        shown
    }

    /// The task's fields alone: a 2026 `CreateTaskResult` without its `resultType`.
    pub(crate) fn created(&self) -> Detailed<'_> {
        Detailed {
            shown: self.shown(self.status),
            ttl_ms: self.ttl_ms,
            poll_interval_ms: self.poll_ms,
            input_requests: None,
            result: None,
            error: None,
        }
    }

    /// The 2025-11-25 `Task`, where a tool error counts as failed.
    pub(crate) fn legacy(&self) -> LegacyTask<'_> {
        let status = match self.status {
            Status::Completed if self.tool_error => Status::Failed,
            status => status,
        };
        LegacyTask { shown: self.shown(status), ttl: self.ttl_ms, poll_interval: self.poll_ms }
    }

    /// What both eras show first of the task, as being in `status`.
    fn shown(&self, status: Status) -> Shown<'_> {
        Shown {
            task_id: &self.id,
            status,
            status_message: self.message.as_deref(),
            created_at: rfc3339(self.created_ms),
            last_updated_at: rfc3339(self.updated_ms),
        }
    }
}

/// The fields a task starts with in both eras.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Shown<'a> {
    task_id: &'a str,
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    status_message: Option<&'a str>,
    created_at: String,
    last_updated_at: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Detailed<'a> {
    #[serde(flatten)]
    shown: Shown<'a>,
    ttl_ms: u64,
    poll_interval_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_requests: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a RpcError>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LegacyTask<'a> {
    #[serde(flatten)]
    shown: Shown<'a>,
    ttl: u64,
    poll_interval: u64,
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// `ms` after the epoch as an RFC 3339 UTC timestamp, to the millisecond.
fn rfc3339(ms: u64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(status: Status) -> TaskRecord {
        let mut record = TaskRecord::new("t1".into(), "alice", Version::V2026_07_28, 60_000, 500, 7);
        (record.created_ms, record.updated_ms) = (1_764_633_600_000, 1_764_633_601_500);
        record.status = status;
        record.round = 1;
        record.input_requests = json!({"1.ok": {"method": "elicitation/create"}}).as_object().unwrap().clone();
        record.result = Some(RawValue::from_string(r#"{"content":[],"isError":true}"#.into()).unwrap());
        record.tool_error = true;
        record.error = Some(RpcError::internal());
        record
    }

    #[test]
    fn each_status_inlines_its_own_payload() {
        let shown = |status| serde_json::to_value(record(status).detailed()).unwrap();
        let working = shown(Status::Working);
        assert_eq!(
            working,
            json!({"taskId": "t1", "status": "working", "createdAt": "2025-12-02T00:00:00Z",
                "lastUpdatedAt": "2025-12-02T00:00:01.5Z", "ttlMs": 60000, "pollIntervalMs": 500})
        );
        assert_eq!(shown(Status::InputRequired)["inputRequests"]["1.ok"]["method"], "elicitation/create");
        let completed = shown(Status::Completed);
        assert_eq!((completed.get("error"), &completed["result"]["isError"]), (None, &json!(true)));
        let failed = shown(Status::Failed);
        assert_eq!((failed.get("result"), &failed["error"]["code"]), (None, &json!(-32603)));
        assert_eq!(shown(Status::Cancelled).as_object().unwrap().len(), 6);
    }

    #[test]
    fn the_2025_shape_reports_a_tool_error_as_failed() {
        let legacy = serde_json::to_value(record(Status::Completed).legacy()).unwrap();
        assert_eq!(
            (&legacy["status"], &legacy["ttl"], &legacy["pollInterval"]),
            (&json!("failed"), &json!(60000), &json!(500))
        );
        assert_eq!(legacy.get("ttlMs"), None);
    }

    #[test]
    fn records_round_trip() {
        let bytes = serde_json::to_vec(&record(Status::InputRequired)).unwrap();
        let back: TaskRecord = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(serde_json::to_vec(&back).unwrap(), bytes);
    }
}
