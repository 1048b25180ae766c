//! Flows over UDP: kernel UDP sockets in the hosts' namespaces, run by
//! the datagram applications' loop ([`crate::datagrams`]) or, for a byte
//! stream carried in UDP (QUIC), by its transport engine
//! ([`crate::endpoint_flow`]).

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::thread::JoinHandle;

use mplab_scenario::network::Flow;

use super::{failed, spawn, FlowDriver};
use crate::apps::{Clock, FlowState};
use crate::run::options::KernelError;
use crate::run::plan::Plan;
use crate::run::stack::HostStack;

/// Datagram sockets: (flow id, client, socket).
#[derive(Default)]
pub struct Datagram {
    sockets: Vec<(usize, bool, OwnedFd)>,
}

impl FlowDriver for Datagram {
    /// Both sockets bound before time zero, so the first datagram finds
    /// its server.
    fn prepare(&mut self, plan: &Plan, f: &Flow, node_ns: &[String], _: &Arc<FlowState>, _: &mut [&mut dyn HostStack]) -> Result<(), KernelError> {
        let at = |node: usize, what: &str, e: std::io::Error| failed(f, format!("UDP socket on {} ({what}): {e}", plan.net.nodes[node].name));
        self.sockets.push((f.id, false, crate::datagrams::socket(&node_ns[f.to], (std::net::Ipv4Addr::UNSPECIFIED, f.dport), None).map_err(|e| at(f.to, "server", e))?));
        let client = if crate::endpoint_flow::multihomed(f) { ((std::net::Ipv4Addr::UNSPECIFIED, f.sport), None) } else { ((f.src, f.sport), Some((f.dst, f.dport))) };
        self.sockets.push((f.id, true, crate::datagrams::socket(&node_ns[f.from], client.0, client.1).map_err(|e| at(f.from, "client", e))?));
        Ok(())
    }

    fn start(&mut self, plan: &Plan, states: &[Arc<FlowState>], clk: &Clock, _: u64) -> Result<Vec<JoinHandle<()>>, KernelError> {
        let net = plan.net;
        // The transport endpoints' engines configure ends from the network.
        let shared = self.sockets.iter().any(|&(fi, _, _)| crate::endpoint_flow::takes(&net.flows[fi])).then(|| Arc::new(net.clone()));
        let mut threads = Vec::new();
        for (fi, client, sock) in self.sockets.drain(..) {
            let (ff, st, c) = (net.flows[fi].clone(), states[fi].clone(), clk.clone());
            let name = format!("{}-{}", if client { "cli" } else { "srv" }, ff.name);
            let seed = net.seed ^ (0x155_0000 + 2 * fi as u64 + u64::from(!client));
            threads.push(match shared.clone().filter(|_| crate::endpoint_flow::takes(&ff)) {
                Some(n) => spawn(name, move || crate::endpoint_flow::run(n, ff, sock, client, seed, st, c))?,
                None => spawn(name, move || crate::datagrams::run(ff, sock, client, st, c))?,
            });
        }
        Ok(threads)
    }
}
