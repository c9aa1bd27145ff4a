//! Shared support of the OAuth tests: a real authorization server (`oidc-provider`, from
//! `tests/oauth/`, on 127.0.0.1 and a free port; installed with `npm ci` on first use) that
//! mints tokens with the client-credentials grant and the `resource` parameter (and for a
//! person, `alice`, logged in and consenting with no form: `provider.mjs`); duet over a
//! small registry whose primitives need scopes; and a client that speaks the 2026-07-28
//! protocol with a bearer token.
#![allow(dead_code)]

pub(crate) mod cli;

use duet::auth::ProtectedResource;
use duet::auth::ScopeMap;
use duet::auth::oauth::{IntrospectionConfig, OAuth, OAuthConfig};
use duet::layer::{
    Content, PromptMessage, PromptResult, PromptSpec, Registry, ResourceSpec, ServerInfo, ToolResult, ToolSpec,
};
use duet::protocol::{Server, ServerOptions};
use duet::transport::http::{HttpConfig, HttpServer};
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub(crate) const MODERN: &str = "2026-07-28";
/// Every scope the provider grants.
pub(crate) const ALL_SCOPES: &str = "mcp:tools mcp:admin files:read files:write";

/// The scopes duet's test primitives need.
pub(crate) const SCOPE_MAP: &str = r#"
scopes_supported = ["mcp:tools", "files:read"]

[tools]
"*" = ["mcp:tools"]
admin_reset = ["mcp:tools", "mcp:admin"]

[prompts]
"*" = []

[resources]
"file:///secret/*" = ["mcp:admin"]
"*" = ["files:read"]
"#;

/// The scopes of the testkit's tools for `duet serve --scope-map`: `linked` needs
/// `mcp:admin` too.
pub(crate) const CLI_SCOPE_MAP: &str = r#"
scopes_supported = ["mcp:tools"]

[tools]
"*" = ["mcp:tools"]
linked = ["mcp:tools", "mcp:admin"]
"#;

pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root")
}

fn provider_dir() -> PathBuf {
    repo_root().join("tests/oauth")
}

static INSTALL: Mutex<bool> = Mutex::new(false);

/// Installs the provider's pinned npm packages unless they are there.
pub(crate) fn ensure_installed() {
    let mut done = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = provider_dir();
    if *done || (dir.join("node_modules/oidc-provider").is_dir() && dir.join("node_modules/.bin/node").exists()) {
        *done = true;
        return;
    }
    let status = std::process::Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(&dir)
        .status()
        .expect("npm runs (the OAuth tests need Node's npm to install oidc-provider)");
    assert!(status.success(), "npm ci in {} failed", dir.display());
    *done = true;
}

/// A unique scratch file path (removed by its owner).
pub(crate) fn scratch(name: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("duet-oauth-{}-{n}-{name}", std::process::id()))
}

/// A running `oidc-provider`.
pub(crate) struct Provider {
    child: Child,
    pub issuer: String,
    http: reqwest::Client,
}

