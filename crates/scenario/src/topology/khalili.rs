//! `kind = "khalili"`: the shared-bottleneck testbed of Khalili et al.
//! ("MPTCP is not Pareto-optimal", scenario A), reproduced in seed 001
//! (fig. 5–6).
//!
//! ```text
//!   mp0 ..mp{n1-1}  ──access──► ap1 ──ap1_rate──┐
//!        └──────────access──► ap2 ──ap2_rate──┴► core ──server_rate── server
//!   tcp0..tcp{n2-1} ──access──► ap2
//! ```
//!
//! `n1` multipath users each have two interfaces, one to each access point;
//! `n2` single-path TCP users reach only `ap2`, which they share with the
//! multipath users' second subflows. The AP uplinks (`ap1-core`,
//! `ap2-core`) are the bottlenecks; in the paper their capacities are
//! `N1·C1` and `N2·C2`, so give the totals here. Access and server links
//! default to 1 Gbit/s so they never limit.

use serde::Deserialize;

use super::link_params::{check_count, params, queue_at};
use crate::error::{diag, Diag};
use crate::plugins::fields::PluginTable;
use crate::schema::{Draft, Generator, KindTag, NodeKind};
use crate::units::{Duration, Rate};

const FAST: Rate = Rate::from_mbit(1000);

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KhaliliSpec {
    #[serde(rename = "kind", default)]
    _kind: KindTag,
    /// Multipath users (two access links each).
    pub n1: u32,
    /// Single-path TCP users (on ap2 only).
    pub n2: u32,
    pub ap1_rate: Rate,
    pub ap2_rate: Rate,
    #[serde(default)]
    pub ap_delay: Option<Duration>,
    #[serde(default)]
    pub ap_queue: Option<PluginTable>,
    #[serde(default)]
    pub access_rate: Option<Rate>,
    #[serde(default)]
    pub access_delay: Option<Duration>,
    #[serde(default)]
    pub server_rate: Option<Rate>,
    #[serde(default)]
    pub server_delay: Option<Duration>,
}

impl Generator for KhaliliSpec {
    fn generate(&self) -> Result<Draft, Diag> {
        // Khalili et al. used tens of users; the cap keeps the multi-homed
        // users' routing tables small.
        check_count(self.n1, 0, 100, "topology.n1", "n1")?;
        check_count(self.n2, 0, 100, "topology.n2", "n2")?;
        if self.n1 + self.n2 == 0 {
            return diag("topology", "n1 + n2 must be at least 1");
        }
        let ap_queue = self.ap_queue.as_ref().map(|q| queue_at(q, "topology.ap_queue"));
        let access = params(self.access_rate.unwrap_or(FAST), self.access_delay, None, None);
        let mut d = Draft::default();
        for i in 0..self.n1 {
            d.node(format!("mp{i}"), NodeKind::Host);
        }
        for j in 0..self.n2 {
            d.node(format!("tcp{j}"), NodeKind::Host);
        }
        d.node("ap1", NodeKind::Router);
        d.node("ap2", NodeKind::Router);
        d.node("core", NodeKind::Router);
        d.node("server", NodeKind::Host);
        // Each multipath user's ap1 link comes first so it is eth0 (its
        // "primary" path) and ap2 is eth1.
        for i in 0..self.n1 {
            d.link(&format!("mp{i}"), "ap1", access.clone());
            d.link(&format!("mp{i}"), "ap2", access.clone());
        }
        for j in 0..self.n2 {
            d.link(&format!("tcp{j}"), "ap2", access.clone());
        }
        d.link("ap1", "core", params(self.ap1_rate, self.ap_delay, None, ap_queue.clone()));
        d.link("ap2", "core", params(self.ap2_rate, self.ap_delay, None, ap_queue));
        d.link("core", "server", params(self.server_rate.unwrap_or(FAST), self.server_delay, None, None));
        Ok(d)
    }
}
