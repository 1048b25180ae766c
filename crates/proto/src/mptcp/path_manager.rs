//! Path managers: which subflows a connection opens and which addresses it
//! announces. The connection asks at the moments that matter (established,
//! an address announced by the peer, a subflow gone) and carries out the
//! actions; a path manager never touches packets.

use core::fmt::Debug;
use std::net::{IpAddr, SocketAddr};

use crate::registry::{self, Choice, Entry, KernelMap};

/// One of this host's addresses, with Linux endpoint flags
/// (`ip mptcp endpoint add ADDR id ID signal|subflow|backup|fullmesh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalAddr {
    pub id: u8,
    pub addr: IpAddr,
    pub signal: bool,
    pub subflow: bool,
    pub backup: bool,
    pub fullmesh: bool,
}

impl LocalAddr {
    pub fn plain(id: u8, addr: IpAddr) -> Self {
        LocalAddr { id, addr, signal: false, subflow: false, backup: false, fullmesh: false }
    }
}

/// An address of the peer: the one connected to (id 0) or announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteAddr {
    pub id: u8,
    pub addr: SocketAddr,
}

/// `ip mptcp limits`: extra subflows per connection, ADD_ADDRs accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub subflows: u32,
    pub add_addr_accepted: u32,
}

/// What the path manager sees.
#[derive(Debug, Clone, Copy)]
pub struct PmView<'a> {
    /// This end opened the connection.
    pub client: bool,
    pub locals: &'a [LocalAddr],
    pub remotes: &'a [RemoteAddr],
    /// (local, remote) of every subflow alive or being opened.
    pub subflows: &'a [(SocketAddr, SocketAddr)],
    pub limits: Limits,
    /// Local addresses are walked in id order, as Linux walks its
    /// endpoint list (`fill_local_addresses_vec`, net/mptcp/pm_kernel.c),
    /// even when the limit cuts a mesh short: the `linux` profile. The
    /// order subflows are opened in is the order Linux's scheduler breaks
    /// ties in (`scheduler/linux.rs`).
    pub id_order: bool,
}

