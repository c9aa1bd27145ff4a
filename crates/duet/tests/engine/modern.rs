//! The stateless era (2026-07-28): the `_meta` envelope on every request, `server/discover`,
//! stamped results and cache hints, the separation of the two eras, opt-in logging, and
//! `subscriptions/listen` streams.

use crate::client::{
    Client, MODERN, Recorder, SUBSCRIPTION_ID, assert_error, bounded, enveloped, eventually, methods, names, params_of,
    testkit_capabilities, testkit_server_info, testkit_server_with,
};
use crate::flows::everyday_requests;
use duet::layer::{
    Change, HandlerError, InputRequired, Principal, Registry, Reply, RequestCx, ResourceContents, ResourceSpec,
    ServerInfo, ToolResult, ToolSpec,
};
use duet::protocol::{CacheHints, Server, ServerOptions};
use duet::wire::Version;
use duet::wire::jsonrpc::{Response, RpcError};
use duet::wire::message::Message;
use serde_json::{Value, json};
use std::sync::Arc;

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

#[tokio::test]
async fn everyday_requests_at_2026_07_28() {
    let (client, _) = Client::modern();
    everyday_requests(&client).await;
}

#[tokio::test]
async fn discover_describes_the_server() {
    let (client, _) = Client::modern();
    let result = client.request("server/discover", json!({})).await;
    assert_eq!(
        result["supportedVersions"],
        json!(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"])
    );
    assert_eq!(result["capabilities"], testkit_capabilities());
    assert_eq!(result["resultType"], "complete");
    assert_eq!((&result["ttlMs"], &result["cacheScope"]), (&json!(0), &json!("private")));
    assert_eq!(result["_meta"][SERVER_INFO], testkit_server_info());
    assert!(result["instructions"].as_str().is_some_and(|i| !i.is_empty()));
    assert!(result.get("serverInfo").is_none(), "serverInfo lives in _meta");
}

#[tokio::test]
async fn results_are_stamped_and_cacheable_ones_carry_hints() {
    let (client, _) = Client::modern();
    for method in ["tools/list", "prompts/list", "resources/list", "resources/templates/list"] {
        let list = client.request(method, json!({})).await;
        assert_eq!(list["resultType"], "complete", "{method}");
        assert_eq!((&list["ttlMs"], &list["cacheScope"]), (&json!(0), &json!("private")), "{method}");
        assert_eq!(list["_meta"][SERVER_INFO], testkit_server_info(), "{method}");
    }

    let call = client.request("tools/call", json!({"name": "echo", "arguments": {"text": "x"}})).await;
    assert_eq!(call["resultType"], "complete");
    assert!(call.get("ttlMs").is_none() && call.get("cacheScope").is_none(), "{call}");
    assert_eq!(call["_meta"][SERVER_INFO], testkit_server_info());

    let read = client.request("resources/read", json!({"uri": "test://info"})).await;
    assert_eq!((&read["ttlMs"], &read["cacheScope"]), (&json!(0), &json!("private")));

    for uri in ["test://items/zeta", "other://x"] {
        let error = client.error("resources/read", json!({"uri": uri})).await;
        assert_eq!(error.code, -32602, "{uri}: on 2026 a missing resource is -32602");
        assert_eq!(error.data, Some(json!({"uri": uri})));
    }
}

/// The `tools/list` answer of `server` to `who` at `version`, asked without a session
/// (enveloped at 2026, as a stateless server asks at the handshake era).
async fn list_tools(server: &Server, who: &Principal, version: Version, params: Value) -> Response {
    let params = if version.is_modern() { enveloped(params) } else { params };
    let at = (!version.is_modern()).then_some(version);
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params});
    match server.answer(message, at, Arc::new(who.clone()), None).await {
        Some(Message::One(response)) => response,
        other => panic!("tools/list should get one response, got {other:?}"),
    }
}

