//! The middleboxes on nodes: their kernel rules (MPTCP stripping, NAT, the
//! load balancers' tables and queues), then the load balancers' forwarder
//! threads. Middleboxes on links live in the link emulator
//! ([`super::plan::Plan::emu_config`]).

use std::time::Instant as Wall;

use mplab_backend::balancer::BalancerStats;

use super::options::KernelError;
use super::plan::Plan;
use crate::balancer::{Forwarder, ForwarderLoad};
use crate::kconf;

/// The rules of the middleboxes on nodes.
pub fn rules(plan: &Plan, node_ns: &[String]) -> Result<(), KernelError> {
    kconf::apply_middleboxes(plan.net, node_ns, &plan.balancers).map_err(|e| KernelError::Failed(format!("configuring the kernel: {e}")))
}

/// The running load balancers, one forwarder per plan (`plan.balancers`
/// in order); dropping them stops the threads.
pub struct Balancers {
    forwarders: Vec<Forwarder>,
}

/// What one balancer's forwarder reports when it stops.
pub type BalancerOutcome = std::io::Result<(BalancerStats, ForwarderLoad)>;

impl Balancers {
    /// Starts the forwarders, which serve the queues [`rules`] set up.
    pub fn start(plan: &Plan, node_ns: &[String]) -> Result<Balancers, KernelError> {
        let mut forwarders = Vec::new();
        for p in &plan.balancers {
            let fw = Forwarder::start(&node_ns[p.node], p).map_err(|e| KernelError::Failed(format!("load balancer on {}: {e}", plan.net.nodes[p.node].name)))?;
            forwarders.push(fw);
        }
        Ok(Balancers { forwarders })
    }

    /// Gives the forwarders the run's time zero.
    pub fn start_clock(&self, t0: Wall) {
        for fw in &self.forwarders {
            fw.start_clock(t0);
        }
    }

    /// Stops every forwarder; their reports in plan order.
    pub fn stop(self) -> Vec<BalancerOutcome> {
        self.forwarders.into_iter().map(Forwarder::stop).collect()
    }
}
