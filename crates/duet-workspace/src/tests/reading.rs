//! The reading tools beyond a whole file: `read_file`'s head and tail (with and without a
//! final line break, and a tail of a file far too big to read whole), images and sounds as
//! media content, `read_multiple_files` with its failures in place and its bound,
//! `directory_tree` with its depth and its bound, and `describe_file`'s permissions and
//! times. What they refuse is in `confinement.rs`, with the other tools.

use super::*;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use duet::layer::ContentKind;

/// A result's blocks: text as it is, media as `<its MIME type>`.
fn blocks(result: &ToolResult) -> Vec<String> {
    let block = |kind: &ContentKind| match kind {
        ContentKind::Text { text } => text.clone(),
        ContentKind::Image { mime_type, .. } | ContentKind::Audio { mime_type, .. } => format!("<{mime_type}>"),
        other => panic!("{other:?}"),
    };
    result.content.iter().map(|c| block(&c.kind)).collect()
}

/// The text, then the note, of a ranged read.
fn read_part(result: &ToolResult) -> (String, String) {
    assert!(!result.is_error, "{result:?}");
    match blocks(result).as_slice() {
        [text, note] => (text.clone(), note.clone()),
        [note] => (String::new(), note.clone()),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn head_and_tail_with_and_without_a_final_newline() {
    let f = Fixture::with_files([
        ("ended.txt".to_string(), "1\n2\n3\n4\n5\n"),
        ("open.txt".to_string(), "1\n2\n3\n4\n5"),
        ("blank.txt".to_string(), "\n\n"),
        ("empty.txt".to_string(), ""),
    ]);
    let part = |path: &str, how: &str, n: usize| {
        let f = &f;
        let args = json!({"path": path, how: n});
        async move { read_part(&f.tool("read_file", args).await) }
    };
    for (file, last) in [("ended.txt", "4\n5\n"), ("open.txt", "4\n5")] {
        assert_eq!(part(file, "head", 2).await, ("1\n2\n".into(), format!("[{file}: lines 1 to 2 of 5]")));
        assert_eq!(part(file, "tail", 2).await, (last.into(), format!("[{file}: lines 4 to 5 of 5]")));
        let whole = std::fs::read_to_string(f.root.join(file)).unwrap();
        assert_eq!(part(file, "head", 9).await, (whole.clone(), format!("[{file}: lines 1 to 5 of 5]")));
        assert_eq!(part(file, "tail", 9).await, (whole, format!("[{file}: lines 1 to 5 of 5]")));
        assert_eq!(part(file, "tail", 1).await.0, last[2..]);
    }
    assert_eq!(part("blank.txt", "tail", 1).await, ("\n".into(), "[blank.txt: lines 2 to 2 of 2]".into()));
    for how in ["head", "tail"] {
        assert_eq!(part("empty.txt", how, 3).await, (String::new(), "[empty.txt is empty]".into()));
    }

    let both = f.tool("read_file", json!({"path": "open.txt", "head": 1, "tail": 1})).await;
    assert!(tool_error(&both).contains("not several"));
    let mixed = f.tool("read_file", json!({"path": "open.txt", "tail": 1, "start_line": 2})).await;
    assert!(tool_error(&mixed).contains("not several"));
    let zero = f.tool("read_file", json!({"path": "open.txt", "tail": 0})).await;
    assert!(tool_error(&zero).starts_with("Invalid arguments"));
    let binary = f.tool("read_file", json!({"path": "data/blob.bin", "tail": 1})).await;
    assert!(tool_error(&binary).contains("is a binary file"));
    let dir = f.tool("read_file", json!({"path": "src", "head": 1})).await;
    assert_eq!(tool_error(&dir), "src is a directory; list it with list_directory");
}

#[tokio::test]
async fn tail_reads_from_the_end_across_blocks() {
    let f = Fixture::new();
    // Lines of every length, so that blocks end anywhere in them; over the whole-read limit.
    let lines: Vec<String> = (0..40_000).map(|n| format!("{n} {}\n", "x".repeat(n % 97))).collect();
    let contents = lines.concat();
    assert!(contents.len() as u64 > crate::files::MAX_READ_BYTES);
    write(&f.root, "big.txt", &contents);
    for n in [1, 7, 1_000, 12_345] {
        let (text, note) = read_part(&f.tool("read_file", json!({"path": "big.txt", "tail": n})).await);
        assert_eq!(text, lines[lines.len() - n..].concat(), "tail {n}");
        assert_eq!(
            note,
            if n == 1 { "[big.txt: its last line]".into() } else { format!("[big.txt: its last {n} lines]") }
        );
    }
    let too_many = f.tool("read_file", json!({"path": "big.txt", "tail": 39_000})).await;
    assert!(tool_error(&too_many).contains("the last 39000 lines of big.txt are already over"));
}

#[tokio::test]
async fn tail_does_not_read_a_huge_file_whole() {
    let f = Fixture::new();
    // 64 GiB, nearly all of it a hole of NUL bytes with no line break: read forwards, it is
    // one line far over the limit; from the end, its last lines are right there.
    let path = f.root.join("huge.txt");
    let mut file = std::fs::File::create(&path).unwrap();
    use std::io::{Seek, SeekFrom, Write};
    file.write_all("a first line of text\n".repeat(1000).as_bytes()).unwrap();
    file.seek(SeekFrom::Start(64 << 30)).unwrap();
    file.write_all(b"\nsecond to last\nlast\n").unwrap();
    drop(file);
    let (text, note) = read_part(&f.tool("read_file", json!({"path": "huge.txt", "tail": 2})).await);
    assert_eq!((text.as_str(), note.as_str()), ("second to last\nlast\n", "[huge.txt: its last 2 lines]"));
    let forwards = f.tool("read_file", json!({"path": "huge.txt", "start_line": 1000})).await;
    assert!(tool_error(&forwards).contains("ask for fewer lines"));
}

#[tokio::test]
async fn images_and_audio_come_back_as_media() {
    let wav = b"RIFF\x24\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\x44\xac\0\0";
    let f = Fixture::new();
    write(&f.root, "art/logo.png", BLOB);
    write(&f.root, "art/chime.wav", wav);
    write(&f.root, "art/icon.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n");
    let logo = f.tool("read_file", json!({"path": "art/logo.png"})).await;
    assert!(!logo.is_error, "{logo:?}");
    let ContentKind::Image { data, mime_type } = &logo.content[0].kind else { panic!("{logo:?}") };
    assert_eq!((STANDARD.decode(data).unwrap().as_slice(), mime_type.as_str()), (BLOB, "image/png"));
    let chime = f.tool("read_file", json!({"path": "art/chime.wav"})).await;
    let ContentKind::Audio { data, mime_type } = &chime.content[0].kind else { panic!("{chime:?}") };
    assert_eq!(STANDARD.decode(data).unwrap(), wav);
    assert!(mime_type.starts_with("audio/"), "{mime_type}");
    // An SVG image is text; other binary files are still refused, pointing at their resource.
    assert!(text(&f.tool("read_file", json!({"path": "art/icon.svg"})).await).starts_with("<svg"));
    let blob = f.tool("read_file", json!({"path": "data/blob.bin"})).await;
    assert!(tool_error(&blob).contains(&f.uri("data/blob.bin")));
    // Media are read whole, so a big one is refused without the way out of reading it in parts.
    let mut big = BLOB.to_vec();
    big.resize(2 << 20, 0);
    write(&f.root, "art/poster.png", &big);
    let poster = tool_error(&f.tool("read_file", json!({"path": "art/poster.png"})).await);
    assert_eq!(
        poster,
        "art/poster.png is 2.0 MiB (2097152 bytes), over the 1.0 MiB limit of one read; an image file is read whole, \
         so this one cannot be read"
    );
}

#[tokio::test]
async fn read_multiple_files_reads_each_and_says_what_failed_in_place() {
    let f = Fixture::new();
    write(&f.root, "logo.png", BLOB);
    let paths = ["README.md", "missing.txt", "src", "data/blob.bin", "logo.png", "src/lib.rs"];
    let result = f.tool("read_multiple_files", json!({"paths": paths})).await;
    assert!(!result.is_error, "{result:?}");
    let blocks = blocks(&result);
    assert_eq!(blocks[..2], ["README.md:", "# Demo\nhello world\n"]);
    assert_eq!(blocks[2], "missing.txt: error: \"missing.txt\" does not exist in the workspace");
    assert_eq!(blocks[3], "src: error: src is a directory; list it with list_directory");
    assert!(blocks[4].starts_with("data/blob.bin: error: data/blob.bin is a binary file"), "{}", blocks[4]);
    assert_eq!(
        blocks[5..],
        ["logo.png:", "<image/png>", "src/lib.rs:", "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"]
    );
    let files = &result.structured_content.unwrap()["files"];
    assert_eq!(files[0], json!({"path": "README.md", "type": "text", "size": 19}));
    assert_eq!(files[1]["path"], "missing.txt");
    assert!(files[1]["error"].as_str().unwrap().contains("does not exist"));
    assert_eq!(files[4], json!({"path": "logo.png", "type": "image", "size": BLOB.len()}));

    let none = f.tool("read_multiple_files", json!({"paths": []})).await;
    assert!(tool_error(&none).starts_with("Invalid arguments"));
    let many: Vec<&str> = vec!["README.md"; 51];
    assert!(tool_error(&f.tool("read_multiple_files", json!({"paths": many})).await).starts_with("Invalid arguments"));
}

#[tokio::test]
async fn read_multiple_files_stops_returning_at_its_bound() {
    let f = Fixture::new();
    let chunk = "y".repeat(1000 * 1024);
    let paths: Vec<String> = (1..=5).map(|n| format!("part{n}.txt")).collect();
    for path in &paths {
        write(&f.root, path, &chunk);
    }
    let result = f.tool("read_multiple_files", json!({"paths": paths})).await;
    let files = result.structured_content.unwrap()["files"].clone();
    for n in 0..4 {
        assert_eq!(files[n]["size"], 1000 * 1024, "{n}");
    }
    assert_eq!(
        files[4]["error"],
        "part5.txt was not read: with it this call would return over 4.0 MiB; read it on its own"
    );
}

#[tokio::test]
async fn directory_tree_shows_sizes_to_a_depth_within_a_bound() {
    let f = Fixture::new();
    let shallow = f.tool("directory_tree", json!({"depth": 1})).await;
    assert_eq!(text(&shallow), "./\n  README.md (19 bytes)\n  data/\n  notes/\n  src/");
    let entries = &shallow.structured_content.as_ref().unwrap()["entries"];
    assert_eq!(entries[0], json!({"name": "README.md", "path": "README.md", "type": "file", "size": 19}));
    assert_eq!(entries[1], json!({"name": "data", "path": "data", "type": "directory"}), "not walked: no children");

    let deep = f.tool("directory_tree", json!({})).await;
    assert_eq!(
        text(&deep),
        "./\n  README.md (19 bytes)\n  data/\n    data/blob.bin (15 bytes)\n  notes/\n    notes/über café.txt (19 bytes)\n  \
         src/\n    src/lib.rs (48 bytes)\n    src/main.rs (48 bytes)"
    );
    let deep = deep.structured_content.unwrap();
    assert_eq!(deep["truncated"], false);
    assert_eq!(
        deep["entries"][3]["children"][1],
        json!({"name": "main.rs", "path": "src/main.rs", "type": "file", "size": 48})
    );
    // Neither ignored (target/, debug.log) nor hidden (.hidden/, .gitignore) entries.
    assert!(
        !deep.to_string().contains("target")
            && !deep.to_string().contains("hidden")
            && !deep.to_string().contains(".log")
    );

    let cut = f.tool("directory_tree", json!({"limit": 3})).await;
    assert_eq!(cut.structured_content.as_ref().unwrap()["truncated"], true);
    assert!(text(&cut).ends_with(
        "(the tree stops at 3 entries: there are more; show less depth, a directory further down, or raise limit)"
    ));
    let sub = f.tool("directory_tree", json!({"path": "src"})).await;
    assert_eq!(text(&sub), "src/\n  src/lib.rs (48 bytes)\n  src/main.rs (48 bytes)");
    let file = f.tool("directory_tree", json!({"path": "README.md"})).await;
    assert!(tool_error(&file).contains("is a file"));
    let flat = f.tool("directory_tree", json!({"depth": 0})).await;
    assert!(tool_error(&flat).starts_with("Invalid arguments"));
}

#[cfg(unix)]
#[tokio::test]
async fn describe_file_tells_permissions_and_times() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new();
    let script = f.root.join("src/main.rs");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    let described = f.tool("describe_file", json!({"path": "src/main.rs"})).await;
    let d = described.structured_content.clone().unwrap();
    assert_eq!((&d["mode"], &d["readonly"]), (&json!("0750"), &json!(false)));
    let rfc3339 = |v: &Value| v.as_str().is_some_and(|t| t.len() == 20 && t.ends_with('Z') && t.as_bytes()[10] == b'T');
    assert!(rfc3339(&d["modified"]) && rfc3339(&d["accessed"]), "{d}");
    // Created where the file system keeps it (statx on Linux); otherwise left out.
    assert!(d.get("created").is_none_or(rfc3339), "{d}");
    assert!(text(&described).contains("permissions: 0750\n"), "{}", text(&described));

    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o444)).unwrap();
    let described = f.tool("describe_file", json!({"path": "src/main.rs"})).await;
    assert_eq!(described.structured_content.as_ref().unwrap()["readonly"], true);
    assert!(text(&described).contains("permissions: 0444, read-only"), "{}", text(&described));
    let dir = f.tool("describe_file", json!({"path": "src"})).await.structured_content.unwrap();
    assert!(dir["mode"].as_str().unwrap().starts_with('0') && dir["readonly"] == false, "{dir}");
}
