//! # The userspace backend: mplab's own MPTCP stack on real packets
//!
//! Same topology, link emulator, probes and results as the kernel backend
//! ([`crate::kernel`]); the hosts that run mplab's stack get a TUN device
//! ([`tun`]) that carries all their addresses, and one thread each
//! ([`host`]) that drives `mplab_proto::mptcp::Connection`s and the
//! applications over it. Hosts whose `stack` is `"kernel"` keep the Linux
//! kernel's (MP)TCP, so mplab and Linux can face each other. See
//! docs/userspace-backend.md.

pub mod host;
pub mod tun;

use mplab_scenario::network::{Network, NodeKind, TransportKind};
use mplab_scenario::Scenario;

use crate::kernel::{self, KernelError, KernelOptions, KernelRun};

/// Which nodes run mplab's stack under the userspace backend: every host
/// whose `stack` is unset or `"mplab"` (routers are always the kernel's).
pub fn mplab_nodes(net: &Network) -> Vec<bool> {
    net.nodes.iter().map(|n| n.kind == NodeKind::Host && n.stack.as_deref().is_none_or(|s| s == "mplab" || s == "userspace")).collect()
}

/// What the userspace backend cannot run, as scenario errors (empty: ok).
pub fn unsupported(sc: &Scenario, net: &Network) -> Vec<String> {
    let mut errs = Vec::new();
    let mine = mplab_nodes(net);
    for (i, n) in net.nodes.iter().enumerate() {
        if let Some(s) = n.stack.as_deref() {
            if !matches!(s, "mplab" | "userspace" | "kernel") {
                let path = sc.nodes.iter().position(|x| x.name == n.name).map(|k| format!("nodes[{k}].stack")).unwrap_or_else(|| "nodes".into());
                errs.push(sc.error_at(&path, format!("unknown stack {s:?} (want \"mplab\" or \"kernel\")")).to_string());
            }
        }
        let _ = i;
    }
    for (fi, f) in net.flows.iter().enumerate() {
        if (mine[f.from] || mine[f.to]) && f.transport == TransportKind::Tcp {
            errs.push(sc.error_at(&format!("flows[{fi}].transport"), "the userspace backend runs MPTCP flows on mplab's stack; plain TCP on it is not wired up yet (give the node stack = \"kernel\")").to_string());
        }
    }
    // Whatever the kernel ends and the topology need.
    let kernel_only: Vec<String> = crate::kconf::unsupported(sc, net).into_iter().filter(|e| !e.contains(".stack") && !e.contains("stack \"")).collect();
    errs.extend(kernel_only);
    errs
}

/// Runs `net` with mplab's stack on the hosts [`mplab_nodes`] names.
pub fn run(net: &Network, opts: &KernelOptions) -> Result<KernelRun, KernelError> {
    kernel::run_mixed(net, opts, &mplab_nodes(net))
}
