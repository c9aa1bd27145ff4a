//! Shared support of the tests that run the stdio transport in-process: the requests go in
//! as lines of bytes, and what the transport writes comes back as JSON values.

use duet::protocol::Server;
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// Collects what the stdio transport writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Serves `requests`, one line each, until stdin ends and every answer is written; every
/// line written, in order.
pub(crate) async fn serve_lines(server: Server, requests: &[Value]) -> Vec<Value> {
    let input: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let output = Captured::default();
    let input = std::io::Cursor::new(input.into_bytes());
    duet::transport::stdio::serve(server, input, output.clone(), Default::default()).await.expect("serve");
    let written = String::from_utf8(output.0.lock().expect("lock").clone()).expect("UTF-8");
    written.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
}
