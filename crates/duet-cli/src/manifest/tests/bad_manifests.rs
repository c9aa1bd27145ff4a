//! Manifests that fail to load: each check's error names the file, the line of the field
//! and what is wrong.

use super::*;
use crate::manifest::{ManifestError, load};

/// The error for a manifest, and the line of the first occurrence of `at` in it.
fn error(body: &str, at: &str) -> (String, usize) {
    error_in(Path::new("."), body, at)
}

fn error_in(dir: &Path, body: &str, at: &str) -> (String, usize) {
    let text = manifest(body);
    let line = text.lines().position(|l| l.contains(at)).map(|i| i + 1);
    let line = line.unwrap_or_else(|| panic!("{at:?} is not in the manifest"));
    match parse(&text, &dir.join("duet.toml")) {
        Ok(_) => panic!("the manifest should be rejected:\n{text}"),
        Err(e) => (e.to_string(), line),
    }
}

/// Asserts the error names `duet.toml:LINE:` (LINE: where `at` is written) and each of `says`.
fn assert_rejected(body: &str, at: &str, says: &[&str]) {
    let (message, line) = error(body, at);
    assert_located(&message, line, says);
}

pub(super) fn assert_located(message: &str, line: usize, says: &[&str]) {
    assert!(message.contains(&format!("duet.toml:{line}:")), "{message:?} should point at line {line}");
    for s in says {
        assert!(message.contains(s), "{message:?} should say {s:?}");
    }
}

#[test]
fn load_names_a_file_it_cannot_read() {
    let err = load(Path::new("/definitely/not/here/duet.toml")).err();
    assert!(matches!(&err, Some(ManifestError::Read { .. })), "{err:?}");
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.starts_with("cannot read /definitely/not/here/duet.toml"), "{message}");
}

#[test]
fn a_toml_syntax_error_has_a_line() {
    assert_rejected("[[tool]\nname = 1\n", "[[tool]", &[]);
}