#[tokio::test]
async fn list_pages_are_rendered_once_for_each_listing_and_version() {
    let mut registry = Registry::new(ServerInfo::new("pages", "1"));
    let tool = |name: &str| ToolSpec::new(name, |_, _| async { ToolResult::text("ok") });
    let output = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    registry.tool(tool("open").output_schema(output)).expect("tool");
    registry.tool(tool("admin").roles(["admin"])).expect("tool");
    registry.tool(tool("ops").roles(["ops"])).expect("tool");
    let cache = CacheHints { ttl_ms: 60_000, scope: "private" };
    let server = Server::new(Arc::new(registry), ServerOptions { page_size: 2, cache, ..Default::default() });
    let (admin, root, ops) =
        (Principal::new("a", ["admin"]), Principal::new("r", ["admin", "ops"]), Principal::new("o", ["ops"]));
    // The text of a page, as the engine rendered it (its address shows whether it was shared).
    let text = |response: &Response| response.result.as_ref().expect("a list").as_bytes().as_ptr();
    let names = |response: Response| {
        let result = response.into_value().expect("a list");
        (names(result["tools"].as_array().unwrap()), result.get("nextCursor").cloned())
    };
    let admins_page = text(&list_tools(&server, &admin, MODERN, json!({})).await);
    for round in 0..2 {
        // Each principal sees its own items, every time, whoever asked first.
        let first = list_tools(&server, &admin, MODERN, json!({})).await;
        assert_eq!(text(&first), admins_page, "round {round}: the page is rendered once and shared");
        assert_eq!(names(first), (vec!["open".to_string(), "admin".to_string()], None));
        assert_eq!(names(list_tools(&server, &ops, MODERN, json!({})).await).0, ["open", "ops"]);
        let (page, cursor) = names(list_tools(&server, &root, MODERN, json!({})).await);
        assert_eq!(page, ["open", "admin"]);
        let cursor = cursor.expect("root sees three tools in two pages");
        let (rest, _) = names(list_tools(&server, &root, MODERN, json!({"cursor": cursor})).await);
        assert_eq!(rest, ["ops"]);
        // Each version gets its own shape: no outputSchema before 2025-06-18.
        let old = list_tools(&server, &admin, Version::V2025_03_26, json!({})).await.into_value().unwrap();
        assert!(old["tools"][0].get("outputSchema").is_none(), "{old}");
        assert!(old.get("ttlMs").is_none() && old.get("_meta").is_none(), "{old}");
        let new = list_tools(&server, &admin, MODERN, json!({})).await.into_value().unwrap();
        assert!(new["tools"][0].get("outputSchema").is_some(), "{new}");
        assert_eq!(new["_meta"][SERVER_INFO]["name"], "pages");
    }
    let other_principal = list_tools(&server, &Principal::new("b", ["admin"]), MODERN, json!({})).await;
    assert_eq!(text(&other_principal), admins_page, "principals who see the same items share the page");
    let old = list_tools(&server, &admin, Version::V2025_03_26, json!({})).await;
    assert_ne!(text(&old), admins_page, "each version has its own page");
    // A retry is answered afresh, with a time to live of zero, and the shared page stays.
    let retry = list_tools(&server, &admin, MODERN, json!({"requestState": "x"})).await;
    assert_ne!(text(&retry), admins_page);
    assert_eq!(retry.into_value().unwrap()["ttlMs"], 0);
    let again = list_tools(&server, &admin, MODERN, json!({})).await;
    assert_eq!(text(&again), admins_page);
    assert_eq!(again.into_value().unwrap()["ttlMs"], 60_000);
}

/// A server whose one resource asks the client to confirm before it answers, with cache
/// hints that would keep a result for a minute.
fn confirming_server() -> Server {
    let confirm = ResourceSpec::new("test://confirm", "confirm", |uri: String, cx: RequestCx| async move {
        let reply = match cx.input("ok") {
            Some(answer) => Reply::Complete(vec![ResourceContents::text(uri, "application/json", answer.to_string())]),
            None => Reply::InputRequired(InputRequired::new().elicit_schema(
                "ok",
                "Read it?",
                json!({"type": "object", "properties": {"sure": {"type": "boolean"}}}),
            )),
        };
        Ok::<_, HandlerError>(reply)
    });
    let mut registry = Registry::new(ServerInfo::new("confirming", "1"));
    registry.resource(confirm).expect("a valid resource");
    let cache = CacheHints { ttl_ms: 60_000, scope: "public" };
    Server::new(Arc::new(registry), ServerOptions { cache, ..Default::default() })
}

#[tokio::test]
async fn retried_requests_are_never_cached() {
    let client = Client::connect(&confirming_server(), MODERN);
    let elicits = json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    let asked = client.request("resources/read", json!({"uri": "test://confirm", "_meta": elicits})).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert!(asked.get("ttlMs").is_none() && asked.get("cacheScope").is_none(), "an interim result has no hints");
    assert_eq!(asked["inputRequests"]["ok"]["method"], "elicitation/create");
    let state = asked["requestState"].as_str().expect("sealed state").to_string();

    // The retry's result must not be reused: it still carries the hints the 2026 schema
    // requires of a complete ReadResourceResult (checked by the client), with a ttl of 0.
    let answer = json!({"action": "accept", "content": {"sure": true}});
    let retry = json!({"uri": "test://confirm", "_meta": elicits, "inputResponses": {"ok": answer},
        "requestState": state});
    let retried = client.request("resources/read", retry).await;
    assert_eq!(retried["resultType"], "complete");
    assert_eq!(retried["contents"][0]["text"], answer.to_string());
    assert_eq!(retried["ttlMs"], 0, "a retried result is stale at once: {retried}");

    // A request that is no retry keeps the server's hints; a tools/call never has any.
    let (server, _) = testkit_server_with(ServerOptions {
        cache: CacheHints { ttl_ms: 60_000, scope: "public" },
        ..Default::default()
    });
    let client = Client::connect(&server, MODERN);
    let read = client.request("resources/read", json!({"uri": "test://info"})).await;
    assert_eq!((&read["ttlMs"], &read["cacheScope"]), (&json!(60_000), &json!("public")));
    let call =
        client.request("tools/call", json!({"name": "echo", "arguments": {"text": "x"}, "inputResponses": {}})).await;
    assert_eq!(call["resultType"], "complete");
    assert!(call.get("ttlMs").is_none(), "{call}");
}

