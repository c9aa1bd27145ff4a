//! Runs a tool's command: the argv from its template (never a shell), stdin closed, only the
//! allowed environment, in its own process group. The run ends with the child's exit, its
//! timeout, or the request's cancellation, and however it ends the whole group is killed,
//! so nothing the command started (a `sleep 300 &`) outlives it. What the child printed becomes the tool result: stdout
//! as text or JSON, and a failure's exit code with its stderr (each capped). Each run is a
//! span of its own, which the command joins through `TRACEPARENT` when spans are exported.

use super::schema::Output;
use super::template::Argv;
use duet::layer::{RequestCx, ToolResult};
use rustix::io::Errno;
use rustix::process::{Pid, Signal, kill_process_group};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tracing::{Instrument, Span};

/// How long a command may run and how much of its output is kept.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub timeout: Duration,
    /// Bytes of stdout returned; the rest is read and dropped, with a note.
    pub stdout: usize,
    /// Bytes of stderr shown when the command fails.
    pub stderr: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { timeout: Duration::from_secs(60), stdout: 1 << 20, stderr: 8 << 10 }
    }
}

/// A tool's command, ready to run.
pub(super) struct Command {
    /// The tool's name, for messages.
    pub tool: String,
    pub program: String,
    /// The arguments after the program.
    pub args: Argv,
    /// Where the child runs; duet's own working directory when `None`.
    pub cwd: Option<PathBuf>,
    /// The variables of duet's environment the child gets (when duet has them).
    pub env: Vec<String>,
    /// Variables the child gets with these values.
    pub env_set: BTreeMap<String, String>,
    pub limits: Limits,
    pub output: Output,
}

/// How a run ended.
enum Ended {
    Exited { stdout: io::Result<Captured>, stderr: io::Result<Captured>, status: io::Result<ExitStatus> },
    TimedOut,
    Cancelled,
}

impl Command {
    /// Runs the command for validated arguments (defaults filled in). Every failure is a
    /// tool error result.
    pub(super) async fn run(&self, args: &Map<String, Value>, cx: &RequestCx) -> ToolResult {
        let span = self.span();
        self.run_in(args, cx, &span).instrument(span.clone()).await
    }

    /// The span of one run, a child of the request's: `exec {program}`, with the process's
    /// name, pid and exit code as the OpenTelemetry process conventions name them.
    fn span(&self) -> Span {
        use tracing::field::Empty;
        let name = Path::new(&self.program).file_name().map_or(self.program.as_str(), |n| n.to_str().unwrap_or("?"));
        tracing::info_span!(
            "manifest.command",
            otel.name = format!("exec {name}"),
            otel.status_code = Empty,
            error.type = Empty,
            process.executable.name = name,
            process.pid = Empty,
            process.exit.code = Empty,
            duet.tool = self.tool.as_str(),
        )
    }

