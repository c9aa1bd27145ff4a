//! `duet call [URL] TOOL [NAME=VALUE]… [--args JSON|@FILE|-] [-- COMMAND…]`: runs a tool in
//! process (as a principal with no client capabilities) or on another server, and prints
//! its structured result (or its text); its progress goes to stderr (`progress.rs`).

use super::failure;
use super::progress::Progress;
use super::source::Source;
use crate::cli::CallArgs;
use crate::usage::Usage;
use duet::layer::ContentKind;
use serde_json::{Map, Value};
use std::io::Read;
use std::process::ExitCode;

/// The object `--args` gives (none: an empty one).
fn arguments(spec: Option<&str>) -> Result<Map<String, Value>, Usage> {
    let text = match spec {
        None => return Ok(Map::new()),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Usage(format!("cannot read --args from stdin: {e}")))?;
            text
        }
        Some(file) if file.starts_with('@') => std::fs::read_to_string(&file[1..])
            .map_err(|e| Usage(format!("cannot read --args file {}: {e}", &file[1..])))?,
        Some(json) => json.to_string(),
    };
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Usage("--args must be a JSON object".into())),
        Err(e) => Err(Usage(format!("--args is not valid JSON: {e}"))),
    }
}

/// Adds the `NAME=VALUE` (a string) and `NAME:=JSON` words to `arguments`, over what
/// `--args` gave.
fn add_words(arguments: &mut Map<String, Value>, words: &[String]) -> Result<(), Usage> {
    for word in words {
        let (name, value) = match word.split_once('=') {
            Some((name, json)) if name.ends_with(':') => {
                let value = serde_json::from_str(json)
                    .map_err(|e| Usage(format!("{word}: the value after := is not valid JSON: {e}")))?;
                (&name[..name.len() - 1], value)
            }
            Some((name, text)) => (name, Value::String(text.into())),
            None => return Err(Usage(format!("{word}: an argument is NAME=VALUE or NAME:=JSON"))),
        };
        arguments.insert(name.into(), value);
    }
    Ok(())
}

/// The server's URL, if the words start with one (a tool's name never holds `://`), the
/// tool, and its arguments.
fn split(words: &[String]) -> Result<(Option<&str>, &str, &[String]), Usage> {
    match words {
        [url, tool, rest @ ..] if url.contains("://") => Ok((Some(url), tool, rest)),
        [url] if url.contains("://") => Err(Usage(format!("name the tool to call on {url}"))),
        [tool, rest @ ..] => Ok((None, tool, rest)),
        [] => Err(Usage("name the tool to call".into())),
    }
}

/// The call a command line asks for.
struct Call<'a> {
    /// The server's URL, if it names one.
    url: Option<&'a str>,
    tool: &'a str,
    arguments: Map<String, Value>,
}

impl Call<'_> {
    fn of(args: &CallArgs) -> Result<Call<'_>, Usage> {
        let (url, tool, words) = split(&args.words)?;
        let mut arguments = arguments(args.args.as_deref())?;
        add_words(&mut arguments, words)?;
        Ok(Call { url, tool, arguments })
    }
}

pub(crate) async fn run(args: CallArgs) -> anyhow::Result<ExitCode> {
    let Call { url, tool, arguments } = match Call::of(&args) {
        Ok(call) => call,
        Err(usage) => return Ok(usage.exit()),
    };
    let source = match Source::open(url, &args.layer, &args.principal, &args.server, true).await {
        Ok(source) => source,
        Err(code) => return Ok(code),
    };
    let progress = Progress::new();
    let called = source.call(tool, arguments, &progress).await;
    progress.finish();
    source.close().await;
    let result = match called {
        Ok(result) => result,
        Err(message) => return Ok(failure(message)),
    };
    if args.raw {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else if let (Some(structured), false) = (&result.structured_content, result.is_error) {
        println!("{}", serde_json::to_string_pretty(structured)?);
    } else {
        for content in &result.content {
            match &content.kind {
                ContentKind::Text { text } => println!("{text}"),
                _ => println!("{}", serde_json::to_string(content)?),
            }
        }
    }
    Ok(if result.is_error { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

#[cfg(test)]
mod tests {
    use super::{add_words, split};
    use serde_json::{Map, json};

    fn words(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn words_give_strings_or_json_over_the_args_object() {
        let mut arguments = Map::from_iter([("times".to_string(), json!(1)), ("keep".to_string(), json!(true))]);
        add_words(&mut arguments, &words(&["text=a=b", "times:=3", "list:=[1]", "empty="])).expect("words");
        assert_eq!(json!(arguments), json!({"text": "a=b", "times": 3, "list": [1], "empty": "", "keep": true}));
        let refused = add_words(&mut Map::new(), &words(&["n:=nope"])).expect_err("not JSON");
        assert!(refused.0.starts_with("n:=nope: the value after := is not valid JSON"), "{}", refused.0);
        let refused = add_words(&mut Map::new(), &words(&["bare"])).expect_err("no =");
        assert_eq!(refused.0, "bare: an argument is NAME=VALUE or NAME:=JSON");
    }

    #[test]
    fn a_url_comes_first_and_a_tool_after_it() {
        let given = words(&["https://example.com/mcp", "echo", "text=hi"]);
        let (url, tool, rest) = split(&given).expect("a call");
        assert_eq!((url, tool, rest), (Some("https://example.com/mcp"), "echo", &given[2..]));
        let given = words(&["echo", "text=hi"]);
        assert_eq!(split(&given).expect("a call"), (None, "echo", &given[1..]));
        let only_url = split(&words(&["http://127.0.0.1/mcp"])).expect_err("no tool");
        assert_eq!(only_url.0, "name the tool to call on http://127.0.0.1/mcp");
    }
}
