//! Field types of the `[topology]` generators' tables.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde::Deserialize;

/// A generator parameter given once for every path or as a list with one
/// entry per path: `rate = "10Mbit"` or `rate = ["10Mbit", "5Mbit"]`.
#[derive(Debug, Clone, PartialEq)]
pub enum PerPath<T> {
    All(T),
    Each(Vec<T>),
}

impl<T> PerPath<T> {
    /// The value for path `i`; callers check the length first.
    pub fn get(&self, i: usize) -> Option<&T> {
        match self {
            PerPath::All(v) => Some(v),
            PerPath::Each(v) => v.get(i),
        }
    }
    pub fn len(&self) -> Option<usize> {
        match self {
            PerPath::All(_) => None,
            PerPath::Each(v) => Some(v.len()),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for PerPath<T> {
    // Hand-written instead of `#[serde(untagged)]`, which would replace the
    // element's own error ("invalid rate ...") with "did not match any
    // variant" and lose the span.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::value::{BoolDeserializer, F64Deserializer, I64Deserializer, MapAccessDeserializer, StrDeserializer, U64Deserializer};
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = PerPath<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value or a list with one value per path")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PerPath<T>, E> {
                T::deserialize(StrDeserializer::<E>::new(v)).map(PerPath::All)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PerPath<T>, E> {
                T::deserialize(I64Deserializer::<E>::new(v)).map(PerPath::All)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<PerPath<T>, E> {
                T::deserialize(U64Deserializer::<E>::new(v)).map(PerPath::All)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<PerPath<T>, E> {
                T::deserialize(F64Deserializer::<E>::new(v)).map(PerPath::All)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<PerPath<T>, E> {
                T::deserialize(BoolDeserializer::<E>::new(v)).map(PerPath::All)
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<PerPath<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(PerPath::All)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<PerPath<T>, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element()? {
                    v.push(x);
                }
                Ok(PerPath::Each(v))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Accepts and ignores the `kind` key inside a generator table: the kind
/// was already read to choose the struct.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct KindTag;

impl<'de> Deserialize<'de> for KindTag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| KindTag)
    }
}
