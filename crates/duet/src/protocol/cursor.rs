//! Cursor pagination of the four list methods. A cursor is the URL-safe base64 (no
//! padding) of `{"k": kind, "o": offset}`; it is opaque to clients.
// Its `pub` items are the fuzz targets' (`crate::fuzzing`, feature `fuzzing`); without
// that feature nothing outside the crate reaches them.
#![cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use duet_wire::jsonrpc::RpcError;
use serde_json::{Value, json};
use std::ops::Range;

/// The positions in a list of `len` items of the page `cursor` names, and the cursor of the
/// next page. `page_size` 0 means one page with everything.
pub fn paginate(
    kind: &str,
    len: usize,
    cursor: Option<&str>,
    page_size: usize,
) -> Result<(Range<usize>, Option<String>), RpcError> {
    let offset = match cursor {
        None => 0,
        Some(c) => decode(kind, c).ok_or_else(|| RpcError::invalid_params("Invalid cursor"))?,
    };
    let start = offset.min(len);
    let end = if page_size == 0 { len } else { start.saturating_add(page_size).min(len) };
    let next = (end < len).then(|| encode(kind, end));
    Ok((start..end, next))
}

/// The cursor of the page of a `kind` list that starts at `offset`.
pub fn encode(kind: &str, offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(json!({"k": kind, "o": offset}).to_string())
}

fn decode(kind: &str, cursor: &str) -> Option<usize> {
    let raw = URL_SAFE_NO_PAD.decode(cursor.trim_end_matches('=')).ok()?;
    let v: Value = serde_json::from_slice(&raw).ok()?;
    if v.get("k")?.as_str()? != kind {
        return None;
    }
    usize::try_from(v.get("o")?.as_u64()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_concatenate() {
        let (p1, c1) = paginate("tools", 7, None, 3).unwrap();
        let (p2, c2) = paginate("tools", 7, c1.as_deref(), 3).unwrap();
        let (p3, c3) = paginate("tools", 7, c2.as_deref(), 3).unwrap();
        assert_eq!((p1, p2, p3), (0..3, 3..6, 6..7));
        assert_eq!(c3, None);
        assert_eq!(paginate("tools", 7, None, 0).unwrap(), (0..7, None));
    }

    proptest::proptest! {
        /// Following the cursors visits every position once, in order, for any list and page.
        #[test]
        fn cursors_walk_every_page(len in 0usize..500, page_size in 0usize..60) {
            let (mut seen, mut cursor) = (Vec::new(), None::<String>);
            loop {
                let (page, next) = paginate("tools", len, cursor.as_deref(), page_size).unwrap();
                seen.extend(page);
                match next {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            proptest::prop_assert_eq!(seen, (0..len).collect::<Vec<_>>());
        }

        /// A cursor names the position it was made for, and only for its own list.
        #[test]
        fn cursors_round_trip(offset in 0usize..1_000_000, len in 0usize..1_000_000) {
            let cursor = encode("resources", offset);
            let (page, _) = paginate("resources", len, Some(&cursor), 10).unwrap();
            proptest::prop_assert_eq!(page.start, offset.min(len));
            proptest::prop_assert!(paginate("prompts", len, Some(&cursor), 10).is_err());
        }

        /// Any text is a valid cursor or -32602, never a panic.
        #[test]
        fn any_text_is_a_cursor_or_an_error(text in ".{0,64}") {
            if let Err(e) = paginate("tools", 10, Some(&text), 3) {
                proptest::prop_assert_eq!(e.code, -32602);
            }
        }
    }

    /// Found by fuzzing (the cursor target): the cursor of an offset past
    /// `i64::MAX` was refused as invalid instead of naming the empty page past the end.
    #[test]
    fn every_offset_round_trips() {
        for offset in [0, i64::MAX as usize, i64::MAX as usize + 1, usize::MAX] {
            let (page, _) = paginate("tools", 3, Some(&encode("tools", offset)), 1).unwrap();
            assert_eq!(page.start, offset.min(3), "offset {offset}");
        }
    }

    #[test]
    fn bad_cursors() {
        let python_style = URL_SAFE_NO_PAD.encode(r#"{"k": "tools", "o": 2}"#);
        assert_eq!(paginate("tools", 3, Some(&python_style), 1).unwrap().0, 2..3);
        let past_end = encode("tools", 10);
        assert!(paginate("tools", 3, Some(&past_end), 1).unwrap().0.is_empty());
        let negative = URL_SAFE_NO_PAD.encode(r#"{"k":"tools","o":-1}"#);
        // A cursor that is no string is refused as it is decoded (duet_wire::params::ListParams).
        for bad in ["not-a-cursor".to_string(), String::new(), encode("prompts", 1), negative] {
            let err = paginate("tools", 3, Some(&bad), 1).unwrap_err();
            assert_eq!((err.code, err.message.as_str()), (-32602, "Invalid cursor"), "{bad}");
        }
    }
}
