//! `--scope-map` resource rules against the real binary over HTTP: a rule on a directory of
//! the workspace holds however a client spells the URI (`resources/read`), and however it
//! reaches the files (a tool's path, a link to them, a search, a listing, the `review_file`
//! prompt, a completion, an update notification of a directory it follows), while what the
//! rule leaves open still works and a principal that holds the scope reaches it all.

// Shared with the stdio tests; this file uses only part of it.
#[allow(dead_code)]
mod common;

use common::{Duet, enveloped, init_params};
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

const SECRET: &str = "TOPSECRET-a1b2c3";
const READER: &str = "reader-token";
const INSIDER: &str = "insider-token";

/// A workspace with a secret directory, an open file and a link to the secret, served with
/// a scope map that guards the directory; the server and its root.
fn serve(dir: &Path) -> (Duet, String, String) {
    let root = dir.join("ws");
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("secret/key.txt"), format!("{SECRET}\n")).unwrap();
    std::fs::write(root.join("open.txt"), "hello from the open file\n").unwrap();
    std::os::unix::fs::symlink(root.join("secret/key.txt"), root.join("link.txt")).unwrap();
    let root = root.canonicalize().unwrap().to_str().unwrap().to_string();
    let map = dir.join("scopes.toml");
    std::fs::write(&map, format!("[resources]\n\"file://{root}/secret/*\" = \"secrets\"\n")).unwrap();
    let args = [
        "serve",
        "--transport",
        "http",
        "--port",
        "0",
        "--auth-token",
        READER,
        "--auth-token",
        &format!("{INSIDER}:secrets:insider"),
        "--scope-map",
        map.to_str().unwrap(),
        "--root",
        &root,
    ];
    let duet = Duet::spawn(&args, "2026-07-28");
    let line = duet.stderr_line("listening on http://");
    let url = line.split("listening on ").nth(1).expect("the endpoint").split_whitespace().next().unwrap().to_string();
    (duet, url, root)
}

