//! The [`Client`]: connected to one server in the era agreed, it lists, calls, reads, gets
//! and completes with the shared wire types, the same calls in both eras. A 2026 request
//! carries the `_meta` envelope; a handshake-era request rides the session. The server's
//! notifications come on a channel ([`Client::notifications`]).

use crate::connection::{Connection, decode};
use crate::era::{self, ClientInfo, Negotiate, Terms};
use crate::error::Error;
use crate::handlers::Handlers;
use crate::known_tools::KnownTools;
use crate::pages::{self, Listing, Page};
use crate::tasks::TaskOptions;
use crate::transport::{Outgoing, Transport};
use crate::watch::Watchers;
use duet_wire::jsonrpc::RequestId;
use duet_wire::message::Notification;
use duet_wire::method::Method;
use duet_wire::params::{
    CallToolParams, CompleteParams, GetPromptParams, ListParams, ReadResourceParams, SetLevelParams,
};
use duet_wire::types::{
    Completion, Prompt, PromptResult, Resource, ResourceContents, ResourceTemplate, Tool, ToolResult,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::mpsc;

/// How a client behaves.
#[derive(Debug, Clone)]
pub struct Options {
    /// The name and version the client gives.
    pub client_info: ClientInfo,
    /// The most pages one whole listing may take; a server sending more is in error.
    pub max_pages: usize,
    /// Whether tool calls ask for progress (`progressToken`): the server's
    /// `notifications/progress` then come on the notification channel.
    pub progress: bool,
    /// How long [`Negotiate::Auto`] waits for `server/discover` before it takes the server
    /// for a handshake-era one.
    pub probe_timeout: Duration,
    /// What the client answers when the server asks (elicitation, sampling, roots); the
    /// capabilities it declares follow from them.
    pub handlers: Handlers,
    /// The most rounds of input (2026's `input_required`) one request may take.
    pub max_input_rounds: usize,
    /// How tool calls run as tasks are asked for and waited on.
    pub tasks: TaskOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            client_info: ClientInfo::default(),
            max_pages: 100,
            progress: false,
            probe_timeout: Duration::from_secs(10),
            handlers: Handlers::default(),
            max_input_rounds: 10,
            tasks: TaskOptions::default(),
        }
    }
}

/// `tools/call`'s params: tool `name` with `arguments` (an object, or `null` for none).
pub(crate) fn call_params(name: &str, arguments: Value) -> Result<CallToolParams, Error> {
    let arguments = match arguments {
        Value::Null => None,
        Value::Object(arguments) => Some(arguments),
        other => return Err(Error::Invalid(format!("the arguments of tool {name} are not an object: {other}"))),
    };
    Ok(CallToolParams { name: name.into(), arguments, ..CallToolParams::default() })
}

/// A client connected to one MCP server.
#[derive(Debug)]
pub struct Client {
    pub(crate) connection: Connection,
    terms: Terms,
    options: Options,
    /// The capabilities the client declares, from its handlers.
    capabilities: Map<String, Value>,
    /// The log level asked for; in 2026 it rides every request's envelope.
    log_level: Mutex<Option<String>>,
    pub(crate) known_tools: KnownTools,
}

/// `resources/read`'s result.
#[derive(Deserialize)]
struct Read {
    contents: Vec<ResourceContents>,
}

/// `completion/complete`'s result.
#[derive(Deserialize)]
struct Completed {
    completion: Completion,
}

impl Client {
    /// Connects through `transport` with the default [`Options`].
    pub async fn connect(transport: impl Into<Transport>, negotiate: Negotiate) -> Result<Client, Error> {
        Client::connect_with(transport, negotiate, Options::default()).await
    }

    /// Connects through `transport`, agreeing on a revision as `negotiate` says.
    pub async fn connect_with(
        transport: impl Into<Transport>,
        negotiate: Negotiate,
        options: Options,
    ) -> Result<Client, Error> {
        let connection = Connection::new(transport.into(), options.handlers.clone(), options.max_input_rounds);
        let capabilities = options.handlers.capabilities();
        let asking = era::Asking { info: &options.client_info, capabilities: &capabilities };
        let terms = match era::negotiate(&connection, negotiate, &asking, options.probe_timeout).await {
            Ok(terms) => terms,
            Err(error) => {
                connection.transport.close().await;
                return Err(error);
            }
        };
        Ok(Client {
            connection,
            terms,
            options,
            capabilities,
            log_level: Mutex::new(None),
            known_tools: KnownTools::default(),
        })
    }

