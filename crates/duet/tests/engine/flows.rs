//! The everyday requests of both eras — lists, calls, reads, prompts, completions, progress
//! and logs — run the same way at every version, with the differences each version's
//! result shapes call for.

use crate::client::{Client, Recorder, methods, names, params_of, texts};
use duet::layer::Principal;
use duet::wire::Version;
use serde_json::{Value, json};

pub(crate) async fn everyday_requests(client: &Client) {
    lists(client).await;
    tool_calls(client).await;
    progress_and_logs(client).await;
    reads(client).await;
    prompts(client).await;
    completions(client).await;
}

fn listed<T: serde::Serialize>(items: &[T]) -> Value {
    serde_json::to_value(items).expect("listings serialize")
}

async fn lists(client: &Client) {
    let v = client.version;
    let who = Principal::local();
    let layer = client.server.layer();

    let tools = client.list_all("tools/list", "tools").await;
    let expected: Vec<String> = layer.tools(&who).iter().map(|t| t.name.clone()).collect();
    assert_eq!(names(&tools), expected, "{v}");
    let echo = &tools[0];
    assert_eq!(echo["title"], "Echo", "{v}");
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]), "{v}");
    assert_eq!(
        echo.get("outputSchema").is_some(),
        v >= Version::V2025_06_18,
        "outputSchema arrived in 2025-06-18 ({v})"
    );

    let resources = client.list_all("resources/list", "resources").await;
    assert_eq!(Value::Array(resources), listed(&layer.resources(&who)), "{v}");
    let templates = client.list_all("resources/templates/list", "resourceTemplates").await;
    assert_eq!(templates[0]["uriTemplate"], "test://items/{item_id}", "{v}");
    assert_eq!(Value::Array(templates), listed(&layer.templates(&who)), "{v}");
    let prompts = client.list_all("prompts/list", "prompts").await;
    assert_eq!(Value::Array(prompts), listed(&layer.prompts(&who)), "{v}");
}

async fn tool_calls(client: &Client) {
    let v = client.version;
    let structured = v >= Version::V2025_06_18;

    let echo = client.request("tools/call", json!({"name": "echo", "arguments": {"text": "ab", "times": 2}})).await;
    assert_eq!(echo["isError"], false, "{v}");
    assert!(texts(&echo)[0].contains("abab"), "{v}: {echo}");
    if structured {
        assert_eq!(echo["structuredContent"], json!({"text": "abab"}), "{v}");
    } else {
        assert!(echo.get("structuredContent").is_none(), "{v}: {echo}");
    }

    let stats = client.request("tools/call", json!({"name": "stats"})).await;
    if structured {
        assert_eq!(stats["structuredContent"]["count"], 4, "{v}");
    } else {
        assert!(stats.get("structuredContent").is_none(), "{v}: {stats}");
    }

    let linked = client.request("tools/call", json!({"name": "linked", "arguments": {}})).await;
    let content = linked["content"].as_array().unwrap();
    let links: Vec<&Value> = content.iter().filter(|c| c["type"] == "resource_link").collect();
    if structured {
        assert_eq!(links.len(), 1, "{v}: {linked}");
        assert_eq!(links[0]["uri"], "test://items/alpha", "{v}");
    } else {
        assert!(links.is_empty(), "{v}: no resource_link before 2025-06-18");
        assert!(
            texts(&linked).iter().any(|t| t.contains("test://items/alpha")),
            "{v}: the link becomes a text block: {linked}"
        );
    }
}

/// `slow` reports three steps of progress and logs each at `info`.
async fn progress_and_logs(client: &Client) {
    let v = client.version;
    let mut meta = json!({"progressToken": "tok"});
    if v.is_modern() {
        meta["io.modelcontextprotocol/logLevel"] = json!("info");
    }
    let sink = Recorder::new(v.as_str());
    let result =
        client.request_via("tools/call", json!({"name": "slow", "arguments": {}, "_meta": meta}), Some(&sink)).await;
    assert_eq!(texts(&result).len(), 1, "{v}");
    let seen = sink.take();
    assert_eq!(
        methods(&seen),
        [
            "notifications/progress",
            "notifications/message",
            "notifications/progress",
            "notifications/message",
            "notifications/progress",
            "notifications/message",
        ],
        "{v}"
    );
    let progress = params_of(&seen, "notifications/progress");
    for (i, p) in (1..=3).zip(&progress) {
        assert_eq!(
            *p,
            json!({"progressToken": "tok", "progress": i, "total": 3, "message": format!("step {i}")}),
            "{v}"
        );
    }
    let logs = params_of(&seen, "notifications/message");
    for (i, l) in (1..=3).zip(&logs) {
        assert_eq!(*l, json!({"level": "info", "data": {"step": i}}), "{v}");
    }
    assert!(client.sent.take().is_empty(), "{v}: all went to the sink");
}

async fn reads(client: &Client) {
    let v = client.version;
    let info = client.request("resources/read", json!({"uri": "test://info"})).await;
    assert_eq!(
        info["contents"],
        json!([{"uri": "test://info", "mimeType": "application/json", "text": r#"{"hello":"world"}"#}]),
        "{v}"
    );
    let beta = client.request("resources/read", json!({"uri": "test://items/beta"})).await;
    assert_eq!(beta["contents"][0]["uri"], "test://items/beta", "{v}");
    let text = beta["contents"][0]["text"].as_str().unwrap();
    assert!(text.contains("\"index\": 1"), "{v}: {text}");
}

async fn prompts(client: &Client) {
    let v = client.version;
    let greet = client.request("prompts/get", json!({"name": "greet", "arguments": {"name": "Ann"}})).await;
    assert_eq!(greet["messages"], json!([{"role": "user", "content": {"type": "text", "text": "Hi Ann!"}}]), "{v}");
    let formal =
        client.request("prompts/get", json!({"name": "greet", "arguments": {"name": "Zed", "style": "formal"}})).await;
    assert_eq!(formal["messages"][0]["content"]["text"], "Good day, Zed.", "{v}");
}

async fn completions(client: &Client) {
    let v = client.version;
    for (reference, argument, typed, values) in [
        (json!({"type": "ref/resource", "uri": "test://items/{item_id}"}), "item_id", "a", json!(["alpha"])),
        (json!({"type": "ref/prompt", "name": "greet"}), "name", "g", json!(["gamma"])),
    ] {
        let params = json!({"ref": reference, "argument": {"name": argument, "value": typed}});
        let completed = client.request("completion/complete", params).await;
        assert_eq!(completed["completion"]["values"], values, "{v}: {argument}");
    }
}