#[test]
fn unknown_keys_are_errors() {
    let body = "\n[[tool]]\nname = \"t\"\ndescription = \"d\"\ncomand = [\"ls\"]\n";
    assert_rejected(body, "comand", &[r#"tool "t": unknown field `comand`"#]);
    assert_rejected("\n[server2]\n", "[server2]", &["unknown field `server2`"]);
    let body = "\n[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"ls\", \"{a}\"]\n[tool.args.a]\ntype = \"string\"\nrequird = true\n";
    assert_rejected(body, "requird", &[r#"tool "t": unknown field `requird`"#]);
    let body = "\n[[resource]]\nuri = \"test://a\"\nname = \"a\"\nmime = \"text/plain\"\n";
    assert_rejected(body, "mime", &[r#"resource "test://a": unknown field `mime`"#]);
}

#[test]
fn a_missing_field_points_at_its_table() {
    assert_rejected(
        "\n[[tool]]\nname = \"t\"\ncommand = [\"ls\"]\n",
        "[[tool]]",
        &[r#"tool "t": missing field `description`"#],
    );
    let body = "\n[[prompt]]\nname = \"p\"\ndescription = \"d\"\ntemplate = \"x\"\n[[resource]]\nname = \"a\"\n";
    assert_rejected(body, "[[resource]]", &["resource #1: missing field `uri`"]);
}

/// A tool named `deploy` with these extra lines.
fn tool(extra: &str) -> String {
    format!("\n[[tool]]\nname = \"deploy\"\ndescription = \"ships it\"\n{extra}\n")
}

#[test]
fn unknown_placeholders_are_errors() {
    let body = tool("command = [\"git\", \"push\", \"origin\", \"{branch}\"]");
    assert_rejected(
        &body,
        "command",
        &[r#"tool "deploy": unknown argument placeholder {branch} in command (declare it under [tool.args.branch])"#],
    );
    let body =
        tool("command = [\"rm\", \"{path}\"]\nconfirm = \"Delete {paht}?\"\n[tool.args.path]\ntype = \"string\"");
    assert_rejected(&body, "confirm", &[r#"tool "deploy""#, "{paht} in confirm"]);
    let body = tool("command = [\"echo\", \"{unclosed\"]");
    assert_rejected(&body, "command", &[r#"tool "deploy""#, "unclosed placeholder {unclosed"]);
}

#[test]
fn declared_arguments_must_be_used() {
    let body = tool("command = [\"ls\"]\n[tool.args.path]\ntype = \"string\"");
    assert_rejected(
        &body,
        "[tool.args.path]",
        &[r#"tool "deploy""#, "argument path is declared but command never uses it"],
    );
}

#[test]
fn the_command_must_name_a_fixed_program() {
    assert_rejected(&tool("command = []"), "command", &[r#"tool "deploy""#, "command is empty"]);
    let body = tool("command = [\"{prog}\"]\n[tool.args.prog]\ntype = \"string\"");
    assert_rejected(&body, "command", &[r#"tool "deploy""#, "must be fixed text"]);
}

#[test]
fn tool_names_follow_the_rule_and_are_unique() {
    let body = "\n[[tool]]\nname = \"bad name\"\ndescription = \"d\"\ncommand = [\"ls\"]\n";
    assert_rejected(body, "bad name", &[r#"tool "bad name": invalid name"#]);
    let body = format!(
        "{}{}",
        tool("command = [\"ls\"]"),
        "[[tool]]\nname = \"deploy\" # again\ndescription = \"d\"\ncommand = [\"ls\"]\n"
    );
    assert_rejected(&body, "# again", &[r#"tool "deploy" is declared twice"#]);
}

/// The `deploy` tool with one argument, `name`, declared by `lines` and used by its command.
fn with_argument(name: &str, lines: &str) -> String {
    tool(&format!("command = [\"ls\", \"{{{name}}}\"]\n[tool.args.{name}]\n{lines}"))
}

#[test]
fn argument_types_are_checked() {
    let body = with_argument("n", "type = \"int\"");
    assert_rejected(&body, "type = \"int\"", &[r#"tool "deploy": unknown variant `int`"#, "`integer`"]);
    // (the argument, its lines, where the error points, what is wrong with the argument)
    for (name, lines, at, problem) in [
        ("n", "type = \"integer\"\ndefault = \"ten\"", "default", "default \"ten\" is not an integer"),
        ("n", "type = \"array\"\ndefault = [1]", "default", "default [1] is not an array of strings"),
        ("b", "type = \"boolean\"\nenum = [true]", "enum", "enum does not apply to boolean"),
        ("s", "type = \"string\"\nminimum = 1", "minimum", "minimum applies to integer and number arguments"),
        ("n", "type = \"integer\"\nminimum = 5\nmaximum = 1", "maximum", "maximum 1 is below minimum 5"),
        ("s", "type = \"string\"\npattern = \"([a-z\"", "pattern", "invalid pattern"),
        ("s", "type = \"string\"\nenum = [\"a\", 2]", "enum", "enum value 2 is not a string"),
        (
            "s",
            "type = \"string\"\nenum = [\"a\"]\ndefault = \"b\"",
            "default",
            "default \"b\" is not one of the enum values",
        ),
        ("n", "type = \"integer\"\nmaximum = 3\ndefault = 4", "default", "default 4 is above the maximum"),
    ] {
        let says = format!(r#"tool "deploy": argument {name}: {problem}"#);
        assert_rejected(&with_argument(name, lines), at, &[&says]);
    }
}

#[test]
fn a_required_argument_has_no_default() {
    let body = with_argument("n", "type = \"integer\"\nrequired = true\ndefault = 3");
    assert_rejected(&body, "default", &[r#"tool "deploy": argument n: a required argument cannot have a default"#]);
}

#[test]
fn array_arguments_fill_whole_elements() {
    let body = tool("command = [\"ls\", \"--files={files}\"]\n[tool.args.files]\ntype = \"array\"");
    assert_rejected(&body, "command", &[r#"tool "deploy""#, "array argument files must be a whole command element"]);
}

#[test]
fn timeout_is_positive() {
    assert_rejected(
        &tool("command = [\"ls\"]\ntimeout = 0"),
        "timeout",
        &[r#"tool "deploy""#, "timeout must be at least 1"],
    );
    assert_rejected(&tool("command = [\"ls\"]\ntimeout = -5"), "timeout", &["invalid value"]);
}

#[test]
fn cwd_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let (message, line) = error_in(dir.path(), &tool("command = [\"ls\"]\ncwd = \"nowhere\""), "cwd");
    assert_located(&message, line, &[r#"tool "deploy""#, "cwd \"nowhere\" is not a directory"]);
}

#[test]
fn env_names_are_checked() {
    assert_rejected(
        &tool("command = [\"ls\"]\nenv = [\"A=B\"]"),
        "env",
        &[r#"tool "deploy""#, "invalid variable name \"A=B\""],
    );
}

#[test]
fn resources_need_exactly_one_source() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a").unwrap();
    let both = "\n[[resource]]\nuri = \"test://a\"\nname = \"a\"\ntext = \"x\"\nfile = \"a.txt\"\n";
    let (message, line) = error_in(dir.path(), both, "file");
    assert_located(&message, line, &[r#"resource "test://a": give either text or file, not both"#]);
    let neither = "\n[[resource]]\nuri = \"test://a\"\nname = \"a\"\n";
    assert_rejected(neither, "[[resource]]", &[r#"resource "test://a": give its contents"#]);
}

#[test]
fn file_resources_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let body = "\n[[resource]]\nuri = \"test://a\"\nname = \"a\"\nfile = \"missing.txt\"\n";
    let (message, line) = error_in(dir.path(), body, "file");
    assert_located(&message, line, &[r#"resource "test://a": file "missing.txt" is not a readable file"#]);
}

#[test]
fn resource_uris_are_checked_and_unique() {
    let body = "\n[[resource]]\nuri = \"no-scheme\"\nname = \"a\"\ntext = \"x\"\n";
    assert_rejected(body, "no-scheme", &[r#"resource "no-scheme": uri must be an absolute URI"#]);
    let one = "[[resource]]\nuri = \"test://a\"\nname = \"a\"\ntext = \"x\"\n";
    let body = format!("\n{one}{}", one.replace("uri = \"test://a\"", "uri = \"test://a\" # again"));
    assert_rejected(&body, "# again", &[r#"resource "test://a" is declared twice"#]);
}

#[test]
fn prompts_are_checked() {
    let body = "\n[[prompt]]\nname = \"p\"\ndescription = \"d\"\ntemplate = \"Hi {who}\"\n";
    assert_rejected(body, "template", &[r#"prompt "p": unknown argument placeholder {who} in template"#]);
    let body = "\n[[prompt]]\nname = \"p\"\ndescription = \"d\"\ntemplate = \"Hi\"\n[prompt.args.who]\n";
    assert_rejected(body, "[prompt.args.who]", &[r#"prompt "p": argument who is declared but template never uses it"#]);
    let one = "[[prompt]]\nname = \"p\"\ndescription = \"d\"\ntemplate = \"Hi\"\n";
    let body = format!("\n{one}{}", one.replace("name = \"p\"", "name = \"p\" # again"));
    assert_rejected(&body, "# again", &[r#"prompt "p" is declared twice"#]);
}

#[test]
fn roles_are_named() {
    assert_rejected(
        &tool("command = [\"ls\"]\nroles = [\"\"]"),
        "roles",
        &[r#"tool "deploy": roles: a role name is empty"#],
    );
}

#[test]
fn header_mirrored_arguments_follow_the_rules() {
    let tool = |args: &str| {
        format!("\n[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"echo\", \"{{a}}\", \"{{b}}\"]\n{args}")
    };
    let number = tool("[tool.args.a]\ntype = \"number\"\nheader = \"Weight\"\n[tool.args.b]\ntype = \"string\"\n");
    assert_rejected(&number, "header = \"Weight\"", &[r#"tool "t": argument a: "#, "only string, integer and boolean"]);
    let spaced = tool("[tool.args.a]\ntype = \"string\"\nheader = \"My Region\"\n[tool.args.b]\ntype = \"string\"\n");
    assert_rejected(&spaced, "header = \"My Region\"", &["is not an HTTP header name: ' ' is not allowed"]);
    let twice = tool(
        "[tool.args.a]\ntype = \"string\"\nheader = \"Region\"\n[tool.args.b]\ntype = \"string\"\nheader = \"REGION\"\n",
    );
    assert_rejected(&twice, "[tool.args.a]", &[r#"tool "t": "#, "repeats", "ignoring case"]);
}

#[test]
fn a_default_or_choice_that_would_be_an_option_is_refused() {
    let tool = |command: &str, arg: &str| {
        format!(
            "\n[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = {command}\n[tool.args.a]\ntype = \"string\"\n{arg}\n"
        )
    };
    let says = [r#"tool "t": argument a: default value "-la" starts with "-""#, "allow_leading_dash = true"];
    assert_rejected(&tool(r#"["ls", "{a}"]"#, r#"default = "-la""#), "default", &says);
    let says = [r#"argument a: enum value "-R" starts with "-""#];
    assert_rejected(&tool(r#"["ls", "{a}x"]"#, r#"enum = ["x", "-R"]"#), "enum", &says);
    // Where it cannot begin an option, or where the manifest says it is one, it loads.
    for (command, arg) in [
        (r#"["ls", "--", "{a}"]"#, r#"default = "-la""#),
        (r#"["ls", "x{a}"]"#, r#"default = "-la""#),
        (r#"["ls", "{a}"]"#, "default = \"-la\"\nallow_leading_dash = true"),
    ] {
        registry(&tool(command, arg));
    }
}
