//! `[[routes]]` as written: explicit routes over the computed ones.

use std::fmt;
use std::net::Ipv4Addr;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// `"main"` or a table number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableRef {
    Main,
    Id(u32),
}

impl<'de> Deserialize<'de> for TableRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TableRef;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"main\" or a routing table number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TableRef, E> {
                match v {
                    "main" => Ok(TableRef::Main),
                    _ => v.parse().map(TableRef::Id).map_err(|_| E::custom(format!("invalid table {v:?}: expected \"main\" or a number"))),
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<TableRef, E> {
                u32::try_from(v).map(TableRef::Id).map_err(|_| E::custom(format!("invalid table {v}: expected 1..=4294967295")))
            }
        }
        d.deserialize_any(V)
    }
}

/// An explicit route; replaces a computed route to the same destination in
/// the same table, or adds one.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    pub node: String,
    /// `"10.0.2.0/24"` or `"default"`.
    pub dst: String,
    #[serde(default)]
    pub via: Option<Ipv4Addr>,
    #[serde(default)]
    pub dev: Option<String>,
    #[serde(default)]
    pub table: Option<TableRef>,
}
