//! `kind = "load_balanced"`: clients with several access links in front of
//! one or more load-balancer instances that share a VIP and the backends
//! behind it (seed 003 and its future work, several balancers in
//! parallel).
//!
//! Clients `c0..` each have `client_links` links (`access_rate`) to the
//! router `edge`; `edge` reaches the balancer routers `lb0..` by ECMP (they
//! all announce the VIP); every `lb{i}` has a link to every backend
//! `srv0..`. With `return = "direct"` each backend also has a link to
//! `edge`, listed first so its replies leave that way (direct server
//! return) and only client-to-server traffic passes a balancer. A
//! `load_balancer` middlebox is placed on each `lb{i}`; flows name any
//! `lb{i}` as `to`.

use std::net::Ipv4Addr;

use serde::Deserialize;

use super::link_params::{check_count, params, queue_at};
use crate::error::{diag, Diag};
use crate::network::BalancerMode;
use crate::plugins::fields::PluginTable;
use crate::schema::{Draft, Generator, KindTag, MiddleboxSpec, NodeKind};
use crate::units::{Duration, Rate};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReturnPath {
    /// Replies pass the balancer that forwarded the request.
    #[default]
    Balancer,
    /// Replies go from the backend straight to the edge router.
    Direct,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadBalancedSpec {
    #[serde(rename = "kind", default)]
    _kind: KindTag,
    #[serde(default = "one")]
    pub clients: u32,
    #[serde(default = "two")]
    pub client_links: u32,
    pub access_rate: Rate,
    #[serde(default)]
    pub access_delay: Option<Duration>,
    #[serde(default)]
    pub access_queue: Option<PluginTable>,
    #[serde(default = "one")]
    pub balancers: u32,
    #[serde(default = "two")]
    pub backends: u32,
    pub mode: String,
    #[serde(default = "default_vip")]
    pub vip: Ipv4Addr,
    /// Links behind the access links (edge, balancers, backends): fast
    /// enough not to limit unless set.
    #[serde(default = "core_rate")]
    pub core_rate: Rate,
    #[serde(default)]
    pub core_delay: Option<Duration>,
    #[serde(default, rename = "return")]
    pub return_path: ReturnPath,
}

fn one() -> u32 {
    1
}
fn two() -> u32 {
    2
}
fn default_vip() -> Ipv4Addr {
    Ipv4Addr::new(10, 100, 0, 1)
}
fn core_rate() -> Rate {
    "10Gbit".parse().expect("a rate")
}

impl Generator for LoadBalancedSpec {
    fn generate(&self) -> Result<Draft, Diag> {
        check_count(self.clients, 1, 256, "topology.clients", "clients")?;
        check_count(self.client_links, 1, 8, "topology.client_links", "client_links")?;
        check_count(self.balancers, 1, 16, "topology.balancers", "balancers")?;
        check_count(self.backends, 1, 64, "topology.backends", "backends")?;
        if BalancerMode::from_name(&self.mode).is_none() {
            let names = BalancerMode::ALL.map(|m| format!("{:?}", m.name())).join(", ");
            return diag("topology.mode", format!("unknown mode {:?} ({names})", self.mode));
        }
        let queue = self.access_queue.as_ref().map(|q| queue_at(q, "topology.access_queue"));
        let access = params(self.access_rate, self.access_delay, None, queue);
        let core = params(self.core_rate, self.core_delay, None, None);
        let mut d = Draft::default();
        for c in 0..self.clients {
            d.node(format!("c{c}"), NodeKind::Host);
        }
        d.node("edge", NodeKind::Router);
        for b in 0..self.balancers {
            d.node(format!("lb{b}"), NodeKind::Router);
        }
        let backends: Vec<String> = (0..self.backends).map(|s| format!("srv{s}")).collect();
        for s in &backends {
            d.node(s.clone(), NodeKind::Host);
        }
        for c in 0..self.clients {
            for k in 0..self.client_links {
                d.link(&format!("c{c}"), "edge", access.clone());
                let l = d.links.last_mut().expect("just added");
                l.name = format!("c{c}-access{k}");
            }
        }
        if self.return_path == ReturnPath::Direct {
            for s in &backends {
                d.link(s, "edge", core.clone());
            }
        }
        for b in 0..self.balancers {
            d.link("edge", &format!("lb{b}"), core.clone());
            for s in &backends {
                d.link(&format!("lb{b}"), s, core.clone());
            }
        }
        for b in 0..self.balancers {
            let mut table = PluginTable::of_kind("load_balancer");
            table.fields.insert("mode".into(), self.mode.clone().into());
            table.fields.insert("vip".into(), self.vip.to_string().into());
            table.fields.insert("backends".into(), toml::Value::Array(backends.iter().map(|b| b.clone().into()).collect()));
            d.middleboxes.push(MiddleboxSpec { link: None, direction: None, node: Some(format!("lb{b}")), from: None, until: None, table });
        }
        Ok(d)
    }
}
