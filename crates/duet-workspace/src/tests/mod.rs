//! Tests of the workspace layer on real files in temporary directories: through the
//! `Layer` trait, and through the engine the way a client sees it, with every result and
//! notification checked against the MCP schema of its protocol version.

mod confinement;
mod editing;
mod engine;
mod layer;
mod moving;
mod reading;
mod roots;
mod search;
mod watching;
mod writing;

use super::{Access, Workspace};
use duet::layer::{Layer, LayerError, Principal, Reply, RequestCx, ResourceContents, ToolResult};
use duet::protocol::{Server, ServerOptions, Session};
use duet::wire::Version;
use duet::wire::jsonrpc::{RpcError, Sink};
use duet::wire::message::Message;
pub(crate) use duet_testing::Recorder;
use duet_testing::Schemas;
use serde_json::{Value, json};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tempfile::TempDir;

/// The longest one step may take before a test fails instead of hanging.
pub(crate) const WAIT: Duration = Duration::from_secs(5);

/// The revisions negotiated with `initialize`.
pub(crate) const HANDSHAKE: [Version; 4] =
    [Version::V2024_11_05, Version::V2025_03_26, Version::V2025_06_18, Version::V2025_11_25];

/// The bytes of `data/blob.bin`: binary (a NUL), though it contains "hello".
pub(crate) const BLOB: &[u8] = b"\x89PNG\r\n\x1a\n\0hello\xff";

/// A temporary directory with a small project in it, and a workspace serving it.
pub(crate) struct Fixture {
    pub dir: TempDir,
    /// The directory's canonical path.
    pub root: PathBuf,
    pub ws: Arc<Workspace>,
}

impl Fixture {
    /// A project with text, binary, ignored and hidden files, served read-only.
    pub(crate) fn new() -> Fixture {
        Fixture::with(Access::ReadOnly)
    }

    /// The project plus `files` (a path relative to the root, and its contents), served
    /// read-only.
    pub(crate) fn with_files(files: impl IntoIterator<Item = (String, &'static str)>) -> Fixture {
        let f = Fixture::new();
        for (rel, contents) in files {
            write(&f.root, &rel, contents);
        }
        f.reopened()
    }

    /// The same project, with the write tools.
    pub(crate) fn writable() -> Fixture {
        Fixture::with(Access::ConfirmedWrites)
    }

    fn with(access: Access) -> Fixture {
        let dir = TempDir::new().unwrap();
        let root = dir.path().canonicalize().unwrap();
        write(&root, "README.md", "# Demo\nhello world\n");
        write(&root, "src/main.rs", "fn main() {\n    println!(\"Hello, workspace\");\n}\n");
        write(&root, "src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n");
        write(&root, "data/blob.bin", BLOB);
        write(&root, "notes/über café.txt", "accents and spaces\n");
        write(&root, ".gitignore", "target/\n*.log\n");
        write(&root, "target/out.txt", "hello from an ignored directory\n");
        write(&root, "debug.log", "hello from an ignored file\n");
        write(&root, ".hidden/secret.txt", "hello from a hidden directory\n");
        let ws = Workspace::open(vec![root.clone()], access).unwrap();
        Fixture { dir, root, ws }
    }

    /// The same directory served by a new read-only workspace, which sees what was written
    /// or linked since the first one opened.
    pub(crate) fn reopened(self) -> Fixture {
        let ws = Workspace::open(vec![self.root.clone()], Access::ReadOnly).unwrap();
        Fixture { ws, ..self }
    }

    /// The `file://` URI of a path relative to the root.
    pub(crate) fn uri(&self, rel: &str) -> String {
        duet::file_uri::from_path(&self.root.join(rel))
    }

    /// Calls a tool through the layer; the result must be complete.
    pub(crate) async fn tool(&self, name: &str, args: Value) -> ToolResult {
        call_tool(&self.ws, name, args, &cx()).await
    }

    pub(crate) async fn read(&self, uri: &str) -> Result<Vec<ResourceContents>, LayerError> {
        match self.ws.read_resource(uri, cx()).await? {
            Reply::Complete(contents) => Ok(contents),
            Reply::InputRequired(_) => panic!("reading {uri} asked for input"),
        }
    }
}

pub(crate) fn write(root: &Path, rel: &str, contents: impl AsRef<[u8]>) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
}

/// A context for an in-process call by the local user.
pub(crate) fn cx() -> RequestCx {
    RequestCx::builder(Principal::local()).build()
}

