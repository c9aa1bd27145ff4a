//! Prompts: the template rendered from the arguments, and argument completion.

use super::*;
use duet::layer::{CompletionArg, CompletionRef};
use std::collections::BTreeMap;

const PROMPT: &str = r#"
[[prompt]]
name = "review"
description = "Reviews a file"
template = "Review {file} focusing on {focus}."
[prompt.args.file]
description = "The file"
required = true
[prompt.args.focus]
completions = ["security", "Speed", "style"]
"#;

#[tokio::test]
async fn prompts_render_their_template() {
    let r = registry(PROMPT);
    let listed = r.prompts(&Principal::local());
    let args: Vec<(&str, bool)> = listed[0].arguments.iter().map(|a| (a.name.as_str(), a.required)).collect();
    assert_eq!(args, [("file", true), ("focus", false)]);
    assert_eq!(listed[0].about.description.as_deref(), Some("Reviews a file"));

    let values = BTreeMap::from([("file".to_string(), "a.rs".to_string()), ("focus".to_string(), "style".to_string())]);
    let Ok(Reply::Complete(result)) = r.get_prompt("review", values, cx()).await else { panic!("no prompt") };
    let rendered = serde_json::to_value(&result.messages).unwrap();
    assert_eq!(
        rendered,
        json!([{"role": "user", "content": {"type": "text", "text": "Review a.rs focusing on style."}}])
    );

    let only_file = BTreeMap::from([("file".to_string(), "b.rs".to_string())]);
    let Ok(Reply::Complete(result)) = r.get_prompt("review", only_file, cx()).await else { panic!("no prompt") };
    assert_eq!(serde_json::to_value(&result.messages[0].content).unwrap()["text"], "Review b.rs focusing on .");
    let missing = r.get_prompt("review", BTreeMap::new(), cx()).await;
    assert!(matches!(missing, Err(LayerError::InvalidArguments { .. })), "{missing:?}");
}

#[tokio::test]
async fn prompt_arguments_complete_by_prefix() {
    let r = registry(PROMPT);
    let complete = |arg: &str, value: &str| {
        let of = CompletionRef::Prompt { name: "review".into() };
        let arg = CompletionArg { name: arg.into(), value: value.into(), context: BTreeMap::new() };
        let r = &r;
        async move { r.complete(of, arg, cx()).await.unwrap().values }
    };
    assert_eq!(complete("focus", "s").await, ["security", "Speed", "style"]);
    assert_eq!(complete("focus", "sT").await, ["style"]);
    assert_eq!(complete("focus", "x").await, Vec::<String>::new());
    assert_eq!(complete("file", "").await, Vec::<String>::new());
}
