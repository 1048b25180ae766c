//! The host stack: demultiplexing segments to connections, accepting
//! SYNs on listening ports and MP_JOINs by token, and answering stray
//! segments with RST (RFC 9293 3.10.7.1).

use crate::packet::{Packet, NO_ADDR};

use super::*;

impl World {
    pub(super) fn deliver_local(&mut self, node: usize, id: u32) {
        let pkt = &self.pool.pkts[id as usize];
        let key = (node as u32, u32::from(pkt.dst), pkt.tcp.dst_port, u32::from(pkt.src), pkt.tcp.src_port);
        let (flow, end) = match self.demux.get(&key) {
            Some(&fe) => fe,
            None if pkt.is_udp() => match self.udp_socket(node, id, key) {
                Some(fe) => fe,
                None => {
                    // No socket on the port: dropped (a host would answer
                    // ICMP port unreachable, which the simulator does not model).
                    self.stats.udp_no_socket += 1;
                    return;
                }
            },
            None if pkt.is_sctp() => match self.sctp_association(node, id, key) {
                Some(fe) => fe,
                None => {
                    // Out of the blue (RFC 9260 8.4): no association and
                    // no INIT for a listening port. Dropped, not answered.
                    self.stats.sctp_out_of_the_blue += 1;
                    return;
                }
            },
            None => match self.new_connection(node, id, key) {
                Some(fe) => fe,
                None => {
                    self.send_rst(node, id);
                    return;
                }
            },
        };
        let pkt = &self.pool.pkts[id as usize];
        if let (Some((conv, super::flows::Leg::Server)), true) = (self.flows[flow as usize].relay, pkt.tcp.syn() && pkt.tcp.ack_flag()) {
            let o = pkt.tcp.options.clone();
            self.converter_syn_ack(conv, &o);
        }
        let pkt = &self.pool.pkts[id as usize];
        let e = &mut self.flows[flow as usize].ends[end as usize];
        let Some(ep) = e.ep.as_mut() else {
            self.stats.segments_after_end += 1;
            return;
        };
        let p = ep.on_packet(self.now, pkt);
        self.after_input(flow as usize, end as usize, p);
    }

    /// A segment for no known 4-tuple: a SYN may open a connection on a
    /// listening port, or join one by its MPTCP token. `None`: refused.
    pub(super) fn new_connection(&mut self, node: usize, id: u32, key: DemuxKey) -> Option<(u32, u8)> {
        let pkt = &self.pool.pkts[id as usize];
        if !pkt.tcp.syn() || pkt.tcp.ack_flag() || pkt.tcp.rst() {
            return None;
        }
        let join_token = pkt.tcp.options.mptcp().find_map(|o| match o {
            mplab_wire::MptcpOption::MpJoin(mplab_wire::MpJoin::Syn { token, .. }) => Some(*token),
            _ => None,
        });
        if let Some(token) = join_token {
            // The token names the connection (a per-host token table, as in
            // Linux); a wrong one, or a refused join, gets a reset.
            let accepted = match self.tokens.get(&(node as u32, token)) {
                Some(&(flow, end)) => self.flows[flow as usize].ends[end as usize].ep.as_mut().is_some_and(|ep| ep.accept_join(self.now, pkt)).then_some((flow, end)),
                None => None,
            };
            let c = &mut self.host_counters[node];
            let Some((flow, end)) = accepted else {
                c.joins_refused += 1;
                return None;
            };
            c.joins_accepted += 1;
            self.demux.insert(key, (flow, end));
            return Some((flow, end));
        }
        if let Some(taken) = self.converter_syn(node, id, key) {
            return taken;
        }
        let pkt = &self.pool.pkts[id as usize];
        let &flow = self.listeners.get(&(node as u32, pkt.tcp.dst_port))?;
        if self.flows[flow as usize].ends[1].ep.is_some() || self.net.flows[flow as usize].transport.is_sctp() {
            return None; // one connection per flow: a stray SYN is refused
        }
        let f = &self.net.flows[flow as usize];
        let seed = self.rng.stream(0x155_0000 + 2 * flow as u64 + 1).next_u64();
        let ep = if f.to == node {
            self.factory.accept(&self.net, f, pkt.dst, pkt.src, pkt, seed, self.now)?
        } else {
            // Another backend of a balanced service took the connection:
            // its own configuration (path manager, addresses) applies.
            let mut here = f.clone();
            here.to = node;
            here.to_name.clone_from(&self.net.nodes[node].name);
            self.factory.accept(&self.net, &here, pkt.dst, pkt.src, pkt, seed, self.now)?
        };
        self.flows[flow as usize].server = node;
        self.host_counters[node].connections += 1;
        if let Some(t) = ep.token() {
            self.tokens.insert((node as u32, t), (flow, 1));
        }
        self.demux.insert(key, (flow, 1));
        self.flows[flow as usize].ends[1].ep = Some(ep);
        Some((flow, 1))
    }

