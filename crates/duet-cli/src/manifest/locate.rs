//! Where something is written in the manifest. Checks name the field they reject as a
//! [`Place`] (`tool[2].args.count.default`); the [`Locator`] finds that field's key in the
//! source (through `toml`'s spanned document) and turns its byte offset into line:column,
//! so every error reads `duet.toml:12:1: ...`.

use toml::Spanned;
use toml::de::{DeArray, DeTable, DeValue};

/// One step of a [`Place`]: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// A field of the manifest, from the root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Place(Vec<Step>);

impl Place {
    pub(crate) fn root() -> Self {
        Place(Vec::new())
    }

    /// The field `key` of this table.
    pub(crate) fn key(&self, key: &str) -> Self {
        let mut steps = self.0.clone();
        steps.push(Step::Key(key.to_string()));
        Place(steps)
    }

    /// The element `index` of this array.
    pub(crate) fn index(&self, index: usize) -> Self {
        let mut steps = self.0.clone();
        steps.push(Step::Index(index));
        Place(steps)
    }
}

/// Finds places in one manifest's text.
pub(super) struct Locator<'a> {
    text: &'a str,
    root: Option<Spanned<DeTable<'a>>>,
}

impl<'a> Locator<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Locator { text, root: DeTable::parse(text).ok() }
    }

    /// The byte offset of a place: its key when it has one (`command = ...`, `[tool.args.x]`),
    /// else its value (`[[tool]]`). A place that is not written (a missing field) resolves
    /// to the deepest part of it that is.
    pub(super) fn offset(&self, place: &Place) -> usize {
        let Some(root) = &self.root else { return 0 };
        let mut table = Some(root.get_ref());
        let mut array: Option<&DeArray<'a>> = None;
        let mut found = 0;
        for step in &place.0 {
            let value: &Spanned<DeValue<'a>> = match (step, table, array) {
                (Step::Key(key), Some(t), _) => match t.iter().find(|(k, _)| k.get_ref() == key) {
                    Some((k, v)) => {
                        found = k.span().start;
                        v
                    }
                    None => break,
                },
                (Step::Index(i), _, Some(a)) => match a.get(*i) {
                    Some(v) => {
                        found = v.span().start;
                        v
                    }
                    None => break,
                },
                _ => break,
            };
            table = value.get_ref().as_table();
            array = value.get_ref().as_array();
        }
        found
    }

    /// The entry written around an offset, as errors name it: `tool "deploy"`,
    /// `resource "notes://index"`, `prompt #2` (when it has no name); `None` outside the
    /// `[[tool]]`, `[[resource]]` and `[[prompt]]` entries.
    pub(super) fn entry_around(&self, offset: usize) -> Option<String> {
        let root = self.root.as_ref()?;
        // Each entry starts at its header; the last one starting before the offset holds it.
        let mut around: Option<(usize, Option<String>)> = None;
        let mut consider = |start: usize, label: Option<String>| {
            if start <= offset && around.as_ref().is_none_or(|(best, _)| start >= *best) {
                around = Some((start, label));
            }
        };
        for (key, value) in root.get_ref().iter() {
            let kind = key.get_ref().as_ref();
            let name_key = match kind {
                "tool" | "prompt" => "name",
                "resource" => "uri",
                _ => {
                    consider(value.span().start, None);
                    continue;
                }
            };
            let Some(entries) = value.get_ref().as_array() else { continue };
            for (i, entry) in entries.iter().enumerate() {
                let name = entry.get_ref().get(name_key).and_then(|n| n.get_ref().as_str());
                let label = match name {
                    Some(name) => format!("{kind} {name:?}"),
                    None => format!("{kind} #{}", i + 1),
                };
                consider(entry.span().start, Some(label));
            }
        }
        around.and_then(|(_, label)| label)
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub(super) fn line_column(&self, offset: usize) -> (usize, usize) {
        let before = self.text.get(..offset).unwrap_or(self.text);
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }
}
