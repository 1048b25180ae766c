//! `kind = "star"`: N hosts around one router, the many-to-one (incast)
//! and all-to-all layout.
//!
//! Hosts `h0..h{N-1}` each hang off router `hub` by one link named
//! `h{i}-hub`; the link's `queue` on the hub side is where senders to one
//! host meet.

use serde::Deserialize;

use super::link_params::{check_count, params, queue_at};
use crate::error::Diag;
use crate::plugins::fields::PluginTable;
use crate::schema::{Draft, Generator, KindTag, NodeKind};
use crate::units::{Duration, Probability, Rate};

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StarSpec {
    #[serde(rename = "kind", default)]
    _kind: KindTag,
    pub hosts: u32,
    pub rate: Rate,
    #[serde(default)]
    pub delay: Option<Duration>,
    #[serde(default)]
    pub loss: Option<Probability>,
    #[serde(default)]
    pub queue: Option<PluginTable>,
}

impl Generator for StarSpec {
    fn generate(&self) -> Result<Draft, Diag> {
        check_count(self.hosts, 2, 1024, "topology.hosts", "hosts")?;
        let queue = self.queue.as_ref().map(|q| queue_at(q, "topology.queue"));
        let link = params(self.rate, self.delay, self.loss, queue);
        let mut d = Draft::default();
        for i in 0..self.hosts {
            d.node(format!("h{i}"), NodeKind::Host);
        }
        d.node("hub", NodeKind::Router);
        for i in 0..self.hosts {
            d.link(&format!("h{i}"), "hub", link.clone());
        }
        Ok(d)
    }
}
