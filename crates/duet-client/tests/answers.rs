//! The caller's handlers answer what duet's conformance fixtures ask, in both eras: in 2026
//! over Streamable HTTP as `input_required` rounds the client runs itself, and in the
//! handshake era over stdio as the server's own requests. The capabilities the client
//! declares follow from its handlers.

mod common;

use common::{conformance_server, duet_bin, text_of};
use duet_client::{
    Client, Elicited, Error, Handlers, HttpTransport, Negotiate, Options, Root, StdioTransport, Version,
};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Fills in a form's name (Ada), colour (green), username, email and confirmation; other
/// fields are left out (the form's defaults are then sent).
fn elicitation() -> Handlers {
    Handlers::new().on_elicitation(|request| async move {
        let mut content = Map::new();
        let fields = request.requested_schema.as_ref().and_then(|s| s.get("properties")).and_then(Value::as_object);
        for field in fields.into_iter().flat_map(|f| f.keys()) {
            match field.as_str() {
                "name" => content.insert("name".into(), "Ada".into()),
                "color" => content.insert("color".into(), "green".into()),
                "username" => content.insert("username".into(), "ada".into()),
                "email" => content.insert("email".into(), "ada@example.com".into()),
                "ok" => content.insert("ok".into(), true.into()),
                _ => None,
            };
        }
        Ok(Elicited::Accept(content))
    })
}

/// [`elicitation`], sampling answered "Paris", and one root.
fn every_handler() -> Handlers {
    elicitation()
        .on_sampling(|_| async {
            let answer = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "test"});
            Ok(answer.as_object().cloned().unwrap_or_default())
        })
        .with_roots(vec![Root { uri: "file:///srv/project".into(), name: Some("project".into()) }])
}

fn options(handlers: Handlers) -> Options {
    Options { handlers, ..Options::default() }
}

#[tokio::test]
async fn the_2026_rounds_of_input_are_answered_by_the_handlers() {
    let server = conformance_server().await;
    let transport = HttpTransport::new(&server.url()).expect("a URL");
    let client = Client::connect_with(transport, Negotiate::Auto, options(every_handler())).await.expect("connects");
    assert_eq!(client.terms().version, Version::V2026_07_28);
    let call = |name: &'static str| client.call_tool(name, json!({}));

    assert_eq!(text_of(&call("test_input_required_result_elicitation").await.expect("elicitation")), "Hello, Ada!");
    let sampled = text_of(&call("test_input_required_result_sampling").await.expect("sampling"));
    assert!(sampled.contains("Paris"), "{sampled}");
    let roots = text_of(&call("test_input_required_result_list_roots").await.expect("roots"));
    assert!(roots.contains("file:///srv/project"), "{roots}");
    // The server's sealed state goes back exactly as it came, round after round.
    let state = text_of(&call("test_input_required_result_request_state").await.expect("state"));
    assert!(state.starts_with("state-ok"), "{state}");
    assert_eq!(text_of(&call("test_input_required_result_multi_round").await.expect("two rounds")), "Ada likes green");
    client.close().await;
    server.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn rounds_are_bounded_and_capabilities_follow_the_handlers() {
    let server = conformance_server().await;
    let connect = |options: Options| {
        let transport = HttpTransport::new(&server.url()).expect("a URL");
        Client::connect_with(transport, Negotiate::Auto, options)
    };
    let one_round = connect(Options { max_input_rounds: 1, ..options(elicitation()) }).await.expect("connects");
    match one_round.call_tool("test_input_required_result_multi_round", json!({})).await {
        Err(Error::Protocol(why)) => assert!(why.contains("after 1 rounds"), "{why}"),
        other => panic!("a second round past the bound: {other:?}"),
    }
    one_round.close().await;

    // Only elicitation declared: the server asks for nothing else, and refuses what needs it.
    let eliciting = connect(options(elicitation())).await.expect("connects");
    let asked =
        text_of(&eliciting.call_tool("test_input_required_result_capabilities", json!({})).await.expect("asks"));
    assert!(asked.contains("Ada") && !asked.contains("roots"), "{asked}");
    match eliciting.call_tool("test_input_required_result_sampling", json!({})).await {
        Err(error) => assert_eq!(error.code(), Some(-32021), "missing capability: {error}"),
        Ok(result) => panic!("sampling without the capability: {result:?}"),
    }
    eliciting.close().await;
    server.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn the_servers_requests_are_answered_by_the_handlers_over_stdio() {
    let mut command = tokio::process::Command::new(duet_bin());
    command.args(["serve", "--fixtures", "conformance"]);
    let transport = StdioTransport::spawn(command).expect("duet spawns");
    let negotiate = Negotiate::Pin(Version::V2025_11_25);
    let client = Client::connect_with(transport, negotiate, options(every_handler())).await.expect("connects");

    let answered =
        text_of(&client.call_tool("test_elicitation", json!({"message": "Who are you?"})).await.expect("call"));
    assert_eq!(answered, r#"User response: action=accept, content={"email":"ada@example.com","username":"ada"}"#);
    // Fields the user left out are sent with the form's defaults (SEP-1034).
    let defaults = text_of(&client.call_tool("test_elicitation_sep1034_defaults", json!({})).await.expect("call"));
    let filled = r#"content={"age":30,"name":"Ada","score":95.5,"status":"active","verified":true}"#;
    assert!(defaults.ends_with(filled), "{defaults}");
    let sampled = text_of(&client.call_tool("test_sampling", json!({"prompt": "Capital?"})).await.expect("call"));
    assert_eq!(sampled, "LLM response: Paris");
    client.close().await;
}

#[tokio::test]
async fn the_servers_requests_are_answered_by_the_handlers_over_http() {
    let server = conformance_server().await;
    let transport = HttpTransport::new(&server.url()).expect("a URL");
    let negotiate = Negotiate::Pin(Version::V2025_11_25);
    let client = Client::connect_with(transport, negotiate, options(every_handler())).await.expect("connects");
    let answered =
        text_of(&client.call_tool("test_elicitation", json!({"message": "Who are you?"})).await.expect("call"));
    assert_eq!(answered, r#"User response: action=accept, content={"email":"ada@example.com","username":"ada"}"#);
    let sampled = text_of(&client.call_tool("test_sampling", json!({"prompt": "Capital?"})).await.expect("call"));
    assert_eq!(sampled, "LLM response: Paris");
    client.close().await;
    server.shutdown(Duration::from_secs(1)).await;
}
