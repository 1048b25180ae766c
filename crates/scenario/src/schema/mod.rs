//! The scenario file as written: serde types mirroring the TOML schema.
//!
//! Everything here is `deny_unknown_fields` so a typo (`rtae = ...`) is an
//! error with a line number instead of a silently ignored setting (a
//! plug-in's table, like a middlebox's kind-specific fields, is checked
//! by its kind's entry, which refuses a field it does not take). Checks
//! that need more than one field (does the node exist, do subnets overlap)
//! live in `resolve`; this module only describes shapes and defaults.


mod draft;
mod events;
mod flows;
mod links;
mod middleboxes;
mod nodes;
mod params;
mod probes;
mod routes;
mod topology;
mod transport;

pub(crate) use draft::{Draft, DraftEnd, DraftLink, DraftNode};
pub use events::{EventAction, EventSpec, HandoverMode};
pub use links::RadioSpec;
pub use flows::FlowSpec;
pub use links::{DirectionSpec, LinkSpec, LossModel, RateSpec};
pub use middleboxes::MiddleboxSpec;
pub use nodes::{Cidr, EndpointRef, NodeSpec};
pub(crate) use params::KindTag;
pub use params::PerPath;
pub use probes::ProbesSpec;
pub use routes::{RouteSpec, TableRef};
pub(crate) use topology::Generator;
pub use topology::Topology;
pub use transport::{EndpointSpec, MptcpLimits, MptcpSpec, SctpSpec, TcpSpec, TransportSpec};
pub use crate::vocab::{BufferSplitting, CmtVariant, Direction, EcmpMode, EndpointFlag, JitterDistribution, NodeKind, ResegmentMode, SctpProfile, SctpRtxPolicy, StackProfile, StripOn};
pub use crate::plugins::transports::Transport;

use serde::Deserialize;

use crate::units::Duration;

fn default_seed() -> u64 {
    1
}

fn default_duration() -> Duration {
    Duration::from_secs(30)
}

/// A whole scenario file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// Seeds every random choice a backend makes (loss, jitter, ECMP hash
    /// salt, initial sequence numbers), so a run can be repeated exactly.
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default = "default_duration")]
    pub duration: Duration,
    /// How routers choose among equal-cost next hops.
    #[serde(default)]
    pub ecmp: EcmpMode,
    /// Filled in by a second, kind-specific pass (see `load`): serde's
    /// internally tagged enums buffer their content and lose the spans that
    /// give errors their line numbers.
    #[serde(skip)]
    pub topology: Option<Topology>,
    #[serde(default, rename = "topology")]
    pub(crate) topology_raw: Option<toml::Value>,
    #[serde(default)]
    pub nodes: Vec<NodeSpec>,
    #[serde(default)]
    pub links: Vec<LinkSpec>,
    #[serde(default)]
    pub routes: Vec<RouteSpec>,
    #[serde(default)]
    pub transport: TransportSpec,
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
    #[serde(default)]
    pub events: Vec<EventSpec>,
    #[serde(default)]
    pub middleboxes: Vec<MiddleboxSpec>,
    #[serde(default)]
    pub probes: ProbesSpec,
}
