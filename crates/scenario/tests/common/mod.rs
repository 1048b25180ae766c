//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::net::Ipv4Addr;

use mplab_scenario::network::{Network, NodeId};
use mplab_scenario::{Scenario, ScenarioError};

pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::from_str(text, "scenario.toml")
}

pub fn net(text: &str) -> Network {
    match parse(text).and_then(|s| s.resolve()) {
        Ok(n) => n,
        Err(e) => panic!("{e}"),
    }
}

/// The one-line error a bad file produces (parse or resolve).
pub fn error(text: &str) -> String {
    match parse(text).and_then(|s| s.resolve()) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// Number of distinct forwarding paths from `node` (sending from `src`) to
/// `dst`, following every ECMP next hop.
pub fn count_paths(net: &Network, node: NodeId, src: Option<Ipv4Addr>, dst: Ipv4Addr, depth: usize) -> usize {
    let n = &net.nodes[node];
    if n.owns(dst) {
        return 1;
    }
    assert!(depth < 64, "routing loop");
    let Some(route) = n.lookup(src, dst) else { return 0 };
    route.nexthops.iter().map(|h| count_paths(net, n.interfaces[h.iface].peer, None, dst, depth + 1)).sum()
}

pub fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}
