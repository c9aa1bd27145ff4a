//! The text of a `search_files` result, for the model: one line per match as
//! `path:line: text`, as before. With context, ripgrep's layout: the lines around the
//! matches as `path-line- text`, each run of adjacent lines once, and `--` between runs.

use super::{Found, Match};
use crate::counted::count;
use std::collections::HashSet;

pub(super) fn text(pattern: &str, found: &Found) -> String {
    let matched: HashSet<(&str, usize)> = found.matches.iter().map(|m| (m.path.as_str(), m.line)).collect();
    let mut text = Vec::new();
    // The line last written, to join a match's context to its neighbour's.
    let mut last: Option<(&str, usize)> = None;
    for m in &found.matches {
        let before = m.before.iter().flatten().map(|l| (l.line, l.text.as_str()));
        let after = m.after.iter().flatten().map(|l| (l.line, l.text.as_str()));
        let lines = before.chain([(m.line, m.text.as_str())]).chain(after);
        for (line, content) in lines {
            let follows = last.is_some_and(|(path, at)| path == m.path && line <= at);
            if follows {
                continue;
            }
            let adjacent = last.is_some_and(|(path, at)| path == m.path && line == at + 1);
            if last.is_some() && !adjacent && has_context(m) {
                text.push("--".to_string());
            }
            let mark = if matched.contains(&(m.path.as_str(), line)) { ':' } else { '-' };
            text.push(format!("{}{mark}{line}{mark} {content}", m.path));
            last = Some((&m.path, line));
        }
    }
    text.push(match (found.matches.len(), found.truncated) {
        (0, _) => format!("No matches for {pattern:?} in {}", count(found.files_scanned, "file")),
        (n, true) => format!("(stopped at {}; narrow the search or raise max_results)", count(n, "matching line")),
        (n, false) => format!("({} in {} scanned)", count(n, "matching line"), count(found.files_scanned, "file")),
    });
    text.join("\n")
}

fn has_context(m: &Match) -> bool {
    m.before.is_some() || m.after.is_some()
}
