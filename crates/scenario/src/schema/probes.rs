//! `[probes]` as written: what a run samples and captures.

use serde::Deserialize;

use super::nodes::EndpointRef;
use crate::units::Duration;

fn yes() -> bool {
    true
}

fn default_interval() -> Duration {
    Duration::from_millis(100)
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbesSpec {
    #[serde(default = "default_interval")]
    pub interval: Duration,
    /// `"node:iface"` or `"node"` (every interface of the node).
    #[serde(default)]
    pub pcap: Vec<EndpointRef>,
    /// Sample congestion windows / smoothed RTTs of the probed flows.
    #[serde(default = "yes")]
    pub cwnd: bool,
    #[serde(default = "yes")]
    pub srtt: bool,
    /// Flows to sample (default: all).
    #[serde(default)]
    pub flows: Option<Vec<String>>,
    /// Links whose queue lengths are sampled.
    #[serde(default)]
    pub queues: Vec<String>,
    /// Bytes of each packet a pcap keeps (0 or unset: whole packets; 128
    /// keeps IP and TCP headers with every option).
    #[serde(default)]
    pub snaplen: u32,
    /// A qlog trace per QUIC connection end in the results directory.
    #[serde(default)]
    pub qlog: bool,
}

impl Default for ProbesSpec {
    fn default() -> Self {
        ProbesSpec { interval: default_interval(), pcap: Vec::new(), cwnd: true, srtt: true, flows: None, queues: Vec::new(), snaplen: 0, qlog: false }
    }
}
