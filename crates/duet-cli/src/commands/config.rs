//! `duet config --client …`: prints the JSON that registers duet with an MCP client
//! (Claude Desktop, Claude Code, Cursor, VS Code) on stdout, and where to paste it on
//! stderr. Paths are made absolute so the client can start duet from anywhere.

use crate::cli::{Client, ConfigArgs, ConfigTransport};
use crate::usage::Usage;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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

/// The command line the client runs for a stdio server.
fn stdio_command(args: &ConfigArgs) -> Result<(String, Vec<String>), Usage> {
    let command = match &args.command {
        Some(c) => c.clone(),
        None => std::env::current_exe()
            .map_err(|e| Usage(format!("cannot tell where duet is installed ({e}); pass --command")))?
            .display()
            .to_string(),
    };
    let mut argv = vec!["serve".to_string()];
    if let Some(manifest) = &args.manifest {
        argv.extend(["--manifest".to_string(), absolute(manifest, "--manifest")?.display().to_string()]);
    } else {
        let roots = if args.roots.is_empty() { vec![PathBuf::from(".")] } else { args.roots.clone() };
        for root in roots {
            argv.extend(["--root".to_string(), absolute(&root, "--root")?.display().to_string()]);
        }
        if args.allow_write {
            argv.push("--allow-write".into());
        }
    }
    Ok((command, argv))
}

fn snippet(args: &ConfigArgs) -> Result<(Value, &'static str), Usage> {
    let name = args.name.as_str();
    let entry = match (args.transport, args.client) {
        (ConfigTransport::Stdio, Client::Vscode) => {
            let (command, argv) = stdio_command(args)?;
            json!({"type": "stdio", "command": command, "args": argv})
        }
        (ConfigTransport::Stdio, _) => {
            let (command, argv) = stdio_command(args)?;
            json!({"command": command, "args": argv})
        }
        // Claude Desktop reaches remote servers through the mcp-remote bridge.
        (ConfigTransport::Http, Client::ClaudeDesktop) => {
            json!({"command": "npx", "args": ["-y", "mcp-remote", args.url]})
        }
        (ConfigTransport::Http, Client::Cursor) => json!({"url": args.url}),
        (ConfigTransport::Http, _) => json!({"type": "http", "url": args.url}),
    };
    Ok(match args.client {
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
        Client::Vscode => (json!({"servers": {name: entry}}), "Merge this into .vscode/mcp.json in your workspace."),
    })
}

pub fn run(args: ConfigArgs) -> anyhow::Result<ExitCode> {
    match snippet(&args) {
        Ok((value, hint)) => {
            println!("{}", serde_json::to_string_pretty(&value)?);
            eprintln!("{hint}");
            Ok(ExitCode::SUCCESS)
        }
        Err(usage) => Ok(usage.exit()),
    }
}
