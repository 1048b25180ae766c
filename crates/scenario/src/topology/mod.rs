//! `[topology]` generators: each expands into nodes and links, which are
//! then merged with any explicit `[[nodes]]`/`[[links]]` and resolved like
//! hand-written ones.

mod dumbbell;
mod fattree;
mod khalili;
mod load_balanced;
mod parallel;
mod star;

pub use dumbbell::DumbbellSpec;
pub use fattree::FatTreeSpec;
pub use khalili::KhaliliSpec;
pub use load_balanced::LoadBalancedSpec;
pub use parallel::ParallelSpec;
pub use star::StarSpec;

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::{diag, Diag};
use crate::network::{GilbertElliott, JitterDistribution, LinkDirection, Queue, DEFAULT_MTU, DEFAULT_QUEUE};
use crate::schema::{Cidr, LossModel, NodeKind, QueueSpec};
use crate::units::{Duration, Probability, Rate};

/// The generators by `kind`: a new one is its own file (a serde struct
/// implementing [`Generator`]) plus one line here.
pub const REGISTRY: &[GeneratorEntry] = &[
    entry::<ParallelSpec>("parallel", "N disjoint paths between `client` and `server`, each through its own router"),
    entry::<DumbbellSpec>("dumbbell", "N sender/receiver pairs sharing one bottleneck"),
    entry::<KhaliliSpec>("khalili", "the shared-bottleneck topology of Khalili et al. (OLIA) with its two user types"),
    entry::<FatTreeSpec>("fattree", "a k-ary fat tree (Al-Fares et al.) of k^3/4 hosts"),
    entry::<StarSpec>("star", "N hosts around one router (incast, many-to-one)"),
    entry::<LoadBalancedSpec>("load_balanced", "clients with several access links, load-balancer instances behind ECMP sharing a VIP, and their backends"),
];

/// What a generator does: expand its parameters into nodes and links,
/// checking them (errors name `topology.<field>`).
pub(crate) trait Generator: fmt::Debug + Send + Sync {
    fn generate(&self) -> Result<Draft, Diag>;
}

/// One generator kind.
pub struct GeneratorEntry {
    pub name: &'static str,
    /// One line for `mplab plugins` and the docs.
    pub about: &'static str,
    parse: fn(&str) -> Result<Arc<dyn Generator>, toml::de::Error>,
}

const fn entry<T: Generator + DeserializeOwned + 'static>(name: &'static str, about: &'static str) -> GeneratorEntry {
    GeneratorEntry { name, about, parse: parse::<T> }
}

/// The `[topology]` table of a whole document, for serde's spans.
#[derive(Deserialize)]
struct TopoDoc<T> {
    topology: T,
}

fn parse<T: Generator + DeserializeOwned + 'static>(doc: &str) -> Result<Arc<dyn Generator>, toml::de::Error> {
    toml::from_str::<TopoDoc<T>>(doc).map(|d| Arc::new(d.topology) as Arc<dyn Generator>)
}

/// A `[topology]` section: its kind and the parsed parameters.
#[derive(Clone)]
pub struct Topology {
    kind: &'static str,
    spec: Arc<dyn Generator>,
}

impl Topology {
    /// Parses the `[topology]` table of the document `doc` as a `kind`
    /// generator. None: no such kind.
    pub(crate) fn parse(kind: &str, doc: &str) -> Option<Result<Topology, toml::de::Error>> {
        let e = REGISTRY.iter().find(|e| e.name == kind)?;
        Some((e.parse)(doc).map(|spec| Topology { kind: e.name, spec }))
    }

    pub fn kind(&self) -> &'static str {
        self.kind
    }

    pub(crate) fn generate(&self) -> Result<Draft, Diag> {
        self.spec.generate()
    }
}

/// The kinds, for error messages.
pub(crate) fn kinds() -> String {
    REGISTRY.iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.spec.fmt(f)
    }
}

/// Two sections are equal when they parsed to the same parameters.
impl PartialEq for Topology {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && format!("{:?}", self.spec) == format!("{:?}", other.spec)
    }
}