/// The one error answering `message` on a fresh 2026 session (which stays usable).
async fn envelope_error(meta: Value) -> RpcError {
    let (client, _) = Client::modern();
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}});
    let response = client.answer(message).await;
    let error = response.result.expect_err("a bad envelope is refused");
    client.assert_alive().await;
    error
}

#[tokio::test]
async fn the_envelope_is_checked() {
    let error = envelope_error(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"})).await;
    assert_eq!(error.code, -32602);
    assert!(error.message.contains("io.modelcontextprotocol/clientCapabilities"), "{error:?}");
    // Either envelope key alone makes a 2026 request, which then lacks the other: the same
    // answer as over HTTP (http_modern.rs) and stdio (duet-cli's stdio.rs).
    let error = envelope_error(json!({"io.modelcontextprotocol/clientCapabilities": {}})).await;
    assert_error(
        &error,
        -32602,
        "params._meta is missing the required envelope key(s): io.modelcontextprotocol/protocolVersion",
    );

    let error = envelope_error(json!({
        "io.modelcontextprotocol/protocolVersion": "2099-01-01",
        "io.modelcontextprotocol/clientCapabilities": {},
    }))
    .await;
    assert_error(&error, -32022, "Unsupported protocol version: 2099-01-01");
    assert_eq!(error.data, Some(json!({"supported": ["2026-07-28"], "requested": "2099-01-01"})));

    let error = envelope_error(json!({
        "io.modelcontextprotocol/protocolVersion": 20260728,
        "io.modelcontextprotocol/clientCapabilities": {},
    }))
    .await;
    assert_eq!(error.code, -32602, "{error:?}");

    let error = envelope_error(json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/logLevel": "loud",
    }))
    .await;
    assert_eq!(error.code, -32602, "{error:?}");
}

#[tokio::test]
async fn a_modern_session_refuses_the_handshake_era() {
    let (client, _) = Client::modern();
    client.assert_alive().await;
    for (method, params) in [
        ("ping", json!({})),
        ("logging/setLevel", json!({"level": "debug"})),
        ("resources/subscribe", json!({"uri": "test://info"})),
        ("resources/unsubscribe", json!({"uri": "test://info"})),
    ] {
        let error = client.error(method, params).await;
        assert_error(&error, -32601, "Method not found");
        assert_eq!(error.data, Some(json!(method)));
    }

    let initialize = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}}});
    let error = client.answer(initialize).await.result.unwrap_err();
    assert_eq!(error.code, -32022, "{error:?}");
    assert_eq!(error.data, Some(json!({"supported": ["2026-07-28"], "requested": "2025-06-18"})));

    let bare = json!({"jsonrpc": "2.0", "id": "bare", "method": "tools/list", "params": {}});
    let error = client.answer(bare).await.result.unwrap_err();
    assert_eq!(error.code, -32602, "{error:?}");
    client.assert_alive().await;
}

#[tokio::test]
async fn a_handshake_session_refuses_the_stateless_era() {
    let (client, _) = Client::handshake(Version::V2025_06_18).await;
    let message = json!({"jsonrpc": "2.0", "id": "env", "method": "tools/list", "params": enveloped(json!({}))});
    let error = client.answer(message).await.result.unwrap_err();
    assert_eq!(error.code, -32600, "{error:?}");
    for method in ["server/discover", "subscriptions/listen"] {
        let error = client.error(method, json!({})).await;
        assert_error(&error, -32601, "Method not found");
        assert_eq!(error.data, Some(json!(method)));
    }
    client.assert_alive().await;
}

/// `slow` with `steps` steps and the given `_meta`, its notifications on a sink.
async fn slow(client: &Client, steps: u64, meta: Value) -> Vec<Value> {
    let sink = Recorder::new(client.version.as_str());
    client
        .request_via("tools/call", json!({"name": "slow", "arguments": {"steps": steps}, "_meta": meta}), Some(&sink))
        .await;
    sink.take()
}

