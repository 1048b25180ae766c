//! The generic table of a plug-in a scenario file names by `kind`, and the
//! reader its plug-in checks its own fields with.
//!
//! An axis whose entries live outside this crate (queue disciplines and
//! middlebox kinds in crates/backend) keeps the table as the file gave it,
//! a [`PluginTable`]: `kind` plus every other field, untyped. The entry
//! for that kind reads its fields through a [`Fields`] over the table,
//! with typed getters that use the scenario's unit types (`Size`, `Rate`,
//! `Duration`, `Probability`) through serde, so a value is parsed exactly
//! as anywhere else in a scenario. [`Fields::finish`] then refuses any
//! field the entry did not ask for, naming it and the fields the kind
//! takes. Every problem is a [`PluginError`]: a field path
//! (`links[1].ab.queue.limit`) and a message, which
//! [`crate::Scenario::plugin_error`] turns into a [`crate::ScenarioError`]
//! with the file's line.
//!
//! ```
//! use mplab_scenario::plugins::fields::{Fields, PluginTable};
//! use mplab_scenario::Size;
//! let t: PluginTable = toml::from_str("kind = \"droptail\"\nbytes = \"64KB\"").unwrap();
//! let mut f = Fields::new(&t, "links[0].queue");
//! assert_eq!(f.get::<Size>("bytes").unwrap().map(|b| b.bytes()), Some(64_000));
//! assert_eq!(f.get::<u64>("packets").unwrap(), None);
//! f.finish().unwrap();
//! ```

use std::collections::BTreeSet;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A plug-in's table as the scenario gave it: its `kind` and the rest of
/// its fields, unchecked until the entry for `kind` reads them.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct PluginTable {
    pub kind: String,
    #[serde(flatten)]
    pub fields: toml::Table,
}

impl PluginTable {
    /// A table with no fields but `kind`.
    pub fn of_kind(kind: impl Into<String>) -> Self {
        PluginTable { kind: kind.into(), fields: toml::Table::new() }
    }
}

/// A problem with a plug-in's table: the field path it is about and what
/// is wrong (no location: the scenario adds the line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginError {
    pub path: String,
    pub message: String,
}

impl PluginError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        PluginError { path: path.into(), message: message.into() }
    }
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for PluginError {}

/// The error for a table whose `kind` no entry of the axis has, worded as
/// the file format words an unknown variant (`unknown variant `fifo`,
/// expected `droptail` or `red``), at the table's `kind`.
pub fn unknown_kind(table: &PluginTable, path: &str, kinds: &[&str]) -> PluginError {
    let quoted: Vec<String> = kinds.iter().map(|k| format!("`{k}`")).collect();
    let expected = match quoted.as_slice() {
        [] => "there are no variants".to_string(),
        [one] => format!("expected {one}"),
        [a, b] => format!("expected {a} or {b}"),
        more => format!("expected one of {}", more.join(", ")),
    };
    PluginError::new(format!("{path}.kind"), format!("unknown variant `{}`, {expected}", table.kind))
}

/// Reads one plug-in table's fields for the entry of its kind. Every getter
/// records the field as one the kind takes; [`Fields::finish`] refuses the
/// rest.
#[derive(Debug)]
pub struct Fields<'a> {
    table: &'a PluginTable,
    path: String,
    /// The field that names the kind: `kind`, or a flow's `app`.
    key: &'static str,
    taken: BTreeSet<&'static str>,
}

impl<'a> Fields<'a> {
    /// `path` is the table's own field path (`links[1].ab.queue`).
    pub fn new(table: &'a PluginTable, path: impl Into<String>) -> Self {
        Fields { table, path: path.into(), key: "kind", taken: BTreeSet::new() }
    }

    /// For a table whose kind is named by another field than `kind` (a
    /// flow's `app`), in the messages.
    pub fn keyed(mut self, key: &'static str) -> Self {
        self.key = key;
        self
    }

    pub fn kind(&self) -> &str {
        &self.table.kind
    }

    /// The table's field path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The path of one of its fields (`links[1].ab.queue.limit`).
    pub fn field_path(&self, name: &str) -> String {
        format!("{}.{name}", self.path)
    }

    /// The field `name`, if set, as a `T` (a unit type parses as it does
    /// everywhere in a scenario); a value of the wrong type is an error at
    /// the field.
    pub fn get<T: DeserializeOwned>(&mut self, name: &'static str) -> Result<Option<T>, PluginError> {
        self.taken.insert(name);
        let Some(v) = self.table.fields.get(name) else { return Ok(None) };
        T::deserialize(v.clone()).map(Some).map_err(|e| PluginError::new(self.field_path(name), e.message().trim_end().to_string()))
    }

