//! Errors that name the file, line, column and field.
//!
//! Every problem, syntactic or semantic, is reported against a *field path*
//! such as `links[1].rate`. A [`LocTree`] built from the original text maps
//! paths to byte spans and spans back to paths, so
//! - serde errors (which carry a span) get the path of the field they are in;
//! - semantic checks, which only know the path of the field they reject, get
//!   the line of that field.
//!
//! Going through paths instead of keeping `toml::Spanned` in every schema
//! field has one more benefit: `--set` overrides re-serialise the document,
//! which moves every span, but paths survive and still find the line in the
//! file the user wrote (or name the `--set` argument that introduced the
//! value).

use std::fmt;
use std::ops::Range;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// One problem with a scenario. `Display` gives the whole message:
/// `scenario.toml:12:5: links[1].rate: invalid rate "10Mbt": expected ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    /// The file name as given to `from_file` / `from_str`.
    pub file: String,
    /// Where in that file, or which `--set` introduced the bad value.
    pub at: At,
    /// Dotted field path (`links[1].rate`); empty for whole-file errors.
    pub path: String,
    /// What is wrong, without location.
    pub message: String,
}

/// Where an error points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum At {
    /// 1-based line and column (in characters) in the file.
    Line { line: usize, col: usize },
    /// The value came from this `--set path=value` override.
    Set(String),
    /// The file as a whole (I/O errors, or nothing more precise is known).
    File,
}

impl ScenarioError {
    /// The 1-based line the error points at, if it points into the file.
    pub fn line(&self) -> Option<usize> {
        match self.at {
            At::Line { line, .. } => Some(line),
            _ => None,
        }
    }

