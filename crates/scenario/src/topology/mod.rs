//! `[topology]` generators: each expands into nodes and links, which are
//! then merged with any explicit `[[nodes]]`/`[[links]]` and resolved like
//! hand-written ones.

mod dumbbell;
mod fattree;
mod khalili;
mod parallel;

pub use dumbbell::DumbbellSpec;
pub use fattree::FatTreeSpec;
pub use khalili::KhaliliSpec;
pub use parallel::ParallelSpec;

use crate::error::{diag, Diag};
use crate::network::{GilbertElliott, JitterDistribution, LinkDirection, Queue, QueueLimit, DEFAULT_MTU, DEFAULT_QUEUE};
use crate::schema::{Cidr, LossModel, NodeKind, QueueSpec};
use crate::units::{Duration, Probability, Rate};

/// A `[topology]` section.
#[derive(Debug, Clone, PartialEq)]
pub enum Topology {
    Parallel(ParallelSpec),
    Dumbbell(DumbbellSpec),
    Khalili(KhaliliSpec),
    FatTree(FatTreeSpec),
}

/// The `kind` strings, for error messages.
pub(crate) const KINDS: &[&str] = &["parallel", "dumbbell", "khalili", "fattree"];

impl Topology {
    pub(crate) fn generate(&self) -> Result<Draft, Diag> {
        match self {
            Topology::Parallel(s) => s.generate(),
            Topology::Dumbbell(s) => s.generate(),
            Topology::Khalili(s) => s.generate(),
            Topology::FatTree(s) => s.generate(),
        }
    }
}

/// Nodes and links before addressing and routing, from a generator or from
/// the file. `origin` is the field path errors about the item point at.
#[derive(Debug, Clone, Default)]
pub(crate) struct Draft {
    pub nodes: Vec<DraftNode>,
    pub links: Vec<DraftLink>,
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
        queue: queue.unwrap_or(DEFAULT_QUEUE),
    }
}

/// Checks a queue description and turns it into plain numbers.
pub(crate) fn resolve_queue(q: &QueueSpec, path: &str) -> Result<Queue, Diag> {
    match *q {
        QueueSpec::Droptail { packets, bytes } => match (packets, bytes) {
            (Some(0), _) => diag(path, "a droptail queue needs room for at least one packet"),
            (_, Some(b)) if b.bytes() == 0 => diag(path, "a droptail queue needs room for at least one packet"),
            (Some(p), None) => Ok(Queue::Droptail { limit: QueueLimit::Packets(p) }),
            (None, Some(b)) => Ok(Queue::Droptail { limit: QueueLimit::Bytes(b.bytes()) }),
            (Some(_), Some(_)) => diag(path, "give a droptail queue `packets` or `bytes`, not both"),
            (None, None) => diag(path, "a droptail queue needs `packets` or `bytes`"),
        },
        QueueSpec::Red { min_th, max_th, max_p, limit, weight, gentle } => {
            if min_th.bytes() == 0 || min_th >= max_th {
                return diag(path, format!("RED needs 0 < min_th < max_th (min_th = {min_th}, max_th = {max_th})"));
            }
            if max_th > limit {
                return diag(path, format!("RED needs max_th <= limit (max_th = {max_th}, limit = {limit})"));
            }
            if max_p.value() == 0.0 {
                return diag(path, "RED needs max_p > 0");
            }
            // Floyd's recommended EWMA weight.
            let weight = weight.unwrap_or(0.002);
            if !(weight > 0.0 && weight <= 1.0) {
                return diag(path, format!("RED weight must be in (0, 1], got {weight}"));
            }
            Ok(Queue::Red {
                min_th_bytes: min_th.bytes(),
                max_th_bytes: max_th.bytes(),
                limit_bytes: limit.bytes(),
                max_p: max_p.value(),
                weight,
                gentle,
            })
        }
    }
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
