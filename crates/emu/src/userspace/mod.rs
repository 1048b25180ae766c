//! # The userspace backend: mplab's own MPTCP stack on real packets
//!
//! Same topology, link emulator, probes and results as the kernel backend
//! ([`crate::kernel`]); the hosts that run mplab's stack get a TUN device
//! ([`tun`]) that carries all their addresses, and one thread each
//! ([`host`]) that drives `mplab_proto::mptcp::Connection`s (or, for
//! plain TCP flows, `mplab_proto::tcp::Connection`s, [`conn`]) and the
//! applications over it, writing merged segments with GSO ([`gso`]);
//! flows of other transports carried on the TUN (SCTP) run the backend's
//! transport endpoints, the simulator's own ([`endpoints`]). Hosts whose
//! `stack` is `"kernel"` keep the Linux
//! kernel's (MP)TCP, so mplab and Linux can face each other. See
//! docs/userspace-backend.md.

pub mod agenda;
pub mod bridge;
pub mod choice;
pub mod conn;
pub mod control;
pub mod endpoints;
pub mod gso;
pub mod host;
pub mod stack;
pub mod tun;

use mplab_scenario::network::Network;
use mplab_scenario::Scenario;

pub use choice::{mplab_nodes, on_gateway_stack};
pub use control::{control_path, send_control, CONTROL_DIR};

use crate::run::{KernelError, KernelOptions, KernelRun};

/// What the userspace backend cannot run, as scenario errors (empty: ok).
///
/// The kernel's limits ([`crate::kconf::unsupported_on`]) apply to the
/// kernel's hosts only: a flow between two mplab hosts may use anything
/// proto implements (coupled CC, every scheduler, ndiffports); on a mixed
/// flow the mplab end may, and the kernel end must have what it runs
/// itself — its CC and scheduler only matter where it sends data. The
/// mplab ends need the CC and scheduler to exist in proto where they send.
pub fn unsupported(sc: &Scenario, net: &Network) -> Vec<String> {
    let mut errs = Vec::new();
    let mine = mplab_nodes(net);
    for n in &net.nodes {
        if let Some(s) = n.stack.as_deref() {
            if !matches!(s, "mplab" | "userspace" | "kernel") {
                let path = sc.nodes.iter().position(|x| x.name == n.name).map(|k| format!("nodes[{k}].stack")).unwrap_or_else(|| "nodes".into());
                errs.push(sc.error_at(&path, format!("unknown stack {s:?} (want \"mplab\" or \"kernel\")")).to_string());
            }
        }
    }
    // SCTP on an mplab host runs the backend's transport endpoint on the
    // TUN; its kernel-host peer runs usrsctp (checked by
    // kconf::unsupported_on).
    for f in net.flows.iter().filter(|f| endpoints::takes(f) && (mine[f.from] || mine[f.to])) {
        if mplab_backend::transport::engine(f.transport).is_none() {
            errs.push(sc.error_at(&format!("flows[{}].transport", f.id), format!("transport {:?}: mplab's stack has no engine for it", f.transport.name())).to_string());
        } else if let Some(why) = crate::usrsctp::unsupported(f) {
            errs.push(sc.error_at(&format!("flows[{}]", f.id), why).to_string());
        }
    }
    for u in mplab_backend::config::unsupported(net) {
        let f = &net.flows[u.flow];
        let senders = [(f.from, true), (f.to, false)].into_iter().filter(|&(n, cli)| mine[n] && crate::kconf::end_sends(&f.app, cli)).count();
        if senders > 0 {
            let path = if sc.flows.get(u.flow).is_some_and(|s| if u.field == "cc" { s.cc.is_some() } else { s.scheduler.is_some() }) {
                format!("flows[{}].{}", u.flow, u.field)
            } else if u.field == "cc" {
                if f.mptcp.is_some() { "transport.mptcp.cc" } else { "transport.tcp.cc" }.to_string()
            } else {
                "transport.mptcp.scheduler".to_string()
            };
            errs.push(sc.error_at(&path, format!("mplab's stack: {}", u.message)).to_string());
        }
    }
    let on_kernel: Vec<bool> = mine.iter().map(|&m| !m).collect();
    errs.extend(crate::kconf::unsupported_on(sc, net, &on_kernel));
    errs
}

/// Runs `net` with mplab's stack on the hosts [`mplab_nodes`] names.
pub fn run(net: &Network, opts: &KernelOptions) -> Result<KernelRun, KernelError> {
    let stack = stack::UserspaceStack::new(net, mplab_nodes(net));
    crate::run::run(net, opts, Some(Box::new(stack)))
}
