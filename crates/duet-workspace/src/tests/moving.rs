//! `create_directory` and `move_file`: each asks first and acts only on a yes; a directory
//! that exists is no error; a move never replaces a file unless told to, and asks again if
//! either file changed while the user was deciding. What they refuse (outside the roots,
//! ignored, `.git`, links that escape) is in `writing.rs`, with the other write tools.

use super::writing::{README, YES, answer, answering, ask, asking, call, confirmed, question, read};
use super::*;

#[tokio::test]
async fn create_directory_asks_then_creates_it_and_its_parents() {
    let f = Fixture::writable();
    let args = json!({"path": "docs/guides/new"});
    let asked = ask(&f, "create_directory", &args).await;
    assert_eq!(question(&asked), "Create the directory docs/guides/new?");
    assert!(!f.root.join("docs").exists(), "nothing is created before the answer");
    let refused = answer(&f, "create_directory", &args, &asked, json!({"action": "decline"})).await;
    assert_eq!(
        tool_error(&refused),
        "Tool create_directory did not run: the user declined; docs/guides/new was not created"
    );
    assert!(!f.root.join("docs").exists());

    let done = confirmed(&f, "create_directory", args.clone()).await;
    assert_eq!(text(&done), "Created docs/guides/new");
    let uri = f.uri("docs/guides/new");
    assert_eq!(done.structured_content.unwrap(), json!({"path": "docs/guides/new", "uri": uri, "created": true}));
    assert!(f.root.join("docs/guides/new").is_dir());
    // There already: nothing to ask.
    let again = match call(&f, "create_directory", &args, &asking()).await {
        Reply::Complete(result) => result,
        Reply::InputRequired(asked) => panic!("asked about a directory that exists: {asked:?}"),
    };
    assert_eq!(text(&again), "docs/guides/new exists already");
    assert_eq!(again.structured_content.unwrap()["created"], false);
    let file = f.call_with_elicitation("create_directory", json!({"path": "README.md"})).await;
    assert_eq!(tool_error(&file), "\"README.md\" is a file; name a directory");
}

#[tokio::test]
async fn move_file_asks_then_moves_creating_directories() {
    let f = Fixture::writable();
    let args = json!({"source": "README.md", "destination": "docs/readme.md"});
    let asked = ask(&f, "move_file", &args).await;
    assert_eq!(question(&asked), "Move README.md to docs/readme.md?");
    assert_eq!(read(&f, "README.md"), README, "nothing moves before the answer");
    let done = answer(&f, "move_file", &args, &asked, YES()).await;
    assert_eq!(text(&done), "Moved README.md to docs/readme.md");
    assert_eq!(
        done.structured_content.unwrap(),
        json!({"source": "README.md", "destination": "docs/readme.md", "uri": f.uri("docs/readme.md"), "replaced": false})
    );
    assert!(!f.root.join("README.md").exists());
    assert_eq!(read(&f, "docs/readme.md"), README);
    let gone = f.call_with_elicitation("move_file", args).await;
    assert_eq!(tool_error(&gone), "\"README.md\" does not exist in the workspace; nothing was moved");
}

#[tokio::test]
async fn move_file_replaces_a_file_only_when_told_and_asks_again_if_it_changed() {
    let f = Fixture::writable();
    let lib = read(&f, "src/lib.rs");
    let plain = json!({"source": "src/lib.rs", "destination": "src/main.rs"});
    assert_eq!(
        tool_error(&f.call_with_elicitation("move_file", plain).await),
        "src/main.rs exists already; set overwrite to replace it; nothing was moved"
    );
    let same = json!({"source": "src/lib.rs", "destination": "./src/lib.rs", "overwrite": true});
    assert!(tool_error(&f.call_with_elicitation("move_file", same).await).contains("is already there"));

    let args = json!({"source": "src/lib.rs", "destination": "src/main.rs", "overwrite": true});
    let asked = ask(&f, "move_file", &args).await;
    assert_eq!(question(&asked), "Move src/lib.rs to src/main.rs, replacing the file there (48 bytes)?");
    // The file to be replaced changes while the user decides: the yes was about the old one.
    write(&f.root, "src/main.rs", "fn main() { /* edited meanwhile */ }\n");
    let again = match call(&f, "move_file", &args, &answering(&asked, YES())).await {
        Reply::InputRequired(again) => again,
        Reply::Complete(result) => panic!("a yes to an old question moved: {result:?}"),
    };
    assert_eq!(read(&f, "src/lib.rs"), lib);
    assert_eq!(question(&again), "Move src/lib.rs to src/main.rs, replacing the file there (37 bytes)?");
    let done = answer(&f, "move_file", &args, &again, YES()).await;
    assert_eq!(text(&done), "Moved src/lib.rs to src/main.rs, replacing the file there");
    assert_eq!(done.structured_content.unwrap()["replaced"], true);
    assert_eq!(read(&f, "src/main.rs"), lib);
    assert!(!f.root.join("src/lib.rs").exists());
}
