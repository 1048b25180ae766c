//! Hybrid-access tunnels (`app = "tunnel"`): two gateway routers, the CPE
//! (the flow's `from`, end 0) and the HAG (`to`, end 1), joined by the
//! flow's TCP or MPTCP connection over their access links. An IPv4 packet
//! (UDP, TCP, SCTP: what OpenVPN's TUN device carries) that a gateway
//! would forward, arriving on any interface but an access link, is taken
//! into the tunnel instead: it waits at the ingress (a TUN
//! device's queue of 500 packets) until the connection's send buffer has
//! room for its frame (a 2-byte length and the IPv4 packet, the framing of
//! `mplab_wire::tunnel`), is written into the byte stream, and leaves the
//! far gateway once the application there has read the frame's last byte,
//! to be routed on. It therefore sees what a datagram in a reliable stream
//! sees: the connection's retransmissions, its head-of-line blocking and
//! its send buffer.
//!
//! The simulator's streams carry lengths, not bytes: each direction keeps
//! the frames it wrote with the stream offset where each ends, and the
//! reader releases them in order. The stream's own checks (continuity,
//! placement) still run.

use std::collections::VecDeque;

use mplab_backend::results::{TunnelDirection, TunnelSummary};

use crate::packet::Packet;

use super::fabric::Hop;
use super::*;

/// Datagrams a gateway holds for the tunnel (Linux's default txqueuelen
/// of a TUN device).
const INGRESS_QUEUE: usize = 500;
/// The length prefix of a frame.
const FRAME_HEADER: u64 = 2;

/// A gateway: the tunnel it ends, which end, its access interfaces (a bit
/// per interface index; those on links to the other gateway), and the
/// traffic class the tunnel carries.
#[derive(Debug, Clone, Copy)]
pub(super) struct Gateway {
    pub(super) tunnel: u32,
    pub(super) end: u8,
    pub(super) access: u64,
    class: network::TrafficClass,
}

impl Gateway {
    /// Whether a datagram that arrived on `iface` goes into the tunnel.
    fn takes_from(&self, iface: usize) -> bool {
        iface >= 64 || self.access & (1 << iface) == 0
    }
}

#[derive(Default)]
struct Direction {
    /// Taken in, waiting for room in the send buffer.
    waiting: VecDeque<Packet>,
    /// Written into the stream: (offset just past the frame, datagram).
    in_stream: VecDeque<(u64, Packet)>,
    /// Stream bytes written so far.
    written: u64,
    stats: TunnelDirection,
}

pub(super) struct TunnelRt {
    flow: usize,
    mtu: u32,
    /// Index `d`: written by end `d`, read by the other.
    dirs: [Direction; 2],
}

impl TunnelRt {
    pub(super) fn flow(&self) -> usize {
        self.flow
    }

    pub(super) fn summary(&self) -> TunnelSummary {
        TunnelSummary { mtu: self.mtu, upstream: self.dirs[0].stats.clone(), downstream: self.dirs[1].stats.clone() }
    }
}

/// The tunnels of `net` and, per node, the tunnel ends it holds, in flow
/// order: a packet goes into the first whose class it belongs to.
pub(super) fn build(net: &Network) -> (Vec<TunnelRt>, Vec<Vec<Gateway>>) {
    let mut tunnels = Vec::new();
    let mut gateways = vec![Vec::new(); net.nodes.len()];
    for f in &net.flows {
        let network::App::Tunnel { mtu, class } = f.app else { continue };
        let t = tunnels.len() as u32;
        for (end, node, peer) in [(0u8, f.from, f.to), (1, f.to, f.from)] {
            let access = net.nodes[node].interfaces.iter().filter(|i| i.peer == peer && i.index < 64).fold(0u64, |m, i| m | 1 << i.index);
            gateways[node].push(Gateway { tunnel: t, end, access, class });
        }
        tunnels.push(TunnelRt { flow: f.id, mtu, dirs: Default::default() });
    }
    (tunnels, gateways)
}

impl World {
    /// A packet reached gateway `node` on `iface`: true when the tunnel took
    /// it (a packet for elsewhere, from outside the access links).
    pub(super) fn tunnel_ingress(&mut self, node: usize, iface: usize, h: Hop) -> bool {
        let p = &self.pool.pkts[h.id as usize];
        let proto = if p.is_udp() { 17 } else if p.is_sctp() { 132 } else { 6 };
        let (sport, dport) = (p.tcp.src_port, p.tcp.dst_port);
        let Some(g) = self.nodes[node].gateways.iter().find(|g| g.takes_from(iface) && g.class.matches(proto, sport, dport)).copied() else { return false };
        if self.owns(node, h.dst_idx) {
            return false;
        }
        let mut pkt = self.pool.pkts[h.id as usize].clone();
        let ttl = h.ttl();
        self.pool.release(h);
        let t = &mut self.tunnels[g.tunnel as usize];
        let d = &mut t.dirs[g.end as usize];
        if ttl <= 1 {
            return true; // expired here, as a forwarding router drops it
        }
        pkt.ttl = ttl - 1;
        if pkt.size > t.mtu {
            d.stats.oversize += 1;
        } else if d.waiting.len() >= INGRESS_QUEUE {
            d.stats.queue_drops += 1;
        } else {
            d.stats.datagrams_in += 1;
            d.waiting.push_back(pkt);
            d.stats.max_queue = d.stats.max_queue.max(d.waiting.len() as u64);
            let flow = t.flow;
            self.service(flow, g.end as usize);
        }
        true
    }

    /// The tunnel of `flow`'s end `end`, once its application has read:
    /// writes the frames that fit into the send buffer, and hands back the
    /// datagrams whose frame the reader now has whole (to be routed on).
    pub(super) fn tunnel_pump(&mut self, flow: usize, end: usize, out: &mut Vec<Packet>) {
        let Some(t) = self.flows[flow].tunnel else { return };
        let e = &mut self.flows[flow].ends[end];
        let Some(ep) = e.ep.as_mut() else { return };
        let tun = &mut self.tunnels[t as usize];
        let w = &mut tun.dirs[end];
        while let Some(p) = w.waiting.front() {
            let len = FRAME_HEADER + u64::from(p.size);
            if ep.send_space() < len {
                break;
            }
            let n = ep.send(len);
            w.written += n;
            w.stats.frame_bytes += n;
            if n < len {
                break; // cannot happen with the room checked; the rest of the frame would be lost
            }
            if let Some(p) = w.waiting.pop_front() {
                w.in_stream.push_back((w.written, p));
            }
        }
        let read = e.app.rx.delivered;
        let r = &mut tun.dirs[1 - end];
        while r.in_stream.front().is_some_and(|(at, _)| *at <= read) {
            if let Some((_, p)) = r.in_stream.pop_front() {
                r.stats.datagrams_out += 1;
                out.push(p);
            }
        }
    }

    /// Routes datagrams out of the tunnel from gateway `node`.
    pub(super) fn tunnel_egress(&mut self, node: usize, pkts: &mut Vec<Packet>) {
        for p in pkts.drain(..) {
            let h = self.pool.put(p);
            self.stats.packets_forwarded += 1;
            self.route_out(node, None, h);
        }
    }

    pub(super) fn tunnel_summary(&self, flow: usize) -> Option<TunnelSummary> {
        self.flows[flow].tunnel.map(|t| self.tunnels[t as usize].summary())
    }
}
