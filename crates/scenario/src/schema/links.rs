//! `[[links]]` as written: rates, delays, loss and queue of each direction.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::nodes::{Cidr, EndpointRef};
use crate::plugins::fields::PluginTable;
use crate::units::{Duration, Probability, Rate};
use crate::vocab::JitterDistribution;

fn yes() -> bool {
    true
}

/// Loss process on a link direction.
#[derive(Debug, Clone, Copy, PartialEq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum LossModel {
    /// Each packet is lost independently with probability `loss`.
    #[default]
    Bernoulli,
    /// Two-state Markov chain (netem `loss gemodel`): `p_gb` good→bad,
    /// `p_bg` bad→good, and the loss probability in each state.
    GilbertElliott { p_gb: Probability, p_bg: Probability, loss_good: Probability, loss_bad: Probability },
}

/// Per-direction overrides of a link (`[links.ab]`, `[links.ba]`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionSpec {
    #[serde(default)]
    pub rate: Option<RateSpec>,
    #[serde(default)]
    pub delay: Option<Duration>,
    #[serde(default)]
    pub jitter: Option<Duration>,
    #[serde(default)]
    pub jitter_distribution: Option<JitterDistribution>,
    #[serde(default)]
    pub reorder: Option<bool>,
    #[serde(default)]
    pub loss: Option<Probability>,
    #[serde(default)]
    pub loss_model: Option<LossModel>,
    /// Probability that a packet is sent twice (netem's `duplicate`).
    #[serde(default)]
    pub duplicate: Option<Probability>,
    #[serde(default)]
    /// The queue discipline at the sending side (`kind` and its fields,
    /// checked by the backend's registry of disciplines).
    pub queue: Option<PluginTable>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Defaults to `"a-b"` with the node names.
    #[serde(default)]
    pub name: Option<String>,
    pub a: EndpointRef,
    pub b: EndpointRef,
    /// A fixed rate, or `{ trace = "..." }` / `{ steps = "..." }`.
    #[serde(default)]
    pub rate: Option<RateSpec>,
    /// One-way, applied in each direction (like netem on both ends).
    #[serde(default)]
    pub delay: Option<Duration>,
    #[serde(default)]
    pub jitter: Option<Duration>,
    /// `uniform` (default), `normal` or `pareto`; see [`JitterDistribution`].
    #[serde(default)]
    pub jitter_distribution: Option<JitterDistribution>,
    /// Let jitter reorder packets (default false: a packet never arrives
    /// before the one sent ahead of it).
    #[serde(default)]
    pub reorder: Option<bool>,
    #[serde(default)]
    pub loss: Option<Probability>,
    #[serde(default)]
    pub loss_model: Option<LossModel>,
    /// Probability that a packet is sent twice (netem's `duplicate`).
    #[serde(default)]
    pub duplicate: Option<Probability>,
    #[serde(default)]
    /// The queue discipline at the sending side (`kind` and its fields,
    /// checked by the backend's registry of disciplines).
    pub queue: Option<PluginTable>,
    #[serde(default)]
    pub a_addr: Option<Cidr>,
    #[serde(default)]
    pub b_addr: Option<Cidr>,
    #[serde(default)]
    pub subnet: Option<Cidr>,
    #[serde(default)]
    pub mtu: Option<u32>,
    #[serde(default)]
    pub ab: Option<DirectionSpec>,
    #[serde(default)]
    pub ba: Option<DirectionSpec>,
    #[serde(default = "yes")]
    pub up: bool,
    /// A cellular radio's idle state: `{ idle = "10s", promotion = "260ms" }`.
    #[serde(default)]
    pub radio: Option<RadioSpec>,
}

/// A cellular radio on a link (LTE's RRC states): after `idle` without a
/// packet either way the radio sleeps, and the next packet waits
/// `promotion` while it wakes (Huang et al., "A close examination of
/// performance and power characteristics of 4G LTE networks", MobiSys
/// 2012: tail 11.6 s, promotion 260 ms).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RadioSpec {
    pub idle: Duration,
    pub promotion: Duration,
}

/// A link direction's capacity: a fixed rate (`"10Mbit"`), a Mahimahi
/// delivery trace (`{ trace = "lte.trace", loop = false }`) or a CSV of
/// piecewise-constant rates (`{ steps = "steps.csv" }`). Paths are relative
/// to the scenario file; the files are read when the scenario is resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum RateSpec {
    Fixed(Rate),
    Trace { path: String, looped: bool },
    Steps { path: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RateTable {
    #[serde(default)]
    trace: Option<String>,
    #[serde(default, rename = "loop")]
    looped: Option<bool>,
    #[serde(default)]
    steps: Option<String>,
}

impl<'de> Deserialize<'de> for RateSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RateSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a rate such as \"10Mbit\", or { trace = \"FILE\" } or { steps = \"FILE\" }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RateSpec, E> {
                Rate::deserialize(de::value::StrDeserializer::<E>::new(v)).map(RateSpec::Fixed)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RateSpec, E> {
                Rate::deserialize(de::value::I64Deserializer::<E>::new(v)).map(RateSpec::Fixed)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RateSpec, E> {
                Rate::deserialize(de::value::U64Deserializer::<E>::new(v)).map(RateSpec::Fixed)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RateSpec, E> {
                Rate::deserialize(de::value::F64Deserializer::<E>::new(v)).map(RateSpec::Fixed)
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<RateSpec, A::Error> {
                let t = RateTable::deserialize(de::value::MapAccessDeserializer::new(m))?;
                match (t.trace, t.steps) {
                    (Some(path), None) => Ok(RateSpec::Trace { path, looped: t.looped.unwrap_or(true) }),
                    (None, Some(path)) if t.looped.is_none() => Ok(RateSpec::Steps { path }),
                    (None, Some(_)) => Err(de::Error::custom("`loop` only applies to a `trace`")),
                    _ => Err(de::Error::custom("expected one of { trace = \"FILE\" } or { steps = \"FILE\" }")),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for RateSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            RateSpec::Fixed(r) => r.serialize(s),
            RateSpec::Trace { path, looped } => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("trace", path)?;
                if !looped {
                    m.serialize_entry("loop", looped)?;
                }
                m.end()
            }
            RateSpec::Steps { path } => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("steps", path)?;
                m.end()
            }
        }
    }
}
