use super::*;
use serde_json::json;

fn params(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("params are an object"),
    }
}

fn refusal<T: Params + std::fmt::Debug>(value: Value) -> String {
    let error = decode::<T>(params(value)).unwrap_err();
    assert_eq!(error.code, crate::jsonrpc::code::INVALID_PARAMS);
    error.message
}

#[test]
fn a_call_round_trips() {
    let call = CallToolParams {
        name: "echo".into(),
        arguments: Some(params(json!({"text": "hi"}))),
        task: Some(TaskMetadata { ttl: Some(60_000) }),
        input_responses: None,
        request_state: Some("sealed".into()),
    };
    let wire = serde_json::to_value(&call).unwrap();
    assert_eq!(
        wire,
        json!({"name": "echo", "arguments": {"text": "hi"}, "task": {"ttl": 60000}, "requestState": "sealed"})
    );
    assert_eq!(decode::<CallToolParams>(params(wire)).unwrap(), call);
}

#[test]
fn unknown_parameters_are_ignored() {
    let read: ReadResourceParams = decode(params(json!({"uri": "file:///a", "extra": [1, 2]}))).unwrap();
    assert_eq!(read.uri, "file:///a");
}

#[test]
fn a_missing_or_empty_name_is_named() {
    for bad in [json!({}), json!({"name": ""}), json!({"name": 5}), json!({"name": null})] {
        assert_eq!(refusal::<CallToolParams>(bad), "Missing or invalid parameter: name");
    }
    assert_eq!(refusal::<TaskParams>(json!({})), "Missing or invalid parameter: taskId");
    assert_eq!(
        refusal::<InitializeParams>(json!({"protocolVersion": 1})),
        "Missing or invalid parameter: protocolVersion"
    );
}

#[test]
fn each_method_says_what_was_wrong() {
    assert_eq!(refusal::<CallToolParams>(json!({"name": "t", "arguments": 3})), "arguments must be an object");
    assert_eq!(
        refusal::<CallToolParams>(json!({"name": "t", "task": null})),
        "task must be an object, such as {\"ttl\": 60000}"
    );
    assert_eq!(refusal::<CallToolParams>(json!({"name": "t", "requestState": 1})), "requestState must be a string");
    assert_eq!(
        refusal::<GetPromptParams>(json!({"name": "p", "arguments": {"a": [1]}})),
        "argument \"a\" must be a string"
    );
    assert_eq!(refusal::<ListParams>(json!({"cursor": 5})), "Invalid cursor");
    assert_eq!(refusal::<SetLevelParams>(json!({})), "Invalid log level: missing");
    assert_eq!(refusal::<SetLevelParams>(json!({"level": {"a": "b"}})), "Invalid log level: {'a':'b'}");
    assert_eq!(
        refusal::<CompleteParams>(json!({"ref": {"type": "ref/other"}, "argument": {"name": "a"}})),
        "Invalid completion ref"
    );
    assert_eq!(
        refusal::<CompleteParams>(
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": 1}})
        ),
        "Invalid completion argument"
    );
    assert_eq!(refusal::<ListenParams>(json!({})), "subscriptions/listen requires a notifications filter");
    assert_eq!(
        refusal::<ListenParams>(json!({"notifications": {"taskIds": "t"}})),
        "notifications.taskIds must be an array of at most 100 task ids"
    );
    assert_eq!(
        refusal::<UpdateTaskParams>(json!({"taskId": "t"})),
        "tasks/update needs inputResponses: the answers, by request key"
    );
}

#[test]
fn what_is_ignored_today_stays_ignored() {
    let init: InitializeParams = decode(params(json!({"protocolVersion": "", "capabilities": "none"}))).unwrap();
    assert_eq!((init.protocol_version.as_str(), init.capabilities), ("", None));
    let prompt: GetPromptParams = decode(params(json!({"name": "p", "arguments": {"n": 2, "b": true}}))).unwrap();
    assert_eq!(
        prompt.arguments.unwrap().into_iter().collect::<Vec<_>>(),
        [("b".into(), "true".into()), ("n".into(), "2".into())]
    );
    let complete: CompleteParams = decode(params(
        json!({"ref": {"type": "ref/resource", "uri": "u"}, "argument": {"name": "a", "value": null}, "context": 4}),
    ))
    .unwrap();
    assert_eq!((complete.argument.value, complete.context), (None, None));
    let listen: ListenParams =
        decode(params(json!({"notifications": {"toolsListChanged": "yes", "resourceSubscriptions": 1}}))).unwrap();
    assert_eq!(listen.notifications, ListenFilter::default());
}
