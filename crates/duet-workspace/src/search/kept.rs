//! The matches a search keeps, whatever order its threads finish files in: the first
//! `max_results` by path then line, so a capped search returns the same matches every
//! time. Files come in as they are searched; the set holds just enough of them to know the
//! first `max_results + 1` matches (one more than are returned, which tells whether the
//! cap cut anything), and once it has them, names the last path that can still matter so
//! the walk skips everything after it.

use super::Match;
use super::file::FileMatches;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(super) struct Kept {
    max_results: usize,
    /// By path, in the order paths sort in (component by component, as a walk in name
    /// order visits them).
    files: BTreeMap<PathBuf, FileMatches>,
    /// The matches `files` hold, counting a file's unkept `more` as one.
    counted: usize,
}

impl Kept {
    pub(super) fn new(max_results: usize) -> Kept {
        Kept { max_results, files: BTreeMap::new(), counted: 0 }
    }

    /// Adds a searched file's matches, then drops the files that sort after the first
    /// `max_results + 1` matches.
    pub(super) fn add(&mut self, name: &str, file: FileMatches) {
        if file.matches.is_empty() && !file.more {
            return;
        }
        self.counted += count(&file);
        self.files.insert(PathBuf::from(name), file);
        while let Some(last) = self.files.last_entry() {
            let without = self.counted - count(last.get());
            if without <= self.max_results {
                break;
            }
            self.counted = without;
            last.remove();
        }
    }

    /// The last path that can hold a kept match, once `max_results + 1` matches are known:
    /// a file or directory whose path sorts after it cannot change the result.
    pub(super) fn cutoff(&self) -> Option<&Path> {
        (self.counted > self.max_results).then(|| self.files.last_key_value().map(|(path, _)| path.as_path()))?
    }

    /// The first `max_results` matches by path then line, and whether there were more.
    pub(super) fn into_matches(self) -> (Vec<Match>, bool) {
        let truncated = self.counted > self.max_results;
        let matches = self.files.into_values().flat_map(|file| file.matches).take(self.max_results).collect();
        (matches, truncated)
    }
}

fn count(file: &FileMatches) -> usize {
    file.matches.len() + usize::from(file.more)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, lines: &[usize], more: bool) -> FileMatches {
        let matches = lines
            .iter()
            .map(|&line| Match { path: path.into(), line, text: String::new(), before: None, after: None })
            .collect();
        FileMatches { matches, more }
    }

    fn places(kept: Kept) -> (Vec<(String, usize)>, bool) {
        let (matches, truncated) = kept.into_matches();
        (matches.into_iter().map(|m| (m.path, m.line)).collect(), truncated)
    }

    #[test]
    fn keeps_the_first_matches_by_path_whatever_order_files_come_in() {
        let files = [("b/x", vec![1, 2]), ("a-b", vec![3]), ("a/z", vec![4, 5]), ("c", vec![6])];
        let expected = vec![("a/z".to_string(), 4), ("a/z".to_string(), 5), ("a-b".to_string(), 3)];
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2]] {
            let mut kept = Kept::new(3);
            for i in order {
                kept.add(files[i].0, file(files[i].0, &files[i].1, false));
            }
            assert_eq!(places(kept), (expected.clone(), true), "{order:?}");
        }
    }

    #[test]
    fn names_a_cutoff_once_one_more_match_than_returned_is_known() {
        let mut kept = Kept::new(2);
        kept.add("m", file("m", &[1], false));
        kept.add("z", file("z", &[1], false));
        assert_eq!(kept.cutoff(), None, "two matches: nothing is cut yet");
        kept.add("n", file("n", &[1], false));
        assert_eq!(kept.cutoff(), Some(Path::new("z")));
        kept.add("a", file("a", &[1, 2], false));
        // a's two and m's one are the first three: z and n can go.
        assert_eq!(kept.cutoff(), Some(Path::new("m")));
        assert_eq!(places(kept), (vec![("a".to_string(), 1), ("a".to_string(), 2)], true));
    }

    #[test]
    fn a_file_with_more_matches_than_it_kept_counts_as_truncated() {
        let mut kept = Kept::new(2);
        kept.add("a", file("a", &[1, 2], true));
        assert_eq!(kept.cutoff(), Some(Path::new("a")));
        assert_eq!(places(kept), (vec![("a".to_string(), 1), ("a".to_string(), 2)], true));
        let mut exact = Kept::new(2);
        exact.add("a", file("a", &[1, 2], false));
        exact.add("b", file("b", &[], false));
        assert_eq!(exact.cutoff(), None);
        assert!(!places(exact).1);
    }
}
