//! How many of something, in words: "1 file", "2 files", "1 match", "3 entries". Every
//! message that counts says it this way, so none reads "1 files".

use std::fmt::Display;

/// `n` and `noun`, singular when `n` is 1 and plural otherwise.
pub(crate) fn count<N: Display + PartialEq + From<u8>>(n: N, noun: &str) -> String {
    if n == N::from(1) { format!("{n} {noun}") } else { format!("{n} {}", plural(noun)) }
}

/// The English plural of the nouns duet counts: `es` after s, x, ch and sh, `ies` for a
/// `y` after a consonant, else `s`.
fn plural(noun: &str) -> String {
    if noun.ends_with(['s', 'x']) || noun.ends_with("ch") || noun.ends_with("sh") {
        format!("{noun}es")
    } else if let Some(stem) = noun.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        format!("{stem}ies")
    } else {
        format!("{noun}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_the_rest_plural() {
        assert_eq!(count(1usize, "file"), "1 file");
        assert_eq!(count(0usize, "file"), "0 files");
        assert_eq!(count(2u64, "matching line"), "2 matching lines");
        assert_eq!(count(1u64, "byte"), "1 byte");
        assert_eq!((count(1usize, "match"), count(3usize, "match")), ("1 match".into(), "3 matches".into()));
        assert_eq!((count(1usize, "entry"), count(2usize, "entry")), ("1 entry".into(), "2 entries".into()));
        assert_eq!(count(2usize, "key"), "2 keys");
    }
}
