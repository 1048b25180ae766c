//! `[[links]]` as written: rates, delays, loss and queue of each direction.

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
    pub rate: Option<Rate>,
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
    #[serde(default)]
    pub rate: Option<Rate>,
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
}
