//! `search_files` through the layer, and its search on its own: what it finds and skips,
//! its options, the same matches in the same order whatever its threads do, progress and
//! cancellation.

use super::*;
use crate::search::{Feedback, Found, Query, search};
use crate::tools::MAX_CONCURRENT_WALKS;
use std::sync::atomic::AtomicUsize;
use tokio_util::sync::CancellationToken;

/// The search of the whole workspace for `args` (tool arguments), with no one watching.
fn search_all(f: &Fixture, args: Value) -> Found {
    let query = Query::new(&serde_json::from_value(args).unwrap()).unwrap();
    let never = || false;
    let quiet = |_: usize, _: usize| {};
    search(&f.ws.shared, &f.ws.shared.roots.all(), &|_| true, &query, &Feedback { cancelled: &never, progress: &quiet })
}

/// (path, line) of every match.
fn places(found: &Found) -> Vec<(String, usize)> {
    found.matches.iter().map(|m| (m.path.clone(), m.line)).collect()
}

async fn structured(f: &Fixture, args: Value) -> Value {
    let result = f.tool("search_files", args).await;
    assert!(!result.is_error, "{result:?}");
    result.structured_content.unwrap()
}

#[tokio::test]
async fn search_files_finds_lines_and_skips_what_it_should() {
    let f = Fixture::new();
    // blob.bin contains "hello" but is binary; target/, debug.log and .hidden/ are left out.
    let hello = structured(&f, json!({"pattern": "hello"})).await;
    assert_eq!(
        hello["matches"],
        json!([{"path": "README.md", "line": 2, "text": "hello world"}]),
        "case-sensitive by default"
    );
    let insensitive = structured(&f, json!({"pattern": "hello", "case_insensitive": true})).await;
    let paths: Vec<_> = insensitive["matches"].as_array().unwrap().iter().map(|m| m["path"].clone()).collect();
    assert_eq!(paths, [json!("README.md"), json!("src/main.rs")]);
    assert_eq!(insensitive["truncated"], false);
    let globbed = structured(&f, json!({"pattern": "fn ", "glob": "lib.*", "path": "src"})).await;
    assert_eq!(
        globbed["matches"],
        json!([{"path": "src/lib.rs", "line": 1, "text": "pub fn add(a: i32, b: i32) -> i32 {"}])
    );
    let capped = structured(&f, json!({"pattern": ".", "max_results": 3})).await;
    assert_eq!((capped["matches"].as_array().unwrap().len(), &capped["truncated"]), (3, &json!(true)));
    let one_file = structured(&f, json!({"pattern": "a", "path": "src/lib.rs"})).await;
    assert_eq!(one_file["filesScanned"], 1);
    let bad = f.tool("search_files", json!({"pattern": "("})).await;
    assert!(tool_error(&bad).starts_with("invalid regular expression"));
}

#[tokio::test]
async fn binary_large_and_ignored_files_are_skipped() {
    let f = Fixture::with_files([
        ("nul_in_head.txt".to_string(), "needle\n\0\n"),
        ("ignored.log".to_string(), "needle\n"),
        ("target/deep/x.txt".to_string(), "needle\n"),
        (".hidden/x.txt".to_string(), "needle\n"),
        ("kept.txt".to_string(), "needle\n"),
    ]);
    write(&f.root, "big.txt", format!("needle\n{}", "x\n".repeat(8 * 1024 * 1024)));
    // Invalid UTF-8 in the head is binary too.
    write(&f.root, "latin1.txt", b"caf\xe9 needle\n");
    // Past the head the workspace's binary check does not look: such a file is text.
    let late = format!("{}needle\n\0\n", "a\n".repeat(8 * 1024));
    write(&f.root, "late_nul.txt", &late);
    let f = f.reopened();
    let found = search_all(&f, json!({"pattern": "needle"}));
    assert_eq!(places(&found), [("kept.txt".to_string(), 1), ("late_nul.txt".to_string(), 8193)]);
    // Every file that is not ignored is scanned, except the one over 16 MiB.
    let served = f.ws.resources(&Principal::local()).len();
    assert_eq!(found.files_scanned, served - 1, "{served} resources");
}

