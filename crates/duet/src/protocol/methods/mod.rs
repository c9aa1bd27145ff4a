//! The methods of both eras. Each family lives in its own file; this one runs a request's
//! method when the request's era has it, and answers -32601 when it does not.

mod as_task;
mod completion;
mod input;
mod lifecycle;
mod listing;
mod prompts;
mod resources;
mod skills;
mod subscriptions;
mod tasks;
mod tools;

use super::call::Call;
use super::render::Empty;
use crate::layer::LayerError;
use duet_wire::jsonrpc::{Rendered, RpcError};
use duet_wire::method::Method;
use serde_json::{Value, json};

/// Runs the method of `call` into its rendered result. Each method that waits runs boxed, so
/// a request's future is the size of its own method's, not of the largest: a listen stream
/// holds its request's future for as long as it is open.
pub(crate) async fn dispatch(call: &Call<'_>) -> Result<Rendered, RpcError> {
    let method = &call.method;
    if !method.served_in(call.modern()) {
        return Err(RpcError::method_not_found(method.as_str()));
    }
    match method {
        Method::Initialize => lifecycle::initialize(call),
        Method::ServerDiscover => lifecycle::discover(call),
        Method::LoggingSetLevel => lifecycle::set_level(call),
        Method::Ping => call.complete(Empty {}, None),
        Method::ToolsList => listing::tools(call),
        Method::ResourcesList => Box::pin(listing::resources(call)).await,
        Method::ResourcesTemplatesList => listing::templates(call),
        Method::PromptsList => listing::prompts(call),
        Method::ToolsCall => Box::pin(tools::call(call)).await,
        Method::ResourcesRead => Box::pin(resources::read(call)).await,
        Method::PromptsGet => Box::pin(prompts::get(call)).await,
        Method::CompletionComplete => Box::pin(completion::complete(call)).await,
        Method::ResourcesSubscribe => subscriptions::subscribe(call, true),
        Method::ResourcesUnsubscribe => subscriptions::subscribe(call, false),
        Method::SubscriptionsListen => Box::pin(subscriptions::listen(call)).await,
        Method::SkillsList => skills::list(call),
        Method::SkillsGet => skills::get(call),
        Method::ResourcesDirectoryRead => skills::read_directory(call),
        Method::TasksGet => Box::pin(tasks::get(call)).await,
        Method::TasksUpdate => Box::pin(tasks::update(call)).await,
        Method::TasksCancel => Box::pin(tasks::cancel(call)).await,
        Method::TasksResult => Box::pin(tasks::result(call)).await,
        Method::TasksList => Box::pin(tasks::list(call)).await,
        // Notifications sent as requests, what the server sends, and methods no era has.
        Method::Initialized
        | Method::Cancelled
        | Method::RootsListChanged
        | Method::ElicitationCreate
        | Method::SamplingCreateMessage
        | Method::RootsList
        | Method::Progress
        | Method::LogMessage
        | Method::ToolsListChanged
        | Method::PromptsListChanged
        | Method::ResourcesListChanged
        | Method::ResourcesUpdated
        | Method::TaskStatus
        | Method::SubscriptionsAcknowledged
        | Method::Other(_) => Err(RpcError::method_not_found(method.as_str())),
    }
}

/// A required, non-empty string parameter.
fn required_str<'a>(call: &'a Call<'_>, name: &str) -> Result<&'a str, RpcError> {
    match call.params.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(RpcError::invalid_params(format!("Missing or invalid parameter: {name}"))),
    }
}

/// For resources and prompts, input that could not be had is an internal error.
fn input_failed(message: String) -> RpcError {
    RpcError::new(duet_wire::jsonrpc::code::INTERNAL_ERROR, message)
}

/// The protocol error of a tool call whose layer failed: an unknown tool names itself.
fn tool_failure(name: &str, error: LayerError) -> RpcError {
    match error {
        LayerError::NotFound(_) => {
            RpcError::invalid_params(format!("Unknown tool: {name}")).with_data(json!({"name": name}))
        }
        error => error.to_rpc(),
    }
}
