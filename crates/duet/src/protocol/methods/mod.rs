//! The method tables of both eras. Each family lives in its own file; this one routes a
//! method name to its implementation for the era of the request.

mod completion;
mod input;
mod lifecycle;
mod listing;
mod prompts;
mod resources;
mod subscriptions;
mod tools;

use super::session::Call;
use crate::jsonrpc::{Output, RpcError};
use serde_json::{Map, Value};

/// Runs the method of `call`, or answers -32601 for a method its era does not have.
pub(crate) async fn dispatch(call: &Call<'_>) -> Result<Output, RpcError> {
    let result = match (call.modern(), call.method.as_str()) {
        (_, "tools/list") => return listing::tools(call),
        (_, "resources/list") => return listing::resources(call),
        (_, "resources/templates/list") => return listing::templates(call),
        (_, "prompts/list") => return listing::prompts(call),
        (_, "tools/call") => return tools::call(call).await,
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
    };
    result.map(Output::Value)
}

/// A required, non-empty string parameter.
fn required_str<'a>(call: &'a Call<'_>, name: &str) -> Result<&'a str, RpcError> {
    match call.params.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(RpcError::invalid_params(format!("Missing or invalid parameter: {name}"))),
    }
}

/// Renders how a request that may ask for input ended: a complete result through
/// `render`, the `input_required` result as is, and an input failure through `failed`.
fn finish<T>(
    done: input::Done<T>,
    render: impl FnOnce(&T) -> Value,
    failed: impl FnOnce(String) -> Result<Value, RpcError>,
) -> Result<Value, RpcError> {
    match done {
        input::Done::Complete(value) => Ok(render(&value)),
        input::Done::InputRequired(result) => Ok(result),
        input::Done::InputFailed(message) => failed(message),
    }
}

/// For resources and prompts, input that could not be had is an internal error.
fn input_failed(message: String) -> Result<Value, RpcError> {
    Err(RpcError::new(crate::jsonrpc::code::INTERNAL_ERROR, message))
}