    async fn run_in(&self, args: &Map<String, Value>, cx: &RequestCx, span: &Span) -> ToolResult {
        let argv = match self.args.render(args) {
            Ok(argv) => argv,
            Err(e) => return ToolResult::error(format!("Tool {}: {e}", self.tool)),
        };
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&argv)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for var in &self.env {
            if let Some(value) = std::env::var_os(var) {
                command.env(var, value);
            }
        }
        command.envs(&self.env_set);
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        #[cfg(unix)]
        command.process_group(0);
        // The command joins the trace, as the environment-variable carriers of OpenTelemetry
        // propagate it (only while spans are exported).
        if let Some((parent, state)) = trace_context(span) {
            command.env("TRACEPARENT", parent);
            if !state.is_empty() {
                command.env("TRACESTATE", state);
            }
        }
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                span.record("error.type", "spawn");
                span.record("otel.status_code", "error");
                return ToolResult::error(format!("Tool {}: cannot start {}: {e}", self.tool, self.program));
            }
        };
        if let Some(pid) = child.id() {
            span.record("process.pid", pid);
        }
        let mut group = Group { leader: child.id() };
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let ended = {
            let exited = async {
                let status = child.wait().await;
                // What the command left running ends with it, and lets go of the pipes read
                // beside. A reaped leader's id names its group while the group has members;
                // an empty group's id is free, but pids are handed out cyclically, so no
                // other group takes it in this instant.
                group.kill();
                status
            };
            let exit = async {
                tokio::join!(read_capped(stdout, self.limits.stdout), read_capped(stderr, self.limits.stderr), exited)
            };
            tokio::select! {
                (stdout, stderr, status) = exit => Ended::Exited { stdout, stderr, status },
                () = tokio::time::sleep(self.limits.timeout) => Ended::TimedOut,
                () = cx.cancelled() => Ended::Cancelled,
            }
        };
        let message = match ended {
            Ended::Exited { stdout, stderr, status } => {
                if let Ok(status) = &status {
                    if let Some(code) = status.code() {
                        span.record("process.exit.code", code);
                    }
                    if !status.success() {
                        span.record("otel.status_code", "error");
                    }
                }
                return self.result(stdout, stderr, status);
            }
            Ended::TimedOut => {
                span.record("error.type", "timeout");
                format!("Tool {} timed out after {} s", self.tool, self.limits.timeout.as_secs())
            }
            Ended::Cancelled => {
                span.record("error.type", "cancelled");
                format!("Tool {} was cancelled", self.tool)
            }
        };
        span.record("otel.status_code", "error");
        group.kill();
        // The group kill reached the child too; this reaps it (and kills it where groups
        // are not available).
        if let Err(e) = child.kill().await {
            tracing::debug!(tool = %self.tool, "reaping the killed command: {e}");
        }
        ToolResult::error(message)
    }

    /// The result of a command that exited.
    fn result(
        &self,
        stdout: io::Result<Captured>,
        stderr: io::Result<Captured>,
        status: io::Result<ExitStatus>,
    ) -> ToolResult {
        let (stdout, stderr, status) = match (stdout, stderr, status) {
            (Ok(stdout), Ok(stderr), Ok(status)) => (stdout, stderr, status),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                return ToolResult::error(format!("Tool {}: reading the command's output failed: {e}", self.tool));
            }
        };
        if !status.success() {
            // Some programs explain their failure on stdout.
            let detail =
                if stderr.total > 0 { stderr.text(self.limits.stderr) } else { stdout.text(self.limits.stderr) };
            let mut message = format!("Tool {}: {} {}", self.tool, self.program, describe(status));
            if !detail.trim().is_empty() {
                message.push_str(":\n");
                message.push_str(detail.trim_end());
            }
            return ToolResult::error(message);
        }
        match self.output {
            Output::Text => ToolResult::text(stdout.text(self.limits.stdout)),
            Output::Json if stdout.total > stdout.bytes.len() => ToolResult::error(format!(
                "Tool {}: the output is longer than {} bytes, too long to return as JSON",
                self.tool, self.limits.stdout
            )),
            Output::Json => match serde_json::from_slice::<Value>(&stdout.bytes) {
                Ok(object @ Value::Object(_)) => ToolResult::structured(object),
                Ok(other) => ToolResult::structured(json!({ "result": other })),
                Err(e) => ToolResult::error(format!("Tool {}: the command's output is not valid JSON: {e}", self.tool)),
            },
        }
    }
}

/// The `traceparent` and `tracestate` of `span` as an exporter sees it; `None` when no
/// OpenTelemetry layer records it.
fn trace_context(span: &Span) -> Option<(String, String)> {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let cx = span.context();
    let context = cx.span().span_context().clone();
    let parent = format!("00-{}-{}-{:02x}", context.trace_id(), context.span_id(), context.trace_flags().to_u8());
    context.is_valid().then(|| (parent, context.trace_state().header()))
}

/// "exited with code 2", "was killed by signal 9".
fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with code {code}");
    }
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("was killed by signal {signal}");
    }
    format!("failed ({status})")
}

/// The first bytes of a stream, and how long it was.
struct Captured {
    bytes: Vec<u8>,
    total: usize,
}

impl Captured {
    /// At most `limit` bytes as text, with a note when there were more.
    fn text(&self, limit: usize) -> String {
        let shown = &self.bytes[..self.bytes.len().min(limit)];
        let mut text = String::from_utf8_lossy(shown).into_owned();
        if self.total > shown.len() {
            text.push_str(&format!("\n[output truncated: {} of {} bytes shown]", shown.len(), self.total));
        }
        text
    }
}

/// Reads a stream to its end, keeping the first `limit` bytes (reading on keeps the child
/// from blocking on a full pipe).
async fn read_capped(stream: Option<impl AsyncRead + Unpin>, limit: usize) -> io::Result<Captured> {
    let mut captured = Captured { bytes: Vec::new(), total: 0 };
    let Some(mut stream) = stream else { return Ok(captured) };
    let mut buf = vec![0; 64 << 10];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(captured);
        }
        let room = limit.saturating_sub(captured.bytes.len());
        captured.bytes.extend_from_slice(&buf[..n.min(room)]);
        captured.total += n;
    }
}

/// The child's process group (the child leads it), killed whole when a run ends, and when a
/// run is dropped half-way (its request went away).
struct Group {
    leader: Option<u32>,
}

impl Group {
    fn kill(&mut self) {
        if let Some(leader) = self.leader.take() {
            let Some(group) = i32::try_from(leader).ok().and_then(Pid::from_raw) else { return };
            match kill_process_group(group, Signal::KILL) {
                Ok(()) | Err(Errno::SRCH) => {}
                Err(e) => tracing::warn!("cannot kill process group {leader}: {e}"),
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}