    /// What the client and the server agreed on.
    pub fn terms(&self) -> &Terms {
        &self.terms
    }

    /// The transport the client speaks through (its HTTP session, its process group).
    pub fn transport(&self) -> &Transport {
        &self.connection.transport
    }

    /// The server's notifications (progress, log messages, list changes), the first time
    /// it is called; later calls get `None`. Notifications the caller does not read are
    /// dropped once a bounded number wait.
    pub fn notifications(&self) -> Option<mpsc::Receiver<Notification>> {
        self.connection.transport.inbox().notices.take()
    }

    /// Every tool, all pages; a tool whose `x-mcp-header` declarations are invalid is left
    /// out (its calls could not carry the headers its server expects).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        let tools =
            pages::all(&pages::TOOLS, self.options.max_pages, |cursor| self.page(&pages::TOOLS, cursor)).await?;
        Ok(self.known_tools.learn(tools, true))
    }

    /// One page of tools, from `cursor` (`None` for the first).
    pub async fn list_tools_page(&self, cursor: Option<String>) -> Result<Page<Tool>, Error> {
        let mut page: Page<Tool> = self.page(&pages::TOOLS, cursor).await?;
        page.items = self.known_tools.learn(page.items, false);
        Ok(page)
    }

    /// Every resource, all pages.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        pages::all(&pages::RESOURCES, self.options.max_pages, |cursor| self.page(&pages::RESOURCES, cursor)).await
    }

    /// One page of resources, from `cursor` (`None` for the first).
    pub async fn list_resources_page(&self, cursor: Option<String>) -> Result<Page<Resource>, Error> {
        self.page(&pages::RESOURCES, cursor).await
    }

    /// Every resource template, all pages.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        pages::all(&pages::TEMPLATES, self.options.max_pages, |cursor| self.page(&pages::TEMPLATES, cursor)).await
    }

    /// One page of resource templates, from `cursor` (`None` for the first).
    pub async fn list_resource_templates_page(&self, cursor: Option<String>) -> Result<Page<ResourceTemplate>, Error> {
        self.page(&pages::TEMPLATES, cursor).await
    }

    /// Every prompt, all pages.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        pages::all(&pages::PROMPTS, self.options.max_pages, |cursor| self.page(&pages::PROMPTS, cursor)).await
    }

    /// One page of prompts, from `cursor` (`None` for the first).
    pub async fn list_prompts_page(&self, cursor: Option<String>) -> Result<Page<Prompt>, Error> {
        self.page(&pages::PROMPTS, cursor).await
    }

    /// Calls tool `name` with `arguments` (an object, or `null` for none). A tool that
    /// failed is a result with `is_error`; an unknown tool is the server's JSON-RPC error.
    /// When the client listed the tool with an output schema, the result's structured
    /// content is checked against it.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<ToolResult, Error> {
        let result: ToolResult = self.request(Method::ToolsCall, call_params(name, arguments)?).await?;
        self.known_tools.check(name, &result)?;
        Ok(result)
    }

    /// Reads the resource at `uri`.
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<ResourceContents>, Error> {
        let params = ReadResourceParams { uri: uri.into(), ..ReadResourceParams::default() };
        let read: Read = self.request(Method::ResourcesRead, params).await?;
        Ok(read.contents)
    }

    /// Prompt `name`, filled in with `arguments`.
    pub async fn get_prompt(&self, name: &str, arguments: BTreeMap<String, String>) -> Result<PromptResult, Error> {
        let params = GetPromptParams { name: name.into(), arguments: Some(arguments), ..GetPromptParams::default() };
        self.request(Method::PromptsGet, params).await
    }

    /// Completion values for an argument of a prompt or a variable of a template.
    pub async fn complete(&self, params: CompleteParams) -> Result<Completion, Error> {
        let completed: Completed = self.request(Method::CompletionComplete, params).await?;
        Ok(completed.completion)
    }

    /// Asks for log messages of `level` and above (`debug` … `emergency`): in the
    /// handshake era with `logging/setLevel`, in 2026 on every later request's envelope.
    pub async fn set_logging_level(&self, level: &str) -> Result<(), Error> {
        if !self.terms.version.is_modern() {
            let _: Map<String, Value> =
                self.request(Method::LoggingSetLevel, SetLevelParams { level: level.into() }).await?;
        }
        *self.log_level() = Some(level.into());
        Ok(())
    }

    /// Whether the server answers: `ping` in the handshake era; 2026 has no ping, and
    /// `server/discover` answers in its place.
    pub async fn ping(&self) -> Result<(), Error> {
        let method = if self.terms.version.is_modern() { Method::ServerDiscover } else { Method::Ping };
        let _: Map<String, Value> = self.request(method, Map::new()).await?;
        Ok(())
    }

    /// Ends the connection: a handshake-era HTTP session is deleted, a spawned server is
    /// stopped and reaped. Requests still waiting fail.
    pub async fn close(self) {
        self.connection.transport.close().await;
    }

    pub(crate) fn options(&self) -> &Options {
        &self.options
    }

    fn log_level(&self) -> MutexGuard<'_, Option<String>> {
        self.log_level.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) async fn page<T: DeserializeOwned>(
        &self,
        listing: &Listing,
        cursor: Option<String>,
    ) -> Result<Page<T>, Error> {
        let result: Value = self.request(listing.method.clone(), ListParams { cursor }).await?;
        listing.page(result)
    }

    /// The id of the next request: never one in use.
    pub(crate) fn next_id(&self) -> RequestId {
        self.connection.next_id()
    }

    /// The watchers of this connection's changes.
    pub(crate) fn watchers(&self) -> &Watchers {
        self.connection.transport.inbox().notices.watchers()
    }

    /// Sends a request in the era agreed and decodes its result; a task the server made of
    /// it is a protocol violation, for the request did not allow one.
    pub(crate) async fn request<R: DeserializeOwned>(
        &self,
        method: Method,
        params: impl Serialize,
    ) -> Result<R, Error> {
        let result = self.send(method.clone(), params, false).await?;
        if result.get("resultType").and_then(Value::as_str) == Some("task") {
            return Err(Error::Protocol(format!("the server answered {method} with a task the client did not allow")));
        }
        decode(method, result)
    }

    /// Sends a request in the era agreed and returns its result, a task's too when `tasks`
    /// ([`Client::send_as`]).
    pub(crate) async fn send(&self, method: Method, params: impl Serialize, tasks: bool) -> Result<Value, Error> {
        self.send_as(self.next_id(), method, params, tasks).await
    }

    /// Sends request `id` in the era agreed and returns its result: in 2026 the params
    /// carry the envelope (declaring the tasks extension when `tasks`, so that the server
    /// may answer with a task) and a tool call mirrors its arguments in headers as its
    /// listing said; a tool call asks for progress when the options say so.
    pub(crate) async fn send_as(
        &self,
        id: RequestId,
        method: Method,
        params: impl Serialize,
        tasks: bool,
    ) -> Result<Value, Error> {
        let mut params = match serde_json::to_value(params) {
            Ok(Value::Object(params)) => params,
            _ => return Err(Error::Invalid(format!("the params of {method} are not an object"))),
        };
        let version = self.terms.version;
        let mut meta = if version.is_modern() {
            let declaring;
            let capabilities = if tasks {
                declaring = crate::tasks::declaring(&self.capabilities);
                &declaring
            } else {
                &self.capabilities
            };
            let asking = era::Asking { info: &self.options.client_info, capabilities };
            era::envelope(version, &asking, self.log_level().as_deref())
        } else {
            Map::new()
        };
        if self.options.progress && method == Method::ToolsCall {
            meta.insert("progressToken".into(), id.to_value());
        }
        if !meta.is_empty() {
            params.insert("_meta".into(), Value::Object(meta));
        }
        let mirrored = match (&method, version.is_modern()) {
            (Method::ToolsCall, true) => match (params.get("name"), params.get("arguments")) {
                (Some(Value::String(name)), Some(arguments)) => self.known_tools.mirrored(name, arguments),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        let out = Outgoing { method: method.clone(), params, version: Some(version), mirrored };
        self.connection.request(&id, out).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::Interest;

    /// Every request future can move between threads (a caller may spawn it): checked
    /// when this compiles.
    fn requests_are_send(client: &Client) {
        fn send<T: Send>(_: T) {}
        send(client.list_tools());
        send(client.call_tool("echo", Value::Null));
        send(client.read_resource("file:///a"));
        send(client.get_prompt("p", BTreeMap::new()));
        send(client.watch(Interest::default()));
        send(client.list_skills());
    }

    #[test]
    fn request_futures_are_send() {
        let _checked: fn(&Client) = requests_are_send;
    }
}
