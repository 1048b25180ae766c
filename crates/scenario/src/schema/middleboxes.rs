//! `[[middleboxes]]` as written: where the box sits (typed here) and its
//! kind with the kind's own fields, kept as a [`PluginTable`] for the entry
//! of that kind to read: the load balancer and the attacker in
//! [`crate::plugins::middleboxes`], every other kind in mplab-backend's
//! middlebox registry.

use std::fmt;

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::plugins::fields::PluginTable;
use crate::units::Duration;
use crate::vocab::Direction;

#[derive(Debug, Clone, PartialEq)]
pub struct MiddleboxSpec {
    /// Placement on a link (and `direction`) ...
    pub link: Option<String>,
    pub direction: Option<Direction>,
    /// ... or on a router.
    pub node: Option<String>,
    /// When the box starts acting on packets (default: from the start);
    /// before, packets pass it untouched, as if it were not there.
    pub from: Option<Duration>,
    /// When it stops acting (default: never): a firewall rule added and
    /// removed, a path moved through another box.
    pub until: Option<Duration>,
    /// `kind` and the kind's fields, as written.
    pub table: PluginTable,
}

impl MiddleboxSpec {
    pub fn kind(&self) -> &str {
        &self.table.kind
    }

    /// The kind's field `name` if it is set and reads as a `T` (for checks
    /// that run before the kind's entry, which reports a bad value).
    pub fn field<T: DeserializeOwned>(&self, name: &str) -> Option<T> {
        self.table.fields.get(name).and_then(|v| v.clone().try_into().ok())
    }
}

/// By hand rather than derived with `#[serde(flatten)]`, so that a bad
/// placement value is reported at its own line, as every typed field of a
/// scenario is; every field but the placement goes to the kind's table.
impl<'de> Deserialize<'de> for MiddleboxSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(SpecVisitor)
    }
}

struct SpecVisitor;

impl<'de> Visitor<'de> for SpecVisitor {
    type Value = MiddleboxSpec;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a middlebox table with `kind`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MiddleboxSpec, A::Error> {
        let (mut link, mut direction, mut node, mut from, mut until, mut kind) = (None, None, None, None, None, None);
        let mut fields = toml::Table::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "kind" => kind = Some(map.next_value::<String>()?),
                "link" => link = Some(map.next_value()?),
                "direction" => direction = Some(map.next_value()?),
                "node" => node = Some(map.next_value()?),
                "from" => from = Some(map.next_value()?),
                "until" => until = Some(map.next_value()?),
                _ => {
                    let v: toml::Value = map.next_value()?;
                    fields.insert(key, v);
                }
            }
        }
        let kind = kind.ok_or_else(|| de::Error::missing_field("kind"))?;
        Ok(MiddleboxSpec { link, direction, node, from, until, table: PluginTable { kind, fields } })
    }
}