/// POSTs `message` as `token` with `headers`; the response as it comes (a stream is read
/// as long as it lasts).
fn send(url: &str, token: &str, headers: &[(&str, &str)], message: &Value) -> Response {
    let mut request = Client::builder()
        .timeout(None)
        .build()
        .expect("a client")
        .post(url)
        .bearer_auth(token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(message.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().expect("the server answers")
}

/// One stateless 2026-07-28 request as `token`: the HTTP status and the body.
fn post(url: &str, token: &str, method: &str, name: Option<&str>, params: Value) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": enveloped(params)});
    let mut headers = vec![("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", method)];
    headers.extend(name.map(|name| ("Mcp-Name", name)));
    let response = send(url, token, &headers, &body);
    (response.status().as_u16(), response.text().unwrap())
}

fn read(url: &str, token: &str, uri: &str) -> (u16, String) {
    post(url, token, "resources/read", Some(uri), json!({"uri": uri}))
}

fn call(url: &str, token: &str, tool: &str, arguments: Value) -> String {
    let (status, body) = post(url, token, "tools/call", Some(tool), json!({"name": tool, "arguments": arguments}));
    assert_eq!(status, 200, "{tool}: {body}");
    body
}

#[test]
fn a_resource_rule_holds_for_every_spelling_of_the_uri() {
    let dir = tempfile::tempdir().unwrap();
    let (duet, url, root) = serve(dir.path());
    let trimmed = root.trim_start_matches('/');
    let (parent, last) = trimmed.rsplit_once('/').expect("a root below /");
    let spellings = [
        format!("file:///{trimmed}/secret/key.txt"),
        format!("file://localhost/{trimmed}/secret/key.txt"),
        format!("file:/{trimmed}/secret/key.txt"),
        format!("FILE:///{trimmed}/secret/key.txt"),
        format!("file:///{trimmed}/%73ecret/key.txt"),
        format!("file:///{trimmed}//secret/key.txt"),
        format!("file:///{trimmed}/./secret/key.txt"),
        format!("file:///{parent}/{last}/other/../secret/key.txt"),
    ];
    for uri in &spellings {
        let (status, body) = read(&url, READER, uri);
        assert_eq!(status, 403, "{uri} must be refused: {body}");
        assert!(!body.contains(SECRET), "{uri}: {body}");
        let (status, body) = read(&url, INSIDER, uri);
        assert!(status == 200 && body.contains(SECRET), "{uri} is the secret file for who may read it: {body}");
    }
    let (status, body) = read(&url, READER, &format!("file://{root}/open.txt"));
    assert!(status == 200 && body.contains("hello from the open file"), "{body}");
    let (_, body) = read(&url, READER, "not a uri");
    assert!(body.contains("Invalid parameter uri: not a valid URI: relative URL without a base"), "{body}");
    drop(duet);
}

#[test]
fn a_resource_rule_holds_for_tools_prompts_and_completion() {
    let dir = tempfile::tempdir().unwrap();
    let (duet, url, root) = serve(dir.path());
    let denied = "is not served to this client: it requires the scopes: secrets";
    for path in ["secret/key.txt", "link.txt", &format!("file://localhost{root}/secret/key.txt")] {
        let body = call(&url, READER, "read_file", json!({"path": path}));
        assert!(body.contains(denied) && !body.contains(SECRET), "read_file {path}: {body}");
        let body = call(&url, INSIDER, "read_file", json!({"path": path}));
        assert!(body.contains(SECRET), "read_file {path} for who may read it: {body}");
    }
    let body = call(&url, READER, "read_file", json!({"path": "open.txt"}));
    assert!(body.contains("hello from the open file"), "{body}");
    let both = json!({"paths": ["open.txt", "secret/key.txt"]});
    let body = call(&url, READER, "read_multiple_files", both.clone());
    assert!(body.contains("hello from the open file") && body.contains(denied) && !body.contains(SECRET), "{body}");
    assert!(call(&url, INSIDER, "read_multiple_files", both).contains(SECRET));

    let body = call(&url, READER, "search_files", json!({"pattern": "TOPSECRET"}));
    assert!(!body.contains(SECRET) && !body.contains("key.txt"), "a search leaves the secret out: {body}");
    let body = call(&url, READER, "search_files", json!({"pattern": "TOPSECRET", "path": "secret"}));
    assert!(!body.contains(SECRET), "{body}");
    assert!(call(&url, READER, "search_files", json!({"pattern": "hello"})).contains("open.txt"));
    assert!(call(&url, INSIDER, "search_files", json!({"pattern": "TOPSECRET"})).contains(SECRET));

    for (tool, arguments) in [
        ("list_directory", json!({"path": "secret"})),
        ("directory_tree", json!({})),
        ("find_files", json!({"glob": "*.txt"})),
    ] {
        let body = call(&url, READER, tool, arguments.clone());
        assert!(body.contains("open.txt") || tool == "list_directory", "{tool}: {body}");
        assert!(!body.contains("key.txt"), "{tool} leaves the secret's name out: {body}");
        assert!(call(&url, INSIDER, tool, arguments).contains("key.txt"), "{tool} for who may read it");
    }

    let review = |token: &str, path: &str| {
        let params = json!({"name": "review_file", "arguments": {"path": path}});
        post(&url, token, "prompts/get", Some("review_file"), params).1
    };
    for path in ["secret/key.txt", "link.txt"] {
        let body = review(READER, path);
        assert!(body.contains(denied) && !body.contains(SECRET), "review_file {path}: {body}");
        assert!(review(INSIDER, path).contains(SECRET), "review_file {path} for who may read it");
    }
    assert!(review(READER, "open.txt").contains("hello from the open file"));

    let complete = |token: &str, prefix: &str| {
        let params = json!({"ref": {"type": "ref/prompt", "name": "review_file"},
            "argument": {"name": "path", "value": prefix}});
        let (status, body) = post(&url, token, "completion/complete", None, params);
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()["result"]["completion"]["values"].clone()
    };
    assert_eq!(complete(READER, "secret/"), json!([]), "completion leaves the secret out");
    assert_eq!(complete(INSIDER, "secret/"), json!(["secret/key.txt"]));
    assert_eq!(complete(READER, "open"), json!(["open.txt"]));
    drop(duet);
}

/// The messages of an event stream as they arrive, read on a thread of their own.
fn events(stream: Response) -> Receiver<Value> {
    assert_eq!(stream.status(), 200, "a stream opens");
    let (messages, received) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            let Some(message) = line.strip_prefix("data: ").and_then(|data| serde_json::from_str(data).ok()) else {
                continue;
            };
            if messages.send(message).is_err() {
                return;
            }
        }
    });
    received
}

/// A handshake-era session over HTTP, 2025-11-25.
struct Session<'a> {
    url: &'a str,
    token: &'a str,
    id: String,
}

impl<'a> Session<'a> {
    const VERSION: &'static str = "2025-11-25";

