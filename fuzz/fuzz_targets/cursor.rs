//! Cursor pagination. Input: `KIND OFFSET LEN PAGE_SIZE` on the first line, then a cursor
//! string as a client sends it. Any cursor is either refused (-32602 "Invalid cursor") or
//! names a page inside the list, no longer than a page, whose next cursor starts where it
//! ends; the cursor of any offset, once encoded, names the page at that offset (or the empty
//! page past the end), and is refused by a list of another kind.
#![no_main]

use duet::fuzzing::{encode_cursor, paginate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let (numbers, cursor) = text.split_once('\n').unwrap_or((text, ""));
    let [kind, offset, len, page_size] = numbers.split_ascii_whitespace().collect::<Vec<_>>()[..] else { return };
    let (Ok(offset), Ok(len), Ok(page_size)) = (offset.parse::<usize>(), len.parse::<usize>(), page_size.parse())
    else {
        return;
    };
    match paginate(kind, len, Some(cursor), page_size) {
        Ok((page, next)) => {
            assert!(page.start <= page.end && page.end <= len, "{page:?} of {len}");
            assert!(page_size == 0 || page.len() <= page_size, "{page:?} longer than {page_size}");
            if let Some(next) = next {
                let (following, _) = paginate(kind, len, Some(&next), page_size).expect("our cursor");
                assert_eq!(following.start, page.end);
            }
        }
        Err(error) => assert_eq!((error.code, error.message.as_str()), (-32602, "Invalid cursor")),
    }
    let encoded = encode_cursor(kind, offset);
    let (page, _) = paginate(kind, len, Some(&encoded), page_size).expect("an encoded cursor is valid");
    assert_eq!(page.start, offset.min(len), "the cursor of offset {offset}");
    let other = format!("{kind}-other");
    assert!(paginate(&other, len, Some(&encoded), page_size).is_err(), "a {kind} cursor names no {other} page");
});
