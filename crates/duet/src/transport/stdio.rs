//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout, one session for the
//! local user. stdout is protected at the file-descriptor level while serving, so a handler
//! that prints (or writes to fd 1 directly) lands on stderr instead of corrupting the
//! protocol stream. A reader thread feeds lines in; a single writer thread writes lines out,
//! so messages never interleave.

use crate::jsonrpc::{Response, RpcError, Sink, encode};
use crate::layer::Principal;
use crate::message::Message;
use crate::protocol::Server;
use serde_json::Value;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::mpsc as std_mpsc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tracing::Instrument;

/// How long in-flight requests may finish after stdin closes before they are cancelled.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Serves one client over stdin and stdout until stdin closes.
pub async fn serve_stdio(server: Server) -> io::Result<()> {
    let guard = StdoutGuard::protect()?;
    let protocol_out = guard.protocol_stream()?;
    serve(server, io::stdin(), protocol_out, DEFAULT_SHUTDOWN_GRACE).await
}

/// Serves one client over any reader and writer (tests, pipes, sockets).
pub async fn serve<R, W>(server: Server, input: R, output: W, grace: Duration) -> io::Result<()>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let (writer, writer_thread) = Writer::start(output);
    let send: Sink = {
        let writer = writer.clone();
        std::sync::Arc::new(move |message: Value| writer.line(encode(&message)))
    };
    let session = server.connect(send, Principal::local());
    let mut lines = spawn_reader(input);
    let mut tasks = JoinSet::new();
    while let Some(line) = lines.recv().await {
        while tasks.try_join_next().is_some() {}
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let Some(message) = std::str::from_utf8(text).ok().and_then(|t| serde_json::from_str::<Message>(t).ok()) else {
            writer.line(Response::error(None, RpcError::parse_error()).to_line());
            continue;
        };
        let span = crate::trace::request_span(&message, || None);
        if message.runs_inline() {
            if let Some(answer) = session.handle(message, None, None).instrument(span).await {
                writer.line(answer.to_line());
            }
        } else {
            // Handed to the session here, in arrival order; it runs on its own task.
            let (answering, writer) = (session.handle(message, None, None), writer.clone());
            let run = async move {
                if let Some(answer) = answering.await {
                    writer.line(answer.to_line());
                }
            };
            tasks.spawn(run.instrument(span));
        }
    }
    server.close_listens();
    let drained = tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::info!(remaining = tasks.len(), "stdin closed; cancelling requests still running");
    }
    tasks.shutdown().await;
    session.close();
    writer.finish();
    writer_thread.join().unwrap_or_else(|_| Err(io::Error::other("the stdout writer panicked")))
}

/// Reads lines on a dedicated thread (a blocking read works the same on every platform).
fn spawn_reader<R: Read + Send + 'static>(input: R) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel(64);
    std::thread::Builder::new()
        .name("duet-stdin".into())
        .spawn(move || {
            let mut reader = BufReader::new(input);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) => break,
                    Ok(_) if tx.blocking_send(line).is_ok() => {}
                    Ok(_) => break,
                    Err(e) => {
                        tracing::warn!("reading stdin failed: {e}");
                        break;
                    }
                }
            }
        })
        .ok();
    rx
}

/// The one writer of the protocol stream: a thread that writes whole lines in order.
#[derive(Clone)]
struct Writer {
    tx: std_mpsc::Sender<Option<String>>,
}

impl Writer {
    fn start<W: Write + Send + 'static>(output: W) -> (Writer, std::thread::JoinHandle<io::Result<()>>) {
        let (tx, rx) = std_mpsc::channel::<Option<String>>();
        let handle = std::thread::spawn(move || {
            let mut out = io::BufWriter::new(output);
            while let Ok(Some(line)) = rx.recv() {
                out.write_all(line.as_bytes())?;
                out.write_all(b"\n")?;
                // Flush once the queue is empty, so bursts go out in one write.
                loop {
                    match rx.try_recv() {
                        Ok(Some(line)) => {
                            out.write_all(line.as_bytes())?;
                            out.write_all(b"\n")?;
                        }
                        Ok(None) => return out.flush(),
                        Err(_) => break,
                    }
                }
                out.flush()?;
            }
            out.flush()
        });
        (Writer { tx }, handle)
    }

    fn line(&self, line: String) {
        // After `finish` the thread is gone and late lines are dropped.
        let _ = self.tx.send(Some(line));
    }

    /// Lets the thread write what is queued and stop.
    fn finish(&self) {
        let _ = self.tx.send(None);
    }
}