    /// The field `name`, or `default` when it is not set.
    pub fn get_or<T: DeserializeOwned>(&mut self, name: &'static str, default: T) -> Result<T, PluginError> {
        Ok(self.get(name)?.unwrap_or(default))
    }

    /// The field `name`, which the kind needs.
    pub fn require<T: DeserializeOwned>(&mut self, name: &'static str) -> Result<T, PluginError> {
        self.get(name)?.ok_or_else(|| self.missing(name))
    }

    /// The error for a field the kind needs but the table lacks (for an
    /// entry that reads every field and calls [`Fields::finish`] before
    /// requiring them, so that a misspelt field is named as such).
    pub fn missing(&self, name: &str) -> PluginError {
        PluginError::new(self.path.clone(), format!("missing field `{name}` ({} = {:?})", self.key, self.table.kind))
    }

    /// An error about the table as a whole (a relation between fields).
    pub fn error(&self, message: impl Into<String>) -> PluginError {
        PluginError::new(self.path.clone(), message)
    }

    /// An error about one field.
    pub fn error_at(&self, name: &str, message: impl Into<String>) -> PluginError {
        PluginError::new(self.field_path(name), message)
    }

    /// Refuses every field of the table no getter asked for, naming it and
    /// the fields this kind takes. An entry calls it once it has read its
    /// fields and before it checks their relations, as the file format
    /// refuses an unknown field before any value is checked.
    pub fn finish(&self) -> Result<(), PluginError> {
        let Some(extra) = self.table.fields.keys().find(|k| !self.taken.contains(k.as_str())) else { return Ok(()) };
        let takes = if self.taken.is_empty() { "it takes no fields".to_string() } else { format!("it takes {}", self.taken.iter().copied().collect::<Vec<_>>().join(", ")) };
        Err(PluginError::new(self.field_path(extra), format!("does not apply to {} = {:?} ({takes})", self.key, self.table.kind)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{Probability, Size};

    fn table(s: &str) -> PluginTable {
        toml::from_str(s).unwrap()
    }

    #[test]
    fn typed_getters_parse_units_and_name_the_field() {
        let t = table("kind = \"red\"\nmin_th = \"30KB\"\nmax_p = 0.1\ngentle = true");
        let mut f = Fields::new(&t, "links[1].ab.queue");
        assert_eq!(f.kind(), "red");
        assert_eq!(f.require::<Size>("min_th").unwrap().bytes(), 30_000);
        assert_eq!(f.get::<Probability>("max_p").unwrap().map(|p| p.value()), Some(0.1));
        assert!(f.get_or("gentle", false).unwrap());
        assert_eq!(f.get_or("weight", 0.002).unwrap(), 0.002);
        f.finish().unwrap();

        let t = table("kind = \"red\"\nmin_th = \"30 apples\"");
        let e = Fields::new(&t, "links[1].ab.queue").get::<Size>("min_th").unwrap_err();
        assert_eq!(e.path, "links[1].ab.queue.min_th");
        assert!(e.message.contains("30 apples"), "{e}");
        let e = Fields::new(&t, "q").require::<Size>("max_th").unwrap_err();
        assert_eq!((e.path.as_str(), e.message.as_str()), ("q", "missing field `max_th` (kind = \"red\")"));
    }

    #[test]
    fn finish_refuses_fields_not_taken_and_lists_the_allowed_ones() {
        let t = table("kind = \"droptail\"\npackets = 10\nmax_p = 0.1");
        let mut f = Fields::new(&t, "links[0].queue");
        let _ = f.get::<u64>("packets").unwrap();
        let _ = f.get::<Size>("bytes").unwrap();
        let e = f.finish().unwrap_err();
        assert_eq!(e.path, "links[0].queue.max_p");
        assert_eq!(e.message, "does not apply to kind = \"droptail\" (it takes bytes, packets)");
        let t = table("kind = \"x\"\ny = 1");
        assert!(Fields::new(&t, "q").finish().unwrap_err().message.contains("it takes no fields"));
    }

    /// The scenario locates a plug-in's error at the line of its field.
    #[test]
    fn a_plugin_error_gets_the_line_of_its_field() {
        let text = "name = \"t\"\n[[nodes]]\nname = \"a\"\n[[nodes]]\nname = \"b\"\n[[links]]\na = \"a\"\nb = \"b\"\nrate = \"10Mbit\"\nqueue = { kind = \"droptail\", packets = 0 }\n";
        let sc = crate::Scenario::from_str(text, "s.toml").unwrap();
        let e = sc.plugin_error(&PluginError::new("links[0].queue.packets", "too small"));
        assert_eq!(e.to_string(), "s.toml:10:40: links[0].queue.packets: too small");
    }
}
