//! Hybrid-access tunnels: a gateway program at each end
//! ([`crate::gateway`]), or the end mplab's stack takes.

use std::sync::Arc;
use std::thread::JoinHandle;

use mplab_scenario::network::Flow;

use super::{failed, spawn, FlowDriver};
use crate::apps::{Clock, FlowState};
use crate::gateway::Gateway;
use crate::run::options::KernelError;
use crate::run::plan::Plan;
use crate::run::stack::HostStack;

/// Tunnel gateways, (flow id, one end).
#[derive(Default)]
pub struct Tunnel {
    gateways: Vec<(usize, Gateway)>,
}

impl FlowDriver for Tunnel {
    /// Each gateway's TUN, rule and socket (or its stack's end).
    fn prepare(&mut self, plan: &Plan, f: &Flow, node_ns: &[String], _: &Arc<FlowState>, stacks: &mut [&mut dyn HostStack]) -> Result<(), KernelError> {
        for (end, node) in [(0, f.from), (1, f.to)] {
            let mut bridge = None;
            for s in stacks.iter_mut() {
                if let Some(fd) = s.tunnel_end(f, end, node).map_err(KernelError::Failed)? {
                    bridge = Some(fd);
                    break;
                }
            }
            self.gateways.push((f.id, crate::gateway::prepare(plan.net, f, end, &node_ns[node], bridge).map_err(|e| failed(f, e))?));
        }
        Ok(())
    }

    fn start(&mut self, plan: &Plan, states: &[Arc<FlowState>], clk: &Clock, _: u64) -> Result<Vec<JoinHandle<()>>, KernelError> {
        let mut threads = Vec::new();
        // An MPQUIC tunnel's ends are configured from the network.
        let net = Arc::new(plan.net.clone());
        for (fi, gw) in self.gateways.drain(..) {
            let (ff, st, c, n) = (plan.net.flows[fi].clone(), states[fi].clone(), clk.clone(), net.clone());
            // Each end its own seed, as the datagram flows' ends.
            let seed = plan.net.seed ^ (0x6a7_0000 + 2 * fi as u64 + u64::from(gw.end() == 1));
            threads.push(spawn(format!("gw-{}", ff.name), move || crate::gateway::run(n, ff, gw, seed, st, c))?);
        }
        Ok(threads)
    }
}
