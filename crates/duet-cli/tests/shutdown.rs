//! Graceful shutdown of the real `duet serve --transport http`: SIGTERM stops new
//! connections, lets requests in flight finish (both eras) and ends listen streams with
//! their final result, then exits 0; a second signal exits at once. (Over stdio: the
//! stdio tests.)

use duet_testing::process;
use rustix::process::Signal;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// `duet serve --transport http` on a free port, and where it listens.
struct HttpDuet {
    child: Child,
    addr: SocketAddr,
}

impl HttpDuet {
    fn start() -> HttpDuet {
        let mut child = Command::new(env!("CARGO_BIN_EXE_duet"))
            .args(["serve", "--fixtures", "testkit", "--transport", "http", "--port", "0", "--log-level", "info"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn duet serve");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let addr = loop {
            line.clear();
            assert!(stderr.read_line(&mut line).expect("stderr") > 0, "duet serve ended before listening");
            if let Some(url) = line.trim().split("listening on http://").nth(1) {
                break url.trim_end_matches("/mcp").parse().expect("an address");
            }
        };
        // Keep draining stderr so the server never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        HttpDuet { child, addr }
    }

    fn signal(&self, signal: Signal) {
        process::signal(&self.child, signal);
    }

    fn exit_within(&mut self, timeout: Duration) -> Option<i32> {
        process::exit_within(&mut self.child, timeout).map(|status| status.code().unwrap_or(-1))
    }

    /// Sends a 2026-07-28 request on a new connection, without reading the answer.
    fn send(&self, id: i64, method: &str, name: Option<&str>, params: Value) -> TcpStream {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let name = name.map(|n| format!("Mcp-Name: {n}\r\n")).unwrap_or_default();
        let headers = format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n{name}");
        self.post(&headers, json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    }

    /// POSTs `body` with extra `headers` (each line ending in CRLF) on a new connection.
    fn post(&self, headers: &str, body: Value) -> TcpStream {
        let body = body.to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        let mut conn = TcpStream::connect(self.addr).expect("connect");
        conn.write_all(request.as_bytes()).expect("send");
        conn
    }

    /// Opens a handshake-era session; its id.
    fn session(&self) -> String {
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}
        }});
        let answer = read_to_close(self.post("", initialize));
        let id = answer.lines().find_map(|l| l.strip_prefix("mcp-session-id: ")).expect("a session id").trim();
        let headers = format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert!(read_to_close(self.post(&headers, initialized)).starts_with("HTTP/1.1 202"));
        id.to_string()
    }
}

impl Drop for HttpDuet {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Everything the server sends on `conn` until it closes it.
fn read_to_close(mut conn: TcpStream) -> String {
    conn.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut all = Vec::new();
    let _ = conn.read_to_end(&mut all);
    String::from_utf8_lossy(&all).into_owned()
}

#[test]
fn sigterm_over_http_finishes_what_runs_and_exits_0() {
    let mut duet = HttpDuet::start();
    // A second of work in each era, and a listen stream.
    let slow = duet.send(1, "tools/call", Some("slow"), json!({"name": "slow", "arguments": {"steps": 50}}));
    let listen = duet.send(2, "subscriptions/listen", None, json!({"notifications": {"toolsListChanged": true}}));
    let session = duet.session();
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "slow", "arguments": {"steps": 50}}});
    let in_session = duet.post(&format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"), call);
    std::thread::sleep(Duration::from_millis(300));
    duet.signal(Signal::TERM);
    std::thread::sleep(Duration::from_millis(100));
    assert!(TcpStream::connect(duet.addr).is_err(), "still accepting after SIGTERM");

    for (conn, id) in [(slow, 1), (in_session, 3)] {
        let answer = read_to_close(conn);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains(&format!(r#""id":{id}"#)) && answer.contains(r#""done":50"#), "finished: {answer}");
    }
    let listened = read_to_close(listen);
    let final_result = listened.contains(r#""id":2"#) && listened.contains(r#""result""#);
    assert!(final_result, "the listen stream's final result: {listened}");
    assert_eq!(duet.exit_within(Duration::from_secs(10)), Some(0));
}

#[test]
fn a_second_signal_exits_at_once() {
    let mut duet = HttpDuet::start();
    // Ten seconds of work: the grace would wait for it.
    let _slow = duet.send(1, "tools/call", Some("slow"), json!({"name": "slow", "arguments": {"steps": 500}}));
    std::thread::sleep(Duration::from_millis(300));
    duet.signal(Signal::TERM);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(duet.exit_within(Duration::ZERO), None, "still finishing the call after one signal");
    duet.signal(Signal::INT);
    assert_eq!(duet.exit_within(Duration::from_secs(3)), Some(130));
}
