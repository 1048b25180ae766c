//! Path managers: which subflows a connection opens and which addresses it
//! announces. The connection asks at the moments that matter (established,
//! an address announced by the peer, a subflow gone) and carries out the
//! actions; a path manager never touches packets.
//!
//! Each manager is one file here holding its algorithm and its
//! [`PmEntry`]: the name scenario files use, what `path_manager = "..."`
//! implies for the limits when the scenario sets none, whether the
//! scenario's `subflows` is its parameter (`ndiffports:N`), and what the
//! kernel backend configures for it (or why it refuses it). A new manager
//! is its file plus one line in the `path_managers!` list below; no code
//! outside that file matches on a manager's name.

use core::fmt::Debug;
use std::net::{IpAddr, SocketAddr};

use crate::registry::{self, Choice, Entry};

/// One of this host's addresses, with Linux endpoint flags
/// (`ip mptcp endpoint add ADDR id ID signal|subflow|backup|fullmesh|laminar`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalAddr {
    pub id: u8,
    pub addr: IpAddr,
    pub signal: bool,
    pub subflow: bool,
    pub backup: bool,
    pub fullmesh: bool,
    /// Linux 6.18's `laminar`: used once, for a subflow to an address the
    /// peer announces, instead of the address routing would pick.
    pub laminar: bool,
}

impl LocalAddr {
    pub fn plain(id: u8, addr: IpAddr) -> Self {
        LocalAddr { id, addr, signal: false, subflow: false, backup: false, fullmesh: false, laminar: false }
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

impl Limits {
    /// A fresh Linux namespace's `ip mptcp limits` (net/mptcp/pm_kernel.c).
    pub const LINUX_DEFAULT: Limits = Limits { subflows: 2, add_addr_accepted: 0 };
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
    /// The connection is closing and the profile adds no subflow then
    /// (the `linux` profile once either DATA_FIN is on its way: Linux's
    /// msk has left ESTABLISHED): [`room`] is none.
    pub closing: bool,
}

impl PmView<'_> {
    /// Extra subflows (beyond the first) alive or being opened.
    pub fn extra_subflows(&self) -> u32 {
        self.subflows.len().saturating_sub(1) as u32
    }
    pub(crate) fn has(&self, local: IpAddr, remote: SocketAddr) -> bool {
        self.subflows.iter().any(|(l, r)| l.ip() == local && *r == remote)
    }
    pub(crate) fn initial_local(&self) -> Option<IpAddr> {
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
pub(crate) fn announce_signal(v: &PmView, out: &mut Vec<PmAction>) {
    if v.client {
        return;
    }
    for l in v.locals.iter().filter(|l| l.signal) {
        out.push(PmAction::Announce { id: l.id, addr: l.addr });
    }
}

/// Whether the limit leaves room for one more subflow beyond those open
/// and those `out` already opens (none while the connection closes).
pub(crate) fn room(v: &PmView, out: &[PmAction]) -> bool {
    if v.closing {
        return false;
    }
    let opening = out.iter().filter(|a| matches!(a, PmAction::Open { .. })).count() as u32;
    v.extra_subflows() + opening < v.limits.subflows
}

/// The addresses a flow's ends have, for a manager's default limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddrCounts {
    /// Addresses of the host that opens the connection.
    pub local: u32,
    /// Addresses of the host it connects to.
    pub remote: u32,
}

/// What the kernel backend configures in a namespace for a manager, beyond
/// `ip mptcp limits` (whether it runs the manager at all is the entry's
/// [`KernelMap`](crate::registry::KernelMap)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelEndpoints {
    /// No endpoints: the in-kernel manager as a namespace starts.
    None,
    /// `ip mptcp endpoint add ADDR <client>` for every address of the
    /// client, `ip mptcp endpoint add ADDR <server>` for every address of
    /// the server but the one connected to.
    EveryAddress { client: &'static str, server: &'static str },
    /// The scenario's `[[transport.mptcp.endpoints]]` as listed.
    Scenario,
}

/// One built-in path manager: the entry every axis has (name, aliases,
/// parameter, kernel mapping, constructor) and the facts of this axis.
pub struct PmEntry {
    pub entry: Entry<dyn PathManager>,
    /// Its limits when the scenario sets none, from the addresses of the
    /// flow's ends and the scenario's `subflows` (all subflows, the first
    /// included; for a manager that takes it as its parameter, already
    /// defaulted).
    pub limits: fn(AddrCounts, Option<u32>) -> Limits,
    /// `Some(default)`: the scenario's `subflows` is its parameter
    /// (`ndiffports` with `subflows = 4` is `ndiffports:4`), `default`
    /// when the scenario sets none.
    pub subflows_param: Option<u32>,
    pub kernel_endpoints: KernelEndpoints,
}

/// Linux's limits, but `subflows` (when set) caps the subflows.
pub fn linux_limits(_: AddrCounts, subflows: Option<u32>) -> Limits {
    Limits { subflows: subflows.map_or(Limits::LINUX_DEFAULT.subflows, |s| s.saturating_sub(1)), ..Limits::LINUX_DEFAULT }
}

/// A parameterless manager's constructor.
pub fn no_param<P: PathManager + 'static>(p: Option<&str>, make: fn() -> P) -> Option<Box<dyn PathManager>> {
    p.is_none().then(|| Box::new(make()) as Box<dyn PathManager>)
}

/// Declares each manager's module and the registry of their entries
/// (each module's `ENTRIES`).
macro_rules! path_managers {
    ($($(#[$attr:meta])* $module:ident),* $(,)?) => {
        $($(#[$attr])* pub mod $module;)*

        /// The built-in path managers, by module.
        static MODULES: &[&[PmEntry]] = &[$($(#[$attr])* $module::ENTRIES,)*];
    };
}

// One line per manager.
path_managers! {
    endpoints,
    fullmesh,
    ndiffports,
    #[cfg(test)]
    fixture_first_only,
}

/// Every built-in path manager.
pub fn registry() -> impl Iterator<Item = &'static PmEntry> {
    MODULES.iter().flat_map(|m| m.iter())
}

pub use endpoints::Endpoints;
pub use fullmesh::FullMesh;
pub use ndiffports::NDiffPorts;

/// A validated path-manager choice (see [`crate::registry`]).
pub type PmChoice = Choice<dyn PathManager>;

/// Every entry as the other axes' registries have them (for listings).
pub fn entries() -> impl Iterator<Item = &'static Entry<dyn PathManager>> {
    registry().map(|e| &e.entry)
}

/// The manager `spec` names (`"ndiffports:4"`), whatever its parameter.
pub fn entry(spec: &str) -> Option<&'static PmEntry> {
    let base = registry::base_name(spec);
    registry().find(|e| e.entry.name == base || e.entry.aliases.contains(&base.as_str()))
}

/// The path manager `name` names (`"ndiffports:4"`), validated.
pub fn lookup(name: &str) -> Result<PmChoice, String> {
    let Some(e) = entry(name) else {
        return Err(format!("unknown path manager {name:?} (mplab's stack has {})", registry::names_of(entries())));
    };
    registry::choose(&e.entry, "path manager", name)
}

impl Default for PmChoice {
    fn default() -> Self {
        lookup("default").expect("default is registered")
    }
}

#[cfg(test)]
mod tests;
