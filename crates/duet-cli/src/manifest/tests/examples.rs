//! The manifests under `examples/manifests` load and work.

use super::*;
use crate::manifest::load;
use duet::layer::ResourceBody;
use std::path::PathBuf;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/manifests")
}

#[tokio::test]
async fn the_example_manifests_load() {
    let git = load(&examples().join("git-tools.toml")).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = git.tools(&Principal::local()).iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["git_status", "git_log", "git_show_file"]);
    let message = failed(call(&git, "git_show_file", json!({"revision": "--output=x", "path": "a"})).await);
    assert!(message.starts_with("Invalid arguments"), "{message}");

    let notes = load(&examples().join("notes.toml")).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = notes.tools(&Principal::local()).iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["list_notes", "read_note", "delete_note"]);
    let listed = ok(call(&notes, "list_notes", json!({})).await);
    assert!(listed.lines().any(|l| l == "welcome.md"), "{listed}");
    let welcome = ok(call(&notes, "read_note", json!({"name": "welcome.md"})).await);
    assert!(welcome.starts_with("# Welcome"));
    let message = failed(call(&notes, "read_note", json!({"name": "../notes.toml"})).await);
    assert!(message.starts_with("Invalid arguments"), "{message}");
    // Deleting asks first (and is not answered here).
    let asked = notes
        .call_tool("delete_note", object(json!({"name": "ideas.md"})), cx_with(json!({"elicitation": {}}), json!({})))
        .await;
    assert!(matches!(asked, Ok(Reply::InputRequired(_))), "{asked:?}");
    let contents = read(&notes, "notes://welcome").await;
    assert!(matches!(&contents[0].body, ResourceBody::Text(t) if t.starts_with("# Welcome")));
    assert_eq!(notes.prompts(&Principal::local())[0].name, "summarize_note");
}
