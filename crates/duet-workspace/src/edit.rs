//! The text side of `edit_file`: several replacements applied to a file's text in order,
//! all or none. Each old text is looked for exactly first; when it is not there, line by
//! line with whitespace ignored (indentation, trailing blanks, runs of spaces, `\r\n`
//! against `\n`), and then the new text takes the indentation the file has where it
//! matched. Also the unified diff a dry run shows, and how edits and lines are told.

use similar::TextDiff;

/// How many lines of context a dry run's diff shows around each change.
const DIFF_CONTEXT: usize = 3;
/// The most line numbers a message lists.
const LISTED_LINES: usize = 10;

/// One replacement to make.
pub(crate) struct Edit {
    pub old_text: String,
    pub new_text: String,
    /// Replace every exact occurrence rather than require exactly one.
    pub replace_all: bool,
}

/// How one edit applied.
pub(crate) struct Applied {
    /// How many occurrences it replaced.
    pub replacements: usize,
    /// The lines they started on, in the text as it was when this edit applied.
    pub lines: Vec<usize>,
    /// The old text matched only with whitespace ignored.
    pub loose: bool,
    /// The text it replaced and the text it put there (the first occurrence), as the file
    /// has them: with whitespace ignored, these differ from what the edit said.
    pub old: String,
    pub new: String,
}

/// Why an edit did not apply.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    NotFound,
    /// Several exact occurrences, and not `replace_all`.
    Several(Vec<usize>),
    /// Not there exactly, and in several places with whitespace ignored.
    SeveralLoose(Vec<usize>),
}

impl Refusal {
    /// The refusal, for a file the client knows as `name`.
    pub(crate) fn message(&self, name: &str) -> String {
        match self {
            Refusal::NotFound => format!(
                "old_text was not found in {name}, neither exactly nor with whitespace ignored; nothing was changed"
            ),
            Refusal::Several(lines) => format!(
                "old_text occurs {} times in {name} (at {}); include more of the text around the one to change so \
                 that it occurs once, or set replace_all to replace every occurrence; nothing was changed",
                lines.len(),
                list_lines(lines)
            ),
            Refusal::SeveralLoose(lines) => format!(
                "old_text is not in {name} as given, and with whitespace ignored it matches {} places (at {}); \
                 include more of the text around the one to change; nothing was changed",
                lines.len(),
                list_lines(lines)
            ),
        }
    }
}

/// Applies `edits` to `text` in order, each to what the ones before it made; the new text
/// and how each applied, or the first edit that did not apply (by index) and why.
pub(crate) fn apply(text: &str, edits: &[Edit]) -> Result<(String, Vec<Applied>), (usize, Refusal)> {
    let mut text = text.to_string();
    let mut applied = Vec::with_capacity(edits.len());
    for (i, edit) in edits.iter().enumerate() {
        let (edited, how) = apply_one(&text, edit).map_err(|why| (i, why))?;
        text = edited;
        applied.push(how);
    }
    Ok((text, applied))
}

fn apply_one(text: &str, edit: &Edit) -> Result<(String, Applied), Refusal> {
    let starts: Vec<usize> = text.match_indices(&edit.old_text).map(|(at, _)| at).collect();
    let mut lines = line_numbers(text, &starts);
    lines.dedup();
    match starts.len() {
        0 => return apply_loose(text, edit),
        1 => {}
        _ if !edit.replace_all => return Err(Refusal::Several(lines)),
        _ => {}
    }
    let how = Applied {
        replacements: starts.len(),
        lines,
        loose: false,
        old: edit.old_text.clone(),
        new: edit.new_text.clone(),
    };
    Ok((text.replace(&edit.old_text, &edit.new_text), how))
}

