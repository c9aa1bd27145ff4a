//! Where `tools`, `resources`, `prompts`, `call` and `read` get their answers: duet's own
//! layer run in process as a principal (`choice.rs`), or any other MCP server through
//! duet-client — a Streamable HTTP URL, or a command spawned over stdio — in the era it
//! speaks (2026-07-28 when it can, else the handshake; `--protocol-version` pins one), a
//! URL with the OAuth its options ask for (`authorization.rs`) if it is protected. The
//! commands ask both the same way, get the same wire types back, and print them with the
//! same code.

use super::authorization::AuthorizerError;
use super::failure;
use super::progress::Progress;
use crate::choice;
use crate::cli::{LayerArgs, PrincipalArgs, ServerArgs};
use crate::usage::Usage;
use duet::layer::{Layer, LayerError, Principal, Reply, RequestCx};
use duet::wire::jsonrpc::RequestId;
use duet::wire::types::{Prompt, Resource, ResourceContents, ResourceTemplate, Tool, ToolResult};
use duet_client::{Client, ClientInfo, HttpTransport, Negotiate, Options, StdioTransport, Transport, Version};
use serde_json::{Map, Value};
use std::fmt;
use std::process::ExitCode;
use std::sync::Arc;

/// What the commands ask.
pub(crate) enum Source {
    /// duet's own layer, run in process as `principal`.
    Layer { layer: Arc<dyn Layer>, principal: Principal },
    /// Another server, through a connected client.
    Server(Box<Client>),
}

/// The server the words and options name, if they name one.
enum Target<'a> {
    Url(&'a str),
    Command(&'a [String]),
}

impl fmt::Display for Target<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Url(url) => f.write_str(url),
            Target::Command(command) => f.write_str(&command.join(" ")),
        }
    }
}

impl Source {
    /// The server `url` or `server`'s command names, connected to (with `progress`, tool
    /// calls ask for progress), else the layer and principal the options name. A usage error
    /// or a server that cannot be reached is reported here, and its exit code returned.
    pub(crate) async fn open(
        url: Option<&str>,
        layer: &LayerArgs,
        principal: &PrincipalArgs,
        server: &ServerArgs,
        progress: bool,
    ) -> Result<Source, ExitCode> {
        let target = match (url, server.command.as_slice()) {
            (None, []) => None,
            (Some(url), []) => Some(Target::Url(url)),
            (None, command) => Some(Target::Command(command)),
            (Some(_), _) => {
                return Err(Usage("a URL and a command after -- name two servers; give one".into()).exit());
            }
        };
        if !matches!(target, Some(Target::Url(_)))
            && let Some(option) = server.authorization.first_given()
        {
            return Err(Usage(format!("{option} applies to a server URL")).exit());
        }
        let Some(target) = target else {
            if server.protocol_version.is_some() {
                return Err(
                    Usage("--protocol-version applies to a server (a URL, or a command after --)".into()).exit()
                );
            }
            let layer = choice::layer(layer).map_err(Usage::exit)?;
            return Ok(Source::Layer { layer, principal: choice::principal(principal) });
        };
        if let Some(option) = layer_option(layer, principal) {
            return Err(Usage(format!("{option} applies to duet's own layers, not to a server")).exit());
        }
        let negotiate = match server.protocol_version.as_deref() {
            None => Negotiate::Auto,
            Some(version) => Negotiate::Pin(Version::parse(version).ok_or_else(|| {
                let known: Vec<&str> = Version::ALL.iter().map(|v| v.as_str()).collect();
                Usage(format!("--protocol-version {version}: not a revision duet speaks ({})", known.join(", "))).exit()
            })?),
        };
        let transport = match &target {
            Target::Url(url) => {
                let transport = HttpTransport::new(url).map_err(|e| Usage(e.to_string()).exit())?;
                let authorizer = server.authorization.authorizer(|name| std::env::var(name).ok()).await;
                let authorizer = authorizer.map_err(|e| match e {
                    AuthorizerError::Usage(usage) => usage.exit(),
                    AuthorizerError::Loopback(e) => {
                        failure(format_args!("cannot wait for the authorization redirect: {e}"))
                    }
                })?;
                Transport::from(transport.with_authorizer(Arc::new(authorizer)))
            }
            Target::Command(command) => {
                let mut spawned = tokio::process::Command::new(&command[0]);
                spawned.args(&command[1..]);
                Transport::from(StdioTransport::spawn(spawned).map_err(|e| failure(format_args!("{target}: {e}")))?)
            }
        };
        let client_info = ClientInfo { name: "duet".into(), version: env!("CARGO_PKG_VERSION").into() };
        let options = Options { client_info, progress, ..Options::default() };
        match Client::connect_with(transport, negotiate, options).await {
            Ok(client) => Ok(Source::Server(Box::new(client))),
            Err(duet_client::Error::Closed) if matches!(target, Target::Command(_)) => {
                Err(failure(format_args!("cannot connect to {target}: it exited before it answered")))
            }
            Err(e) => Err(failure(format_args!("cannot connect to {target}: {e}"))),
        }
    }

