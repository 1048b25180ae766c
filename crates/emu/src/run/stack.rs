//! The (MP)TCP stack of the run's hosts: the kernel's, or mplab's own over
//! a TUN (the userspace backend's [`crate::userspace::stack`]). The run
//! asks each stack for its part at every phase; the kernel's part of the
//! flows themselves (sockets, listeners) is the flow drivers'
//! ([`super::flows`]), since the applications run on them alike.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::thread::JoinHandle;

use mplab_scenario::network::Flow;

use super::options::KernelError;
use super::plan::Plan;
use crate::addr_events::ControlFn;
use crate::apps::{Clock, FlowState};
use crate::converter::MplabCarriers;
use crate::kconf;

/// One stack's part of a run, phase by phase. Every step has a default
/// that does nothing, so a stack implements what it needs.
pub trait HostStack {
    /// Per node: whether this stack runs it.
    fn nodes(&self) -> Vec<bool>;

    /// Configures its hosts, before the middleboxes.
    fn configure(&mut self, _plan: &Plan, _node_ns: &[String]) -> Result<(), KernelError> {
        Ok(())
    }

    /// Opens its devices, once the middleboxes run.
    fn open(&mut self, _plan: &Plan, _node_ns: &[String]) -> Result<(), KernelError> {
        Ok(())
    }

    /// The gateway program's end of tunnel `f`'s connection at `end`
    /// (0 at `from`, 1 at `to`) on `node`, when this stack carries it;
    /// Err is the whole message.
    fn tunnel_end(&mut self, _f: &Flow, _end: usize, _node: usize) -> Result<Option<OwnedFd>, String> {
        Ok(None)
    }

    /// Claims the converter carriers of flow `f` this stack carries.
    fn converter_ends(&mut self, _f: &Flow, _carriers: &mut MplabCarriers) -> Result<(), String> {
        Ok(())
    }

    /// Starts its loops; they run until the clock's hard deadline.
    fn start(&mut self, _plan: &Plan, _node_ns: &[String], _states: &[Arc<FlowState>], _clk: &Clock) -> Result<Vec<JoinHandle<()>>, KernelError> {
        Ok(Vec::new())
    }

    /// How its hosts take run-time commands (address events), if not as
    /// the kernel's (`ip mptcp endpoint`).
    fn control(&self) -> Option<ControlFn> {
        None
    }

    /// Reads its end-of-run counters, once the flows' sockets are closed.
    fn finish(&mut self) {}

    /// A balanced service's backend `node` as this stack counted it:
    /// (connections, joins accepted, joins refused); None if not its own.
    fn server_counts(&self, _node: &str) -> Option<(u64, u64, u64)> {
        None
    }

    /// Its hosts' facts for meta.json (`mplab_hosts`).
    fn meta(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
}

/// Linux's (MP)TCP on the nodes mplab's stack does not run.
pub struct KernelStack {
    nodes: Vec<bool>,
}

impl KernelStack {
    pub fn new(plan: &Plan) -> KernelStack {
        KernelStack { nodes: plan.on_kernel.clone() }
    }
}

impl HostStack for KernelStack {
    fn nodes(&self) -> Vec<bool> {
        self.nodes.clone()
    }

    /// sysctls, and the MPTCP limits and endpoints of the plan.
    fn configure(&mut self, plan: &Plan, node_ns: &[String]) -> Result<(), KernelError> {
        kconf::apply_hosts(plan.net, node_ns, &self.nodes, &plan.mptcp).map_err(|e| KernelError::Failed(format!("configuring the kernel: {e}")))
    }
}
