//! Tasks, in memory: a call of a task-capable tool by a client that declared the tasks
//! extension becomes a task when it outlasts a moment or its handler asks; the task is
//! read, answered and cancelled by the principal that started it alone; its input requests
//! and answers go through its record; its time to live and the bounds on tasks hold; a
//! listen stream follows it; replicas on one backplane share it, and a task whose replica
//! stopped fails. The 2025-11-25 experimental methods serve the same tasks, whose handlers
//! read the client's roots as their session knows them.

use crate::client::{Client, MODERN, Recorder, SUBSCRIPTION_ID, bounded, enveloped, eventually, texts};
use duet::backplane::Backplane;
use duet::layer::{
    Elicited, InputRequired, Principal, Registry, Reply, RequestCx, ServerInfo, TaskSupport, ToolResult, ToolSpec,
};
use duet::protocol::{Server, ServerOptions, TaskOptions};
use duet::wire::Version;
use duet::wire::jsonrpc::{Response, RpcError};
use duet::wire::message::Message;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// What the desk's handlers saw: how many runs were told to stop.
#[derive(Clone, Default)]
struct Seen {
    stopped: Arc<AtomicUsize>,
}

impl Seen {
    fn stopped(&self) -> usize {
        self.stopped.load(Ordering::SeqCst)
    }
}

/// Works `seconds` (or until told to stop, which it counts).
async fn work(seconds: f64, cx: &RequestCx<Seen>) -> bool {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs_f64(seconds)) => true,
        () = cx.cancelled() => {
            cx.state().stopped.fetch_add(1, Ordering::SeqCst);
            false
        }
    }
}

/// Tools that run as tasks: `brew` works a while, `quick` answers at once, `ask` asks
/// twice in turn, `sole` runs only as a task, `spoiled` ends in a tool error, `rooted`
/// answers the client's roots.
fn desk(seen: &Seen) -> Registry<Seen> {
    let mut desk = Registry::with_state(ServerInfo::new("desk", "1"), seen.clone());
    let brew = ToolSpec::new("brew", |args: duet::layer::ToolArgs, cx: RequestCx<Seen>| async move {
        let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(60.0);
        if work(seconds, &cx).await { ToolResult::text("brewed") } else { ToolResult::error("stopped") }
    });
    let quick = ToolSpec::new("quick", |_, _: RequestCx<Seen>| async { ToolResult::text("quick") });
    let ask = ToolSpec::new("ask", |_, cx: RequestCx<Seen>| async move {
        cx.become_task();
        let answer = |key: &str| match cx.elicited::<serde_json::Map<String, Value>>(key) {
            Some(Elicited::Accepted(form)) => form.get("word").and_then(Value::as_str).map(str::to_string),
            _ => None,
        };
        // The first answer travels in the handler's state to the second run.
        let first = answer("first").or_else(|| cx.request_state().and_then(|s| s["first"].as_str()).map(Into::into));
        let form = json!({"type": "object", "properties": {"word": {"type": "string"}}});
        match (first, answer("second")) {
            (Some(first), Some(second)) => Reply::Complete(ToolResult::text(format!("{first} {second}"))),
            (Some(first), None) => Reply::InputRequired(
                InputRequired::new()
                    .elicit_schema("second", "Second word?", form)
                    .request_state(json!({"first": first})),
            ),
            (None, _) => Reply::InputRequired(InputRequired::new().elicit_schema("first", "First word?", form)),
        }
    });
    let sole = ToolSpec::new("sole", |_, cx: RequestCx<Seen>| async move {
        work(0.3, &cx).await;
        ToolResult::text("sole")
    });
    let spoiled = ToolSpec::new("spoiled", |_, cx: RequestCx<Seen>| async move {
        cx.become_task();
        ToolResult::error("spoiled")
    });
    let rooted = ToolSpec::new("rooted", |_, cx: RequestCx<Seen>| async move {
        let roots = cx.client_roots().await;
        match roots.listed() {
            Some(roots) => ToolResult::text(roots.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>().join(" ")),
            None => ToolResult::text("unstated"),
        }
    });
    desk.tool(brew.task_support(TaskSupport::Optional)).unwrap();
    desk.tool(rooted.task_support(TaskSupport::Optional)).unwrap();
    desk.tool(quick.task_support(TaskSupport::Optional)).unwrap();
    desk.tool(ask.task_support(TaskSupport::Optional)).unwrap();
    desk.tool(sole.task_support(TaskSupport::Required)).unwrap();
    desk.tool(spoiled.task_support(TaskSupport::Optional)).unwrap();
    desk.tool(ToolSpec::new("plain", |_, _: RequestCx<Seen>| async { ToolResult::text("plain") })).unwrap();
    desk
}