    /// An initialized session of `token`, and the messages of its GET stream.
    fn open(url: &'a str, token: &'a str) -> (Session<'a>, Receiver<Value>) {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init_params(Self::VERSION)});
        let initialized = send(url, token, &[], &init);
        assert_eq!(initialized.status(), 200);
        let id = initialized.headers()["mcp-session-id"].to_str().expect("a session id").to_string();
        let session = Session { url, token, id };
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(send(url, token, &session.headers(), &done).status(), 202);
        let stream = Client::builder()
            .timeout(None)
            .build()
            .expect("a client")
            .get(url)
            .bearer_auth(token)
            .header("Accept", "text/event-stream")
            .header("Mcp-Session-Id", &session.id)
            .header("MCP-Protocol-Version", Self::VERSION)
            .send()
            .expect("the GET stream");
        (session, events(stream))
    }

    fn headers(&self) -> [(&str, &str); 2] {
        [("Mcp-Session-Id", self.id.as_str()), ("MCP-Protocol-Version", Self::VERSION)]
    }

    /// `resources/subscribe` of `uri`: the HTTP status.
    fn subscribe(&self, uri: &str) -> u16 {
        let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": uri}});
        send(self.url, self.token, &self.headers(), &subscribe).status().as_u16()
    }
}

/// A session of `token` subscribed to `uri`: the messages of its GET stream.
fn subscribed_session(url: &str, token: &str, uri: &str) -> Receiver<Value> {
    let (session, events) = Session::open(url, token);
    assert_eq!(session.subscribe(uri), 200, "{uri}");
    events
}

/// A 2026-07-28 `subscriptions/listen` stream of `token` following `uri`, acknowledged.
fn listen(url: &str, token: &str, uri: &str) -> Receiver<Value> {
    let params = enveloped(json!({"notifications": {"resourceSubscriptions": [uri]}}));
    let listen = json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": params});
    let headers = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "subscriptions/listen")];
    let events = events(send(url, token, &headers, &listen));
    let ack = events.recv_timeout(Duration::from_secs(10)).expect("the acknowledgement");
    assert_eq!(ack["params"]["notifications"]["resourceSubscriptions"], json!([uri]), "{ack}");
    events
}

/// The URIs of the `notifications/resources/updated` among `events`, until `expected` all
/// came and `settle` passed without another (or ten seconds passed).
fn updated(events: &Receiver<Value>, expected: &BTreeSet<String>, settle: Duration) -> BTreeSet<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = BTreeSet::new();
    loop {
        let wait = if seen.is_superset(expected) { settle } else { deadline.saturating_duration_since(Instant::now()) };
        let Ok(message) = events.recv_timeout(wait) else { return seen };
        if message["method"] == "notifications/resources/updated" {
            seen.insert(message["params"]["uri"].as_str().expect("a uri").to_string());
        }
    }
}

#[test]
fn updates_of_a_guarded_file_reach_only_who_may_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let (duet, url, root) = serve(dir.path());
    let directory = format!("file://{root}/");
    let (secret, open) = (format!("file://{root}/secret/key.txt"), format!("file://{root}/open.txt"));
    // Subscribing to the guarded file itself is refused, as reading it is.
    let (refused, _) = Session::open(&url, READER);
    assert_eq!(refused.subscribe(&secret), 403);
    // Who follows what, and the updates each is to be sent.
    let subscribers = [
        ("the reader's session", subscribed_session(&url, READER, &directory), vec![&open]),
        ("the reader's listen stream", listen(&url, READER, &directory), vec![&open]),
        // Following the guarded file itself is acknowledged as asked, and delivers nothing.
        ("the reader's listen stream of the secret", listen(&url, READER, &secret), vec![]),
        ("the insider's session", subscribed_session(&url, INSIDER, &directory), vec![&open, &secret]),
        ("the insider's listen stream", listen(&url, INSIDER, &directory), vec![&open, &secret]),
    ];
    std::fs::write(Path::new(&root).join("secret/key.txt"), "rotated\n").unwrap();
    std::fs::write(Path::new(&root).join("open.txt"), "edited\n").unwrap();
    // The insiders first: once they have both updates, every subscriber was sent its own.
    for (who, events, sent) in subscribers.iter().rev() {
        let expected: BTreeSet<String> = sent.iter().map(|uri| uri.to_string()).collect();
        assert_eq!(updated(events, &expected, Duration::from_millis(500)), expected, "{who}");
    }
    drop(duet);
}
