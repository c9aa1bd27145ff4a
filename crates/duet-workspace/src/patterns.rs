//! The patterns a client sends (a `find_files` or `search_files` glob, a `search_files`
//! expression) bounded in length before anything compiles them. Compiling is where a hostile
//! pattern costs memory, and not all of it is under the compilers' own size limits: globset
//! panics on a glob over its limit, and a regular expression that is an alternation of
//! literals becomes an Aho-Corasick automaton that the regex size limit does not count
//! (a 3.8 MB one took ~500 MiB). A glob also compiles here through a [`GlobSet`], which
//! reports a compile failure where [`globset::Glob::compile_matcher`] panics.

use super::files::human_size;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The longest glob accepted. Real globs are tens of bytes (`**/*.{rs,toml,md}`); a long
/// list of alternatives stays well under this, and a glob this long compiles to at most a
/// few hundred KiB.
pub(crate) const MAX_GLOB_BYTES: usize = 1024;

/// The longest search pattern accepted, literal or not. Real patterns are well under 1 KiB
/// (a long alternation of identifiers, a few KiB). The costliest shape measured, a
/// case-insensitive alternation of words of `k` and `s` (each folds to three forms), takes
/// about 25 MiB at this length; twice as long took twice that.
pub(crate) const MAX_PATTERN_BYTES: usize = 16 * 1024;

/// Refuses `text` when it is longer than `max` bytes, saying what it is (`the glob`,
/// `the pattern`) and both sizes; the text itself is not echoed back.
pub(crate) fn within(what: &str, text: &str, max: usize) -> Result<(), String> {
    if text.len() <= max {
        return Ok(());
    }
    Err(format!(
        "{what} is too large: {} ({} bytes), over the {} ({max} bytes) accepted",
        human_size(text.len() as u64),
        text.len(),
        human_size(max as u64)
    ))
}

/// A client's glob, matched against paths relative to a directory; `*` crosses `/` (as in
/// `rg --glob`). Refused with a message when too long, malformed, or too large to compile.
pub(crate) fn glob(text: &str) -> Result<GlobSet, String> {
    within("the glob", text, MAX_GLOB_BYTES)?;
    compile_glob(text)
}

/// Compiles a glob of any length; one over globset's own limit is an error, not a panic.
fn compile_glob(text: &str) -> Result<GlobSet, String> {
    let parsed =
        GlobBuilder::new(text).literal_separator(false).build().map_err(|e| format!("invalid glob {text:?}: {e}"))?;
    GlobSetBuilder::new().add(parsed).build().map_err(|_| "the glob is too large to compile".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_matches_across_directories() {
        let set = glob("*.rs").unwrap();
        assert!(set.is_match("src/main.rs"));
        assert!(!set.is_match("src/main.c"));
    }

    #[test]
    fn a_glob_over_the_bound_is_refused_without_being_echoed() {
        let long = "a".repeat(MAX_GLOB_BYTES + 1);
        let error = glob(&long).unwrap_err();
        assert_eq!(error, "the glob is too large: 1.0 KiB (1025 bytes), over the 1.0 KiB (1024 bytes) accepted");
        assert!(glob(&"a".repeat(MAX_GLOB_BYTES)).is_ok());
    }

    /// globset's `compile_matcher` panics on such a glob ("regex compilation shouldn't fail").
    #[test]
    fn a_glob_over_globsets_own_limit_is_an_error_not_a_panic() {
        let branches: Vec<String> = (0..20_000).map(|i| format!("*a{i}*[a-z]*")).collect();
        let wide = format!("{{{}}}", branches.join(","));
        assert_eq!(compile_glob(&wide).unwrap_err(), "the glob is too large to compile");
    }

    #[test]
    fn a_malformed_glob_says_what_is_wrong() {
        let error = glob("{a,b").unwrap_err();
        assert!(error.starts_with("invalid glob \"{a,b\""), "{error}");
    }
}