impl PmView<'_> {
    /// Extra subflows (beyond the first) alive or being opened.
    pub fn extra_subflows(&self) -> u32 {
        self.subflows.len().saturating_sub(1) as u32
    }
    fn has(&self, local: IpAddr, remote: SocketAddr) -> bool {
        self.subflows.iter().any(|(l, r)| l.ip() == local && *r == remote)
    }
    fn initial_local(&self) -> Option<IpAddr> {
        self.subflows.first().map(|(l, _)| l.ip())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PmAction {
    /// Open a subflow (MP_JOIN) from `local` to `remote`; port 0 lets the
    /// connection pick a fresh source port.
    Open { local: IpAddr, remote: RemoteAddr, backup: bool },
    /// Announce one of our addresses (ADD_ADDR).
    Announce { id: u8, addr: IpAddr },
    /// Set the priority of our subflows from `local` (MP_PRIO).
    Prio { local: IpAddr, backup: bool },
}

pub trait PathManager: Debug {
    fn name(&self) -> &'static str;
    /// The connection is fully established.
    fn on_established(&mut self, v: &PmView, out: &mut Vec<PmAction>);
    /// The peer announced `addr` (already counted against the limit).
    fn on_add_addr(&mut self, v: &PmView, addr: RemoteAddr, out: &mut Vec<PmAction>);
    /// Our address `l`, withdrawn earlier, is back in service (it is in
    /// `v.locals`). By default nothing happens.
    fn on_local_added(&mut self, _v: &PmView, _l: LocalAddr, _out: &mut Vec<PmAction>) {}
}

/// Server side of every manager: announce the addresses flagged `signal`.
fn announce_signal(v: &PmView, out: &mut Vec<PmAction>) {
    if v.client {
        return;
    }
    for l in v.locals.iter().filter(|l| l.signal) {
        out.push(PmAction::Announce { id: l.id, addr: l.addr });
    }
}

fn room(v: &PmView, out: &[PmAction]) -> bool {
    let opening = out.iter().filter(|a| matches!(a, PmAction::Open { .. })).count() as u32;
    v.extra_subflows() + opening < v.limits.subflows
}

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
        if mesh.is_empty() {
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

/// `n` subflows between the same two addresses, differing in source port
/// (the out-of-tree kernel's `mptcp_ndiffports`): spreads one address pair
/// over ECMP paths.
#[derive(Debug, Clone)]
pub struct NDiffPorts {
    pub n: u32,
}

impl PathManager for NDiffPorts {
    fn name(&self) -> &'static str {
        "ndiffports"
    }

    fn on_established(&mut self, v: &PmView, out: &mut Vec<PmAction>) {
        let (Some(&(l, _)), Some(r)) = (v.subflows.first(), v.remotes.first()) else { return };
        if !v.client {
            return;
        }
        for _ in v.subflows.len() as u32..self.n {
            out.push(PmAction::Open { local: l.ip(), remote: *r, backup: false });
        }
    }

    fn on_add_addr(&mut self, _v: &PmView, _addr: RemoteAddr, _out: &mut Vec<PmAction>) {}
}

/// A validated path-manager choice (see [`crate::registry`]).
pub type PmChoice = Choice<dyn PathManager>;

/// The built-in path managers by scenario name: one line each.
pub static REGISTRY: &[Entry<dyn PathManager>] = &[
    // Linux's in-kernel manager: the endpoints a host lists (none: one subflow).
    Entry { name: "default", aliases: &["endpoints"], params: "", kernel: KernelMap::Linux("in-kernel"), build: |p| p.is_none().then(|| Box::new(Endpoints) as Box<dyn PathManager>) },
    Entry { name: "fullmesh", aliases: &[], params: "", kernel: KernelMap::Linux("in-kernel, fullmesh endpoints"), build: |p| p.is_none().then(|| Box::new(FullMesh) as Box<dyn PathManager>) },
    Entry {
        name: "ndiffports",
        aliases: &[],
        params: "N",
        kernel: KernelMap::Refuse("the Linux kernel has no ndiffports path manager (its in-kernel path manager does default, fullmesh and explicit endpoints)"),
        build: |p| match p {
            None => Some(Box::new(NDiffPorts { n: 2 })),
            Some(n) => n.parse::<u32>().ok().filter(|&n| n > 0).map(|n| Box::new(NDiffPorts { n }) as Box<dyn PathManager>),
        },
    },
];

/// The path manager `name` names (`"ndiffports:4"`), validated.
pub fn lookup(name: &str) -> Result<PmChoice, String> {
    registry::lookup(REGISTRY, "path manager", name)
}

impl Default for PmChoice {
    fn default() -> Self {
        lookup("default").expect("default is registered")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn ip(a: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, a, 1))
    }
    fn sa(a: u8, p: u16) -> SocketAddr {
        SocketAddr::new(ip(a), p)
    }

    #[test]
    fn fullmesh_pairs_every_local_with_every_remote() {
        let locals = [LocalAddr::plain(0, ip(1)), LocalAddr::plain(1, ip(2))];
        let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
        let subflows = [(sa(1, 1000), sa(9, 80))];
        let v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: Limits { subflows: 8, add_addr_accepted: 8 }, id_order: false };
        let mut out = vec![];
        FullMesh.on_established(&v, &mut out);
        assert_eq!(out, vec![PmAction::Open { local: ip(2), remote: remotes[0], backup: false }]);
        let mut out = vec![];
        FullMesh.on_add_addr(&v, RemoteAddr { id: 1, addr: sa(8, 80) }, &mut out);
        assert_eq!(out.len(), 2, "both locals to the new address");
    }

    #[test]
    fn limits_cap_extra_subflows() {
        let locals = [LocalAddr::plain(0, ip(1)), LocalAddr::plain(1, ip(2)), LocalAddr::plain(2, ip(3))];
        let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
        let subflows = [(sa(1, 1000), sa(9, 80))];
        let v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: Limits { subflows: 1, add_addr_accepted: 0 }, id_order: false };
        let mut out = vec![];
        FullMesh.on_established(&v, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn a_capped_mesh_spreads_over_unused_interfaces_first() {
        // Two interfaces, room for one more subflow, the peer's second
        // address announced before anything else was opened: the subflow
        // goes from the interface without one, not from the busy one.
        let locals = [LocalAddr::plain(0, ip(1)), LocalAddr::plain(1, ip(2))];
        let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
        let subflows = [(sa(1, 1000), sa(9, 80))];
        let v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: Limits { subflows: 1, add_addr_accepted: 1 }, id_order: false };
        let mut out = vec![];
        let announced = RemoteAddr { id: 1, addr: sa(8, 80) };
        FullMesh.on_add_addr(&v, announced, &mut out);
        assert_eq!(out, vec![PmAction::Open { local: ip(2), remote: announced, backup: false }]);
        // Linux walks its endpoints in id order: the busy interface first.
        let v = PmView { id_order: true, ..v };
        let mut out = vec![];
        FullMesh.on_add_addr(&v, announced, &mut out);
        assert_eq!(out, vec![PmAction::Open { local: ip(1), remote: announced, backup: false }]);
    }

    /// An announced address is joined from every local address in id
    /// order under `id_order`: the subflow list the kernel builds for two
    /// interfaces (initial, then 1 -> announced, 2 -> announced; the
    /// kernel's subflow ids on the `two-paths` scenario).
    #[test]
    fn id_order_joins_an_announced_address_from_the_first_interface_first() {
        let locals = [LocalAddr::plain(0, ip(1)), LocalAddr::plain(1, ip(2))];
        let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
        let subflows = [(sa(1, 1000), sa(9, 80))];
        let v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: Limits { subflows: 8, add_addr_accepted: 8 }, id_order: true };
        let announced = RemoteAddr { id: 1, addr: sa(8, 80) };
        let mut out = vec![];
        FullMesh.on_add_addr(&v, announced, &mut out);
        let from: Vec<IpAddr> = out.iter().map(|a| match a { PmAction::Open { local, .. } => *local, _ => unreachable!() }).collect();
        assert_eq!(from, vec![ip(1), ip(2)]);
        let mut out = vec![];
        FullMesh.on_add_addr(&PmView { id_order: false, ..v }, announced, &mut out);
        assert!(matches!(out[0], PmAction::Open { local, .. } if local == ip(2)), "mplab: the unused interface first");
    }

    #[test]
    fn ndiffports_opens_n_minus_one_more() {
        let locals = [LocalAddr::plain(0, ip(1))];
        let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
        let subflows = [(sa(1, 1000), sa(9, 80))];
        let v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: Limits { subflows: 8, add_addr_accepted: 0 }, id_order: false };
        let mut out = vec![];
        NDiffPorts { n: 4 }.on_established(&v, &mut out);
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn default_joins_an_announced_address_within_limits() {
        let locals = [LocalAddr::plain(0, ip(1))];
        let remotes = [RemoteAddr { id: 0, addr: sa(9, 80) }];
        let subflows = [(sa(1, 1000), sa(9, 80))];
        let mut v = PmView { client: true, locals: &locals, remotes: &remotes, subflows: &subflows, limits: Limits { subflows: 2, add_addr_accepted: 2 }, id_order: false };
        let mut out = vec![];
        Endpoints.on_add_addr(&v, RemoteAddr { id: 1, addr: sa(8, 80) }, &mut out);
        assert_eq!(out.len(), 1);
        v.limits.subflows = 0;
        let mut out = vec![];
        Endpoints.on_add_addr(&v, RemoteAddr { id: 1, addr: sa(8, 80) }, &mut out);
        assert!(out.is_empty());
    }
}
