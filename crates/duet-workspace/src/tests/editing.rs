//! `edit_file` with several edits: a dry run shows their unified diff and neither asks nor
//! writes; a confirmed run asks once about all of them and writes them in one step; one
//! edit that does not apply stops them all; and text that is not there exactly is matched
//! line by line with whitespace ignored, keeping the file's indentation, and said so.

use super::writing::{YES, answer, ask, asking, call, confirmed, question, read};
use super::*;

const LIB: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";

fn two_edits(dry_run: bool) -> Value {
    json!({
        "path": "src/lib.rs",
        "edits": [
            {"old_text": "a + b", "new_text": "a.saturating_add(b)"},
            {"old_text": "pub fn add", "new_text": "pub fn sum"},
        ],
        "dry_run": dry_run,
    })
}

#[tokio::test]
async fn a_dry_run_shows_the_diff_and_a_confirmed_run_writes_every_edit() {
    let f = Fixture::writable();
    // The dry run neither asks nor writes, even for a client that could ask.
    let dry = match call(&f, "edit_file", &two_edits(true), &asking()).await {
        Reply::Complete(result) => result,
        Reply::InputRequired(asked) => panic!("a dry run asked {asked:?}"),
    };
    let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n-pub fn add(a: i32, b: i32) -> i32 {\n-    a + b\n\
                +pub fn sum(a: i32, b: i32) -> i32 {\n+    a.saturating_add(b)\n }\n";
    assert_eq!(
        text(&dry),
        format!(
            "{diff}\n(dry run: nothing was written; this would apply 2 edits to src/lib.rs: 1. 1 occurrence (at line \
             2); 2. 1 occurrence (at line 1))"
        )
    );
    let report = dry.structured_content.unwrap();
    assert_eq!((&report["dryRun"], &report["diff"], &report["replacements"]), (&json!(true), &json!(diff), &json!(2)));
    assert_eq!(read(&f, "src/lib.rs"), LIB);

    let asked = ask(&f, "edit_file", &two_edits(false)).await;
    assert_eq!(
        question(&asked),
        "Apply 2 edits to src/lib.rs?\n\n1. Replace 1 occurrence (at line 2)\n\n- a + b\n+ a.saturating_add(b)\n\n\
         2. Replace 1 occurrence (at line 1)\n\n- pub fn add\n+ pub fn sum"
    );
    assert_eq!(read(&f, "src/lib.rs"), LIB, "nothing is written before the answer");
    let done = answer(&f, "edit_file", &two_edits(false), &asked, YES()).await;
    assert_eq!(text(&done), "Applied 2 edits to src/lib.rs: 1. 1 occurrence (at line 2); 2. 1 occurrence (at line 1)");
    let report = done.structured_content.unwrap();
    assert_eq!((&report["dryRun"], report.get("diff"), &report["lines"]), (&json!(false), None, &json!([2, 1])));
    assert_eq!(read(&f, "src/lib.rs"), "pub fn sum(a: i32, b: i32) -> i32 {\n    a.saturating_add(b)\n}\n");
}

#[tokio::test]
async fn one_edit_that_does_not_apply_stops_them_all() {
    let f = Fixture::writable();
    let edits = |second: Value, dry_run: bool| json!({"path": "src/lib.rs", "edits": [{"old_text": "a + b", "new_text": "b + a"}, second], "dry_run": dry_run});
    for dry_run in [false, true] {
        let missing = edits(json!({"old_text": "nowhere", "new_text": "x"}), dry_run);
        assert_eq!(
            tool_error(&f.call_with_elicitation("edit_file", missing).await),
            "edits[1]: old_text was not found in src/lib.rs, neither exactly nor with whitespace ignored; nothing was \
             changed"
        );
        // The second edit sees what the first made: "a + b" is gone by then.
        let again = edits(json!({"old_text": "a + b", "new_text": "x"}), dry_run);
        assert!(
            tool_error(&f.call_with_elicitation("edit_file", again).await)
                .starts_with("edits[1]: old_text was not found")
        );
        let same = edits(json!({"old_text": "b", "new_text": "b"}), dry_run);
        assert_eq!(
            tool_error(&f.call_with_elicitation("edit_file", same).await),
            "edits[1]: old_text and new_text are the same, so there is nothing to change"
        );
    }
    assert_eq!(read(&f, "src/lib.rs"), LIB);

    // One form or the other, whole.
    for (args, why) in [
        (json!({"path": "src/lib.rs", "old_text": "a", "new_text": "b", "edits": []}), "not both"),
        (json!({"path": "src/lib.rs", "edits": []}), "edits is empty"),
        (json!({"path": "src/lib.rs", "old_text": "a"}), "new_text is missing"),
        (json!({"path": "src/lib.rs"}), "give old_text and new_text, or edits"),
        (
            json!({"path": "src/lib.rs", "replace_all": true, "edits": [{"old_text": "a", "new_text": "b"}]}),
            "set it on each edit",
        ),
    ] {
        let message = tool_error(&f.call_with_elicitation("edit_file", args.clone()).await);
        assert!(message.contains(why), "{args}: {message}");
    }
    // Each edit may replace every occurrence of its own.
    let all = json!({"path": "src/lib.rs", "edits": [{"old_text": "i32", "new_text": "i64", "replace_all": true}]});
    let done = confirmed(&f, "edit_file", all).await;
    assert_eq!(done.structured_content.unwrap()["edits"][0]["replacements"], 3);
    assert_eq!(read(&f, "src/lib.rs"), LIB.replace("i32", "i64"));
}

#[tokio::test]
async fn text_not_there_exactly_matches_with_whitespace_ignored_and_keeps_the_indentation() {
    let f = Fixture::writable();
    let args = json!({
        "path": "src/main.rs",
        "old_text": "println!(\"Hello,  workspace\"); ",
        "new_text": "println!(\"Hello\");\nprintln!(\"again\");",
    });
    let asked = ask(&f, "edit_file", &args).await;
    let loose = "(old_text matched only with whitespace ignored; the new text takes the file's indentation)";
    assert_eq!(
        question(&asked),
        format!(
            "Replace 1 occurrence in src/main.rs (at line 2) {loose}?\n\n-     println!(\"Hello, workspace\");\n\
             +     println!(\"Hello\");\n+     println!(\"again\");"
        )
    );
    let done = answer(&f, "edit_file", &args, &asked, YES()).await;
    assert_eq!(text(&done), format!("Replaced 1 occurrence in src/main.rs (at line 2) {loose}"));
    assert_eq!(done.structured_content.unwrap()["edits"][0]["whitespaceIgnored"], true);
    assert_eq!(read(&f, "src/main.rs"), "fn main() {\n    println!(\"Hello\");\n    println!(\"again\");\n}\n");

    // Windows line breaks: matched and kept.
    write(&f.root, "crlf.txt", "one\r\ntwo\r\nthree\r\n");
    confirmed(&f, "edit_file", json!({"path": "crlf.txt", "old_text": "one\ntwo\n", "new_text": "1\n2\n"})).await;
    assert_eq!(read(&f, "crlf.txt"), "1\r\n2\r\nthree\r\n");
}
