//! `fullmesh`: a subflow between every pair of addresses.

use std::net::IpAddr;

use super::{room, AddrCounts, KernelEndpoints, Limits, LocalAddr, PathManager, PmAction, PmEntry, PmView, RemoteAddr, no_param};
use crate::registry::{Entry, KernelMap};

/// No `dev` in the kernel's endpoints: a subflow bound to a device only
/// accepts segments arriving on it, and on direct parallel paths the
/// replies of a cross subflow (eth0 -> the server's eth1 address) come back
/// on the other interface. The per-source policy routes pick the interface.
/// Its entries in the registry.
pub const ENTRIES: &[PmEntry] = &[ENTRY];

pub const ENTRY: PmEntry = PmEntry {
    entry: Entry { name: "fullmesh", aliases: &[], params: "", kernel: KernelMap::Linux("in-kernel, fullmesh endpoints"), build: |p| no_param(p, || FullMesh) },
    limits,
    subflows_param: None,
    kernel_endpoints: KernelEndpoints::EveryAddress { client: "subflow fullmesh", server: "signal" },
};

/// Every pair of addresses, and every address the server announces;
/// `subflows` (when set) caps the subflows.
fn limits(a: AddrCounts, subflows: Option<u32>) -> Limits {
    Limits { subflows: subflows.map_or((a.local * a.remote).saturating_sub(1), |s| s.saturating_sub(1)), add_addr_accepted: a.remote.saturating_sub(1) }
}

/// A subflow for every (local address, peer address) pair; the server
/// announces all its other addresses so the client learns them.
#[derive(Debug, Clone, Default)]
pub struct FullMesh;

impl PathManager for FullMesh {
    fn name(&self) -> &'static str {
        "fullmesh"
    }

    fn on_established(&mut self, v: &PmView, out: &mut Vec<PmAction>) {
        if !v.client {
            let first = v.subflows.first().map(|(l, _)| l.ip());
            for l in v.locals.iter().filter(|l| Some(l.addr) != first) {
                out.push(PmAction::Announce { id: l.id, addr: l.addr });
            }
            return;
        }
        for r in v.remotes {
            self.mesh_to(v, *r, out);
        }
    }

    fn on_add_addr(&mut self, v: &PmView, addr: RemoteAddr, out: &mut Vec<PmAction>) {
        if v.client {
            self.mesh_to(v, addr, out);
        }
    }

    fn on_local_added(&mut self, v: &PmView, l: LocalAddr, out: &mut Vec<PmAction>) {
        if !v.client {
            out.push(PmAction::Announce { id: l.id, addr: l.addr });
            return;
        }
        for r in v.remotes {
            if !v.has(l.addr, r.addr) && room(v, out) {
                out.push(PmAction::Open { local: l.addr, remote: *r, backup: l.backup });
            }
        }
    }
}

impl FullMesh {
    /// Opens subflows from every local address to `r`. Under the `mplab`
    /// profile addresses that carry no subflow yet go first: when the limit
    /// stops the mesh short, the subflows it does open spread over the
    /// host's interfaces (mplab's choice); `PmView::id_order` keeps Linux's
    /// id order.
    fn mesh_to(&self, v: &PmView, r: RemoteAddr, out: &mut Vec<PmAction>) {
        let used = |a: IpAddr| v.subflows.iter().any(|(l, _)| l.ip() == a) || out.iter().any(|x| matches!(x, PmAction::Open { local, .. } if *local == a));
        let mut order: Vec<&LocalAddr> = v.locals.iter().collect();
        if !v.id_order {
            order.sort_by_key(|l| used(l.addr));
        }
        for l in order {
            let pending = out.iter().any(|a| matches!(a, PmAction::Open { local, remote, .. } if *local == l.addr && remote.addr == r.addr));
            if !v.has(l.addr, r.addr) && !pending && room(v, out) {
                out.push(PmAction::Open { local: l.addr, remote: r, backup: l.backup });
            }
        }
    }
}
