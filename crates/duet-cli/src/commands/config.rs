//! `duet config --client …`: prints the JSON that registers duet with an MCP client
//! (Claude Desktop, Claude Code, Cursor, VS Code) on stdout, and where to paste it on
//! stderr. Paths are made absolute so the client can start duet from anywhere. For a client
//! that reaches duet over HTTP, stderr also gives the command that starts that server on
//! the same folders. A bearer token is never written: with `--token-env VAR` the client
//! sends `Authorization: Bearer` with what `VAR` holds, in the client's own syntax.

use crate::cli::{Client, ConfigArgs, ConfigTransport};
use crate::usage::Usage;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use url::Url;

/// `path` made absolute; `flag` names the option it came from in the refusal, which says
/// what a client would do with a path that is not there.
fn absolute(path: &Path, flag: &str) -> Result<PathBuf, Usage> {
    std::fs::canonicalize(path).map_err(|e| {
        let what = if flag == "--root" { "folder" } else { "file" };
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => format!("there is no such {what}"),
            _ => e.to_string(),
        };
        Usage(format!(
            "{flag} {}: {why}; the client would start duet on it and fail, so give a {what} that exists",
            path.display()
        ))
    })
}

/// The duet command: `--command`, else this executable.
fn duet_command(args: &ConfigArgs) -> Result<String, Usage> {
    match &args.command {
        Some(c) => Ok(c.clone()),
        None => std::env::current_exe()
            .map(|exe| exe.display().to_string())
            .map_err(|e| Usage(format!("cannot tell where duet is installed ({e}); pass --command"))),
    }
}

/// What `duet serve` serves: the manifest, or the folders (absolute) and `--allow-write`.
fn served(args: &ConfigArgs) -> Result<Vec<String>, Usage> {
    if let Some(manifest) = &args.manifest {
        return Ok(vec!["--manifest".to_string(), absolute(manifest, "--manifest")?.display().to_string()]);
    }
    let mut argv = Vec::new();
    let roots = if args.roots.is_empty() { vec![PathBuf::from(".")] } else { args.roots.clone() };
    for root in roots {
        argv.extend(["--root".to_string(), absolute(&root, "--root")?.display().to_string()]);
    }
    if args.allow_write {
        argv.push("--allow-write".into());
    }
    Ok(argv)
}

/// The entry of a client that starts duet itself.
fn stdio_entry(args: &ConfigArgs) -> Result<Value, Usage> {
    if args.token_env.is_some() {
        return Err(Usage(
            "--token-env applies to --transport http; a client that starts duet over stdio needs no token".into(),
        ));
    }
    let argv: Vec<String> = ["serve".to_string()].into_iter().chain(served(args)?).collect();
    let command = duet_command(args)?;
    Ok(match args.client {
        Client::Vscode => json!({"type": "stdio", "command": command, "args": argv}),
        _ => json!({"command": command, "args": argv}),
    })
}

/// The `Authorization` header a client sends, reading the token from `var` the way that
/// client reads variables; VS Code asks the user instead, through an input it declares.
fn authorization(client: Client, var: &str, name: &str) -> Result<(String, Option<Value>), Usage> {
    match client {
        Client::ClaudeCode => Ok((format!("Bearer ${{{var}}}"), None)),
        Client::Cursor => Ok((format!("Bearer ${{env:{var}}}"), None)),
        Client::Vscode => {
            let id = format!("{name}-token");
            let input = json!({"type": "promptString", "id": id, "password": true,
                               "description": format!("The bearer token of {name} (what ${var} holds where it runs)")});
            Ok((format!("Bearer ${{input:{id}}}"), Some(input)))
        }
        Client::ClaudeDesktop => Err(Usage(
            "--token-env: Claude Desktop reaches an HTTP server through mcp-remote, which it starts with no \
             environment but what its config file lists, so the token would have to be written into \
             claude_desktop_config.json; use --transport stdio instead (Claude Desktop then starts duet \
             itself, and no token is needed)"
                .into(),
        )),
    }
}

/// The entry of a client that reaches a running server at `--url`, and the VS Code input
/// it needs for a token.
fn http_entry(args: &ConfigArgs) -> Result<(Value, Option<Value>), Usage> {
    let auth = match &args.token_env {
        Some(var) => Some(authorization(args.client, var, &args.name)?),
        None => None,
    };
    let headers = auth.as_ref().map(|(value, _)| json!({"Authorization": value}));
    let mut entry = match args.client {
        // Claude Desktop reaches remote servers through the mcp-remote bridge.
        Client::ClaudeDesktop => json!({"command": "npx", "args": ["-y", "mcp-remote", args.url]}),
        Client::Cursor => json!({"url": args.url}),
        _ => json!({"type": "http", "url": args.url}),
    };
    if let Some(headers) = headers {
        entry["headers"] = headers;
    }
    Ok((entry, auth.and_then(|(_, input)| input)))
}