/// Points fd 1 at stderr for as long as it lives, keeping a private copy of the real
/// stdout for the protocol. Restores fd 1 when dropped.
pub(crate) struct StdoutGuard {
    saved: OwnedFd,
}

impl StdoutGuard {
    pub fn protect() -> io::Result<StdoutGuard> {
        io::stdout().flush()?;
        let saved = dup(io::stdout().as_raw_fd())?;
        // SAFETY: dup2 on two descriptors this process has open; it only rebinds fd 1.
        if unsafe { libc::dup2(io::stderr().as_raw_fd(), io::stdout().as_raw_fd()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(StdoutGuard { saved })
    }

    /// A stream on the real stdout, for protocol lines only.
    pub fn protocol_stream(&self) -> io::Result<File> {
        Ok(File::from(dup(self.saved.as_raw_fd())?))
    }
}

impl Drop for StdoutGuard {
    fn drop(&mut self) {
        let _ = io::stdout().flush();
        // SAFETY: restores fd 1 from the copy this guard owns.
        unsafe { libc::dup2(self.saved.as_raw_fd(), io::stdout().as_raw_fd()) };
    }
}

fn dup(fd: i32) -> io::Result<OwnedFd> {
    // SAFETY: dup of an open descriptor; the new descriptor is owned by the returned value.
    let new = unsafe { libc::dup(fd) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out its input in the given pieces, one per read.
    struct Pieces(std::collections::VecDeque<&'static [u8]>);

    impl Read for Pieces {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let Some(piece) = self.0.pop_front() else { return Ok(0) };
            buf[..piece.len()].copy_from_slice(piece);
            Ok(piece.len())
        }
    }

    /// A writer whose bytes the test reads back.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Serves `input` to its end with an empty registry; the answers by id.
    async fn answers(input: String) -> std::collections::BTreeMap<i64, Value> {
        use crate::layer::{Registry, ServerInfo};
        let server = Server::new(std::sync::Arc::new(Registry::new(ServerInfo::new("t", "1"))), Default::default());
        let out = Shared::default();
        serve(server, io::Cursor::new(input), out.clone(), Duration::from_secs(5)).await.expect("served");
        let text = String::from_utf8(out.0.lock().unwrap().clone()).expect("UTF-8");
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("JSON"))
            .map(|v| (v["id"].as_i64().unwrap(), v))
            .collect()
    }

    #[tokio::test]
    async fn the_first_request_to_arrive_decides_the_era() {
        use crate::protocol::key;
        let meta = serde_json::json!({
            key::PROTOCOL_VERSION: "2026-07-28",
            key::CLIENT_INFO: {"name": "t", "version": "1"},
            key::CLIENT_CAPABILITIES: {},
        });
        let line = |id: i64, method: &str, params: Value| {
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string() + "\n"
        };
        let initialize = serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
        let input = line(1, "server/discover", serde_json::json!({"_meta": meta}))
            + &line(2, "tools/list", serde_json::json!({"_meta": meta}))
            + &line(3, "initialize", initialize);
        // The requests race on their tasks; arrival order must win every time.
        for _ in 0..20 {
            let got = answers(input.clone()).await;
            assert!(got[&1]["result"]["supportedVersions"].is_array(), "{:?}", got[&1]);
            assert!(got[&2]["result"]["tools"].is_array(), "{:?}", got[&2]);
            assert_eq!(got[&3]["error"]["code"], crate::jsonrpc::code::UNSUPPORTED_PROTOCOL_VERSION, "{:?}", got[&3]);
        }
    }

    #[tokio::test]
    async fn lines_arrive_whole_and_in_order_however_they_are_read() {
        let pieces: [&[u8]; 5] =
            [b"{\"a\":1}\n{\"b\"", b":2}\n{\"c\":3}\n{\"d\":4}\n", b"{\"e\"", b":5}\n", b"{\"f\":6}"];
        let mut lines = spawn_reader(Pieces(pieces.into_iter().collect()));
        let mut got = Vec::new();
        while let Some(line) = lines.recv().await {
            got.push(String::from_utf8(line).unwrap());
        }
        let want = ["{\"a\":1}\n", "{\"b\":2}\n", "{\"c\":3}\n", "{\"d\":4}\n", "{\"e\":5}\n", "{\"f\":6}"];
        assert_eq!(got, want);
    }
}
