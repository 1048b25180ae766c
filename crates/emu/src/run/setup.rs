//! The first phases of a run: can this process run it at all, then the
//! namespaces and links, then the nodes' addresses and routes.

use std::time::Duration;

use super::options::KernelError;
use super::plan::Plan;
use crate::sys;
use crate::topo::Topology;

/// Checks that this process can run the kernel backend.
pub fn preflight() -> Result<(), KernelError> {
    if !sys::is_root() {
        return Err(KernelError::Usage("the kernel backend needs root (it creates network namespaces and veth pairs): run `sudo mplab run --backend kernel ...`".into()));
    }
    if sys::run(&["ip", "-V"]).is_err() {
        return Err(KernelError::Usage("the kernel backend needs iproute2's `ip` (apt-get install iproute2)".into()));
    }
    if !std::path::Path::new("/proc/sys/net/mptcp/enabled").exists() {
        return Err(KernelError::Usage("this kernel has no MPTCP (CONFIG_MPTCP): /proc/sys/net/mptcp is missing".into()));
    }
    // A run holds a few descriptors per flow (sockets, listeners, the
    // accepted ones): thousands of flows need more than a shell's 1024.
    sys::raise_nofile();
    Ok(())
}

/// A run whose kernel hosts take MPTCP settings needs the kernel's path
/// manager to answer before anything is built.
pub fn path_manager_answers(plan: &Plan) -> Result<(), KernelError> {
    if !plan.mptcp.is_empty() {
        sys::mptcp_pm_answers(Duration::from_secs(5)).map_err(KernelError::Failed)?;
    }
    Ok(())
}

/// The namespaces and the veth pairs between them. Dropping the returned
/// topology (on any later error too) removes them again.
pub fn namespaces(plan: &Plan, prefix: &str) -> Result<Topology, KernelError> {
    Topology::create(plan.net, prefix).map_err(building)
}

/// The nodes' addresses, routes, policy tables and rules.
pub fn addresses(plan: &Plan, topo: &Topology) -> Result<(), KernelError> {
    topo.address(plan.net).map_err(building)
}

fn building(e: String) -> KernelError {
    KernelError::Failed(format!("building the topology: {e}"))
}
