//! `[[links]]` as written: rates, delays, loss and queue of each direction.

use serde::{Deserialize, Serialize};

use super::nodes::{Cidr, EndpointRef};
use crate::units::{Duration, Probability, Rate, Size};
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

/// Queue at the sending side of a link direction.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueSpec {
    /// Tail drop with a limit in packets or in bytes (exactly one).
    Droptail {
        #[serde(default)]
        packets: Option<u64>,
        #[serde(default)]
        bytes: Option<Size>,
    },
    /// Random Early Detection (Floyd & Jacobson), thresholds in bytes like
    /// tc-red: `min_th`, `max_th`, hard `limit`, `max_p` at `max_th`,
    /// EWMA `weight` (default 0.002) and `gentle` (default false).
    Red {
        min_th: Size,
        max_th: Size,
        max_p: Probability,
        limit: Size,
        #[serde(default)]
        weight: Option<f64>,
        #[serde(default)]
        gentle: bool,
    },
}

impl QueueSpec {
    /// The name scenario files use (the registry's key).
    pub fn name(&self) -> &'static str {
        match self {
            QueueSpec::Droptail { .. } => "droptail",
            QueueSpec::Red { .. } => "red",
        }
    }
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
    pub queue: Option<QueueSpec>,
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
    pub queue: Option<QueueSpec>,
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
