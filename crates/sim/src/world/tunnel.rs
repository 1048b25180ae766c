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
//! In datagram mode (`mode = "datagram"`) the gateway instead sends each
//! packet at once, in a UDP datagram to the other gateway on every access
//! link (an 8-byte sequence number ahead of the packet), and the far
//! gateway forwards the first copy and drops the others: no head-of-line
//! blocking and no retransmission, for twice the access traffic.
//!
//! Over MPQUIC (`transport = "mpquic"`), `mode = "quic-datagram"` sends
//! each UDP packet in a QUIC DATAGRAM frame of the connection (the same
//! sequence number ahead of it) and the other packets in its stream, as
//! 3GPP ATSSS (Release 18) carries UDP over MPQUIC: the datagrams share
//! the connection's paths and congestion control but wait for no
//! retransmission. A UDP packet larger than a DATAGRAM frame can carry
//! (the path MTU less QUIC's overhead) rides the stream instead.
//!
//! The simulator's streams carry lengths, not bytes: each direction keeps
//! the frames it wrote with the stream offset where each ends, and the
//! reader releases them in order. The stream's own checks (continuity,
//! placement) still run.

use std::collections::VecDeque;

use mplab_backend::results::{TunnelDirection, TunnelSummary};

use crate::packet::Packet;

use super::pool::Hop;
use super::*;

/// Datagrams a gateway holds for the tunnel (Linux's default txqueuelen
/// of a TUN device).
const INGRESS_QUEUE: usize = 500;
/// The length prefix of a frame.
const FRAME_HEADER: u64 = 2;
/// The UDP port of datagram mode on both gateways (OpenVPN's), plus the
/// tunnel's index.
pub(super) const DATAGRAM_PORT: u16 = 1194;
/// Datagram mode: the sequence number ahead of each packet.
const DATAGRAM_HEADER: usize = 8;
/// Datagram mode: a packet none of whose copies arrived within this time
/// is forgotten.
const DATAGRAM_FORGET_NS: u64 = 10_000_000_000;

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
    /// Datagram mode: packets sent and not yet taken out, by sequence
    /// number (their send time, to forget the lost ones).
    datagrams: std::collections::BTreeMap<u64, (u64, Packet)>,
    next_seq: u64,
    /// Taken in, waiting for room in the send buffer.
    waiting: VecDeque<Packet>,
    /// Bytes of the first waiting frame still to write, once the
    /// connection took part of it (MPQUIC takes what its window allows).
    head_left: u64,
    /// Written into the stream: (offset just past the frame, datagram).
    in_stream: VecDeque<(u64, Packet)>,
    /// Stream bytes written so far.
    written: u64,
    stats: TunnelDirection,
}

pub(super) struct TunnelRt {
    flow: usize,
    mtu: u32,
    datagram: bool,
    /// UDP in QUIC DATAGRAM frames (`mode = "quic-datagram"`).
    quic_datagram: bool,
    /// Per end, its access links: (its address, the other gateway's).
    access: [Vec<(std::net::Ipv4Addr, std::net::Ipv4Addr)>; 2],
    /// Index `d`: written by end `d`, read by the other.
    dirs: [Direction; 2],
}

impl TunnelRt {
    pub(super) fn flow(&self) -> usize {
        self.flow
    }

    pub(super) fn summary(&self) -> TunnelSummary {
        TunnelSummary { mtu: self.mtu, upstream: self.dirs[0].stats.clone(), downstream: self.dirs[1].stats.clone(), converter: None }
    }
}

/// A TCP SYN entering a tunnel whose MTU is below what its MSS announces
/// gets the MSS that fits (the tunnel's MTU less 40 bytes of IPv4 and TCP
/// headers), as OpenVPN's `mssfix` and iptables' `TCPMSS
/// --clamp-mss-to-pmtu` do on real gateways: the connection then sends
/// segments the tunnel takes instead of refused ones.
fn clamp_mss(pkt: &mut Packet, mtu: u32) {
    if pkt.is_udp() || pkt.is_sctp() || !pkt.tcp.syn() {
        return;
    }
    let cap = mtu.saturating_sub(40).min(u32::from(u16::MAX)) as u16;
    if pkt.tcp.options.mss.is_some_and(|m| m > cap) {
        pkt.tcp.options.mss = Some(cap);
    }
}

