//! Source NAT on a router (what the seed-000 lab's firewall also did, and
//! what every home gateway does): packets leaving through the outside
//! interface get the NAT's address and a port of its choosing; replies to
//! that address and port are translated back. MPTCP must survive it: the
//! join finds its connection by token, not by address.

use std::net::Ipv4Addr;

use mplab_proto::Instant;
use mplab_scenario::network::{Network, Prefix};
use mplab_scenario::plugins::fields::{Fields, PluginError};
use mplab_scenario::plugins::{About, OnKernel, Resolved};
use rustc_hash::FxHashMap;

use super::element::{Built, Hook, Middlebox, Place};
use super::kind::MiddleboxKind;
use super::segment::ModelPacket;

#[derive(Debug)]
pub struct Nat {
    /// Interface index of the outside.
    pub outside: usize,
    pub addr: Ipv4Addr,
    next_port: u16,
    /// (inside src, sport, dst, dport) -> NAT port.
    out: FxHashMap<(Ipv4Addr, u16, Ipv4Addr, u16), u16>,
    /// (NAT port, remote, remote port) -> (inside addr, inside port).
    back: FxHashMap<(u16, Ipv4Addr, u16), (Ipv4Addr, u16)>,
}

impl Nat {
    /// The NAT of `node`. Its outside is the interface owning `addr`, else
    /// the one the default route leaves by, else the last one.
    pub fn new(net: &Network, node: usize, addr: Option<Ipv4Addr>) -> Nat {
        let n = &net.nodes[node];
        let by_addr = addr.and_then(|a| n.interfaces.iter().find(|i| i.addr == a).map(|i| i.index));
        let by_route = n.routing.main.iter().find(|r| r.dst == Prefix::DEFAULT).and_then(|r| r.nexthops.first()).map(|h| h.iface);
        let outside = by_addr.or(by_route).unwrap_or(n.interfaces.len().saturating_sub(1));
        let a = addr.or_else(|| n.interfaces.get(outside).map(|i| i.addr)).unwrap_or(Ipv4Addr::UNSPECIFIED);
        Nat::at(outside, a)
    }

    /// A NAT whose outside is interface `outside`, translating to `addr`.
    pub fn at(outside: usize, addr: Ipv4Addr) -> Nat {
        Nat { outside, addr, next_port: 20000, out: FxHashMap::default(), back: FxHashMap::default() }
    }
}

impl<P: ModelPacket> Middlebox<P> for Nat {
    fn kind(&self) -> &'static str {
        "nat"
    }

    /// Inside hosts' packets leaving by the outside get the NAT's address;
    /// replies to it arriving there go back to the inside host.
    fn process(&mut self, _now: Instant, at: Hook, mut p: P, out: &mut Vec<P>) {
        match at {
            Hook::Egress { iface, local: false } if iface == self.outside => self.outbound(&mut p),
            Hook::Ingress { iface } if iface == self.outside && p.dst() == self.addr => {
                self.inbound(&mut p);
            }
            _ => {}
        }
        out.push(p);
    }
}

impl Nat {
    /// A packet leaving through the outside from inside: rewrite its source.
    pub fn outbound<P: ModelPacket>(&mut self, p: &mut P) {
        let key = (p.src(), p.tcp().src_port, p.dst(), p.tcp().dst_port);
        let port = match self.out.get(&key) {
            Some(&port) => port,
            None => {
                let port = self.next_port;
                self.next_port = if self.next_port == u16::MAX { 20000 } else { self.next_port + 1 };
                self.out.insert(key, port);
                self.back.insert((port, p.dst(), p.tcp().dst_port), (p.src(), p.tcp().src_port));
                port
            }
        };
        p.set_src(self.addr);
        p.tcp_mut().src_port = port;
    }

    /// A packet to the NAT's address: back to the inside host, if mapped.
    pub fn inbound<P: ModelPacket>(&self, p: &mut P) -> bool {
        match self.back.get(&(p.tcp().dst_port, p.src(), p.tcp().src_port)) {
            Some(&(addr, port)) => {
                p.set_dst(addr);
                p.tcp_mut().dst_port = port;
                true
            }
            None => false,
        }
    }
}

/// `nat`: source NAT on a router, to `addr` (default: the outside
/// interface's address); each router's box is a [`Nat`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceNat {
    pub addr: Option<Ipv4Addr>,
}

impl MiddleboxKind for SourceNat {
    const ABOUT: About = About { name: "nat", params: &["addr"], what: "source NAT to `addr` (default: the outgoing interface's address)", kernel: OnKernel::Runs("nftables snat / masquerade on the router") };
    const ON_LINK: bool = false;
    const ON_ROUTER: bool = true;

    fn from_fields(f: &mut Fields) -> Result<Self, PluginError> {
        let addr = f.get("addr")?;
        f.finish()?;
        Ok(SourceNat { addr })
    }

    fn resolved(&self) -> Vec<(&'static str, Resolved)> {
        vec![("addr", self.addr.map(|a| a.to_string()).as_deref().into())]
    }

    fn build<P: ModelPacket + 'static>(&self, net: &Network, place: Place) -> Built<P> {
        match place {
            Place::Node(n) => Built::One(Box::new(Nat::new(net, n, self.addr))),
            Place::Link(_) => unreachable!("a nat sits on a router (ON_LINK is false)"),
        }
    }
}
