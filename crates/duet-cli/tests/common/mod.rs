//! Runs the real `duet` binary over pipes: write lines to its stdin, read its stdout line
//! by line with deadlines, close stdin, and wait (bounded) for it to exit. Every stdout line
//! is checked as it arrives: one complete JSON-RPC 2.0 object (or a batch of responses) per
//! line, and every result, error and notification valid under the MCP schema of the version
//! the session speaks.
//! The process is killed when the handle is dropped, so a failing test never leaks it.
//! [`redis_server`] starts a real Redis for the tests of replicas.

// Only the tests of replicas use it.
#[allow(dead_code)]
pub(crate) mod redis_server;

use duet_testing::Schemas;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long to wait for an answer the server should send promptly.
pub(crate) const ANSWER: Duration = Duration::from_secs(10);

/// The 2026 request envelope key of the protocol version.
pub(crate) const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// The 2026 request envelope key of the client's capabilities.
pub(crate) const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key tagging messages of a listen stream.
pub(crate) const SUBSCRIPTION_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// One line the server wrote to stdout.
enum Out {
    Line(Vec<u8>),
    /// Bytes after the last newline when stdout closed.
    Unterminated(Vec<u8>),
}

/// A running `duet` process.
pub(crate) struct Duet {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: mpsc::Receiver<Out>,
    stdout_closed: bool,
    /// Everything read from stderr so far, and the thread reading it.
    stderr_bytes: Arc<Mutex<Vec<u8>>>,
    stderr: Option<JoinHandle<()>>,
    /// The protocol version whose schema the server's messages are checked against.
    version: String,
    /// Method of every request sent, by the JSON text of its id.
    methods: HashMap<String, String>,
    /// Every stdout message read so far, in order.
    pub seen: Vec<Value>,
    started: Instant,
    closed_at: Option<Instant>,
}

/// How a process ended.
pub(crate) struct Finished {
    pub status: ExitStatus,
    /// Every stdout message, in order.
    pub messages: Vec<Value>,
    pub stderr: String,
    /// From spawning to exit.
    pub elapsed: Duration,
    /// From closing stdin to exit.
    pub after_eof: Duration,
}

impl Duet {
    /// `duet serve --fixtures testkit`, checked against the schema of `version`.
    pub(crate) fn testkit(version: &str) -> Duet {
        Duet::spawn(&["serve", "--fixtures", "testkit"], version)
    }

    pub(crate) fn spawn(args: &[&str], version: &str) -> Duet {
        Duet::spawn_with_env(args, &[], version)
    }

