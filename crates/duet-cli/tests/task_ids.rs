//! Task ids from the client, over real HTTP against the real binary (`duet serve --fixtures
//! conformance`, 2026-07-28): an id that is not one duet makes (a real task's id with
//! `:lease` after it, a path, 10 KB, capitals) gets the very answer an unknown task gets,
//! -32602 "no task has this taskId", from `tasks/get`, `tasks/update` and `tasks/cancel`
//! alike; never an internal error, nor anything of what the store holds. The real task
//! stays as it was.

// Shared with the stdio tests; this file uses only part of it.
#[allow(dead_code)]
mod common;

use common::{CAPABILITIES_KEY, Duet, VERSION_KEY};
use serde_json::{Value, json};

const MODERN: &str = "2026-07-28";
const UNKNOWN_TASK: &str = "Failed to retrieve task: no task has this taskId";

/// A 2026-07-28 client of one endpoint that declared the tasks extension.
struct Client {
    http: reqwest::blocking::Client,
    url: String,
}

impl Client {
    /// The answer to `method` naming `name` (its `Mcp-Name`) with `params`.
    fn send(&self, method: &str, name: &str, params: Value) -> Value {
        let meta =
            json!({VERSION_KEY: MODERN, CAPABILITIES_KEY: {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
        let mut params = params;
        params["_meta"] = meta;
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", method)
            .header("mcp-name", name)
            .body(body.to_string())
            .send()
            .expect("duet answers");
        assert_eq!(response.status(), 200, "{method} {name:.60}");
        let text = response.text().expect("a body");
        // A JSON body, or an event stream whose last data line is the answer.
        let last = text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).rfind(|d| !d.is_empty());
        serde_json::from_str(last.unwrap_or(&text)).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// `method` of the task named `id`.
    fn task(&self, method: &str, id: &str) -> Value {
        let mut params = json!({"taskId": id});
        if method == "tasks/update" {
            params["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"confirm": true}}});
        }
        self.send(method, id, params)
    }
}

#[test]
fn an_id_duet_did_not_make_is_an_unknown_task() {
    let duet = Duet::spawn(
        &["serve", "--fixtures", "conformance", "--transport", "http", "--host", "127.0.0.1", "--port", "0"],
        MODERN,
    );
    let line = duet.stderr_line("listening on http://");
    let url = line.split("listening on ").nth(1).expect("the endpoint").trim().to_string();
    let client = Client { http: reqwest::blocking::Client::builder().no_proxy().build().unwrap(), url };

    // A real task, running (so its lease is in the store beside its record).
    let call = json!({"name": "slow_compute", "arguments": {"seconds": 60}});
    let created = client.send("tools/call", "slow_compute", call);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().expect("a task id").to_string();
    assert_eq!(client.task("tasks/get", &id)["result"]["status"], "working");

    let unknown = "0123456789abcdef0123456789abcdef";
    let malformed = [
        format!("{id}:lease"),
        format!("{id}:"),
        format!("{id}/../{id}"),
        "../x".to_string(),
        id.to_uppercase(),
        id[..31].to_string(),
        format!("{id}0"),
        "x".repeat(10 * 1024),
        unknown.to_string(),
    ];
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        for bad in &malformed {
            let answer = client.task(method, bad);
            let error = &answer["error"];
            assert_eq!(error["code"], -32602, "{method} of {bad:.60}: {answer}");
            assert_eq!(error["message"], UNKNOWN_TASK, "{method} of {bad:.60}: {answer}");
            assert!(error.get("data").is_none(), "{method} of {bad:.60}: {answer}");
        }
    }

    // The real task was not touched: still working, and cancelled only by its own id.
    assert_eq!(client.task("tasks/get", &id)["result"]["status"], "working");
    assert!(client.task("tasks/cancel", &id).get("result").is_some());
    assert_eq!(client.task("tasks/get", &id)["result"]["status"], "cancelled");
}
