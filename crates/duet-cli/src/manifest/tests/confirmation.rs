//! Tools with `confirm`: the question asked through elicitation before anything runs, and
//! the answers that run the command or do not.

use super::*;

const CONFIRMED: &str = r#"
[[tool]]
name = "remove"
description = "creates a marker after confirmation"
command = ["touch", "--", "{path}"]
cwd = "."
confirm = "Really touch {path}?"
[tool.args.path]
type = "string"
required = true
"#;

#[tokio::test]
async fn confirmation_asks_first() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry_in(dir.path(), CONFIRMED);
    let elicitation = json!({"elicitation": {}});
    let asked = r.call_tool("remove", object(json!({"path": "m"})), cx_with(elicitation, json!({}))).await;
    let Ok(Reply::InputRequired(input)) = asked else { panic!("expected an input request, got {asked:?}") };
    assert_eq!(
        input.requests["confirm"],
        json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Really touch m?",
                "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            },
        })
    );
    assert!(!dir.path().join("m").exists(), "nothing runs before the answer");
}

/// Calls a tool that asks for confirmation as a client would: the first run asks, the
/// second brings `answer` and the state of the question.
async fn confirm_with(r: &Registry, tool: &str, args: Value, answer: Value) -> ToolResult {
    let caps = json!({"elicitation": {}});
    let asked = r.call_tool(tool, object(args.clone()), cx_with(caps.clone(), json!({}))).await;
    let Ok(Reply::InputRequired(input)) = asked else { panic!("expected an input request, got {asked:?}") };
    let cx = RequestCx::builder(Principal::local())
        .client_capabilities(caps)
        .input_responses(object(json!({"confirm": answer})))
        .state(input.state)
        .build();
    call_with(r, tool, args, &cx).await
}

#[tokio::test]
async fn confirmation_declined_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry_in(dir.path(), CONFIRMED);
    for (answer, says) in [
        (json!({"action": "decline"}), "the user declined"),
        (json!({"action": "cancel"}), "the user cancelled"),
        (json!({"action": "accept", "content": {"ok": false}}), "the user did not confirm"),
    ] {
        let message = failed(confirm_with(&r, "remove", json!({"path": "m"}), answer).await);
        assert_eq!(message, format!("Tool remove did not run: {says}"));
    }
    assert!(!dir.path().join("m").exists());
}

#[tokio::test]
async fn confirmation_accepted_runs() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry_in(dir.path(), CONFIRMED);
    let answer = json!({"action": "accept", "content": {"ok": true}});
    ok(confirm_with(&r, "remove", json!({"path": "m"}), answer).await);
    assert!(dir.path().join("m").exists());
}

#[tokio::test]
async fn an_answer_to_no_question_asks_again() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry_in(dir.path(), CONFIRMED);
    // A "yes" the client made up, without the state of a question the server asked.
    let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let cx = cx_with(json!({"elicitation": {}}), answer);
    let asked = r.call_tool("remove", object(json!({"path": "m"})), cx.clone()).await;
    assert!(matches!(asked, Ok(Reply::InputRequired(_))), "{asked:?}");
    assert!(!dir.path().join("m").exists());
}

#[tokio::test]
async fn confirmation_needs_elicitation() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry_in(dir.path(), CONFIRMED);
    let message = failed(call(&r, "remove", json!({"path": "m"})).await);
    assert!(message.contains("needs the user's confirmation") && message.contains("elicitation"), "{message}");
    assert!(!dir.path().join("m").exists());
}
