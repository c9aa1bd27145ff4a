//! What each scenario asks of a client: it connects in the revision asked for (to an
//! authorization scenario's protected server through the authorizer `auth` makes) and does
//! what the scenario's mock server expects, through the library's public API only.

use crate::{Outcome, Run, auth};
use duet_client::types::Tool;
use duet_client::{Client, Elicited, Handlers, HttpTransport, Options, Root};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Runs scenario `run.scenario`, an authorization one (`auth/…`) through the authorizer it
/// calls for.
pub(crate) async fn run(run: &Run) -> Outcome {
    let transport =
        if run.scenario.starts_with("auth/") { auth::transport(run)? } else { HttpTransport::new(&run.url)? };
    let client = connect(run, transport).await?;
    let outcome = match run.scenario.as_str() {
        "initialize" | "tools_call" => list_and_call_first(&client).await,
        auth if auth.starts_with("auth/") => list_and_call_first(&client).await,
        "json-schema-ref-no-deref" => client.list_tools().await.map(drop).map_err(Into::into),
        "json-schema-2020-12-preservation" => echo_schema(&client).await,
        "request-metadata" => client.list_tools().await.map(drop).map_err(Into::into),
        "sep-2322-client-request-state" => input_rounds(&client).await,
        "http-standard-headers" => every_primitive(&client).await,
        "http-custom-headers" => calls_from_context(&client, &run.context).await,
        "http-invalid-tool-headers" => call_every_tool(&client).await,
        "elicitation-sep1034-client-defaults" => list_and_call_first(&client).await,
        // The server ends the call's stream before its answer: the client resumes it.
        "sse-retry" => client.call_tool("test_reconnection", json!({})).await.map(drop).map_err(Into::into),
        "sep-2640-client-no-prefetch" => client.list_skills().await.map(drop).map_err(Into::into),
        "sep-2640-client-verify-digest" | "sep-2640-client-verify-size" | "sep-2640-client-verify-frontmatter" => {
            load_first_skill(&client).await
        }
        other => Err(format!("no such scenario: {other}").into()),
    };
    client.close().await;
    outcome
}

/// The client every scenario uses: it accepts every elicitation without filling anything in
/// (the library adds the form's defaults), answers sampling with a fixed text, and shares
/// one root, so it declares all three capabilities.
async fn connect(run: &Run, transport: HttpTransport) -> Result<Client, duet_client::Error> {
    let handlers = Handlers::new()
        .on_elicitation(|_| async { Ok(Elicited::Accept(Map::new())) })
        .on_sampling(|_| async {
            let answer =
                json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "duet-conformance"});
            Ok(answer.as_object().cloned().unwrap_or_default())
        })
        .with_roots(vec![Root { uri: "file:///tmp".into(), name: Some("tmp".into()) }]);
    let options = Options { handlers, ..Options::default() };
    Client::connect_with(transport, run.negotiate, options).await
}

/// Lists the tools and calls the first with `{a: 2, b: 3}`.
async fn list_and_call_first(client: &Client) -> Outcome {
    if let Some(tool) = client.list_tools().await?.first() {
        client.call_tool(&tool.name, json!({"a": 2, "b": 3})).await?;
    }
    Ok(())
}

/// Calls `json_schema_echo` with the input schema of `json_schema_2020_12_tool` as listed.
async fn echo_schema(client: &Client) -> Outcome {
    let tools = client.list_tools().await?;
    let focal = tools
        .iter()
        .find(|tool| tool.name == "json_schema_2020_12_tool")
        .ok_or("the server lists no json_schema_2020_12_tool")?;
    client.call_tool("json_schema_echo", json!({"schema": focal.input_schema})).await?;
    Ok(())
}

/// Calls the tools that ask for input, one of them while another's rounds are under way.
async fn input_rounds(client: &Client) -> Outcome {
    let (echoed, unrelated) = tokio::join!(
        client.call_tool("test_mrtr_echo_state", json!({})),
        client.call_tool("test_mrtr_unrelated", json!({}))
    );
    echoed?;
    unrelated?;
    client.call_tool("test_mrtr_no_state", json!({})).await?;
    client.call_tool("test_mrtr_no_result_type", json!({})).await?;
    Ok(())
}

/// Lists tools, resources and prompts, and calls, reads and gets the first of each.
async fn every_primitive(client: &Client) -> Outcome {
    if let Some(tool) = client.list_tools().await?.first() {
        client.call_tool(&tool.name, arguments_for(tool)).await?;
    }
    if let Some(resource) = client.list_resources().await?.first() {
        client.read_resource(&resource.uri).await?;
    }
    if let Some(prompt) = client.list_prompts().await?.first() {
        let arguments = prompt.arguments.iter().map(|a| (a.name.clone(), "conformance".into()));
        client.get_prompt(&prompt.name, arguments.collect::<BTreeMap<_, _>>()).await?;
    }
    Ok(())
}

/// Lists the tools, then makes the calls the scenario's context names.
async fn calls_from_context(client: &Client, context: &Value) -> Outcome {
    client.list_tools().await?;
    let calls = context.get("toolCalls").and_then(Value::as_array).ok_or("the context names no toolCalls")?;
    for call in calls {
        let name = call.get("name").and_then(Value::as_str).ok_or("a toolCall without a name")?;
        client.call_tool(name, call.get("arguments").cloned().unwrap_or(Value::Null)).await?;
    }
    Ok(())
}

/// Calls every tool the client lists (the library leaves out the invalid ones).
async fn call_every_tool(client: &Client) -> Outcome {
    for tool in client.list_tools().await? {
        client.call_tool(&tool.name, arguments_for(&tool)).await?;
    }
    Ok(())
}

/// Arguments a tool's input schema accepts: each required property given a value of its
/// type.
fn arguments_for(tool: &Tool) -> Value {
    let properties = tool.input_schema.get("properties").and_then(Value::as_object);
    let required = tool.input_schema.get("required").and_then(Value::as_array).into_iter().flatten();
    let arguments: Map<String, Value> = required
        .filter_map(Value::as_str)
        .map(|name| {
            let kind = properties.and_then(|p| p.get(name)).and_then(|p| p.get("type")).and_then(Value::as_str);
            let value = match kind {
                Some("integer" | "number") => json!(1),
                Some("boolean") => json!(true),
                Some("object") => json!({}),
                Some("array") => json!([]),
                _ => json!("conformance"),
            };
            (name.to_string(), value)
        })
        .collect();
    Value::Object(arguments)
}

/// Lists the skills and loads the first; a skill that fails its checks is an error the
/// scenario expects (it checks the client read nothing past it).
async fn load_first_skill(client: &Client) -> Outcome {
    let skills = client.list_skills().await?;
    let skill = skills.first().ok_or("the server lists no skill")?;
    client.load_skill(skill).await?;
    Ok(())
}