/// The tunnels of `net` and, per node, the tunnel ends it holds, in flow
/// order: a packet goes into the first whose class it belongs to.
pub(super) fn build(net: &Network) -> (Vec<TunnelRt>, Vec<Vec<Gateway>>) {
    let mut tunnels = Vec::new();
    let mut gateways = vec![Vec::new(); net.nodes.len()];
    for f in &net.flows {
        let network::App::Tunnel { mtu, class, mode } = f.app else { continue };
        let (datagram, quic_datagram) = (mode == network::TunnelMode::Datagram, mode == network::TunnelMode::QuicDatagram);
        let t = tunnels.len() as u32;
        let mut links: [Vec<_>; 2] = Default::default();
        for (end, node, peer) in [(0u8, f.from, f.to), (1, f.to, f.from)] {
            let ifs: Vec<_> = net.nodes[node].interfaces.iter().filter(|i| i.peer == peer && i.index < 64).collect();
            let access = ifs.iter().fold(0u64, |m, i| m | 1 << i.index);
            gateways[node].push(Gateway { tunnel: t, end, access, class });
            links[end as usize] = ifs
                .iter()
                .map(|i| {
                    let l = &net.links[i.link];
                    (i.addr, if l.a.node == node { l.b.addr } else { l.a.addr })
                })
                .collect();
        }
        tunnels.push(TunnelRt { flow: f.id, mtu, datagram, quic_datagram, access: links, dirs: Default::default() });
    }
    (tunnels, gateways)
}