/// The command that starts the HTTP server `--url` names, on what the options serve.
fn serve_command(args: &ConfigArgs, url: &Url) -> Result<String, Usage> {
    let mut argv = vec![duet_command(args)?, "serve".into(), "--transport".into(), "http".into()];
    // A name is resolved where the server runs; only an address is bound as given.
    if let Some(host) = url.host_str().filter(|h| h.parse::<std::net::IpAddr>().is_ok() && *h != "127.0.0.1") {
        argv.extend(["--host".into(), host.trim_matches(['[', ']']).to_string()]);
    }
    if let Some(port) = url.port_or_known_default() {
        argv.extend(["--port".into(), port.to_string()]);
    }
    if url.path() != "/mcp" {
        argv.extend(["--path".into(), url.path().to_string()]);
    }
    argv.extend(served(args)?);
    if let Some(var) = &args.token_env {
        argv.extend(["--auth-token".into(), format!("env:{var}")]);
    }
    Ok(argv.iter().map(|word| shell_word(word)).collect::<Vec<_>>().join(" "))
}

/// `word` as a POSIX shell reads it back.
fn shell_word(word: &str) -> String {
    let plain = word.bytes().all(|b| b.is_ascii_alphanumeric() || b"_./:=,@%+-".contains(&b));
    if plain && !word.is_empty() { word.to_string() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// What the client needs to know about the token, beside where to paste the snippet.
fn token_hint(client: Client, var: &str) -> String {
    match client {
        Client::ClaudeCode => format!(
            "Claude Code reads ${{{var}}} from its environment: export {var} before starting claude. Some versions \
             have not sent headers that hold variables (anthropics/claude-code#6204); if duet answers 401, add it \
             with `claude mcp add --transport http NAME URL --header \"Authorization: Bearer ${var}\"` instead, \
             which keeps the token in Claude Code's own settings."
        ),
        Client::Cursor => {
            format!("Cursor reads ${{env:{var}}} from its environment: export {var} before starting Cursor.")
        }
        Client::Vscode => format!(
            "VS Code asks for the token once (a password prompt) and keeps it in its secret storage: give it what \
             {var} holds. (It does not expand ${{env:{var}}} in headers: microsoft/vscode#336232.)"
        ),
        Client::ClaudeDesktop => String::new(),
    }
}

/// The JSON to paste, and what to tell the user on stderr.
fn snippet(args: &ConfigArgs) -> Result<(Value, String), Usage> {
    if let Some(var) = &args.token_env
        && (var.is_empty()
            || var.starts_with(|c: char| c.is_ascii_digit())
            || !var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
    {
        return Err(Usage(format!("--token-env {var:?}: name an environment variable (letters, digits and _)")));
    }
    let name = args.name.as_str();
    let (entry, input, started) = match args.transport {
        ConfigTransport::Stdio => (stdio_entry(args)?, None, None),
        ConfigTransport::Http => {
            let url = Url::parse(&args.url).map_err(|e| Usage(format!("--url {}: not a URL: {e}", args.url)))?;
            let (entry, input) = http_entry(args)?;
            (entry, input, Some(serve_command(args, &url)?))
        }
    };
    let (value, paste) = match args.client {
        Client::ClaudeDesktop => (
            json!({"mcpServers": {name: entry}}),
            "Merge this into claude_desktop_config.json (Settings → Developer → Edit Config), then restart Claude Desktop.",
        ),
        Client::ClaudeCode => (
            json!({"mcpServers": {name: entry}}),
            "Save this as .mcp.json in your project (or merge it into an existing one), or pass the inner object to `claude mcp add-json`.",
        ),
        Client::Cursor => (
            json!({"mcpServers": {name: entry}}),
            "Merge this into ~/.cursor/mcp.json (or .cursor/mcp.json in a project).",
        ),
        Client::Vscode => {
            let mut value = json!({"servers": {name: entry}});
            if let Some(input) = input {
                value["inputs"] = json!([input]);
            }
            (value, "Merge this into .vscode/mcp.json in your workspace.")
        }
    };
    let mut hint = vec![paste.to_string()];
    if let Some(command) = started {
        hint.push(format!("The client connects to {}; start duet there first:\n  {command}", args.url));
    }
    if let Some(var) = &args.token_env {
        hint.push(token_hint(args.client, var));
    }
    Ok((value, hint.join("\n")))
}

pub(crate) fn run(args: ConfigArgs) -> anyhow::Result<ExitCode> {
    match snippet(&args) {
        Ok((value, hint)) => {
            println!("{}", serde_json::to_string_pretty(&value)?);
            eprintln!("{hint}");
            Ok(ExitCode::SUCCESS)
        }
        Err(usage) => Ok(usage.exit()),
    }
}
