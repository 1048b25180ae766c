//! Linux's in-kernel path manager, driven by endpoints (`default` and
//! `endpoints`).

use super::{announce_signal, linux_limits, no_param, room, KernelEndpoints, LocalAddr, PathManager, PmAction, PmEntry, PmView, RemoteAddr};
use crate::registry::{Entry, KernelMap};

/// `default`: the endpoints a host lists in mplab's stack; the kernel
/// backend adds none (one subflow, plus one per accepted ADD_ADDR).
/// Its entries in the registry.
pub const ENTRIES: &[PmEntry] = &[DEFAULT, ENDPOINTS];

pub const DEFAULT: PmEntry = PmEntry {
    entry: Entry { name: "default", aliases: &[], params: "", kernel: KernelMap::Linux("in-kernel"), build: |p| no_param(p, || Endpoints) },
    limits: linux_limits,
    subflows_param: None,
    kernel_endpoints: KernelEndpoints::None,
};

/// `endpoints`: exactly what `[[transport.mptcp.endpoints]]` lists, on
/// every backend (`ip mptcp endpoint add` on the kernel's).
pub const ENDPOINTS: PmEntry = PmEntry {
    entry: Entry { name: "endpoints", aliases: &[], params: "", kernel: KernelMap::Linux("in-kernel, the scenario's endpoints"), build: |p| no_param(p, || Endpoints) },
    limits: linux_limits,
    subflows_param: None,
    kernel_endpoints: KernelEndpoints::Scenario,
};

/// Linux's in-kernel manager driven by endpoints: `subflow` endpoints open
/// subflows to the peer's address (to every known peer address when also
/// `fullmesh`), `signal` endpoints are announced, announced peer addresses
/// get a subflow from the initial local address; all within the limits.
/// With no endpoints it is the plain `default`: one subflow, plus one per
/// accepted ADD_ADDR.
#[derive(Debug, Clone, Default)]
pub struct Endpoints;

impl Endpoints {
    /// A `subflow` endpoint's subflows: to the peer's first address, or to
    /// every one it knows when also `fullmesh`.
    fn subflows_from(v: &PmView, l: &LocalAddr, out: &mut Vec<PmAction>) {
        let targets: Vec<RemoteAddr> = if l.fullmesh { v.remotes.to_vec() } else { v.remotes.iter().take(1).copied().collect() };
        for r in targets {
            if !v.has(l.addr, r.addr) && room(v, out) {
                out.push(PmAction::Open { local: l.addr, remote: r, backup: l.backup });
            }
        }
    }
}

impl PathManager for Endpoints {
    fn name(&self) -> &'static str {
        "default"
    }

    fn on_established(&mut self, v: &PmView, out: &mut Vec<PmAction>) {
        // The initial subflow left from an address whose endpoint says
        // backup: once fully established it becomes one, told with MP_PRIO
        // (Linux 6.18 pm_kernel.c, the MPC endpoint's accounting in
        // mptcp_pm_create_subflow_or_signal_addr), on either end.
        if let Some(first) = v.initial_local() {
            if v.locals.iter().any(|l| l.addr == first && l.backup) {
                out.push(PmAction::Prio { local: first, backup: true });
            }
        }
        announce_signal(v, out);
        if !v.client {
            return;
        }
        for l in v.locals.iter().filter(|l| l.subflow) {
            Self::subflows_from(v, l, out);
        }
    }

    fn on_local_added(&mut self, v: &PmView, l: LocalAddr, out: &mut Vec<PmAction>) {
        if !v.client {
            if l.signal {
                out.push(PmAction::Announce { id: l.id, addr: l.addr });
            }
            return;
        }
        if l.subflow {
            Self::subflows_from(v, &l, out);
        }
    }

    fn on_add_addr(&mut self, v: &PmView, addr: RemoteAddr, out: &mut Vec<PmAction>) {
        if !v.client {
            return;
        }
        let mesh: Vec<&LocalAddr> = v.locals.iter().filter(|l| l.subflow && l.fullmesh).collect();
        if mesh.is_empty() && v.locals.iter().any(|l| l.laminar) {
            // Linux 6.18 (pm_kernel.c, fill_local_laminar_endp): once any
            // endpoint is laminar, an announced address gets one subflow
            // from the first laminar endpoint, in id order, that no live
            // subflow uses (the initial subflow uses the first address),
            // or none at all: routing's choice is no longer asked.
            let mut laminar: Vec<&LocalAddr> = v.locals.iter().filter(|l| l.laminar).collect();
            laminar.sort_by_key(|l| l.id);
            let used = |a: std::net::IpAddr| v.subflows.iter().any(|(l, _)| l.ip() == a) || out.iter().any(|o| matches!(o, PmAction::Open { local, .. } if *local == a));
            if let Some(l) = laminar.into_iter().find(|l| !used(l.addr)) {
                if room(v, out) {
                    out.push(PmAction::Open { local: l.addr, remote: addr, backup: l.backup });
                }
            }
        } else if mesh.is_empty() {
            if let Some(local) = v.initial_local() {
                if !v.has(local, addr.addr) && room(v, out) {
                    out.push(PmAction::Open { local, remote: addr, backup: false });
                }
            }
        } else {
            for l in mesh {
                if !v.has(l.addr, addr.addr) && room(v, out) {
                    out.push(PmAction::Open { local: l.addr, remote: addr, backup: l.backup });
                }
            }
        }
    }
}