impl World {
    /// A packet reached gateway `node` on `iface`: true when the tunnel took
    /// it (a packet for elsewhere, from outside the access links).
    pub(super) fn tunnel_ingress(&mut self, node: usize, iface: usize, h: Hop) -> bool {
        let p = &self.pool.pkts[h.id as usize];
        let tunnel_port = usize::from(p.tcp.dst_port).checked_sub(usize::from(DATAGRAM_PORT)).filter(|&t| t < self.hybrid.tunnels.len() && self.hybrid.tunnels[t].datagram);
        if let (true, Some(t)) = (p.is_udp() && self.owns(node, h.dst_idx), tunnel_port) {
            return self.datagram_egress(node, t, h);
        }
        let proto = if p.is_udp() { 17 } else if p.is_sctp() { 132 } else { 6 };
        let (sport, dport) = (p.tcp.src_port, p.tcp.dst_port);
        let Some(g) = self.hybrid.gateways[node].iter().find(|g| g.takes_from(iface) && g.class.matches(proto, sport, dport)).copied() else { return false };
        if self.owns(node, h.dst_idx) {
            return false;
        }
        let mut pkt = self.pool.pkts[h.id as usize].clone();
        let ttl = h.ttl();
        self.pool.release(h);
        if ttl <= 1 {
            return true; // expired here, as a forwarding router drops it
        }
        pkt.ttl = ttl - 1;
        let t = &mut self.hybrid.tunnels[g.tunnel as usize];
        clamp_mss(&mut pkt, t.mtu);
        if pkt.size > t.mtu {
            t.dirs[g.end as usize].stats.oversize += 1;
            return true;
        }
        if t.datagram {
            self.datagram_ingress(g, node, pkt);
            return true;
        }
        if t.quic_datagram && pkt.is_udp() {
            match self.quic_datagram_ingress(g, pkt) {
                None => return true,
                Some(p) => pkt = p,
            }
        }
        let t = &mut self.hybrid.tunnels[g.tunnel as usize];
        let d = &mut t.dirs[g.end as usize];
        if d.waiting.len() >= INGRESS_QUEUE {
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

    /// Datagram mode, ingress: the packet in a UDP datagram on every
    /// access link.
    fn datagram_ingress(&mut self, g: Gateway, node: usize, pkt: Packet) {
        let now = self.now.as_nanos();
        let t = &mut self.hybrid.tunnels[g.tunnel as usize];
        let d = &mut t.dirs[g.end as usize];
        let seq = d.next_seq;
        d.next_seq += 1;
        d.stats.datagrams_in += 1;
        // Forget what never arrived (both copies lost).
        while d.datagrams.first_key_value().is_some_and(|(_, (at, _))| now.saturating_sub(*at) > DATAGRAM_FORGET_NS) {
            d.datagrams.pop_first();
        }
        let size = pkt.size as usize;
        d.datagrams.insert(seq, (now, pkt));
        let links = t.access[g.end as usize].clone();
        let port = DATAGRAM_PORT + g.tunnel as u16;
        for (src, dst) in links {
            let mut payload = vec![0u8; DATAGRAM_HEADER + size];
            payload[..DATAGRAM_HEADER].copy_from_slice(&seq.to_be_bytes());
            let mut outer = Packet::new(src, dst, mplab_wire::TcpHeader::default(), 0, 0);
            outer.set_udp(src, dst, port, port, payload.into_boxed_slice());
            outer.dst_idx = self.addr_idx.get(&u32::from(dst)).copied().unwrap_or(crate::packet::NO_ADDR);
            self.hybrid.tunnels[g.tunnel as usize].dirs[g.end as usize].stats.frame_bytes += u64::from(outer.size);
            let h = self.pool.put(outer);
            self.route_out(node, Some(src), h);
        }
    }

    /// `quic-datagram` mode, ingress: a UDP packet in one DATAGRAM frame
    /// of the tunnel's connection. The packet back when the connection
    /// cannot take it as one (not up yet, or larger than a frame carries):
    /// it then rides the stream.
    fn quic_datagram_ingress(&mut self, g: Gateway, pkt: Packet) -> Option<Packet> {
        let now = self.now.as_nanos();
        let t = &mut self.hybrid.tunnels[g.tunnel as usize];
        let flow = t.flow;
        let size = pkt.size as usize;
        let Some(ep) = self.flows[flow].ends[g.end as usize].ep.as_mut() else { return Some(pkt) };
        if !ep.is_established() || ep.max_datagram().is_none_or(|m| m < DATAGRAM_HEADER + size) {
            return Some(pkt);
        }
        let d = &mut t.dirs[g.end as usize];
        let seq = d.next_seq;
        let mut payload = vec![0u8; DATAGRAM_HEADER + size];
        payload[..DATAGRAM_HEADER].copy_from_slice(&seq.to_be_bytes());
        if !ep.send_datagram(&payload) {
            return Some(pkt);
        }
        d.next_seq += 1;
        d.stats.datagrams_in += 1;
        d.stats.quic_datagrams += 1;
        d.stats.quic_datagram_bytes += payload.len() as u64;
        // Forget what never arrived (lost, or dropped from noq's full
        // datagram send buffer).
        while d.datagrams.first_key_value().is_some_and(|(_, (at, _))| now.saturating_sub(*at) > DATAGRAM_FORGET_NS) {
            d.datagrams.pop_first();
        }
        d.datagrams.insert(seq, (now, pkt));
        self.service(flow, g.end as usize);
        None
    }

    /// Datagram mode, egress: the first copy of each packet goes on, the
    /// others are dropped. True: the datagram was the tunnel's.
    fn datagram_egress(&mut self, node: usize, t: usize, h: Hop) -> bool {
        let seq = self.pool.pkts[h.id as usize].udp.as_deref().and_then(|b| b.get(..DATAGRAM_HEADER)).map(|b| u64::from_be_bytes(b.try_into().unwrap_or_default()));
        self.pool.release(h);
        let Some(g) = self.hybrid.gateways[node].iter().find(|g| g.tunnel as usize == t).copied() else { return true };
        let Some(seq) = seq else { return true };
        let d = &mut self.hybrid.tunnels[t].dirs[1 - g.end as usize];
        match d.datagrams.remove(&seq) {
            Some((_, mut pkt)) => {
                d.stats.datagrams_out += 1;
                pkt.ttl = pkt.ttl.saturating_sub(1);
                if pkt.ttl > 0 {
                    let h = self.pool.put(pkt);
                    self.stats.packets_forwarded += 1;
                    self.route_out(node, None, h);
                }
            }
            None => d.stats.duplicates += 1,
        }
        true
    }

    /// The tunnel of `flow`'s end `end`, once its application has read:
    /// writes the frames that fit into the send buffer, and hands back the
    /// datagrams whose frame the reader now has whole (to be routed on).
    pub(super) fn tunnel_pump(&mut self, flow: usize, end: usize, out: &mut Vec<Packet>) {
        let Some(t) = self.hybrid.tunnel_of[flow] else { return };
        let e = &mut self.flows[flow].ends[end];
        let Some(ep) = e.ep.as_mut() else { return };
        let tun = &mut self.hybrid.tunnels[t as usize];
        let w = &mut tun.dirs[end];
        while let Some(p) = w.waiting.front() {
            // A frame is begun only when the whole of it fits (TCP and
            // MPTCP then take it whole); one MPQUIC took part of goes on.
            let len = if w.head_left > 0 { w.head_left } else { FRAME_HEADER + u64::from(p.size) };
            if w.head_left == 0 && ep.send_space() < len {
                break;
            }
            let n = ep.send(len);
            w.written += n;
            w.stats.frame_bytes += n;
            if n < len {
                w.head_left = len - n;
                break;
            }
            w.head_left = 0;
            if let Some(p) = w.waiting.pop_front() {
                w.in_stream.push_back((w.written, p));
            }
        }
        let read = e.app.rx.delivered;
        if tun.quic_datagram {
            let r = &mut tun.dirs[1 - end];
            while let Some(d) = ep.recv_datagram() {
                let seq = d.get(..DATAGRAM_HEADER).map(|b| u64::from_be_bytes(b.try_into().unwrap_or_default()));
                match seq.and_then(|s| r.datagrams.remove(&s)) {
                    Some((_, p)) => {
                        r.stats.datagrams_out += 1;
                        out.push(p);
                    }
                    None => r.stats.duplicates += 1,
                }
            }
        }
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
        self.hybrid.tunnel_of[flow].map(|t| self.hybrid.tunnels[t as usize].summary())
    }
}