    pub(crate) fn whole_file(file: &str, message: impl Into<String>) -> Self {
        ScenarioError { file: file.to_string(), at: At::File, path: String::new(), message: message.into() }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.at {
            At::Line { line, col } => write!(f, "{}:{line}:{col}: ", self.file)?,
            At::Set(arg) => write!(f, "{}: --set {arg}: ", self.file)?,
            At::File => write!(f, "{}: ", self.file)?,
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

/// A problem found before it is known where in which file it lives: a field
/// path and a message. Turned into a [`ScenarioError`] by the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diag {
    pub path: String,
    pub message: String,
}

impl Diag {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Diag { path: path.into(), message: message.into() }
    }
}

/// Shorthand for building a failing `Result<_, Diag>`.
pub(crate) fn diag<T>(path: impl Into<String>, message: impl Into<String>) -> Result<T, Diag> {
    Err(Diag::new(path, message))
}

// ------------------------------------------------------------------ paths

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// Parses `links[1].rate`, `links.1.rate` or `transport.mptcp.subflows`.
pub(crate) fn parse_path(path: &str) -> Option<Vec<Seg>> {
    let mut segs = Vec::new();
    for part in path.split('.') {
        // "links[1][2]" -> key "links", index 1, index 2
        let (key, mut rest) = match part.find('[') {
            Some(i) => part.split_at(i),
            None => (part, ""),
        };
        if key.is_empty() && rest.is_empty() {
            return None;
        }
        if !key.is_empty() {
            match key.parse::<usize>() {
                Ok(i) => segs.push(Seg::Index(i)),
                Err(_) => segs.push(Seg::Key(key.to_string())),
            }
        }
        while !rest.is_empty() {
            let close = rest.find(']')?;
            let idx = rest.get(1..close)?.parse().ok()?;
            segs.push(Seg::Index(idx));
            rest = &rest[close + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                return None;
            }
        }
    }
    Some(segs)
}

/// Renders segments in the canonical `links[1].rate` form.
pub(crate) fn render_path(segs: &[Seg]) -> String {
    let mut out = String::new();
    for s in segs {
        match s {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

// --------------------------------------------------------------- LocTree

/// The shape of a TOML document with the byte span of every key and value.
#[derive(Debug, Clone, Default)]
pub(crate) struct LocTree {
    span: Range<usize>,
    kind: LocKind,
}

#[derive(Debug, Clone, Default)]
enum LocKind {
    #[default]
    Leaf,
    Table(Vec<(String, Range<usize>, LocTree)>),
    Array(Vec<LocTree>),
}

impl LocTree {
    /// Builds the tree; `None` when the text isn't valid TOML (the caller
    /// reports that error from the plain parse).
    pub fn build(text: &str) -> Option<LocTree> {
        toml::from_str::<Node>(text).ok().map(|n| n.0)
    }

    /// Byte offset where the deepest existing node along `segs` starts (for
    /// a table entry that is the value, so `rate = "x"` points at `"x"`),
    /// and whether that node is the one asked for.
    pub fn locate(&self, segs: &[Seg]) -> (usize, bool) {
        let mut node = self;
        let mut found = 0;
        for seg in segs {
            let next = match (&node.kind, seg) {
                (LocKind::Table(entries), Seg::Key(k)) => entries.iter().find(|(name, _, _)| name == k).map(|(_, _, t)| t),
                (LocKind::Array(items), Seg::Index(i)) => items.get(*i),
                _ => None,
            };
            match next {
                Some(n) => {
                    node = n;
                    found += 1;
                }
                None => break,
            }
        }
        (node.span.start, found == segs.len())
    }

    /// The path of the smallest key or value whose span contains `span`.
    ///
    /// The whole tree is searched rather than descending through containers,
    /// because implicit tables (`transport` in `[transport.mptcp]`) and
    /// arrays of tables have spans that don't cover their children. Taking
    /// the smallest match makes a "missing field" error (spanning its table)
    /// name the table, not the table's first key.
    pub fn path_at(&self, span: Range<usize>) -> Vec<Seg> {
        let mut best: Option<(usize, Vec<Seg>)> = None;
        let mut trail = Vec::new();
        self.search(&span, &mut trail, &mut best);
        best.map(|(_, p)| p).unwrap_or_default()
    }

    fn search(&self, span: &Range<usize>, trail: &mut Vec<Seg>, best: &mut Option<(usize, Vec<Seg>)>) {
        fn consider(r: &Range<usize>, span: &Range<usize>, trail: &[Seg], best: &mut Option<(usize, Vec<Seg>)>) {
            let covers = r.start <= span.start && span.end <= r.end && !r.is_empty();
            // `<=` so that, of equal spans, the deeper (visited later) wins.
            if covers && best.as_ref().map_or(true, |(len, _)| r.len() <= *len) {
                *best = Some((r.len(), trail.to_vec()));
            }
        }
        match &self.kind {
            LocKind::Leaf => {}
            LocKind::Table(entries) => {
                for (name, key_span, child) in entries {
                    trail.push(Seg::Key(name.clone()));
                    consider(key_span, span, trail, best);
                    consider(&child.span, span, trail, best);
                    child.search(span, trail, best);
                    trail.pop();
                }
            }
            LocKind::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    trail.push(Seg::Index(i));
                    consider(&child.span, span, trail, best);
                    child.search(span, trail, best);
                    trail.pop();
                }
            }
        }
    }
}

/// A `LocTree` node read through toml's span protocol.
///
/// `toml::Spanned<T>` can't be used: for tables toml has no span for
/// (implicit ones such as `transport` in `[transport.mptcp]`) it falls back
/// to a plain map, which `Spanned` rejects. This visitor accepts both: the
/// span protocol's three fields, or an ordinary value without a span.
struct Node(LocTree);

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_struct(SPANNED_NAME, SPANNED_FIELDS, NodeVisitor).map(Node)
    }
}

/// The value inside the span protocol: an ordinary TOML value.
struct Inner(LocTree);

impl<'de> Deserialize<'de> for Inner {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor).map(Inner)
    }
}

struct NodeVisitor;