impl Provider {
    /// Starts a provider whose signing keys live in `keys` (made there on first use).
    pub(crate) async fn start(keys: &Path) -> Provider {
        ensure_installed();
        let dir = provider_dir();
        let node =
            std::env::var("DUET_OAUTH_NODE").map(PathBuf::from).unwrap_or_else(|_| dir.join("node_modules/.bin/node"));
        let mut child = Command::new(node)
            .arg(dir.join("provider.mjs"))
            .arg("--keys")
            .arg(keys)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the provider starts");
        // The provider's warnings about its development setup are noise; anything else shows.
        let stderr = child.stderr.take().expect("piped stderr");
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if !line.starts_with("oidc-provider WARNING") {
                    eprintln!("provider: {line}");
                }
            }
        });
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let issuer = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.strip_prefix("listening on ") {
                    return url.trim().to_owned();
                }
            }
            panic!("the provider exited before it listened");
        })
        .await
        .expect("the provider listens within 30 s");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Provider { child, issuer, http: reqwest::Client::new() }
    }

    /// The token endpoint's raw answer for a client-credentials grant.
    pub(crate) async fn token_response(&self, client: &str, resource: &str, scope: &str) -> Value {
        let mut form = vec![("grant_type", "client_credentials"), ("resource", resource)];
        if !scope.is_empty() {
            form.push(("scope", scope));
        }
        let response = self
            .http
            .post(format!("{}/token", self.issuer))
            .basic_auth(client, Some(format!("{client}-secret")))
            .form(&form)
            .send()
            .await
            .expect("token request");
        response.json().await.expect("token JSON")
    }

    /// An access token for `client`, issued for `resource` with `scope`.
    pub(crate) async fn token(&self, client: &str, resource: &str, scope: &str) -> String {
        let answer = self.token_response(client, resource, scope).await;
        answer["access_token"].as_str().unwrap_or_else(|| panic!("no access token: {answer}")).to_owned()
    }

    /// New keys of each kind, used from now on; the old ones stay published, second.
    pub(crate) async fn rotate(&self) -> Vec<String> {
        let answer = self.test_endpoint(Method::POST, "rotate").await;
        answer["kids"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
    }

    /// How many times the JWKS was downloaded.
    pub(crate) async fn jwks_downloads(&self) -> u64 {
        self.test_endpoint(Method::GET, "stats").await["jwks"].as_u64().expect("a count")
    }

    /// How many introspection requests the provider answered.
    pub(crate) async fn introspections(&self) -> u64 {
        self.test_endpoint(Method::GET, "stats").await["introspections"].as_u64().expect("a count")
    }

    /// A JWT access token of exactly these claims, signed with the provider's current RS256
    /// key (so duet verifies it), for claims no grant would give.
    pub(crate) async fn sign(&self, claims: Value) -> String {
        let url = format!("{}/_test/sign", self.issuer);
        let response = self.http.post(url).json(&claims).send().await.expect("sign");
        let answer: Value = response.json().await.expect("sign JSON");
        answer["token"].as_str().unwrap_or_else(|| panic!("no token: {answer}")).to_owned()
    }

    /// The JSON answer of `/_test/NAME`, the provider's hooks for the tests.
    async fn test_endpoint(&self, method: Method, name: &str) -> Value {
        let url = format!("{}/_test/{name}", self.issuer);
        let response = self.http.request(method, url).send().await.unwrap_or_else(|e| panic!("{name}: {e}"));
        response.json().await.unwrap_or_else(|e| panic!("{name} JSON: {e}"))
    }

    pub(crate) async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// duet's test primitives: tools, prompts and resources with and without scopes.
pub(crate) fn registry() -> Registry {
    let mut registry = Registry::new(ServerInfo::new("duet-oauth-test", "1.0.0"));
    registry
        .tool(ToolSpec::new("echo", |args, _| async move {
            ToolResult::text(args.get("text").and_then(Value::as_str).unwrap_or_default())
        }))
        .and_then(|r| r.tool(ToolSpec::new("admin_reset", |_, _| async { ToolResult::text("reset") })))
        .and_then(|r| {
            r.tool(ToolSpec::new("whoami", |_, cx| async move {
                let who = cx.principal();
                let roles: Vec<&String> = who.roles.iter().collect();
                ToolResult::structured(json!({"id": who.id, "roles": roles, "attributes": who.attributes}))
            }))
        })
        .and_then(|r| {
            r.prompt(PromptSpec::new("greet", |_, _| async {
                PromptResult::new(vec![PromptMessage::user(Content::text("hello"))])
            }))
        })
        .and_then(|r| r.resource(ResourceSpec::text("file:///public/readme", "readme", "text/plain", "hi")))
        .and_then(|r| r.resource(ResourceSpec::text("file:///secret/key", "key", "text/plain", "k")))
        .expect("valid registry");
    registry
}

/// A running duet that accepts the provider's tokens.
pub(crate) struct Duet {
    pub server: HttpServer,
    pub url: String,
}

impl Duet {
    pub(crate) fn resource(&self) -> ProtectedResource {
        self.server.service().config().resource.clone().expect("a protected resource")
    }

    pub(crate) async fn stop(self) {
        self.server.shutdown(Duration::from_secs(1)).await;
    }
}

/// The validator's settings for `provider` (introspecting as `duet-rs`), to adjust.
pub(crate) fn oauth_config(provider: &Provider) -> OAuthConfig {
    let mut config = OAuthConfig::new(provider.issuer.clone());
    config.introspection = Some(IntrospectionConfig {
        endpoint: None,
        client_id: "duet-rs".into(),
        client_secret: "duet-rs-secret".into(),
    });
    config.leeway = Duration::ZERO;
    config.jwks_min_refresh = Duration::from_secs(1);
    config
}

/// duet on 127.0.0.1 and a free port, its canonical URI the URL it listens at.
pub(crate) async fn start_duet(config: OAuthConfig) -> Duet {
    let issuer = config.issuer.clone();
    let oauth = OAuth::discover(config).await.expect("the provider's metadata and keys");
    let map = Arc::new(ScopeMap::from_toml(SCOPE_MAP).expect("valid scope map"));
    let mut resource = ProtectedResource::new("", vec![issuer]);
    resource.scopes_supported = map.scopes_supported();
    let http = HttpConfig {
        port: 0,
        json_response: true,
        auth: Some(Arc::new(oauth)),
        resource: Some(resource),
        ..HttpConfig::default()
    };
    let options = ServerOptions { scopes: Some(map), ..ServerOptions::default() };
    let server = HttpServer::bind(Server::new(Arc::new(registry()), options), http).await.expect("duet binds");
    let url = server.url();
    Duet { server, url }
}

/// An HTTP answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Answer {
    pub(crate) fn challenge(&self) -> &str {
        self.headers.get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default()
    }

    pub(crate) fn result(&self) -> &Value {
        assert_eq!(self.status, StatusCode::OK, "{self:?}");
        assert!(self.body.get("error").is_none(), "{self:?}");
        &self.body["result"]
    }

    /// The parameters of the `Bearer` challenge, unquoted.
    pub(crate) fn challenge_params(&self) -> Vec<(String, String)> {
        challenge_params(self.challenge())
    }
}