    /// An SCTP packet on an address pair not seen yet: the association on
    /// its port (multihoming), or a new one when it is an INIT for a
    /// listening SCTP flow.
    fn sctp_association(&mut self, node: usize, id: u32, key: DemuxKey) -> Option<(u32, u8)> {
        let pkt = &self.pool.pkts[id as usize];
        let port = pkt.tcp.dst_port;
        if let Some(&(flow, end)) = self.sctp_ends.get(&(node as u32, port)) {
            self.demux.insert(key, (flow, end));
            return Some((flow, end));
        }
        // The first chunk of an INIT packet is the INIT (type 1, RFC 9260 3.3.2).
        let is_init = pkt.sctp.as_deref().is_some_and(|b| b.get(12) == Some(&1));
        let &flow = self.listeners.get(&(node as u32, port))?;
        let f = &self.net.flows[flow as usize];
        if !is_init || !f.transport.is_sctp() || self.flows[flow as usize].ends[1].ep.is_some() {
            return None;
        }
        let seed = self.rng.stream(0x155_0000 + 2 * flow as u64 + 1).next_u64();
        let ep = self.factory.accept(&self.net, f, pkt.dst, pkt.src, pkt, seed, self.now)?;
        self.flows[flow as usize].server = node;
        self.host_counters[node].connections += 1;
        self.sctp_ends.insert((node as u32, port), (flow, 1));
        self.demux.insert(key, (flow, 1));
        self.flows[flow as usize].ends[1].ep = Some(ep);
        Some((flow, 1))
    }

    /// A UDP datagram from an address pair not seen yet: the socket of a
    /// UDP flow listening on its port (created by its first datagram).
    fn udp_socket(&mut self, node: usize, id: u32, key: DemuxKey) -> Option<(u32, u8)> {
        let pkt = &self.pool.pkts[id as usize];
        let &flow = self.listeners.get(&(node as u32, pkt.tcp.dst_port))?;
        let f = &self.net.flows[flow as usize];
        if !matches!(f.transport, network::TransportKind::Udp | network::TransportKind::Quic) {
            return None;
        }
        if self.flows[flow as usize].ends[1].ep.is_none() {
            let seed = self.rng.stream(0x155_0000 + 2 * flow as u64 + 1).next_u64();
            let ep = self.factory.accept(&self.net, f, pkt.dst, pkt.src, pkt, seed, self.now)?;
            self.flows[flow as usize].server = node;
            self.host_counters[node].connections += 1;
            self.flows[flow as usize].ends[1].ep = Some(ep);
        }
        self.demux.insert(key, (flow, 1));
        Some((flow, 1))
    }

    /// Answers a segment nobody wants with a RST (RFC 9293 3.10.7.1).
    pub(super) fn send_rst(&mut self, node: usize, id: u32) {
        let p = &self.pool.pkts[id as usize];
        let Some(h) = p.tcp.reset_reply(p.payload_len) else { return };
        let mut rst = Packet::new(p.dst, p.src, h, 0, 0);
        rst.dst_idx = self.addr_idx.get(&u32::from(rst.dst)).copied().unwrap_or(NO_ADDR);
        let src = rst.src;
        let rh = self.pool.put(rst);
        self.stats.resets_sent += 1;
        self.route_out(node, Some(src), rh);
    }
}