#[tokio::test]
async fn log_messages_are_opt_in() {
    let (client, _) = Client::modern();
    let seen = slow(&client, 3, json!({"progressToken": "tok"})).await;
    assert_eq!(methods(&seen), ["notifications/progress"; 3], "no logLevel, no messages");

    let seen = slow(&client, 1, json!({"progressToken": "tok", "io.modelcontextprotocol/logLevel": "debug"})).await;
    assert_eq!(params_of(&seen, "notifications/message"), [json!({"level": "info", "data": {"step": 1}})]);
    assert_eq!(params_of(&seen, "notifications/progress").len(), 1);
    assert_eq!(seen.len(), 2);

    let seen = slow(&client, 3, json!({"io.modelcontextprotocol/logLevel": "error"})).await;
    assert!(seen.is_empty(), "info is below error: {seen:?}");
    assert!(client.sent.is_empty());
}

fn tagged(method: &str, mut params: Value, id: &str) -> Value {
    params["_meta"] = json!({SUBSCRIPTION_ID: id});
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// Starts `subscriptions/listen` with id `id` in a task; returns it once acknowledged.
async fn listen(
    client: &Arc<Client>,
    id: &str,
    notifications: Value,
) -> (tokio::task::JoinHandle<Option<Message<Response>>>, Value) {
    let message = client.message_with_id(json!(id), "subscriptions/listen", json!({"notifications": notifications}));
    let task = tokio::spawn({
        let client = client.clone();
        async move { client.send(message).await }
    });
    let ack = client.sent.take_at_least(1).await;
    assert_eq!(ack.len(), 1, "{ack:?}");
    assert_eq!(ack[0]["method"], "notifications/subscriptions/acknowledged");
    (task, ack[0]["params"].clone())
}

#[tokio::test]
async fn a_listen_stream_carries_what_its_filter_asks_for() {
    let (client, feed) = Client::modern();
    let client = Arc::new(client);
    let filter = json!({
        "toolsListChanged": true,
        "promptsListChanged": false,
        "resourceSubscriptions": ["test://info"],
    });
    let (task, ack) = listen(&client, "L1", filter).await;
    assert_eq!(ack["notifications"], json!({"toolsListChanged": true, "resourceSubscriptions": ["test://info"]}));
    assert_eq!(ack["_meta"], json!({SUBSCRIPTION_ID: "L1"}));
    assert_eq!(client.server.listen_count(), 1);

    for change in [
        Change::ToolsChanged,
        Change::PromptsChanged,
        Change::ResourceUpdated("test://info".into()),
        Change::ResourceUpdated("other://x".into()),
    ] {
        feed.notify(change);
    }
    assert_eq!(
        client.sent.take_at_least(2).await,
        [
            tagged("notifications/tools/list_changed", json!({}), "L1"),
            tagged("notifications/resources/updated", json!({"uri": "test://info"}), "L1"),
        ]
    );
    // Events reach the stream in order: this one coming next shows nothing else was queued.
    feed.notify(Change::ToolsChanged);
    assert_eq!(client.sent.take_at_least(1).await, [tagged("notifications/tools/list_changed", json!({}), "L1")]);

    client.server.close_listens();
    let answer = bounded("the closed listen stream", task).await.unwrap();
    let Some(Message::One(Response { id, result: Ok(result) })) = answer else {
        panic!("a closed listen stream ends with a result, got {answer:?}")
    };
    assert_eq!(id.map(|i| i.to_value()), Some(json!("L1")));
    let result = result.to_value();
    assert_eq!(result["_meta"][SUBSCRIPTION_ID], "L1");
    assert_eq!(result["resultType"], "complete");
    assert_eq!(client.server.listen_count(), 0);
    assert!(client.sent.is_empty());
}

#[tokio::test]
async fn listen_needs_a_filter() {
    let (client, _) = Client::modern();
    for params in [json!({}), json!({"notifications": true})] {
        let error = client.error("subscriptions/listen", params).await;
        assert_error(&error, -32602, "subscriptions/listen requires a notifications filter");
    }
    assert_eq!(client.server.listen_count(), 0);
    client.assert_alive().await;
}

#[tokio::test]
async fn a_cancelled_listen_ends_without_an_answer() {
    let (client, feed) = Client::modern();
    let client = Arc::new(client);
    let (task, _) = listen(&client, "L2", json!({"toolsListChanged": true})).await;
    assert_eq!(client.server.listen_count(), 1);
    client.notify("notifications/cancelled", json!({"requestId": "L2"})).await;
    assert_eq!(bounded("the cancelled listen", task).await.unwrap(), None);
    eventually("the stream to close", || client.server.listen_count() == 0).await;
    feed.notify(Change::ToolsChanged);
    assert!(client.sent.is_empty(), "{:?}", client.sent.take());
    client.assert_alive().await;
}