/// `Bearer a="x", b="y"` → [(a, x), (b, y)].
pub(crate) fn challenge_params(challenge: &str) -> Vec<(String, String)> {
    let rest = challenge.strip_prefix("Bearer").unwrap_or_default().trim();
    let mut params = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            return params;
        }
        assert_eq!(chars.next(), Some('"'), "quoted value in {challenge:?}");
        let value: String = chars.by_ref().take_while(|c| *c != '"').collect();
        params.push((key.trim().to_owned(), value));
    }
}

pub(crate) fn param<'a>(params: &'a [(String, String)], key: &str) -> Option<&'a str> {
    params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// One 2026-07-28 request (`Mcp-Name` from `name`), with `token` as bearer if given.
pub(crate) async fn call(url: &str, token: Option<&str>, method: &str, name: Option<&str>, params: Value) -> Answer {
    call_with(url, token, method, name, params, &[]).await
}

pub(crate) async fn call_with(
    url: &str,
    token: Option<&str>,
    method: &str,
    name: Option<&str>,
    mut params: Value,
    headers: &[(&str, &str)],
) -> Answer {
    let meta = params.as_object_mut().expect("params object").entry("_meta").or_insert_with(|| json!({}));
    meta["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method)
        .json(&body);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.expect("duet answers");
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.expect("a body");
    // An SSE answer: its response is the last `data:` event that carries an id.
    let mut sse = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok());
    let body = match sse.rfind(|m| m.get("id").is_some()) {
        Some(response) => response,
        None => serde_json::from_str(&text).unwrap_or(Value::String(text)),
    };
    Answer { status, headers, body }
}

/// `tools/call` of `tool`.
pub(crate) async fn call_tool(url: &str, token: Option<&str>, tool: &str, args: Value) -> Answer {
    call(url, token, "tools/call", Some(tool), json!({"name": tool, "arguments": args})).await
}

/// `resources/read` of `uri`.
pub(crate) async fn read_resource(url: &str, token: Option<&str>, uri: &str) -> Answer {
    call(url, token, "resources/read", Some(uri), json!({"uri": uri})).await
}

/// The text of a tool result's first content block.
pub(crate) fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}