    /// [`spawn`](Self::spawn) with `env` added to the environment.
    pub(crate) fn spawn_with_env(args: &[&str], env: &[(&str, &str)], version: &str) -> Duet {
        let mut child = Command::new(env!("CARGO_BIN_EXE_duet"))
            .args(args)
            .envs(env.iter().copied())
            .env_remove("DUET_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start duet");
        let started = Instant::now();
        let stdin = child.stdin.take();
        let out = child.stdout.take().expect("piped stdout");
        let mut err = child.stderr.take().expect("piped stderr");
        let (tx, stdout) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(out);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if line.ends_with(b"\n") => {
                        line.pop();
                        if tx.send(Out::Line(line)).is_err() {
                            break;
                        }
                    }
                    Ok(_) => {
                        let _ = tx.send(Out::Unterminated(line));
                        break;
                    }
                }
            }
        });
        let stderr_bytes = Arc::new(Mutex::new(Vec::new()));
        let sink = stderr_bytes.clone();
        let stderr = std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = err.read(&mut chunk) {
                sink.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        Duet {
            child,
            stdin,
            stdout,
            stdout_closed: false,
            stderr_bytes,
            stderr: Some(stderr),
            version: version.to_string(),
            methods: HashMap::new(),
            seen: Vec::new(),
            started,
            closed_at: None,
        }
    }

    /// Writes `message` as one line, remembering the method of a request for its answer.
    pub(crate) fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.send_raw(&line);
    }

    /// Writes bytes as they are (include the newline), remembering the method of each
    /// request among them (one per line, or in a batch) for its answer.
    pub(crate) fn send_raw(&mut self, bytes: &[u8]) {
        for line in bytes.split(|&b| b == b'\n') {
            let Ok(message) = serde_json::from_slice::<Value>(line) else { continue };
            for item in message.as_array().map_or(std::slice::from_ref(&message), Vec::as_slice) {
                if let (Some(id), Some(method)) = (item.get("id"), item["method"].as_str()) {
                    self.methods.insert(id.to_string(), method.to_string());
                }
            }
        }
        let stdin = self.stdin.as_mut().expect("stdin is closed already");
        stdin.write_all(bytes).expect("writing to duet's stdin");
        stdin.flush().expect("flushing duet's stdin");
    }

    /// Sends a request.
    pub(crate) fn request(&mut self, id: Value, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    /// Sends a notification.
    pub(crate) fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// `initialize` at `version` plus `notifications/initialized`; returns the result.
    pub(crate) fn initialize(&mut self, version: &str) -> Value {
        self.request(json!("init"), "initialize", init_params(version));
        let answer = self.response(&json!("init"));
        self.notify("notifications/initialized", json!({}));
        answer["result"].clone()
    }

    /// Closes stdin: the server sees EOF.
    pub(crate) fn close_stdin(&mut self) {
        self.stdin = None;
        self.closed_at.get_or_insert_with(Instant::now);
    }

    /// The next stdout message, or None if stdout closed or `timeout` passed.
    pub(crate) fn next_message(&mut self, timeout: Duration) -> Option<Value> {
        if self.stdout_closed {
            return None;
        }
        match self.stdout.recv_timeout(timeout) {
            Ok(Out::Line(bytes)) => Some(self.record(bytes)),
            Ok(Out::Unterminated(bytes)) => {
                panic!("duet ended stdout with an unterminated line: {:?}", String::from_utf8_lossy(&bytes))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.stdout_closed = true;
                None
            }
        }
    }

    /// The first message (already seen or arriving within [`ANSWER`]) that matches `wanted`.
    pub(crate) fn wait_for(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(found) = self.seen.iter().find(|m| wanted(m)) {
            return found.clone();
        }
        let deadline = Instant::now() + ANSWER;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.next_message(left) {
                Some(m) if wanted(&m) => return m,
                Some(_) => {}
                None if self.stdout_closed => break,
                None => {}
            }
        }
        panic!("no {what} from duet within {ANSWER:?}; stdout so far:\n{}", lines(&self.seen))
    }

    /// The response to the request with `id`.
    pub(crate) fn response(&mut self, id: &Value) -> Value {
        self.wait_for(&format!("response to {id}"), |m| is_response_to(m, id))
    }

    /// The process, to signal it or wait for it (`duet_testing::process`).
    pub(crate) fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Closes stdin and waits up to `timeout` for the process to exit (killing it and
    /// failing otherwise), then collects the rest of stdout and all of stderr.
    pub(crate) fn finish(mut self, timeout: Duration) -> Finished {
        self.close_stdin();
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waiting for duet") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stderr = self.take_stderr();
                panic!(
                    "duet did not exit within {timeout:?} of stdin closing; killed it.\n\
                     stdout:\n{}\nstderr:\n{stderr}",
                    lines(&self.seen)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let exited = Instant::now();
        while self.next_message(ANSWER).is_some() {}
        assert!(self.stdout_closed, "duet's stdout stayed open after it exited");
        Finished {
            status,
            messages: std::mem::take(&mut self.seen),
            stderr: self.take_stderr(),
            elapsed: exited - self.started,
            after_eof: exited - self.closed_at.expect("stdin was closed"),
        }
    }

    fn take_stderr(&mut self) -> String {
        if let Some(reader) = self.stderr.take() {
            let _ = reader.join();
        }
        String::from_utf8_lossy(&self.stderr_bytes.lock().unwrap()).into_owned()
    }

    /// The first stderr line containing `text`, waited for up to [`ANSWER`]; of a JSON log
    /// line (`--log-format json`), its message.
    #[allow(dead_code)] // the stdio tests read stderr only once the process is done
    pub(crate) fn stderr_line(&self, text: &str) -> String {
        let deadline = Instant::now() + ANSWER;
        let message = |line: &str| {
            let json = serde_json::from_str::<Value>(line).ok();
            json.and_then(|l| l["message"].as_str().map(str::to_string)).unwrap_or_else(|| line.to_string())
        };
        loop {
            let seen = String::from_utf8_lossy(&self.stderr_bytes.lock().unwrap()).into_owned();
            // Only whole lines: the reader may have half of one so far.
            let whole = seen.split_inclusive('\n').filter(|line| line.ends_with('\n'));
            if let Some(line) = whole.map(|line| message(line.trim_end())).find(|line| line.contains(text)) {
                return line;
            }
            assert!(Instant::now() < deadline, "no stderr line with {text:?} within {ANSWER:?}; stderr:\n{seen}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Checks one stdout line: a complete JSON-RPC 2.0 message (or a non-empty batch of
    /// responses), each valid under the schema.
    fn record(&mut self, bytes: Vec<u8>) -> Value {
        let text =
            String::from_utf8(bytes).unwrap_or_else(|e| panic!("duet wrote a stdout line that is not UTF-8: {e}"));
        let message: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("duet wrote a stdout line that is not one JSON value ({e}): {text:?}"));
        let items = match &message {
            Value::Array(batch) => {
                assert!(!batch.is_empty(), "an empty batch on stdout");
                assert!(batch.iter().all(|m| m.get("method").is_none()), "a batch is of responses only: {text}");
                batch.as_slice()
            }
            one => std::slice::from_ref(one),
        };
        for item in items {
            assert!(item.is_object(), "stdout line is not a JSON-RPC message object: {text}");
            assert_eq!(item["jsonrpc"], "2.0", "stdout line: {text}");
            self.validate(item);
        }
        self.seen.push(message.clone());
        message
    }

    fn validate(&self, message: &Value) {
        let schemas = Schemas::get();
        if let Some(error) = message.get("error") {
            schemas.assert_error(error);
            assert!(message.get("result").is_none(), "result and error: {message}");
        } else if let Some(result) = message.get("result") {
            let id = message.get("id").expect("a result without an id");
            let method = self
                .methods
                .get(&id.to_string())
                .unwrap_or_else(|| panic!("a response to an id never sent: {message}"));
            schemas.assert_result(&self.version, method, result);
        } else if message.get("method").is_some() && message.get("id").is_some() {
            assert!(self.version.as_str() < "2026-07-28", "a request to a 2026 client: {message}");
            schemas.assert_request(&self.version, message);
        } else if message.get("method").is_some() {
            schemas.assert_notification(&self.version, message);
        } else {
            panic!("neither a response nor a notification: {message}");
        }
    }
}

impl Drop for Duet {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `initialize` params at `version`.
pub(crate) fn init_params(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "stdio-test", "version": "0"}
    })
}

/// The 2026 `_meta` envelope.
pub(crate) fn envelope() -> Value {
    json!({VERSION_KEY: "2026-07-28", CAPABILITIES_KEY: {}})
}

/// `params` with the 2026 envelope added as `_meta`.
pub(crate) fn enveloped(mut params: Value) -> Value {
    params["_meta"] = envelope();
    params
}

pub(crate) fn is_response_to(message: &Value, id: &Value) -> bool {
    message.get("method").is_none() && message.get("id") == Some(id)
}

pub(crate) fn is_notification(message: &Value, method: &str) -> bool {
    message.get("id").is_none() && message["method"] == method
}

/// The responses among `messages` to the request with `id`.
pub(crate) fn responses_to<'a>(messages: &'a [Value], id: &Value) -> Vec<&'a Value> {
    messages.iter().filter(|m| is_response_to(m, id)).collect()
}

/// Messages one per line, for failure output.
pub(crate) fn lines(messages: &[Value]) -> String {
    messages.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
}

impl Finished {
    /// Asserts a clean exit (code 0).
    pub(crate) fn assert_success(&self) {
        assert_eq!(self.status.code(), Some(0), "duet exited with {}; stderr:\n{}", self.status, self.stderr);
    }

    pub(crate) fn responses_to(&self, id: &Value) -> Vec<&Value> {
        responses_to(&self.messages, id)
    }

    /// The one response to `id`.
    pub(crate) fn response(&self, id: &Value) -> &Value {
        let found = self.responses_to(id);
        assert_eq!(found.len(), 1, "expected one response to {id}; stdout:\n{}", lines(&self.messages));
        found[0]
    }

    pub(crate) fn notifications(&self, method: &str) -> Vec<&Value> {
        self.messages.iter().filter(|m| is_notification(m, method)).collect()
    }
}
