//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout, one session for the
//! local user. A reader thread feeds lines in (`reader.rs`), a single writer thread writes
//! lines out (`writer.rs`), and stdout is protected while serving (`stdout.rs`). Each message
//! owed an answer passes the engine's gate (the batch cap, the limits; its trace starts
//! there) before it reaches the session.
//!
//! Everything a client can pile up is bounded: a line longer than `max_message_bytes` is
//! answered -32600 without being held; at most `max_in_flight` requests run or wait to be
//! written at once, and when every slot is taken the loop stops reading requests (the pipe
//! then fills and the client blocks), while the notifications that arrive meanwhile are
//! still handled, so a `notifications/cancelled` read can always free a slot.

mod reader;
mod stdout;
mod writer;

use crate::layer::Principal;
use crate::protocol::Server;
use crate::protocol::gate::Admitted;
use crate::signals::Transport;
use duet_wire::jsonrpc::{RequestId, Response, RpcError, Sink, encode};
use duet_wire::message::{Incoming, Message};
use duet_wire::method::Method;
use reader::{Line, spawn_reader};
use serde_json::Value;
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::Duration;
use stdout::StdoutGuard;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use writer::Writer;

/// How a stdio session is bounded.
#[derive(Debug, Clone)]
pub struct StdioOptions {
    /// How long in-flight requests may finish after stdin closes before they are cancelled.
    pub shutdown_grace: Duration,
    /// The longest line (one message) read, in bytes; the HTTP body limit's default.
    pub max_message_bytes: usize,
    /// Requests running or waiting for their answer to be written, at most.
    pub max_in_flight: usize,
    /// Cancelled to stop as at end of input (on SIGTERM): nothing more is read, and the
    /// requests in flight have `shutdown_grace` to finish.
    pub stop: CancellationToken,
}

impl Default for StdioOptions {
    fn default() -> Self {
        StdioOptions {
            shutdown_grace: Duration::from_secs(10),
            max_message_bytes: 4 * 1024 * 1024,
            max_in_flight: 64,
            stop: CancellationToken::new(),
        }
    }
}

/// Serves one client over stdin and stdout until stdin closes.
pub async fn serve_stdio(server: Server, options: StdioOptions) -> io::Result<()> {
    let guard = StdoutGuard::protect()?;
    let protocol_out = guard.protocol_stream()?;
    serve(server, io::stdin(), protocol_out, options).await
}

/// One line of input, decoded.
enum Item {
    Message(Message),
    /// A line that is no message (too long, not JSON): answered at once with this error.
    Refused(Response),
}

impl Item {
    fn read(line: Line, options: &StdioOptions) -> Option<Item> {
        let text = match line {
            Line::TooLong(bytes) => {
                let limit = options.max_message_bytes;
                let why = format!("Message too large: {bytes} bytes; the limit is {limit}");
                return Some(Item::Refused(Response::error(None, RpcError::invalid_request(why))));
            }
            Line::Text(text) => text,
        };
        let text = text.trim_ascii();
        if text.is_empty() {
            return None;
        }
        let message = std::str::from_utf8(text).ok().and_then(|t| serde_json::from_str::<Message>(t).ok());
        Some(message.map_or_else(|| Item::Refused(Response::error(None, RpcError::parse_error())), Item::Message))
    }

    /// Whether an answer is owed (everything but a lone notification or response).
    fn owes_answer(&self) -> bool {
        !matches!(
            self,
            Item::Message(Message::One(Incoming::Notification(_) | Incoming::Response { .. } | Incoming::Dropped))
        )
    }

    /// Whether this is a `notifications/cancelled` naming `item`'s request.
    fn cancels(&self, item: &Item) -> bool {
        let (
            Item::Message(Message::One(Incoming::Notification(note))),
            Item::Message(Message::One(Incoming::Request(request))),
        ) = (self, item)
        else {
            return false;
        };
        note.method == Method::Cancelled
            && note.params.get("requestId").and_then(RequestId::from_value).is_some_and(|id| id == request.id)
    }
}

/// Serves one client over any reader and writer (tests, pipes, sockets).
pub async fn serve<R, W>(server: Server, input: R, output: W, options: StdioOptions) -> io::Result<()>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let (writer, writer_thread) = Writer::start(output);
    let send: Sink = {
        let writer = writer.clone();
        Arc::new(move |message: Value| writer.notification(encode(&message)))
    };
    let principal = Principal::local();
    let session = server.connect_over(Transport::Pipe, send, principal.clone());
    let mut lines = spawn_reader(input, options.max_message_bytes);
    let slots = Arc::new(Semaphore::new(options.max_in_flight.max(1)));
    let mut tasks = JoinSet::new();
    // A request read while waiting for a slot, and whether input goes on.
    let (mut ahead, mut open): (Option<Item>, bool) = (None, true);
    loop {
        let item = match ahead.take() {
            Some(item) => item,
            None if !open => break,
            None => {
                let line = tokio::select! {
                    biased;
                    _ = options.stop.cancelled() => None,
                    line = lines.recv() => line,
                };
                match line.map(|line| Item::read(line, &options)) {
                    Some(Some(item)) => item,
                    Some(None) => continue,
                    None => break,
                }
            }
        };
        while tasks.try_join_next().is_some() {}
        if !item.owes_answer() {
            if let Item::Message(message) = item {
                session.handle(message, None, None).await;
            }
            continue;
        }
        // A slot for it; meanwhile the notifications behind it are handled, and the first
        // request behind it waits (reading stops there).
        let slot: Option<OwnedSemaphorePermit> = loop {
            tokio::select! {
                biased;
                permit = slots.clone().acquire_owned() => break permit.ok(),
                _ = options.stop.cancelled(), if open => open = false,
                line = lines.recv(), if open && ahead.is_none() => match line.map(|l| Item::read(l, &options)) {
                    None => open = false,
                    Some(None) => {}
                    Some(Some(next)) if next.owes_answer() => ahead = Some(next),
                    Some(Some(next)) => {
                        let cancelled = next.cancels(&item);
                        if let Item::Message(note) = next {
                            session.handle(note, None, None).await;
                        }
                        if cancelled {
                            break None;
                        }
                    }
                },
            }
        };
        let Some(slot) = slot else { continue };
        match item {
            Item::Refused(error) => writer.answer(error.to_line(), Some(slot)),
            Item::Message(mut message) => {
                let Admitted { trace, in_flight } = match server.admit(&principal, &mut message, || None) {
                    Ok(admitted) => admitted,
                    Err(why) => {
                        writer.answer(why.answer(&message).to_line(), Some(slot));
                        continue;
                    }
                };
                let inline = message.runs_inline();
                // Handed to the session here, in arrival order.
                let (answering, writer) = (session.handle(message, None, None), writer.clone());
                let run = trace.instrument(async move {
                    if let Some(answer) = answering.await {
                        writer.answer(answer.to_line(), Some(slot));
                    }
                    drop(in_flight);
                });
                if inline {
                    run.await;
                } else {
                    tasks.spawn(run);
                }
            }
        }
    }
    server.close_listens();
    let drained =
        tokio::time::timeout(options.shutdown_grace, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::info!(remaining = tasks.len(), "stdin closed; cancelling requests still running");
    }
    tasks.shutdown().await;
    session.close();
    writer.finish();
    writer_thread.join().unwrap_or_else(|_| Err(io::Error::other("the stdout writer panicked")))
}

#[cfg(test)]
mod tests;