#[tokio::test]
async fn literal_and_case_insensitive_patterns() {
    let f = Fixture::with_files([("calls.txt".to_string(), "f(a.b)\nf(axb)\nF(A.B)\n")]);
    let found = |args| search_all(&f, args);
    let lines = |found: Found| found.matches.iter().map(|m| m.line).collect::<Vec<_>>();
    assert_eq!(lines(found(json!({"pattern": "f(a.b)", "literal": true}))), [1]);
    assert_eq!(lines(found(json!({"pattern": "f(a.b)", "literal": true, "case_insensitive": true}))), [1, 3]);
    assert_eq!(lines(found(json!({"pattern": r"f\(a.b\)"}))), [1, 2], "a regex by default");
    assert_eq!(lines(found(json!({"pattern": r"F\(A.B\)", "case_insensitive": true}))), [1, 2, 3]);
    // The same text as a regex does not even parse.
    let bad = f.tool("search_files", json!({"pattern": "f(a.b"})).await;
    assert!(tool_error(&bad).starts_with("invalid regular expression"));
    let literal = structured(&f, json!({"pattern": "f(a.b", "literal": true})).await;
    assert_eq!(literal["matches"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn lines_end_before_their_terminator() {
    let f = Fixture::with_files([("crlf.txt".to_string(), "first line\r\nlast\r\n")]);
    let found = search_all(&f, json!({"pattern": "^(first line|last)$"}));
    let texts: Vec<_> = found.matches.iter().map(|m| (m.line, m.text.as_str())).collect();
    assert_eq!(texts, [(1, "first line"), (2, "last")]);
    write(&f.root, "long.txt", format!("{}é\n", "é".repeat(600)));
    let f = f.reopened();
    let found = search_all(&f, json!({"pattern": "é$"}));
    assert_eq!(found.matches[0].text, format!("{}…", "é".repeat(500)));
}

#[tokio::test]
async fn context_lines_come_in_their_own_fields_and_in_the_text() {
    let word = |n: usize| if [1, 4, 6, 12].contains(&n) { "hit" } else { "line" };
    let f = Fixture::with_files([("b.txt".to_string(), "hit b\n")]);
    write(&f.root, "a.txt", (1..=12).map(|n| format!("{} {n}\n", word(n))).collect::<String>());
    let f = f.reopened();
    let args = json!({"pattern": "hit", "path": "a.txt", "before": 2, "after": 1});
    let found = structured(&f, args.clone()).await;
    let line = |n: usize, word: &str| json!({"line": n, "text": format!("{word} {n}")});
    assert_eq!(
        found["matches"],
        json!([
            {"path": "a.txt", "line": 1, "text": "hit 1", "before": [], "after": [line(2, "line")]},
            {"path": "a.txt", "line": 4, "text": "hit 4", "before": [line(2, "line"), line(3, "line")], "after": [line(5, "line")]},
            {"path": "a.txt", "line": 6, "text": "hit 6", "before": [line(4, "hit"), line(5, "line")], "after": [line(7, "line")]},
            {"path": "a.txt", "line": 12, "text": "hit 12", "before": [line(10, "line"), line(11, "line")], "after": []},
        ])
    );
    let result = f.tool("search_files", args).await;
    assert_eq!(
        text(&result),
        "a.txt:1: hit 1\na.txt-2- line 2\na.txt-3- line 3\na.txt:4: hit 4\na.txt-5- line 5\na.txt:6: hit 6\n\
         a.txt-7- line 7\n--\na.txt-10- line 10\na.txt-11- line 11\na.txt:12: hit 12\n(4 matching lines in 1 file scanned)"
    );
    // Across files, and without context: no separators, no context fields.
    let both = f.tool("search_files", json!({"pattern": "hit [16b]$", "after": 1})).await;
    assert!(
        text(&both)
            .starts_with("a.txt:1: hit 1\na.txt-2- line 2\n--\na.txt:6: hit 6\na.txt-7- line 7\n--\nb.txt:1: hit b\n")
    );
    let plain = structured(&f, json!({"pattern": "hit 1$"})).await;
    assert_eq!(plain["matches"], json!([{"path": "a.txt", "line": 1, "text": "hit 1"}]));
    // The cap counts matches; the last kept one still has its context, a match included.
    let capped = search_all(&f, json!({"pattern": "hit", "path": "a.txt", "after": 2, "max_results": 2}));
    assert!(capped.truncated);
    let after: Vec<_> = capped.matches[1].after.as_ref().unwrap().iter().map(|l| l.line).collect();
    assert_eq!((places(&capped).len(), after), (2, vec![5, 6]));
    // At most 20 lines either side.
    let refused = f.tool("search_files", json!({"pattern": "hit", "before": 21})).await;
    assert!(refused.is_error, "{refused:?}");
}

#[tokio::test]
async fn a_capped_search_keeps_the_first_matches_by_path_then_line() {
    // Files and directories whose names sort differently as strings and as paths.
    let mut files = Vec::new();
    for dir in ["a", "a-b", "a.b", "b", "b/c", "z"] {
        for n in 0..30 {
            files.push((format!("{dir}/f{n:02}.txt"), "one match\nno\nanother match\n"));
        }
    }
    let f = Fixture::with_files(files.clone());
    let mut expected: Vec<(String, usize)> =
        files.iter().flat_map(|(path, _)| [(path.clone(), 1), (path.clone(), 3)]).collect();
    expected.sort_by(|a, b| (Path::new(&a.0), a.1).cmp(&(Path::new(&b.0), b.1)));
    let all = search_all(&f, json!({"pattern": "match", "max_results": 5000}));
    assert_eq!(places(&all), expected);
    assert!(!all.truncated);
    for cap in [1, 2, 7, 61, 100, 359] {
        for _ in 0..5 {
            let capped = search_all(&f, json!({"pattern": "match", "max_results": cap}));
            assert_eq!(places(&capped), expected[..cap], "max_results {cap}");
            assert!(capped.truncated);
        }
    }
    let exact = search_all(&f, json!({"pattern": "match", "max_results": 360}));
    assert_eq!((exact.matches.len(), exact.truncated), (360, false));
}

#[tokio::test]
async fn a_search_reports_progress_and_stops_when_cancelled() {
    let f = Fixture::with_files((0..40).map(|i| (format!("many/{i:02}.txt"), "needle\n")));
    let scope = f.ws.shared.roots.all();
    let query =
        Query::new(&serde_json::from_value(json!({"pattern": "needle", "max_results": 1000})).unwrap()).unwrap();
    let (asked, reports) = (AtomicUsize::new(0), Mutex::new(Vec::new()));
    // Cancelled once asked five times: before entries and reads, so before five files are done.
    let cancelled = || asked.fetch_add(1, Ordering::Relaxed) >= 5;
    let progress = |files: usize, _matches: usize| reports.lock().unwrap().push(files);
    let found =
        search(&f.ws.shared, &scope, &|_| true, &query, &Feedback { cancelled: &cancelled, progress: &progress });
    assert!(found.cancelled);
    assert!(found.files_scanned < 5, "{}", found.files_scanned);
    let after_cancel = asked.load(Ordering::Relaxed);
    assert!(after_cancel < 5 + 8, "every walker thread stops at once: asked {after_cancel} times");
    assert!(reports.lock().unwrap().len() <= found.files_scanned, "no report once cancelled");

    reports.lock().unwrap().clear();
    let never = || false;
    let found = search(&f.ws.shared, &scope, &|_| true, &query, &Feedback { cancelled: &never, progress: &progress });
    assert_eq!((found.cancelled, found.matches.len(), found.files_scanned), (false, 40, 45));
    let reports = reports.into_inner().unwrap();
    assert_eq!(reports.first(), Some(&1), "progress comes with the first file");
    assert_eq!(reports.last(), Some(&45), "the last report counts every file");
    assert!(reports.is_sorted(), "{reports:?}");
}

#[tokio::test]
async fn a_cancelled_search_stops_reading_in_the_middle_of_a_file() {
    let f = Fixture::new();
    write(&f.root, "big.txt", "no match here\n".repeat(400_000));
    let f = f.reopened();
    let query = Query::new(&serde_json::from_value(json!({"pattern": "needle"})).unwrap()).unwrap();
    let asked = AtomicUsize::new(0);
    // The walk asks at the root and at the file; the search's reads ask after that.
    let cancelled = || asked.fetch_add(1, Ordering::Relaxed) >= 4;
    let quiet = |_: usize, _: usize| {};
    let scope = f.ws.shared.roots.resolve_scope("big.txt").unwrap();
    let found = search(&f.ws.shared, &scope, &|_| true, &query, &Feedback { cancelled: &cancelled, progress: &quiet });
    assert!(found.cancelled);
    assert_eq!(found.files_scanned, 0);
    // 5.6 MB read 64 KiB at a time would take about 85 reads.
    assert!(asked.load(Ordering::Relaxed) < 10, "{}", asked.load(Ordering::Relaxed));
}

/// At most [`MAX_CONCURRENT_WALKS`] searches and finds run at once, under one bound: with
/// every turn taken, either waits for one (here until its request is cancelled) without
/// scanning anything; once a turn is free, it runs.
#[tokio::test(flavor = "multi_thread")]
async fn searches_and_finds_past_the_limit_wait_for_a_turn() {
    let f = Fixture::new();
    for (tool, args) in [("search_files", json!({"pattern": "hello"})), ("find_files", json!({"glob": "*.md"}))] {
        let taken = f.ws.shared.walks.try_acquire_many(MAX_CONCURRENT_WALKS as u32).unwrap();
        let token = CancellationToken::new();
        let cancelled = RequestCx::builder(Principal::local()).cancel(token.clone()).build();
        let waiting = call_tool(&f.ws, tool, args.clone(), &cancelled);
        token.cancel();
        let waited = bounded(&format!("a {tool} without a turn"), waiting).await;
        assert_eq!(tool_error(&waited), format!("{tool} was cancelled while it waited for other searches to finish"));
        drop(taken);
        let ran = f.tool(tool, args).await;
        assert!(!ran.is_error, "{tool}: {ran:?}");
        assert!(text(&ran).contains("README.md"), "{tool}: {ran:?}");
    }
}

/// A search waiting for its turn holds no thread of the blocking pool: with a pool of one
/// thread and every turn taken, other file work still runs while it waits.
#[test]
fn a_search_waiting_for_its_turn_holds_no_blocking_thread() {
    let runtime = tokio::runtime::Builder::new_multi_thread().max_blocking_threads(1).enable_all().build().unwrap();
    runtime.block_on(async {
        let f = Fixture::new();
        let _taken = f.ws.shared.walks.try_acquire_many(MAX_CONCURRENT_WALKS as u32).unwrap();
        let token = CancellationToken::new();
        let cancelled = RequestCx::builder(Principal::local()).cancel(token.clone()).build();
        let waiting = call_tool(&f.ws, "search_files", json!({"pattern": "hello"}), &cancelled);
        let listing = async {
            let listed = f.tool("list_directory", json!({})).await;
            token.cancel();
            listed
        };
        let (waited, listed) =
            bounded("a listing beside a waiting search", async { tokio::join!(waiting, listing) }).await;
        assert!(!listed.is_error, "{listed:?}");
        assert!(tool_error(&waited).contains("while it waited"));
    });
}

#[tokio::test]
async fn a_pattern_too_large_to_compile_is_refused() {
    let f = Fixture::new();
    let huge = f.tool("search_files", json!({"pattern": r"(?:[\w\s]{1,20}){1,100}\d"})).await;
    let error = tool_error(&huge);
    assert!(error.contains("is too large to compile: it would take over 10.0 MiB"), "{error}");
}
