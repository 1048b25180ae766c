//! `kind = "fattree"`: the k-ary fat-tree of Al-Fares et al., the 4-level
//! (core, aggregation, edge, hosts) variant seed 001 ended up building.
//!
//! k pods, each with k/2 edge and k/2 aggregation routers; every edge router
//! connects to every aggregation router of its pod and to k/2 hosts;
//! aggregation router `i` of every pod connects to core routers
//! `i·k/2 .. i·k/2 + k/2 - 1`. That gives (k/2)² core routers, k³/4 hosts
//! and (k/2)² equal-cost paths between hosts in different pods, which the
//! routers keep as ECMP next hops.
//!
//! Names: hosts `h0..`, edges `edge{pod}_{i}`, aggregations `agg{pod}_{i}`,
//! cores `core{j}`; links `"a-b"` from the host side up.

use serde::Deserialize;

use super::link_params::{params, queue_at};
use crate::error::{diag, Diag};
use crate::plugins::fields::PluginTable;
use crate::schema::{Draft, Generator, KindTag, NodeKind};
use crate::units::{Duration, Rate};

/// Largest k accepted. Routers keep one route per link subnet, so tables
/// grow as routers × links: k = 12 (432 hosts) is ~230 000 routes and a
/// 60 MB JSON network; k = 16 would be ~10^6 routes and 300 MB.
pub const MAX_K: u32 = 12;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FatTreeSpec {
    #[serde(rename = "kind", default)]
    _kind: KindTag,
    pub k: u32,
    pub rate: Rate,
    #[serde(default)]
    pub delay: Option<Duration>,
    #[serde(default)]
    pub queue: Option<PluginTable>,
}

impl Generator for FatTreeSpec {
    fn generate(&self) -> Result<Draft, Diag> {
        let k = self.k;
        if k < 2 || k % 2 != 0 || k > MAX_K {
            return diag("topology.k", format!("a fat-tree needs an even k between 2 and {MAX_K}, got {k}"));
        }
        let half = k / 2;
        let queue = self.queue.as_ref().map(|q| queue_at(q, "topology.queue"));
        let p = params(self.rate, self.delay, None, queue);
        let edge = |pod: u32, i: u32| format!("edge{pod}_{i}");
        let agg = |pod: u32, i: u32| format!("agg{pod}_{i}");
        let mut d = Draft::default();
        for h in 0..k * k * k / 4 {
            d.node(format!("h{h}"), NodeKind::Host);
        }
        for pod in 0..k {
            for i in 0..half {
                d.node(edge(pod, i), NodeKind::Router);
            }
        }
        for pod in 0..k {
            for i in 0..half {
                d.node(agg(pod, i), NodeKind::Router);
            }
        }
        for j in 0..half * half {
            d.node(format!("core{j}"), NodeKind::Router);
        }
        // Host links first, so hosts' subnets are the low, readable ones.
        for pod in 0..k {
            for e in 0..half {
                for h in 0..half {
                    let host = pod * half * half + e * half + h;
                    d.link(&format!("h{host}"), &edge(pod, e), p.clone());
                }
            }
        }
        for pod in 0..k {
            for e in 0..half {
                for a in 0..half {
                    d.link(&edge(pod, e), &agg(pod, a), p.clone());
                }
            }
        }
        for pod in 0..k {
            for a in 0..half {
                for c in 0..half {
                    d.link(&agg(pod, a), &format!("core{}", a * half + c), p.clone());
                }
            }
        }
        Ok(d)
    }
}
