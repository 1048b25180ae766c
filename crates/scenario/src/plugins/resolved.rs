//! A plug-in's validated parameters as the entry of its kind resolved
//! them, for the resolved network's serialised form (network.json).
//!
//! The entry lives in a crate below the scenario's users (a queue
//! discipline in crates/backend), so the network cannot hold its typed
//! parameters; it holds this plain value instead, which the entry builds
//! and which serialises its fields in the entry's order, numbers as they
//! are (`u64` and `f64` unchanged), so that a result file shows exactly
//! what was run.
//!
//! ```
//! use mplab_scenario::plugins::Resolved;
//! let r = Resolved::map([("kind", "droptail".into()), ("limit", Resolved::map([("packets", 1000u64.into())]))]);
//! assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"kind":"droptail","limit":{"packets":1000}}"#);
//! ```

use serde::ser::{Serialize, SerializeMap, Serializer};

/// A plain value: a number, a flag, a name, nothing, or fields in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// A parameter left unset (`null`), such as a transfer without a size.
    None,
    Bool(bool),
    U64(u64),
    F64(f64),
    Str(String),
    /// Fields in the order they serialise.
    Map(Vec<(String, Resolved)>),
}

impl Resolved {
    /// Fields in this order.
    pub fn map<'a>(fields: impl IntoIterator<Item = (&'a str, Resolved)>) -> Self {
        Resolved::Map(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    /// The field `name` of a map.
    pub fn get(&self, name: &str) -> Option<&Resolved> {
        match self {
            Resolved::Map(fields) => fields.iter().find(|(k, _)| k == name).map(|(_, v)| v),
            _ => None,
        }
    }
}

impl From<bool> for Resolved {
    fn from(v: bool) -> Self {
        Resolved::Bool(v)
    }
}

impl From<u64> for Resolved {
    fn from(v: u64) -> Self {
        Resolved::U64(v)
    }
}

impl From<f64> for Resolved {
    fn from(v: f64) -> Self {
        Resolved::F64(v)
    }
}

impl From<&str> for Resolved {
    fn from(v: &str) -> Self {
        Resolved::Str(v.to_string())
    }
}

impl<T: Into<Resolved>> From<Option<T>> for Resolved {
    fn from(v: Option<T>) -> Self {
        v.map_or(Resolved::None, Into::into)
    }
}

impl Serialize for Resolved {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Resolved::None => s.serialize_none(),
            Resolved::Bool(v) => s.serialize_bool(*v),
            Resolved::U64(v) => s.serialize_u64(*v),
            Resolved::F64(v) => s.serialize_f64(*v),
            Resolved::Str(v) => s.serialize_str(v),
            Resolved::Map(fields) => {
                let mut m = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}