/// Nodes and links before addressing and routing, from a generator or from
/// the file. `origin` is the field path errors about the item point at.
#[derive(Debug, Clone, Default)]
pub(crate) struct Draft {
    pub nodes: Vec<DraftNode>,
    pub links: Vec<DraftLink>,
    /// Middleboxes a generator places (after the file's own).
    pub middleboxes: Vec<crate::schema::MiddleboxSpec>,
}

#[derive(Debug, Clone)]
pub(crate) struct DraftNode {
    pub name: String,
    pub kind: NodeKind,
    pub stack: Option<String>,
    pub origin: String,
}

#[derive(Debug, Clone)]
pub(crate) struct DraftLink {
    pub name: String,
    pub a: DraftEnd,
    pub b: DraftEnd,
    pub subnet: Option<Cidr>,
    pub ab: LinkDirection,
    pub ba: LinkDirection,
    pub up: bool,
    pub mtu: u32,
    pub origin: String,
}

#[derive(Debug, Clone)]
pub(crate) struct DraftEnd {
    pub node: String,
    pub iface: Option<String>,
    pub addr: Option<Cidr>,
    /// Host number used when the address is assigned automatically
    /// (`.1` for `a`, `.2` for `b` unless a generator says otherwise).
    pub host: u32,
}

impl Draft {
    pub fn node(&mut self, name: impl Into<String>, kind: NodeKind) {
        self.nodes.push(DraftNode { name: name.into(), kind, stack: None, origin: "topology".into() });
    }

    /// A symmetric generated link `a`–`b` named `"a-b"`.
    pub fn link(&mut self, a: &str, b: &str, params: LinkDirection) {
        self.links.push(DraftLink {
            name: format!("{a}-{b}"),
            a: DraftEnd { node: a.into(), iface: None, addr: None, host: 1 },
            b: DraftEnd { node: b.into(), iface: None, addr: None, host: 2 },
            subnet: None,
            ab: params.clone(),
            ba: params,
            up: true,
            mtu: DEFAULT_MTU,
            origin: "topology".into(),
        });
    }
}

/// Link parameters from the generator's scalars.
pub(crate) fn params(rate: Rate, delay: Option<Duration>, loss: Option<Probability>, queue: Option<Queue>) -> LinkDirection {
    LinkDirection {
        rate_bps: rate.bps(),
        delay_ns: delay.unwrap_or_default().as_nanos(),
        jitter_ns: 0,
        jitter_distribution: JitterDistribution::Uniform,
        reorder: false,
        loss: loss.unwrap_or_default().value(),
        gilbert_elliott: None,
        duplicate: 0.0,
        queue: queue.unwrap_or(DEFAULT_QUEUE),
    }
}

/// Checks a queue description (the registry in [`crate::plugins::queues`]).
pub(crate) fn resolve_queue(q: &QueueSpec, path: &str) -> Result<Queue, Diag> {
    crate::plugins::queues::resolve(q, path)
}

/// Splits a loss model into the plain `loss` / `gilbert_elliott` pair.
pub(crate) fn resolve_loss(loss: Option<Probability>, model: Option<LossModel>, path: &str) -> Result<(f64, Option<GilbertElliott>), Diag> {
    match model.unwrap_or_default() {
        LossModel::Bernoulli => Ok((loss.unwrap_or_default().value(), None)),
        LossModel::GilbertElliott { p_gb, p_bg, loss_good, loss_bad } => {
            if loss.is_some_and(|l| l.value() > 0.0) {
                return diag(
                    format!("{path}.loss"),
                    "`loss` is the Bernoulli loss rate; with loss_model = gilbert_elliott set loss_good/loss_bad instead",
                );
            }
            Ok((0.0, Some(GilbertElliott { p_gb: p_gb.value(), p_bg: p_bg.value(), loss_good: loss_good.value(), loss_bad: loss_bad.value() })))
        }
    }
}

/// Bounds-checks a generator count.
pub(crate) fn check_count(value: u32, min: u32, max: u32, path: &str, what: &str) -> Result<(), Diag> {
    if value < min || value > max {
        return diag(path, format!("{what} must be between {min} and {max}, got {value}"));
    }
    Ok(())
}