fn leaf() -> LocTree {
    LocTree::default()
}

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = LocTree;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<LocTree, E> {
        Ok(leaf())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<LocTree, E> {
        Ok(leaf())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<LocTree, E> {
        Ok(leaf())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<LocTree, E> {
        Ok(leaf())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<LocTree, E> {
        Ok(leaf())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LocTree, A::Error> {
        let mut items = Vec::new();
        while let Some(Node(item)) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(LocTree { span: 0..0, kind: LocKind::Array(items) })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LocTree, A::Error> {
        let Some(first) = map.next_key::<SpanKey>()? else {
            return Ok(LocTree { span: 0..0, kind: LocKind::Table(Vec::new()) });
        };
        if first.span.is_none() && SPANNED_FIELDS.contains(&first.name.as_str()) {
            // The span protocol: start, end and the value, in any order.
            let (mut start, mut end, mut value) = (None, None, None);
            let mut key = Some(first.name);
            while let Some(k) = key {
                match k.as_str() {
                    SPANNED_START => start = Some(map.next_value::<usize>()?),
                    SPANNED_END => end = Some(map.next_value::<usize>()?),
                    _ => value = Some(map.next_value::<Inner>()?.0),
                }
                key = map.next_key::<SpanKey>()?.map(|k| k.name);
            }
            let mut tree = value.ok_or_else(|| de::Error::missing_field(SPANNED_VALUE))?;
            if let (Some(s), Some(e)) = (start, end) {
                tree.span = s..e;
            }
            return Ok(tree);
        }
        let mut entries = Vec::new();
        let mut key = Some(first);
        while let Some(k) = key {
            let Node(value) = map.next_value::<Node>()?;
            entries.push((k.name, k.span.unwrap_or(0..0), value));
            key = map.next_key::<SpanKey>()?;
        }
        Ok(LocTree { span: 0..0, kind: LocKind::Table(entries) })
    }
}

/// A table key with its span when toml knows it, or just its name when it
/// doesn't (like `Node`, it speaks toml's span protocol itself).
struct SpanKey {
    name: String,
    span: Option<Range<usize>>,
}

// serde_spanned's private protocol names (stable within toml 0.8).
const SPANNED_NAME: &str = "$__serde_spanned_private_Spanned";
const SPANNED_START: &str = "$__serde_spanned_private_start";
const SPANNED_END: &str = "$__serde_spanned_private_end";
const SPANNED_VALUE: &str = "$__serde_spanned_private_value";
const SPANNED_FIELDS: &[&str] = &[SPANNED_START, SPANNED_END, SPANNED_VALUE];

impl<'de> Deserialize<'de> for SpanKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SpanKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SpanKey, E> {
                Ok(SpanKey { name: v.to_string(), span: None })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SpanKey, A::Error> {
                let (mut start, mut end, mut name) = (None, None, None);
                while let Some(field) = map.next_key::<String>()? {
                    match field.as_str() {
                        SPANNED_START => start = Some(map.next_value::<usize>()?),
                        SPANNED_END => end = Some(map.next_value::<usize>()?),
                        _ => name = Some(map.next_value::<String>()?),
                    }
                }
                let name = name.ok_or_else(|| de::Error::missing_field("key"))?;
                Ok(SpanKey { name, span: start.zip(end).map(|(s, e)| s..e) })
            }
        }
        d.deserialize_struct(SPANNED_NAME, SPANNED_FIELDS, V)
    }
}

/// 1-based (line, column) of a byte offset; columns count characters.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..offset].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_and_render() {
        let segs = parse_path("links[1].rate").unwrap();
        assert_eq!(segs, vec![Seg::Key("links".into()), Seg::Index(1), Seg::Key("rate".into())]);
        assert_eq!(parse_path("links.1.rate").unwrap(), segs);
        assert_eq!(render_path(&segs), "links[1].rate");
        assert!(parse_path("a..b").is_none());
        assert!(parse_path("a[x]").is_none());
        assert!(parse_path("a[1]b").is_none());
    }

    #[test]
    fn tree_maps_both_ways() {
        let text = "name = \"x\"\n\n[[links]]\na = \"c\"\n\n[[links]]\na = \"d\"\nrate = \"5Mbit\"\n";
        let tree = LocTree::build(text).unwrap();
        let (off, exact) = tree.locate(&parse_path("links[1].rate").unwrap());
        assert!(exact);
        assert_eq!(line_col(text, off), (8, 8));
        assert_eq!(render_path(&tree.path_at(off..off + 7)), "links[1].rate");
        // a missing field falls back to its table, which starts at the header
        let (off, exact) = tree.locate(&parse_path("links[1].delay").unwrap());
        assert!(!exact);
        assert_eq!(line_col(text, off), (6, 1));
    }

    #[test]
    fn line_col_counts_chars() {
        assert_eq!(line_col("a\nµb", 4), (2, 2));
        assert_eq!(line_col("", 10), (1, 1));
    }
}
