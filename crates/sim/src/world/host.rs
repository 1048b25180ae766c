//! The host stack: demultiplexing segments to connections, accepting
//! SYNs on listening ports and MP_JOINs by token, and answering stray
//! segments with RST (RFC 9293 3.10.7.1). The decisions are the shared
//! host stack's ([`mplab_backend::host`]); the tables are the world's,
//! every host's in one map keyed by node.

use mplab_backend::host::demux::{arrival, join_decided};
use mplab_backend::host::{reset_for, Arrival, KnownTupleJoin, Tables};

use crate::packet::{Packet, NO_ADDR};

use super::*;

/// One node's view of the world's tables.
struct NodeTables<'a> {
    node: u32,
    demux: &'a mut HashMap<DemuxKey, (u32, u8)>,
    tokens: &'a mut HashMap<(u32, u32), (u32, u8)>,
    listeners: &'a HashMap<(u32, u16), u32>,
}

impl Tables for NodeTables<'_> {
    type Tuple = DemuxKey;
    type Conn = (u32, u8);
    type Listener = u32;
    #[inline]
    fn connection(&self, tuple: &DemuxKey) -> Option<(u32, u8)> {
        self.demux.get(tuple).copied()
    }
    fn by_token(&self, token: u32) -> Option<(u32, u8)> {
        self.tokens.get(&(self.node, token)).copied()
    }
    fn listener(&self, port: u16) -> Option<&u32> {
        self.listeners.get(&(self.node, port))
    }
    fn bind(&mut self, tuple: DemuxKey, conn: (u32, u8)) {
        self.demux.insert(tuple, conn);
    }
    fn register_token(&mut self, token: u32, conn: (u32, u8)) {
        self.tokens.insert((self.node, token), conn);
    }
}

impl World {
    /// The tables of `node`.
    fn node_tables(&mut self, node: usize) -> NodeTables<'_> {
        NodeTables { node: node as u32, demux: &mut self.demux, tokens: &mut self.tokens, listeners: &self.listeners }
    }

    pub(super) fn deliver_local(&mut self, node: usize, id: u32) {
        let pkt = &self.pool.pkts[id as usize];
        let key = (node as u32, u32::from(pkt.dst), pkt.tcp.dst_port, u32::from(pkt.src), pkt.tcp.src_port);
        let tables = NodeTables { node: node as u32, demux: &mut self.demux, tokens: &mut self.tokens, listeners: &self.listeners };
        let (flow, end) = match arrival(&tables, &key, &pkt.tcp, KnownTupleJoin::Connection) {
            Arrival::Connection(fe) => fe,
            _ if pkt.is_udp() => match self.udp_socket(node, id, key) {
                Some(fe) => fe,
                None => {
                    // No socket on the port: dropped (a host would answer
                    // ICMP port unreachable, which the simulator does not model).
                    self.stats.udp_no_socket += 1;
                    return;
                }
            },
            _ if pkt.is_sctp() => match self.sctp_association(node, id, key) {
                Some(fe) => fe,
                None => {
                    // Out of the blue (RFC 9260 8.4): no association and
                    // no INIT for a listening port. Dropped, not answered.
                    self.stats.sctp_out_of_the_blue += 1;
                    return;
                }
            },
            Arrival::Join { conn, .. } => match self.join(node, id, key, conn) {
                Some(fe) => fe,
                None => {
                    self.send_rst(node, id);
                    return;
                }
            },
            Arrival::Open => match self.new_connection(node, id, key) {
                Some(fe) => fe,
                None => {
                    self.send_rst(node, id);
                    return;
                }
            },
            // A stray RST gets no answer ([`reset_for`] gives none).
            Arrival::Reset | Arrival::Drop => {
                self.send_rst(node, id);
                return;
            }
        };
        let pkt = &self.pool.pkts[id as usize];
        if let (Some((conv, super::flows::Leg::Server)), true) = (self.hybrid.relay[flow as usize], pkt.tcp.syn() && pkt.tcp.ack_flag()) {
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

    /// An MP_JOIN SYN for a new 4-tuple: the connection its token names
    /// (`conn`; a per-host token table, as in Linux) takes the subflow or
    /// refuses it. `None`: refused (a wrong token too), answered with a
    /// reset.
    fn join(&mut self, node: usize, id: u32, key: DemuxKey, conn: Option<(u32, u8)>) -> Option<(u32, u8)> {
        let pkt = &self.pool.pkts[id as usize];
        let accepted = conn.filter(|&(flow, end)| self.flows[flow as usize].ends[end as usize].ep.as_mut().is_some_and(|ep| ep.accept_join(self.now, pkt)));
        let c = &mut self.host_counters[node];
        if accepted.is_some() {
            c.joins_accepted += 1;
        } else {
            c.joins_refused += 1;
        }
        join_decided(&mut self.node_tables(node), key, accepted)
    }

    /// A SYN for no known 4-tuple (and no join): a converter's carrier,
    /// or a connection on a listening port. `None`: refused.
    pub(super) fn new_connection(&mut self, node: usize, id: u32, key: DemuxKey) -> Option<(u32, u8)> {
        if let Some(taken) = self.converter_syn(node, id, key) {
            return taken;
        }
        let port = self.pool.pkts[id as usize].tcp.dst_port;
        let flow = *self.node_tables(node).listener(port)?;
        let pkt = &self.pool.pkts[id as usize];
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
        let mut t = self.node_tables(node);
        if let Some(token) = ep.token() {
            t.register_token(token, (flow, 1));
        }
        t.bind(key, (flow, 1));
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
        if !f.transport.over_udp() {
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
        let Some(h) = reset_for(&p.tcp, p.payload_len) else { return };
        let mut rst = Packet::new(p.dst, p.src, h, 0, 0);
        rst.dst_idx = self.addr_idx.get(&u32::from(rst.dst)).copied().unwrap_or(NO_ADDR);
        let src = rst.src;
        let rh = self.pool.put(rst);
        self.stats.resets_sent += 1;
        self.route_out(node, Some(src), rh);
    }
}
