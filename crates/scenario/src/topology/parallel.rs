//! `kind = "parallel"`: two hosts joined by N direct links, the "topology A"
//! of seed 001 (mininet's N switches between two hosts are plain L2 hops, so
//! a direct link per path is the same network).
//!
//! Hosts are `client` and `server`; link `i` is `path{i}` between
//! `client:eth{i}` and `server:eth{i}`. Addresses follow the captures of
//! the seeds: the server is `.1` and the client `.2` on every path subnet.

use serde::Deserialize;

use super::link_params::{check_count, queue_at};
use crate::error::{diag, Diag};
use crate::network::{JitterDistribution, LinkDirection, Queue, DEFAULT_MTU};
use crate::plugins::fields::PluginTable;
use crate::schema::{Draft, DraftEnd, DraftLink, Generator, KindTag, NodeKind, PerPath};
use crate::units::{Duration, Probability, Rate};

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParallelSpec {
    #[serde(rename = "kind", default)]
    _kind: KindTag,
    pub paths: u32,
    /// One value for every path or a list with one per path.
    pub rate: PerPath<Rate>,
    #[serde(default)]
    pub delay: Option<PerPath<Duration>>,
    #[serde(default)]
    pub jitter: Option<PerPath<Duration>>,
    #[serde(default)]
    pub jitter_distribution: Option<PerPath<JitterDistribution>>,
    #[serde(default)]
    pub reorder: Option<PerPath<bool>>,
    #[serde(default)]
    pub loss: Option<PerPath<Probability>>,
    #[serde(default)]
    pub queue: Option<PerPath<PluginTable>>,
}

/// Picks path `i`'s value, checking list lengths against `paths`.
fn pick<'a, T>(p: &'a PerPath<T>, i: usize, paths: u32, field: &str) -> Result<&'a T, Diag> {
    if let Some(len) = p.len() {
        if len != paths as usize {
            return diag(format!("topology.{field}"), format!("has {len} entries but paths = {paths}; give one value or one per path"));
        }
    }
    match p.get(i) {
        Some(v) => Ok(v),
        None => diag(format!("topology.{field}"), "missing value"),
    }
}

impl Generator for ParallelSpec {
    fn generate(&self) -> Result<Draft, Diag> {
        check_count(self.paths, 1, 256, "topology.paths", "paths")?;
        let mut d = Draft::default();
        d.node("client", NodeKind::Host);
        d.node("server", NodeKind::Host);
        for i in 0..self.paths as usize {
            let rate = *pick(&self.rate, i, self.paths, "rate")?;
            let delay = match &self.delay {
                Some(p) => *pick(p, i, self.paths, "delay")?,
                None => Duration::ZERO,
            };
            let jitter = match &self.jitter {
                Some(p) => *pick(p, i, self.paths, "jitter")?,
                None => Duration::ZERO,
            };
            let jitter_distribution = match &self.jitter_distribution {
                Some(p) => *pick(p, i, self.paths, "jitter_distribution")?,
                None => JitterDistribution::Uniform,
            };
            let reorder = match &self.reorder {
                Some(p) => *pick(p, i, self.paths, "reorder")?,
                None => false,
            };
            let loss = match &self.loss {
                Some(p) => Some(*pick(p, i, self.paths, "loss")?),
                None => None,
            };
            let queue = match &self.queue {
                Some(p) => queue_at(pick(p, i, self.paths, "queue")?, "topology.queue"),
                None => Queue::default(),
            };
            let loss = loss.map_or(0.0, |p| p.value());
            let dir = LinkDirection {
                trace: None,
                steps: Vec::new(),
                rate_bps: rate.bps(),
                delay_ns: delay.as_nanos(),
                jitter_ns: jitter.as_nanos(),
                jitter_distribution,
                reorder,
                loss,
                gilbert_elliott: None,
                duplicate: 0.0,
                queue,
            };
            d.links.push(DraftLink {
                name: format!("path{i}"),
                a: DraftEnd { node: "client".into(), iface: Some(format!("eth{i}")), addr: None, host: 2 },
                b: DraftEnd { node: "server".into(), iface: Some(format!("eth{i}")), addr: None, host: 1 },
                subnet: None,
                ab: dir.clone(),
                ba: dir,
                up: true,
                mtu: DEFAULT_MTU,
                radio: None,
                origin: "topology".into(),
            });
        }
        Ok(d)
    }
}