/// A line with its whitespace folded: trimmed, inner runs as one space.
fn folded(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A line's indentation.
fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// `text` less one final line break, and whether it had one.
fn chomp(text: &str) -> (&str, bool) {
    match text.strip_suffix('\n') {
        Some(rest) => (rest.strip_suffix('\r').unwrap_or(rest), true),
        None => (text, false),
    }
}

/// The one place where the old text's lines match whole lines of `text` once whitespace
/// is folded; the new text goes there, indented as the file is.
fn apply_loose(text: &str, edit: &Edit) -> Result<(String, Applied), Refusal> {
    let (old, old_ends_line) = chomp(&edit.old_text);
    let wanted: Vec<String> = old.split('\n').map(folded).collect();
    if wanted.iter().all(String::is_empty) {
        return Err(Refusal::NotFound);
    }
    // Each line of the file: where it starts, its text without its line break, its break.
    let mut file_lines = Vec::new();
    let mut at = 0;
    for piece in text.split_inclusive('\n') {
        let (body, _) = chomp(piece);
        file_lines.push((at, body, &piece[body.len()..]));
        at += piece.len();
    }
    let found: Vec<usize> = (0..file_lines.len().saturating_sub(wanted.len() - 1))
        .filter(|&i| wanted.iter().enumerate().all(|(j, w)| folded(file_lines[i + j].1) == *w))
        .collect();
    let first = match found.as_slice() {
        [] => return Err(Refusal::NotFound),
        [one] => *one,
        several => return Err(Refusal::SeveralLoose(several.iter().map(|i| i + 1).collect())),
    };
    let window = &file_lines[first..first + wanted.len()];
    let (start, _, _) = window[0];
    let (last_at, last_body, last_break) = window[window.len() - 1];
    let (new, new_ends_line) = chomp(&edit.new_text);
    // The window's last line break stays, unless the old text took it and the new one gives none back.
    let end = last_at + last_body.len() + if old_ends_line && !new_ends_line { last_break.len() } else { 0 };
    let eol = if window[0].2 == "\r\n" { "\r\n" } else { "\n" };
    // How the edit's indentation maps to the file's, learnt from the lines that matched.
    let mut map: Vec<(&str, &str)> = old.split('\n').zip(window).map(|(o, (_, f, _))| (indent(o), indent(f))).collect();
    map.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    let reindent = |line: &str| {
        if line.trim().is_empty() {
            return String::new();
        }
        let lead = indent(line);
        match map.iter().find(|(from, _)| lead.starts_with(from)) {
            Some((from, to)) => format!("{to}{}{}", &lead[from.len()..], line.trim_start()),
            None => format!("{}{}", indent(window[0].1), line.trim_start()),
        }
    };
    let new: Vec<String> = if new.is_empty() && !new_ends_line {
        Vec::new()
    } else {
        new.split('\n').map(|l| reindent(l.strip_suffix('\r').unwrap_or(l))).collect()
    };
    let inserted = new.join(eol);
    let edited = format!("{}{inserted}{}", &text[..start], &text[end..]);
    let how = Applied {
        replacements: 1,
        lines: vec![first + 1],
        loose: true,
        old: text[start..end].to_string(),
        new: inserted,
    };
    Ok((edited, how))
}

/// The unified diff from `old` to `new` of the file `name`, with a few lines of context.
pub(crate) fn unified_diff(name: &str, old: &str, new: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(DIFF_CONTEXT)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

/// The 1-based line of each byte offset in `starts` (ascending).
fn line_numbers(text: &str, starts: &[usize]) -> Vec<usize> {
    let (mut line, mut counted) = (1, 0);
    starts
        .iter()
        .map(|&at| {
            line += text.as_bytes()[counted..at].iter().filter(|b| **b == b'\n').count();
            counted = at;
            line
        })
        .collect()
}

/// `line 4`, `lines 4, 9, 12`, or the first [`LISTED_LINES`] and how many more.
pub(crate) fn list_lines(lines: &[usize]) -> String {
    let shown: Vec<String> = lines.iter().take(LISTED_LINES).map(usize::to_string).collect();
    let more = lines.len().saturating_sub(LISTED_LINES);
    match (lines.len(), more) {
        (1, _) => format!("line {}", shown[0]),
        (_, 0) => format!("lines {}", shown.join(", ")),
        _ => format!("lines {} and {more} more", shown.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> Edit {
        Edit { old_text: old.into(), new_text: new.into(), replace_all: false }
    }

    fn applied(text: &str, edits: &[Edit]) -> (String, Vec<bool>) {
        let (text, how) = apply(text, edits).unwrap_or_else(|e| panic!("{e:?}"));
        (text, how.iter().map(|h| h.loose).collect())
    }

    #[test]
    fn exact_edits_apply_in_order_all_or_none() {
        let text = "a = 1\nb = 2\nc = 3\n";
        let edits = [edit("a = 1", "a = 10"), edit("a = 10\nb", "a = 11\nb")];
        assert_eq!(applied(text, &edits), ("a = 11\nb = 2\nc = 3\n".into(), vec![false, false]));
        let refused = apply(text, &[edit("b = 2", "b = 20"), edit("zzz", "y")]).err().unwrap();
        assert_eq!(refused, (1, Refusal::NotFound));
        let several = apply("x\nx\n", &[edit("x", "y")]).err().unwrap();
        assert_eq!(several, (0, Refusal::Several(vec![1, 2])));
        let all = Edit { replace_all: true, ..edit("x", "y") };
        assert_eq!(applied("x\nx\n", &[all]).0, "y\ny\n");
    }

    #[test]
    fn whitespace_is_ignored_when_the_text_is_not_there_exactly() {
        let text = "fn f() {\n\tif x {\n\t\tgo();\n\t}\n}\n";
        // Spaces for tabs: matched, and the new text takes the file's tabs.
        let e = edit("if x {\n    go();\n}", "if x {\n    stop();\n    go();\n}");
        let (edited, loose) = applied(text, &[e]);
        assert_eq!(edited, "fn f() {\n\tif x {\n\t\tstop();\n\t\tgo();\n\t}\n}\n");
        assert_eq!(loose, [true]);
        // Trailing blanks and inner runs of spaces too; the line breaks stay the file's.
        let crlf = "one  two \r\nthree\r\n";
        assert_eq!(applied(crlf, &[edit("one two\nthree\n", "1 2\n3\n")]).0, "1 2\r\n3\r\n");
        // Whole lines only, and in one place only.
        assert_eq!(apply("a b c\n", &[edit("a  b", "x")]).err().unwrap().1, Refusal::NotFound);
        let twice = apply("  x;\n  x;\n", &[edit("x; ", "y;")]).err().unwrap();
        assert_eq!(twice.1, Refusal::SeveralLoose(vec![1, 2]));
        assert_eq!(apply("a\n\n", &[edit(" \n", "x")]).err().unwrap().1, Refusal::NotFound);
        // Removing lines takes their line break with them.
        assert_eq!(applied("keep\n  drop\nkeep\n", &[edit(" drop  \n", "")]).0, "keep\nkeep\n");
    }

    #[test]
    fn diffs_are_unified() {
        let diff = unified_diff("a.txt", "one\ntwo\n", "one\n2\n");
        assert_eq!(diff, "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n");
    }

    #[test]
    fn lines_are_numbered_and_listed() {
        let text = "one\ntwo x\nthree\nx four x\n";
        let starts: Vec<usize> = text.match_indices('x').map(|(at, _)| at).collect();
        let lines = line_numbers(text, &starts);
        assert_eq!(lines, [2, 4, 4]);
        assert_eq!(list_lines(&lines[..1]), "line 2");
        assert_eq!(list_lines(&lines), "lines 2, 4, 4");
        assert_eq!(list_lines(&(1..=12).collect::<Vec<_>>()), "lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 more");
    }
}
