//! `kind = "dumbbell"`: N sender/receiver pairs sharing one bottleneck.
//!
//! Hosts `l0..l{N-1}` hang off router `left`, hosts `r0..r{N-1}` off router
//! `right`; `left`–`right` is the bottleneck. Links are named `l{i}-left`,
//! `left-right` and `right-r{i}`.

use serde::Deserialize;

use super::link_params::{check_count, params, queue_at};
use crate::error::Diag;
use crate::plugins::fields::PluginTable;
use crate::schema::{Draft, Generator, KindTag, NodeKind};
use crate::units::{Duration, Probability, Rate};

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DumbbellSpec {
    #[serde(rename = "kind", default)]
    _kind: KindTag,
    pub pairs: u32,
    pub access_rate: Rate,
    #[serde(default)]
    pub access_delay: Option<Duration>,
    #[serde(default)]
    pub access_queue: Option<PluginTable>,
    pub bottleneck_rate: Rate,
    #[serde(default)]
    pub bottleneck_delay: Option<Duration>,
    #[serde(default)]
    pub bottleneck_loss: Option<Probability>,
    #[serde(default)]
    pub bottleneck_queue: Option<PluginTable>,
}

impl Generator for DumbbellSpec {
    fn generate(&self) -> Result<Draft, Diag> {
        check_count(self.pairs, 1, 1024, "topology.pairs", "pairs")?;
        let access_queue = self.access_queue.as_ref().map(|q| queue_at(q, "topology.access_queue"));
        let bottleneck_queue = self.bottleneck_queue.as_ref().map(|q| queue_at(q, "topology.bottleneck_queue"));
        let access = params(self.access_rate, self.access_delay, None, access_queue);
        let mut d = Draft::default();
        for i in 0..self.pairs {
            d.node(format!("l{i}"), NodeKind::Host);
        }
        for i in 0..self.pairs {
            d.node(format!("r{i}"), NodeKind::Host);
        }
        d.node("left", NodeKind::Router);
        d.node("right", NodeKind::Router);
        for i in 0..self.pairs {
            d.link(&format!("l{i}"), "left", access.clone());
        }
        d.link("left", "right", params(self.bottleneck_rate, self.bottleneck_delay, self.bottleneck_loss, bottleneck_queue));
        for i in 0..self.pairs {
            d.link("right", &format!("r{i}"), access.clone());
        }
        Ok(d)
    }
}