    /// The tools listed.
    pub(crate) async fn tools(&self) -> Result<Vec<Tool>, String> {
        match self {
            Source::Layer { layer, principal } => Ok(layer.tools(principal).to_vec()),
            Source::Server(client) if offers(client, "tools") => client.list_tools().await.map_err(|e| e.to_string()),
            Source::Server(_) => Ok(Vec::new()),
        }
    }

    /// The resources and the resource templates listed.
    pub(crate) async fn resources(&self) -> Result<(Vec<Resource>, Vec<ResourceTemplate>), String> {
        match self {
            Source::Layer { layer, principal } => {
                Ok((layer.resources(principal).to_vec(), layer.templates(principal).to_vec()))
            }
            Source::Server(client) if offers(client, "resources") => {
                let resources = client.list_resources().await.map_err(|e| e.to_string())?;
                let templates = client.list_resource_templates().await.map_err(|e| e.to_string())?;
                Ok((resources, templates))
            }
            Source::Server(_) => Ok((Vec::new(), Vec::new())),
        }
    }

    /// The prompts listed.
    pub(crate) async fn prompts(&self) -> Result<Vec<Prompt>, String> {
        match self {
            Source::Layer { layer, principal } => Ok(layer.prompts(principal).to_vec()),
            Source::Server(client) if offers(client, "prompts") => {
                client.list_prompts().await.map_err(|e| e.to_string())
            }
            Source::Server(_) => Ok(Vec::new()),
        }
    }

    /// Calls `tool` with `arguments`, its progress shown by `progress`.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        progress: &Arc<Progress>,
    ) -> Result<ToolResult, String> {
        let client = match self {
            Source::Layer { layer, principal } => {
                let cx = RequestCx::builder(principal.clone())
                    .notify(progress.sink())
                    .progress_token(Some(RequestId::Str("duet-call".into())))
                    .build();
                return match layer.call_tool(tool, arguments, cx.clone()).await {
                    Ok(Reply::Complete(result)) => Ok(result),
                    Ok(Reply::InputRequired(_)) => Err(format!(
                        "{tool} needs input from an MCP client (a confirmation or an answer); call it from one"
                    )),
                    Err(LayerError::NotFound(_)) => Err(format!("Unknown tool: {tool}")),
                    Err(e) => Err(e.to_string()),
                };
            }
            Source::Server(client) => client,
        };
        let mut notifications = client.notifications();
        let call = client.call_tool(tool, Value::Object(arguments));
        tokio::pin!(call);
        let called = loop {
            tokio::select! {
                called = &mut call => break called,
                Some(notification) = async { notifications.as_mut()?.recv().await } => {
                    progress.notification(&notification);
                }
            }
        };
        // What came before the answer and was not shown yet.
        while let Some(notification) = notifications.as_mut().and_then(|n| n.try_recv().ok()) {
            progress.notification(&notification);
        }
        match called {
            Ok(result) => Ok(result),
            // A server's refusal of a tool it does not list is said the way duet says it.
            Err(duet_client::Error::Rpc(_))
                if client.list_tools().await.is_ok_and(|tools| tools.iter().all(|t| t.name != tool)) =>
            {
                Err(format!("Unknown tool: {tool}"))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// Reads the resource at `uri`.
    pub(crate) async fn read(&self, uri: &str) -> Result<Vec<ResourceContents>, String> {
        match self {
            Source::Layer { layer, principal } => {
                match layer.read_resource(uri, RequestCx::builder(principal.clone()).build()).await {
                    Ok(Reply::Complete(contents)) => Ok(contents),
                    Ok(Reply::InputRequired(_)) => {
                        Err(format!("{uri} needs input from an MCP client; read it from one"))
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            Source::Server(client) => client.read_resource(uri).await.map_err(|e| e.to_string()),
        }
    }

    /// Ends the connection to a server (its session deleted, its process stopped).
    pub(crate) async fn close(self) {
        if let Source::Server(client) = self {
            client.close().await;
        }
    }
}

/// Whether the server said it offers `capability` (a list of it is refused otherwise).
fn offers(client: &Client, capability: &str) -> bool {
    client.terms().capabilities.contains_key(capability)
}

/// The first option given that picks or plays duet's own layer, which a server does not take.
fn layer_option(layer: &LayerArgs, principal: &PrincipalArgs) -> Option<&'static str> {
    #[cfg(feature = "fixtures")]
    if layer.fixtures.is_some() {
        return Some("--fixtures");
    }
    [
        (layer.manifest.is_some(), "--manifest"),
        (!layer.roots.is_empty(), "--root"),
        (layer.allow_write, "--allow-write"),
        (layer.follow_hard_links, "--follow-hard-links"),
        (!principal.roles.is_empty(), "--role"),
        (principal.principal_id.is_some(), "--principal-id"),
    ]
    .into_iter()
    .find_map(|(given, option)| given.then_some(option))
}
