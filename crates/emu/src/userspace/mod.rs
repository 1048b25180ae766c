//! # The userspace backend: mplab's own MPTCP stack on real packets
//!
//! Same topology, link emulator, probes and results as the kernel backend
//! ([`crate::kernel`]); the hosts that run mplab's stack get a TUN device
//! ([`tun`]) that carries all their addresses, and one thread each
//! ([`host`]) that drives `mplab_proto::mptcp::Connection`s (or, for
//! plain TCP flows, `mplab_proto::tcp::Connection`s, [`conn`]) and the
//! applications over it, writing merged segments with GSO ([`gso`]). Hosts whose `stack` is `"kernel"` keep the Linux
//! kernel's (MP)TCP, so mplab and Linux can face each other. See
//! docs/userspace-backend.md.

pub mod agenda;
pub mod bridge;
pub mod conn;
pub mod gso;
pub mod host;
pub mod sctp;
pub mod tun;

use mplab_scenario::network::{App, Network, NodeKind, TransportKind};
use mplab_scenario::Scenario;

use crate::kernel::{self, KernelError, KernelOptions, KernelRun};

/// Which nodes run mplab's stack under the userspace backend: every host
/// whose `stack` is unset or `"mplab"`, and the gateway routers of the
/// hybrid-access flows that carry a connection ([`on_gateway_stack`]).
/// Other routers are the kernel's.
pub fn mplab_nodes(net: &Network) -> Vec<bool> {
    let mine = |n: &mplab_scenario::network::Node| n.stack.as_deref().is_none_or(|s| s == "mplab" || s == "userspace");
    net.nodes.iter().map(|n| mine(n) && (n.kind == NodeKind::Host || net.flows.iter().any(|f| on_gateway_stack(f) && (f.from == n.id || f.to == n.id)))).collect()
}

/// Whether flow `f` is a gateway connection mplab's stack can end in a
/// router: a stream-mode tunnel's, or a converter's carriers. The router
/// still forwards with Linux; a datagram-mode tunnel has no connection
/// (kernel UDP).
pub fn on_gateway_stack(f: &mplab_scenario::network::Flow) -> bool {
    matches!(f.app, App::Tunnel { datagram: false, .. } | App::Converter { .. }) && matches!(f.transport, TransportKind::Tcp | TransportKind::Mptcp)
}

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
    // SCTP on an mplab host runs proto's association on the TUN; its
    // kernel-host peer runs usrsctp (checked by kconf::unsupported_on).
    for f in net.flows.iter().filter(|f| f.transport.is_sctp() && (mine[f.from] || mine[f.to])) {
        if let Some(why) = crate::usrsctp::flow::unsupported(f) {
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

/// Directory of the mplab hosts' control files.
pub const CONTROL_DIR: &str = "/run/mplab-us";

/// The control file of the mplab host in namespace `ns`.
///
/// Run-time commands for an mplab host, what `ip mptcp endpoint change /
/// delete` is for a kernel host (and how the interop tests drive the
/// mplab-initiated MP_PRIO, REMOVE_ADDR and MP_FASTCLOSE). The host picks
/// the file up within 20 ms, removes it and applies each line:
///
/// * `backup ADDR` / `nobackup ADDR`: MP_PRIO on every subflow from local
///   address ADDR (`Connection::set_backup`): the peer should send on it
///   only when nothing else works;
/// * `remove ADDR`: the address goes away: REMOVE_ADDR with its id, and
///   its subflows end (`Connection::remove_local`);
/// * `abort [FLOW]`: MP_FASTCLOSE (a RST for plain TCP) on the flow's
///   connection, or on every connection of the host.
///
/// Scenario files have no such events (the simulator and the kernel
/// backend could not run them alike); this is an operator's and the
/// tests' hook. Write with [`send_control`] (atomic: a file appears whole).
pub fn control_path(ns: &str) -> std::path::PathBuf {
    std::path::Path::new(CONTROL_DIR).join(format!("{ns}.ctl"))
}

/// Hands `commands` (one per line) to the mplab host in namespace `ns`.
/// Fails if the previous commands were not picked up yet.
pub fn send_control(ns: &str, commands: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(CONTROL_DIR)?;
    let path = control_path(ns);
    if path.exists() {
        return Err(std::io::Error::new(std::io::ErrorKind::WouldBlock, format!("{}: earlier commands still pending", path.display())));
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, commands)?;
    std::fs::rename(&tmp, &path)
}

/// Runs `net` with mplab's stack on the hosts [`mplab_nodes`] names.
pub fn run(net: &Network, opts: &KernelOptions) -> Result<KernelRun, KernelError> {
    kernel::run_mixed(net, opts, &mplab_nodes(net))
}