fn server_with(tasks: TaskOptions, backplane: &Backplane) -> (Server, Seen) {
    let seen = Seen::default();
    let options = ServerOptions { tasks, backplane: backplane.clone(), ..Default::default() };
    (Server::new(Arc::new(desk(&seen)), options), seen)
}

fn server() -> (Server, Seen) {
    server_with(TaskOptions::default(), &Backplane::memory())
}

/// `params` of a request from a client that declared the tasks extension (and elicitation).
fn declaring(mut params: Value) -> Value {
    params["_meta"] =
        json!({"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}, "elicitation": {}}});
    params
}

/// The answer of `server` to a 2026 request by `who`, without a session.
async fn ask_as(server: &Server, who: &str, method: &str, params: Value) -> Response {
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": enveloped(params)});
    match bounded(method, server.answer(message, None, Arc::new(Principal::new(who, Vec::<String>::new())), None)).await
    {
        Some(Message::One(response)) => response,
        other => panic!("{method} should get one response, got {other:?}"),
    }
}

async fn ok(server: &Server, who: &str, method: &str, params: Value) -> Value {
    ask_as(server, who, method, declaring(params)).await.into_value().unwrap_or_else(|e| panic!("{method}: {e:?}"))
}

async fn refused(server: &Server, who: &str, method: &str, params: Value) -> RpcError {
    match ask_as(server, who, method, params).await.into_value() {
        Err(e) => e,
        Ok(result) => panic!("{method} should fail, got {result}"),
    }
}

/// Calls `tool` as alice; its task's id (the call must become a task).
async fn start(server: &Server, tool: &str, arguments: Value) -> String {
    let created = ok(server, "alice", "tools/call", json!({"name": tool, "arguments": arguments})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().expect("a task id").to_string()
}

async fn get(server: &Server, id: &str) -> Value {
    ok(server, "alice", "tasks/get", json!({"taskId": id})).await
}

/// Polls the task until its status is `status`.
async fn until(server: &Server, id: &str, status: &str) -> Value {
    bounded(&format!("task {id} reaching {status}"), async {
        loop {
            let task = get(server, id).await;
            if task["status"] == status {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

#[tokio::test]
async fn a_quick_call_is_answered_and_a_slow_one_becomes_a_task() {
    let (server, _) = server();
    let quick = ok(&server, "alice", "tools/call", json!({"name": "quick"})).await;
    assert_eq!((&quick["resultType"], texts(&quick)), (&json!("complete"), vec!["quick".to_string()]));

    let created = ok(&server, "alice", "tools/call", json!({"name": "brew", "arguments": {"seconds": 0.3}})).await;
    for field in ["taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs", "_meta"] {
        assert!(created.get(field).is_some(), "CreateTaskResult has {field}: {created}");
    }
    assert_eq!(
        (&created["resultType"], &created["status"], &created["ttlMs"]),
        (&json!("task"), &json!("working"), &json!(3_600_000))
    );
    let id = created["taskId"].as_str().unwrap();
    assert_eq!(id.len(), 32, "128 random bits");
    let working = get(&server, id).await;
    assert_eq!((&working["resultType"], &working["status"]), (&json!("complete"), &json!("working")));
    assert!(working.get("result").is_none());
    let done = until(&server, id, "completed").await;
    let result = &done["result"];
    assert_eq!((&result["resultType"], texts(result)), (&json!("complete"), vec!["brewed".to_string()]), "{done}");
    assert!(done["lastUpdatedAt"].as_str() > done["createdAt"].as_str());

    // A tool error completes the task; the 2025 view calls it failed (tested below).
    let spoiled = start(&server, "spoiled", json!({})).await;
    let spoiled = until(&server, &spoiled, "completed").await;
    assert_eq!(spoiled["result"]["isError"], true);
}

#[tokio::test]
async fn the_extension_must_be_declared() {
    let (server, _) = server();
    let discovered = ok(&server, "alice", "server/discover", json!({})).await;
    assert_eq!(discovered["capabilities"]["extensions"], json!({TASKS: {}}), "a server with task tools says so");
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let error = refused(&server, "alice", method, json!({"taskId": "x", "inputResponses": {}})).await;
        assert_eq!(error.code, -32021, "{method}: {error:?}");
        assert_eq!(error.data.unwrap()["requiredCapabilities"], json!({"extensions": {TASKS: {}}}));
    }
    let sole = refused(&server, "alice", "tools/call", json!({"name": "sole"})).await;
    assert_eq!(sole.code, -32021, "a tool that runs only as a task: {sole:?}");
    // Without the extension an optional tool runs as a plain call, however long it takes.
    let plain = ask_as(&server, "alice", "tools/call", json!({"name": "brew", "arguments": {"seconds": 0.3}})).await;
    assert_eq!(texts(&plain.into_value().unwrap()), ["brewed"]);
    // A tool that never runs as a task ignores the extension.
    let never = ok(&server, "alice", "tools/call", json!({"name": "plain"})).await;
    assert_eq!(never["resultType"], "complete");
    let params = enveloped(json!({"notifications": {"taskIds": ["x"]}}));
    let listen = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params});
    let sent = Recorder::new(MODERN.as_str());
    let answer = server.answer(listen, None, Arc::new(Principal::local()), Some(sent.sink())).await;
    let Some(Message::One(response)) = answer else { panic!("one response") };
    assert_eq!(response.error_code(), Some(-32021), "following tasks needs the extension");
}

#[tokio::test]
async fn a_task_is_its_principals_alone() {
    let (server, seen) = server();
    let id = start(&server, "brew", json!({})).await;
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let params = declaring(json!({"taskId": id, "inputResponses": {}}));
        let error = refused(&server, "mallory", method, params).await;
        assert_eq!(error.code, -32602, "{method} by another principal: {error:?}");
        assert!(error.message.contains("no task"), "{error:?}");
    }
    assert_eq!(get(&server, &id).await["status"], "working", "mallory's cancel did nothing");
    assert_eq!(seen.stopped(), 0);
    let unknown = refused(&server, "alice", "tasks/get", declaring(json!({"taskId": "nope"}))).await;
    assert_eq!(unknown.code, -32602);
}

/// Options under which only a wake-up (not the runner's periodic look at its lease) can
/// stop a task within a test's patience.
fn slow_looks() -> TaskOptions {
    TaskOptions { lease: Duration::from_secs(60), ..TaskOptions::default() }
}

#[tokio::test]
async fn cancelling_stops_the_handler_and_is_acknowledged_every_time() {
    let (server, seen) = server_with(slow_looks(), &Backplane::memory());
    let id = start(&server, "brew", json!({})).await;
    let ack = ok(&server, "alice", "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(ack["resultType"], "complete");
    for field in ["taskId", "status", "result", "error"] {
        assert!(ack.get(field).is_none(), "an empty acknowledgement: {ack}");
    }
    let cancelled = get(&server, &id).await;
    assert_eq!(cancelled["status"], "cancelled", "cancelled before the acknowledgement: {cancelled}");
    eventually("the handler sees the cancellation", || seen.stopped() == 1).await;
    let again = ok(&server, "alice", "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(again, ack, "the same acknowledgement for an ended task");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(get(&server, &id).await["status"], "cancelled", "a cancelled task stays cancelled");
}

#[tokio::test]
async fn a_task_asks_through_its_record_and_runs_on_with_the_answers() {
    let (server, _) = server();
    let id = start(&server, "ask", json!({})).await;
    let asking = until(&server, &id, "input_required").await;
    let requests = asking["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["1.first"], "keys carry the round: {asking}");
    assert_eq!(requests["1.first"]["method"], "elicitation/create");

    let word = |w: &str| json!({"action": "accept", "content": {"word": w}});
    // Answers to what was not asked are ignored; the task still waits.
    let stray =
        ok(&server, "alice", "tasks/update", json!({"taskId": id, "inputResponses": {"first": word("no")}})).await;
    assert_eq!(stray["resultType"], "complete");
    assert_eq!(get(&server, &id).await["status"], "input_required");
    let missing = refused(&server, "alice", "tasks/update", declaring(json!({"taskId": id}))).await;
    assert_eq!(missing.code, -32602, "inputResponses is required: {missing:?}");

    ok(&server, "alice", "tasks/update", json!({"taskId": id, "inputResponses": {"1.first": word("hello")}})).await;
    let second = until(&server, &id, "input_required").await;
    let keys: Vec<&String> = second["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["2.second"], "a new round, a new key: {second}");
    ok(&server, "alice", "tasks/update", json!({"taskId": id, "inputResponses": {"2.second": word("world")}})).await;
    let done = until(&server, &id, "completed").await;
    assert_eq!(texts(&done["result"]), ["hello world"], "the state travelled between runs: {done}");
}

#[tokio::test]
async fn a_task_that_outlives_its_time_to_live_fails() {
    let options = TaskOptions { ttl: Duration::from_millis(300), ..TaskOptions::default() };
    let (server, seen) = server_with(options, &Backplane::memory());
    let id = start(&server, "brew", json!({})).await;
    let failed = until(&server, &id, "failed").await;
    assert!(failed["error"]["message"].as_str().unwrap().contains("time to live"), "{failed}");
    assert_eq!(failed["ttlMs"], 300);
    eventually("the handler was told to stop", || seen.stopped() == 1).await;
}

#[tokio::test]
async fn tasks_are_bounded_per_principal_and_per_replica() {
    let options = TaskOptions { max_per_principal: 2, max_running: 3, ..TaskOptions::default() };
    let (server, _) = server_with(options, &Backplane::memory());
    start(&server, "brew", json!({})).await;
    let finished = start(&server, "spoiled", json!({})).await;
    until(&server, &finished, "completed").await;
    let over = refused(&server, "alice", "tools/call", declaring(json!({"name": "brew"}))).await;
    assert_eq!(over.code, -31029, "an ended task counts until it expires: {over:?}");
    assert!(over.message.contains("alice keeps 2 tasks"), "{over:?}");
    let bob = ok(&server, "bob", "tools/call", json!({"name": "brew"})).await;
    assert_eq!(bob["resultType"], "task", "the bound is per principal");
    ok(&server, "carol", "tools/call", json!({"name": "brew"})).await;
    let full = refused(&server, "dave", "tools/call", declaring(json!({"name": "brew"}))).await;
    assert_eq!(full.code, -31029, "three run on this replica already: {full:?}");
    assert!(full.message.contains("runs 3 tasks"), "{full:?}");
}

#[tokio::test]
async fn a_listen_stream_follows_its_principals_tasks() {
    let (server, _) = server();
    let id = start(&server, "brew", json!({"seconds": 0.3})).await;
    let bobs = ok(&server, "bob", "tools/call", json!({"name": "brew"})).await["taskId"].clone();
    let sent = Recorder::new(MODERN.as_str());
    let params = enveloped(declaring(json!({"notifications": {"taskIds": [id, bobs]}})));
    let listen = json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": params});
    let stream = tokio::spawn({
        let (server, sink) = (server.clone(), sent.sink());
        async move { server.answer(listen, None, Arc::new(Principal::new("alice", Vec::<String>::new())), Some(sink)).await }
    });
    let first = sent.take_at_least(2).await;
    assert_eq!(first[0]["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(first[0]["params"]["notifications"], json!({"taskIds": [id]}), "bob's task is not alice's to follow");
    assert_eq!(first[1]["method"], "notifications/tasks", "the task as it stands: {first:?}");
    assert_eq!((&first[1]["params"]["taskId"], &first[1]["params"]["status"]), (&json!(id), &json!("working")));
    assert_eq!(first[1]["params"]["_meta"][SUBSCRIPTION_ID], "L");
    let later = sent.wait_for("notifications/tasks").await;
    let done = later.iter().find(|n| n["method"] == "notifications/tasks").unwrap();
    assert_eq!(done["params"]["status"], "completed", "{later:?}");
    assert_eq!(texts(&done["params"]["result"]), ["brewed"], "the result is inlined: {done}");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(sent.take().is_empty(), "one notification per change");
    server.close_listens();
    bounded("the end of the listen stream", stream).await.expect("the listen task");
}

#[tokio::test]
async fn replicas_share_tasks_and_a_cancel_reaches_the_replica_running_it() {
    let backplane = Backplane::memory();
    let (a, seen_a) = server_with(slow_looks(), &backplane);
    let (b, _) = server_with(slow_looks(), &backplane);
    // Started on A; read, answered and finished through B.
    let id = start(&a, "ask", json!({})).await;
    until(&b, &id, "input_required").await;
    let word = |w: &str| json!({"action": "accept", "content": {"word": w}});
    ok(&b, "alice", "tasks/update", json!({"taskId": id, "inputResponses": {"1.first": word("from")}})).await;
    until(&b, &id, "input_required").await;
    ok(&b, "alice", "tasks/update", json!({"taskId": id, "inputResponses": {"2.second": word("b")}})).await;
    assert_eq!(texts(&until(&b, &id, "completed").await["result"]), ["from b"]);
    // Cancelled through B: the handler on A stops.
    let id = start(&a, "brew", json!({})).await;
    ok(&b, "alice", "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(get(&a, &id).await["status"], "cancelled");
    eventually("A's handler sees B's cancellation", || seen_a.stopped() == 1).await;
}

/// A replica that stops (its runtime gone, its tasks with it) leaves its running tasks
/// behind; another replica fails them once their lease expires, so a client polling them
/// is not left waiting.
#[test]
fn a_task_whose_replica_stopped_fails_once_its_lease_expires() {
    let backplane = Backplane::memory();
    let options = TaskOptions { lease: Duration::from_millis(300), ..TaskOptions::default() };
    let runtime = || tokio::runtime::Runtime::new().expect("a runtime");
    let doomed = runtime();
    let (a, _) = server_with(options.clone(), &backplane);
    let id = doomed.block_on(start(&a, "brew", json!({})));
    doomed.shutdown_background();
    runtime().block_on(async {
        let (b, _) = server_with(options, &backplane);
        let failed = until(&b, &id, "failed").await;
        assert!(failed["error"]["message"].as_str().unwrap().contains("stopped"), "{failed}");
        assert_eq!(failed["error"]["code"], -32603);
    });
}

/// A 2025-11-25 session of `server` whose client can answer elicitations.
async fn legacy_session(server: &Server) -> Arc<Client> {
    let client = Client::connect(server, Version::V2025_11_25);
    let params = json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "engine-tests", "version": "1"}});
    let initialized = client.request("initialize", params).await;
    let declared = json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
    assert_eq!(initialized["capabilities"]["tasks"], declared, "a server with task tools says so");
    client.notify("notifications/initialized", json!({})).await;
    Arc::new(client)
}

#[tokio::test]
async fn the_2025_11_25_methods_serve_the_same_tasks() {
    let (server, _) = server();
    let client = legacy_session(&server).await;
    let tools = client.request("tools/list", json!({})).await["tools"].clone();
    let support =
        |name: &str| tools.as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()["execution"].clone();
    assert_eq!(
        (support("brew"), support("sole"), support("plain")),
        (json!({"taskSupport": "optional"}), json!({"taskSupport": "required"}), Value::Null)
    );

    let created = client
        .request("tools/call", json!({"name": "brew", "arguments": {"seconds": 0.2}, "task": {"ttl": 60000}}))
        .await;
    let task = &created["task"];
    assert_eq!(
        (&task["status"], &task["ttl"], &task["pollInterval"]),
        (&json!("working"), &json!(60000), &json!(500)),
        "{created}"
    );
    let id = task["taskId"].as_str().unwrap().to_string();
    let got = client.request("tasks/get", json!({"taskId": id})).await;
    assert_eq!((&got["taskId"], got.get("result")), (&json!(id), None));
    let result = client.request("tasks/result", json!({"taskId": id})).await;
    assert_eq!(texts(&result), ["brewed"], "tasks/result waits for the end");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/related-task"], json!({"taskId": id}));
    let listed = client.request("tasks/list", json!({})).await;
    assert_eq!(listed["tasks"][0]["status"], "completed", "{listed}");
    let ended = client.error("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(ended.code, -32602, "an ended task cannot be cancelled at 2025-11-25");

    let spoiled = client.request("tools/call", json!({"name": "spoiled", "task": {}})).await["task"]["taskId"].clone();
    let failed = client.request("tasks/result", json!({"taskId": spoiled})).await;
    assert_eq!(failed["isError"], true);
    assert_eq!(
        client.request("tasks/get", json!({"taskId": spoiled})).await["status"],
        "failed",
        "a tool error fails a 2025 task"
    );

    assert_eq!(client.error("tools/call", json!({"name": "plain", "task": {}})).await.code, -32601);
    assert_eq!(client.error("tools/call", json!({"name": "sole"})).await.code, -32601);
    let brewing = client.request("tools/call", json!({"name": "brew", "task": {}})).await["task"]["taskId"].clone();
    let cancelled = client.request("tasks/cancel", json!({"taskId": brewing})).await;
    assert_eq!(cancelled["status"], "cancelled");
}

#[tokio::test]
async fn a_2025_task_asks_the_client_through_tasks_result() {
    let (server, _) = server();
    let client = legacy_session(&server).await;
    let id = client.request("tools/call", json!({"name": "ask", "task": {}})).await["task"]["taskId"].clone();
    let result = tokio::spawn({
        let client = client.clone();
        let id = id.clone();
        async move { client.request("tasks/result", json!({"taskId": id})).await }
    });
    for word in ["hello", "there"] {
        let asked = client.sent.wait_for("elicitation/create").await;
        let question = asked.iter().find(|m| m["method"] == "elicitation/create").unwrap();
        assert_eq!(question["params"]["_meta"]["io.modelcontextprotocol/related-task"], json!({"taskId": id}));
        let answer =
            json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"word": word}}});
        assert!(client.send(answer).await.is_none());
    }
    let result = bounded("tasks/result", result).await.expect("the tasks/result task");
    assert_eq!(texts(&result), ["hello there"]);
}

#[tokio::test]
async fn a_2025_task_reads_the_roots_its_session_knows() {
    let seen = Seen::default();
    let server = Server::new(Arc::new(desk(&seen)), ServerOptions { client_roots: true, ..Default::default() });
    let client = Client::connect(&server, Version::V2025_11_25);
    let params = json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
        "clientInfo": {"name": "engine-tests", "version": "1"}});
    client.request("initialize", params).await;
    client.notify("notifications/initialized", json!({})).await;
    let asked = client.sent.wait_for("roots/list").await;
    let question = asked.iter().find(|m| m["method"] == "roots/list").expect("roots/list was asked");
    let roots = json!({"roots": [{"uri": "file:///work/a", "name": "a"}]});
    assert!(client.send(json!({"jsonrpc": "2.0", "id": question["id"], "result": roots})).await.is_none());
    let id = client.request("tools/call", json!({"name": "rooted", "task": {}})).await["task"]["taskId"].clone();
    let result = client.request("tasks/result", json!({"taskId": id})).await;
    assert_eq!(texts(&result), ["file:///work/a"], "the task's handler sees the session's roots");
}

#[tokio::test]
async fn task_methods_are_not_there_before_2025_11_25() {
    let (server, _) = server();
    let client = Client::connect(&server, Version::V2025_06_18);
    assert!(client.initialize("2025-06-18").await["capabilities"].get("tasks").is_none());
    assert_eq!(client.error("tasks/get", json!({"taskId": "x"})).await.code, -32601);
    let tools = client.request("tools/list", json!({})).await;
    assert!(tools["tools"].as_array().unwrap().iter().all(|t| t.get("execution").is_none()), "{tools}");
    let plain = client.request("tools/call", json!({"name": "brew", "arguments": {"seconds": 0.1}, "task": {}})).await;
    assert_eq!(texts(&plain), ["brewed"], "the task parameter means nothing before 2025-11-25");
}
