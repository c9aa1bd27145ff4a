//! A server the client spawns and speaks to over its stdin and stdout: newline-delimited
//! JSON-RPC, each line bounded. The command runs in a process group of its own; closing
//! the client ends stdin, waits a moment, then stops the group (SIGTERM, then SIGKILL) and
//! reaps the server; a client dropped without closing kills the group at once. The
//! server's stderr is passed through to the client's own stderr. One task writes the
//! client's lines, one reads the server's: answers go to the requests waiting for them,
//! notifications to the client's channel, a server's request to the caller's handlers (each
//! answered from a task of its own, so a slow handler holds up nothing else).

use super::inbound::{self, Inbound, Inbox};
use super::pending::{Ended, Pending};
use super::{MAX_MESSAGE, Outgoing};
use crate::error::Error;
use duet_wire::jsonrpc::RequestId;
use futures::StreamExt;
use rustix::process::{Pid, Signal, kill_process_group};
use serde_json::Value;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

/// How long a closing client waits for the server to exit after each step: end of input,
/// SIGTERM.
const GRACE: Duration = Duration::from_secs(2);

/// A spawned server, spoken to over its stdin and stdout.
#[derive(Debug)]
pub struct StdioTransport {
    child: Option<Child>,
    group: Pid,
    lines: mpsc::UnboundedSender<String>,
    pending: Arc<Pending>,
    inbox: Arc<Inbox>,
    writer: JoinHandle<()>,
    reader: JoinHandle<()>,
}

impl StdioTransport {
    /// Spawns `command` in a process group of its own, its stdin and stdout piped to the
    /// client and its stderr passed through. Call it within a Tokio runtime.
    pub fn spawn(mut command: Command) -> Result<StdioTransport, Error> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| Error::transport(format!("spawning the server: {e}")))?;
        let group = child
            .id()
            .and_then(|id| Pid::from_raw(i32::try_from(id).ok()?))
            .ok_or_else(|| Error::transport("the spawned server has no process id"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::transport("the spawned server's stdin or stdout is not piped"));
        };
        let (lines, queued) = mpsc::unbounded_channel();
        let abandoning = lines.clone();
        let pending = Pending::new(Box::new(move |id| drop(abandoning.send(Outgoing::cancelled(id, None).text(None)))));
        let inbox = Inbox::new();
        let writer = tokio::spawn(write_lines(stdin, queued));
        let reader = tokio::spawn(read_lines(stdout, Arc::clone(&pending), Arc::clone(&inbox), lines.clone()));
        Ok(StdioTransport { child: Some(child), group, lines, pending, inbox, writer, reader })
    }

    /// The id of the server's process group (its process id), for a caller that watches it.
    pub fn process_group(&self) -> u32 {
        self.group.as_raw_nonzero().get().unsigned_abs()
    }

    pub(super) fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    pub(super) async fn request(&self, id: &RequestId, out: &Outgoing) -> Result<Value, Error> {
        let waiter = self.pending.register(id.clone())?;
        self.lines.send(out.text(Some(id))).map_err(|_| Error::Closed)?;
        waiter.answer().await
    }

    pub(super) fn notify(&self, out: &Outgoing) -> Result<(), Error> {
        self.lines.send(out.text(None)).map_err(|_| Error::Closed)
    }

    /// Ends the server's input, waits for it to exit, stops its group if it lingers, and
    /// reaps it.
    pub(super) async fn close(mut self) {
        // The writer owns stdin: stopping it closes the pipe.
        self.writer.abort();
        let _ = (&mut self.writer).await;
        if let Some(mut child) = self.child.take()
            && tokio::time::timeout(GRACE, child.wait()).await.is_err()
        {
            let _ = kill_process_group(self.group, Signal::TERM);
            if tokio::time::timeout(GRACE, child.wait()).await.is_err() {
                let _ = kill_process_group(self.group, Signal::KILL);
                let _ = child.wait().await;
            }
        }
        // Whatever the server left in its group goes with it.
        let _ = kill_process_group(self.group, Signal::KILL);
        self.reader.abort();
        self.pending.end(Ended::Closed);
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.writer.abort();
        self.reader.abort();
        // Not closed: the group is killed now; Tokio reaps the dropped child.
        if self.child.is_some() {
            let _ = kill_process_group(self.group, Signal::KILL);
        }
        self.pending.end(Ended::Closed);
    }
}

/// Writes each queued line to the server's stdin, newline-terminated.
async fn write_lines(mut stdin: ChildStdin, mut queued: mpsc::UnboundedReceiver<String>) {
    while let Some(mut line) = queued.recv().await {
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            return;
        }
    }
}

/// Reads the server's lines until its stdout ends or breaks the protocol, routing each:
/// answers to the waiting requests, the rest to the inbox, whose answers to the server's
/// requests go to the writer as `lines`.
async fn read_lines(
    stdout: ChildStdout,
    pending: Arc<Pending>,
    inbox: Arc<Inbox>,
    lines: mpsc::UnboundedSender<String>,
) {
    let mut read = FramedRead::new(stdout, LinesCodec::new_with_max_length(MAX_MESSAGE));
    while let Some(line) = read.next().await {
        let line = match line {
            Ok(line) => line,
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                return pending.end(Ended::Broken(format!("the server wrote a line longer than {MAX_MESSAGE} bytes")));
            }
            Err(LinesCodecError::Io(e)) => {
                return pending.end(Ended::Broken(format!("reading the server's output: {e}")));
            }
        };
        match inbound::decode(line.as_bytes()) {
            Inbound::Answer { id: Some(id), outcome } => pending.resolve(&id, outcome.map_err(Error::Rpc)),
            Inbound::Notification(notification) => inbox.notices.deliver(notification),
            Inbound::Request(request) => {
                let (inbox, lines) = (Arc::clone(&inbox), lines.clone());
                tokio::spawn(async move { drop(lines.send(inbox.answering.respond(request).await)) });
            }
            // A blank line, an answer to no request, a line that is no message: passed over.
            Inbound::Answer { id: None, .. } | Inbound::Unusable => {}
        }
    }
    pending.end(Ended::Closed);
}
