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
use super::owed::panic_text;
use super::render::Empty;
use crate::layer::LayerError;
use crate::signals::{ErrorType, Operation};
use duet_wire::jsonrpc::{Rendered, Response, RpcError};
use duet_wire::method::{Method, Primitive};
use futures::FutureExt;
use serde_json::{Map, Value, json};
use std::panic::AssertUnwindSafe;
use std::time::Instant;

/// Runs the method of `call` into its rendered result; the method decodes `params` into its
/// own struct (`duet_wire::params`) where it first reads them. Each method that waits runs
/// boxed, so a request's future is the size of its own method's, not of the largest: a
/// listen stream holds its request's future for as long as it is open.
pub(crate) async fn dispatch(call: &Call<'_>, params: Map<String, Value>) -> Result<Rendered, RpcError> {
    let method = &call.method;
    if !method.served_in(call.modern()) {
        return Err(RpcError::method_not_found(method.as_str()));
    }
    match method {
        Method::Initialize => lifecycle::initialize(call, params),
        Method::ServerDiscover => lifecycle::discover(call),
        Method::LoggingSetLevel => lifecycle::set_level(call, params),
        Method::Ping => call.complete(Empty {}, None),
        Method::ToolsList => listing::tools(call, params),
        Method::ResourcesList => Box::pin(listing::resources(call, params)).await,
        Method::ResourcesTemplatesList => listing::templates(call, params),
        Method::PromptsList => listing::prompts(call, params),
        Method::ToolsCall => Box::pin(tools::call(call, params)).await,
        Method::ResourcesRead => Box::pin(resources::read(call, params)).await,
        Method::PromptsGet => Box::pin(prompts::get(call, params)).await,
        Method::CompletionComplete => Box::pin(completion::complete(call, params)).await,
        Method::ResourcesSubscribe => subscriptions::subscribe(call, params, true),
        Method::ResourcesUnsubscribe => subscriptions::subscribe(call, params, false),
        Method::SubscriptionsListen => Box::pin(subscriptions::listen(call, params)).await,
        Method::SkillsList => skills::list(call, params),
        Method::SkillsGet => skills::get(call, params),
        Method::ResourcesDirectoryRead => skills::read_directory(call, params),
        Method::TasksGet => Box::pin(tasks::get(call, params)).await,
        Method::TasksUpdate => Box::pin(tasks::update(call, params)).await,
        Method::TasksCancel => Box::pin(tasks::cancel(call, params)).await,
        Method::TasksResult => Box::pin(tasks::result(call, params)).await,
        Method::TasksList => Box::pin(tasks::list(call, params)).await,
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
        | Method::LegacyTaskStatus
        | Method::SubscriptionsAcknowledged
        | Method::Other(_) => Err(RpcError::method_not_found(method.as_str())),
    }
}

impl Call<'_> {
    /// Runs the method to its response (handing it the params), and records how long it
    /// took; a panicking handler is answered -32603.
    pub(super) async fn respond(mut self) -> Response {
        let started = Instant::now();
        let params = std::mem::take(&mut self.params);
        let result = AssertUnwindSafe(dispatch(&self, params)).catch_unwind().await.unwrap_or_else(|panic| {
            tracing::error!(method = %self.method, panic = panic_text(panic.as_ref()), "a handler panicked");
            Err(RpcError::internal())
        });
        let elapsed = started.elapsed();
        let error = result.as_ref().err().map(|e| e.code);
        let operation = self.operation(result.as_ref().err());
        crate::trace::annotate(&operation);
        tracing::debug!(elapsed_us = elapsed.as_micros() as u64, error, "request answered");
        operation.record(&self.shared.operation_histograms, elapsed);
        Response { id: Some(self.id), result }
    }

    /// What the signals say of this request, once it has its result (or `error`).
    fn operation(&self, error: Option<&RpcError>) -> Operation<'_> {
        let named = self.found.name();
        let (mut target, mut resource_uri) = (None, None);
        match self.method.traits().target {
            Some(Primitive::Resource) => resource_uri = named,
            Some(kind) if self.found.target() => target = named.map(|name| (kind, name)),
            _ => {}
        }
        let error = match error {
            Some(error) => Some(ErrorType::Code(error.code)),
            None => self.found.tool_error().then_some(ErrorType::Tool),
        };
        Operation {
            method: &self.method,
            target,
            resource_uri,
            version: self.version(),
            error,
            transport: self.transport,
        }
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
