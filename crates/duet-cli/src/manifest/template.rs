//! `{name}` placeholders: in a tool's argv, its confirmation message and a prompt's text.
//! `{{` and `}}` stand for literal braces. An argv is a list of templates, one per element,
//! and never passes through a shell: a value becomes (part of) exactly one element, or,
//! for an array argument written as a whole element, one element per item. Nor is a value
//! ever read as an option: one that would begin an element with `-` is refused, unless a
//! literal `--` element came before it or its argument says `allow_leading_dash`.

use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Arg(String),
}

/// A string with `{name}` placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Template {
    source: String,
    pieces: Vec<Piece>,
}

/// Whether `name` can be an argument's name (and so a placeholder).
pub(super) fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl Template {
    /// Parses a template; the error says what is wrong with it.
    pub(super) fn parse(source: &str) -> Result<Self, String> {
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut chars = source.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    text.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    text.push('}');
                }
                '{' => {
                    let mut name = String::new();
                    let mut closed = false;
                    for c in chars.by_ref() {
                        if c == '}' {
                            closed = true;
                            break;
                        }
                        name.push(c);
                    }
                    if !closed {
                        return Err(format!("unclosed placeholder {{{name} (write {{{{ for a literal brace)"));
                    }
                    if !valid_name(&name) {
                        return Err(format!(
                            "invalid placeholder {{{name}}}: a name is a letter or _ followed by letters, \
                             digits, _ or - (write {{{{ and }}}} for literal braces)"
                        ));
                    }
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    pieces.push(Piece::Arg(name));
                }
                '}' => return Err("unmatched } (write }} for a literal brace)".to_string()),
                c => text.push(c),
            }
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(Template { source: source.to_string(), pieces })
    }

    /// The template as written.
    pub(super) fn source(&self) -> &str {
        &self.source
    }

    /// The names of its placeholders, in order (repeats included).
    pub(super) fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Arg(name) => Some(name.as_str()),
            Piece::Text(_) => None,
        })
    }

    /// The argument's name when the template is exactly one placeholder (`"{path}"`).
    pub(super) fn whole_arg(&self) -> Option<&str> {
        match self.pieces.as_slice() {
            [Piece::Arg(name)] => Some(name),
            _ => None,
        }
    }

    /// The placeholders the template begins with, before any text: those whose values can
    /// begin what it renders.
    pub(super) fn leading_args(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().map_while(|p| match p {
            Piece::Arg(name) => Some(name.as_str()),
            Piece::Text(_) => None,
        })
    }

    /// Fills the placeholders; `lookup` answers `None` for an argument that has no value,
    /// which is an error naming it.
    pub(super) fn render(&self, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Arg(name) => out.push_str(&lookup(name).ok_or_else(|| name.clone())?),
            }
        }
        Ok(out)
    }

    /// Fills the placeholders, an argument without a value giving the empty string.
    pub(super) fn render_lenient(&self, lookup: impl Fn(&str) -> Option<String>) -> String {
        self.render(|name| Some(lookup(name).unwrap_or_default())).unwrap_or_default()
    }
}

/// A single value as one argv element or piece of text: strings as they are, numbers and
/// booleans as JSON writes them (integral numbers without a fraction).
pub(super) fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(match n.as_f64() {
            Some(f) if !n.is_i64() && !n.is_u64() && f.fract() == 0.0 && f.abs() < 9.0e15 => (f as i64).to_string(),
            _ => n.to_string(),
        }),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// A value as text in a message: a single value as [`scalar`] writes it, an array's items
/// joined by ", ".
pub(super) fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::Array(items) => Some(items.iter().filter_map(scalar).collect::<Vec<_>>().join(", ")),
        other => scalar(other),
    }
}

/// Whether an element is the literal `--` after which commands read no more options.
pub(super) fn ends_options(element: &Template) -> bool {
    element.source() == "--"
}

/// The argv of a command: one template per element, after the program.
#[derive(Debug, Clone)]
pub(super) struct Argv {
    elements: Vec<Template>,
    /// The arguments whose values may begin an element with `-` (`allow_leading_dash`).
    dashes: BTreeSet<String>,
}

impl Argv {
    pub(super) fn new(elements: Vec<Template>, dashes: BTreeSet<String>) -> Self {
        Argv { elements, dashes }
    }

    /// The elements for these arguments. An element that is exactly `{name}` is dropped when
    /// the argument has no value and becomes one element per item for an array; a
    /// placeholder inside a longer element needs a value. Before a literal `--`, a value
    /// that would begin an element with `-` is refused unless its argument allows it.
    pub(super) fn render(&self, args: &Map<String, Value>) -> Result<Vec<String>, String> {
        let mut argv = Vec::with_capacity(self.elements.len());
        let mut options = true;
        let value = |name: &str| args.get(name).and_then(scalar);
        for element in &self.elements {
            if let Some(name) = element.whole_arg() {
                let values = match args.get(name) {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(items)) => items
                        .iter()
                        .map(|item| scalar(item).ok_or_else(|| format!("argument {name} holds a non-scalar item")))
                        .collect::<Result<_, _>>()?,
                    Some(one) => vec![scalar(one).ok_or_else(|| format!("argument {name} is not a single value"))?],
                };
                for value in values {
                    self.check(options, name, &value)?;
                    argv.push(value);
                }
                continue;
            }
            let rendered = element.render(value).map_err(|name| {
                format!("argument {name} has no value, and the command element {:?} needs one", element.source())
            })?;
            if let Some(name) = element.leading_args().find(|name| value(name).is_some_and(|v| !v.is_empty())) {
                self.check(options, name, &rendered)?;
            }
            options &= !ends_options(element);
            argv.push(rendered);
        }
        Ok(argv)
    }

    /// Refuses `element`, which the value of `name` begins, when the command would read it
    /// as an option.
    fn check(&self, options: bool, name: &str, element: &str) -> Result<(), String> {
        if options && element.starts_with('-') && !self.dashes.contains(name) {
            return Err(format!("argument {name} cannot start with \"-\": the command would read it as an option"));
        }
        Ok(())
    }
}
