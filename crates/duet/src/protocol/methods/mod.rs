//! The method tables of both eras. Each family lives in its own file; this one routes a
//! method name to its implementation for the era of the request.

mod completion;
mod lifecycle;
mod listing;
mod prompts;
mod resources;
mod subscriptions;
mod tools;

use super::session::Call;
use crate::jsonrpc::RpcError;
use crate::layer::{InputRequired, Reply};
use serde_json::{Map, Value};

/// Runs the method of `call`, or answers -32601 for a method its era does not have.
pub(crate) async fn dispatch(call: &Call<'_>) -> Result<Value, RpcError> {
    match (call.modern(), call.method.as_str()) {
        (_, "tools/list") => listing::tools(call),
        (_, "resources/list") => listing::resources(call),
        (_, "resources/templates/list") => listing::templates(call),
        (_, "prompts/list") => listing::prompts(call),
        (_, "tools/call") => tools::call(call).await,
        (_, "resources/read") => resources::read(call).await,
        (_, "prompts/get") => prompts::get(call).await,
        (_, "completion/complete") => completion::complete(call).await,
        (false, "initialize") => lifecycle::initialize(call),
        (false, "ping") => Ok(Value::Object(Map::new())),
        (false, "logging/setLevel") => lifecycle::set_level(call),
        (false, "resources/subscribe") => subscriptions::subscribe(call, true),
        (false, "resources/unsubscribe") => subscriptions::subscribe(call, false),
        (true, "server/discover") => Ok(call.server().discover()),
        (true, "subscriptions/listen") => subscriptions::listen(call).await,
        (_, method) => Err(RpcError::method_not_found(method)),
    }
}

/// A required, non-empty string parameter.
fn required_str<'a>(call: &'a Call<'_>, name: &str) -> Result<&'a str, RpcError> {
    match call.params.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(RpcError::invalid_params(format!("Missing or invalid parameter: {name}"))),
    }
}

/// Renders a handler's reply: complete results through `render`, input requests as the
/// 2026 `input_required` result.
fn render<T>(call: &Call<'_>, reply: Reply<T>, render: impl FnOnce(&T) -> Value) -> Result<Value, RpcError> {
    match reply {
        Reply::Complete(value) => Ok(render(&value)),
        Reply::InputRequired(input) => input_required(call, input),
    }
}

/// Multi round-trip requests are not carried yet: a handler that asks the client for input
/// gets a clear error instead of a result the client could not act on.
fn input_required(call: &Call<'_>, _input: InputRequired) -> Result<Value, RpcError> {
    Err(RpcError::internal().with_data(Value::from(format!(
        "{} asked the client for input; duet cannot carry multi round-trip requests yet",
        call.method
    ))))
}