pub(crate) async fn call_tool(ws: &Workspace, name: &str, args: Value, cx: &RequestCx) -> ToolResult {
    let Value::Object(args) = args else { panic!("arguments must be an object") };
    match ws.call_tool(name, args, cx.clone()).await {
        Ok(Reply::Complete(result)) => result,
        other => panic!("{name} should complete, got {other:?}"),
    }
}

/// The text blocks of a tool result, joined by newlines.
pub(crate) fn text(result: &ToolResult) -> String {
    let value = serde_json::to_value(result).unwrap();
    let blocks = value["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str());
    blocks.collect::<Vec<_>>().join("\n")
}

/// The message of a tool error (the result must be one).
pub(crate) fn tool_error(result: &ToolResult) -> String {
    assert!(result.is_error, "expected a tool error, got {result:?}");
    text(result)
}

/// Runs `future`, failing the test when it takes longer than [`WAIT`].
pub(crate) async fn bounded<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(WAIT, future).await.unwrap_or_else(|_| panic!("{what} took longer than {WAIT:?}"))
}

/// One engine session over a workspace, speaking one protocol version.
pub(crate) struct Client {
    pub session: Session,
    pub version: Version,
    /// What the session sent unprompted (change notifications).
    pub sent: Recorder,
    ids: AtomicI64,
}

impl Client {
    /// A registered session, initialized at `version` unless that is 2026-07-28.
    pub(crate) async fn connect(ws: &Arc<Workspace>, version: Version) -> Client {
        let server = Server::new(ws.clone(), ServerOptions { page_size: 3, ..ServerOptions::default() });
        let sent = Recorder::new(version.as_str());
        let session = server.connect(sent.sink(), Principal::local());
        let client = Client::over(session, version, sent);
        if !version.is_modern() {
            let params = json!({
                "protocolVersion": version.as_str(),
                "capabilities": {},
                "clientInfo": {"name": "workspace-tests", "version": "1"},
            });
            client.request("initialize", params).await;
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            assert_eq!(client.session.handle(initialized, None, None).await, None);
        }
        client
    }

    /// A client of a session already connected, which sends what it sends unprompted to
    /// `sent`; nothing is asked yet.
    pub(crate) fn over(session: Session, version: Version, sent: Recorder) -> Client {
        Client { session, version, sent, ids: AtomicI64::new(1) }
    }

    /// A request with the next id, enveloped at 2026-07-28.
    pub(crate) fn message(&self, method: &str, params: Value) -> Value {
        let mut params = params;
        if self.version.is_modern() {
            let meta = params.as_object_mut().unwrap().entry("_meta").or_insert_with(|| json!({}));
            let meta = meta.as_object_mut().unwrap();
            meta.insert("io.modelcontextprotocol/protocolVersion".into(), json!(self.version.as_str()));
            meta.insert("io.modelcontextprotocol/clientCapabilities".into(), json!({}));
        }
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    /// Sends a message, its notifications going to `sink`; checks a result's schema.
    pub(crate) async fn send(&self, method: &str, message: Value, sink: Option<Sink>) -> Result<Value, RpcError> {
        let answer = bounded(&format!("the answer to {method}"), self.session.handle(message, sink, None)).await;
        let Some(Message::One(response)) = answer else { panic!("{method} should get one response, got {answer:?}") };
        let outcome = response.into_value();
        if let Ok(result) = &outcome {
            Schemas::get().assert_result(self.version.as_str(), method, result);
        }
        outcome
    }

    /// The result of a request that must succeed.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Value {
        let message = self.message(method, params);
        self.send(method, message, None).await.unwrap_or_else(|e| panic!("{method} at {}: {e:?}", self.version))
    }

    /// The error of a request that must fail.
    pub(crate) async fn error(&self, method: &str, params: Value) -> RpcError {
        let message = self.message(method, params);
        match self.send(method, message, None).await {
            Err(error) => error,
            Ok(result) => panic!("{method} should fail at {}, got {result}", self.version),
        }
    }

    /// Every item of a list method, walking its pages.
    pub(crate) async fn list_all(&self, method: &str, key: &str) -> Vec<Value> {
        let mut items = Vec::new();
        let mut params = json!({});
        loop {
            let page = self.request(method, params).await;
            items.extend(page[key].as_array().unwrap().iter().cloned());
            match page.get("nextCursor") {
                Some(cursor) => params = json!({"cursor": cursor}),
                None => return items,
            }
        }
    }
}
