//! Flows: their two ends (transport endpoint and application), starting
//! them, their timers, and moving data between applications and endpoints.

use mplab_proto::Instant;

use crate::apps::App;
use crate::endpoint::{Endpoint, Progress};
use crate::packet::NO_ADDR;

use super::*;

/// Runtime state of one flow end.
pub(super) struct End {
    pub(super) ep: Option<Box<dyn Endpoint>>,
    pub(super) app: App,
    pub(super) timer_at: Option<Instant>,
    pub(super) connected_at: Option<Instant>,
    pub(super) misplaced: bool,
    /// Rewritten payload was accepted (see [`Progress::corrupted`]).
    pub(super) corrupted: bool,
}

/// Which connection of an RFC 8803 conversion a flow is (see `converter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Leg {
    /// Client to CPE: end 1 at the CPE.
    Client,
    /// CPE to HAG.
    Carrier,
    /// HAG to server: end 0 at the HAG.
    Server,
}

pub(super) struct FlowRt {
    pub(super) ends: [End; 2],
    /// The node of the server end: `to`, or the backend a load balancer
    /// sent the connection to.
    pub(super) server: usize,
    pub(super) start: Instant,
    pub(super) last_delivered: u64,
    pub(super) srtt_sum_ns: f64,
    pub(super) srtt_samples: u64,
    pub(super) last_path_acked: Vec<u64>,
    /// Subflows whose closed state has been sampled once (no more rows),
    /// and whether the flow's last row (every subflow closed) is out: a
    /// long run of many short connections would otherwise keep a row per
    /// probe for each of them long after it ended.
    pub(super) closed_sampled: Vec<bool>,
    pub(super) ended_sampled: bool,
    /// Once both ends are over, what the summary needs of the sender's
    /// endpoint (fell back, its paths); the endpoints themselves are then
    /// dropped, so that finished connections hold no memory.
    pub(super) ended: Option<(bool, Vec<crate::summary::PathStats>)>,
}

impl FlowRt {
    /// Application bytes received so far: the stream's, or a datagram
    /// flow's payload at its server.
    pub(super) fn delivered(&self) -> u64 {
        let datagrams = self.ends[1].ep.as_ref().and_then(|e| e.datagram_app()).map_or(0, |a| a.delivered());
        self.ends[0].app.rx.delivered + self.ends[1].app.rx.delivered + datagrams
    }
}

impl World {
    // ---- flows -----------------------------------------------------------

    pub(super) fn flow_start(&mut self, flow: usize) {
        let f = &self.net.flows[flow];
        if matches!(f.app, network::App::Converter { .. }) && self.hybrid.relay[flow].is_none() {
            return; // its gateways open a connection per client connection
        }
        let seed = self.rng.stream(0x155_0000 + 2 * flow as u64).next_u64();
        let Some(ep) = self.factory.connect(&self.net, f, seed, self.now) else { return };
        if let Some(t) = ep.token() {
            self.tokens.insert((f.from as u32, t), (flow as u32, 0));
        }
        let key = (f.from as u32, u32::from(f.src), f.sport, u32::from(f.dst), f.dport);
        self.demux.insert(key, (flow as u32, 0));
        if f.transport.is_sctp() {
            self.sctp_ends.insert((f.from as u32, f.sport), (flow as u32, 0));
        }
        self.flows[flow].ends[0].ep = Some(ep);
        self.service(flow, 0);
    }

    pub(super) fn flow_timer(&mut self, flow: usize, end: usize) {
        let e = &mut self.flows[flow].ends[end];
        if e.timer_at != Some(self.now) {
            return; // superseded by an earlier or later timer
        }
        e.timer_at = None;
        let mut p = Progress::default();
        if let Some(ep) = e.ep.as_mut() {
            if ep.poll_timeout().is_some_and(|t| t <= self.now) {
                p = ep.on_timeout(self.now);
            }
        }
        self.after_input(flow, end, p);
    }

    /// Scenario events `remove_addr` / `add_addr`: every connection of
    /// `node` hears that its address `addr` left or came back.
    pub(super) fn set_addr_in_service(&mut self, node: usize, addr: std::net::Ipv4Addr, in_service: bool) {
        self.on_host_endpoints(node, |ep| ep.set_addr_in_service(addr, in_service));
    }

    pub(super) fn set_addr_backup(&mut self, node: usize, addr: std::net::Ipv4Addr, backup: bool) {
        self.on_host_endpoints(node, |ep| ep.set_addr_backup(addr, backup));
    }

    /// Applies `f` to every connection end on `node`, then lets each act.
    fn on_host_endpoints(&mut self, node: usize, f: impl Fn(&mut dyn Endpoint)) {
        for flow in 0..self.flows.len() {
            for end in 0..2 {
                let at = if end == 0 { self.net.flows[flow].from } else { self.flows[flow].server };
                let Some(ep) = self.flows[flow].ends[end].ep.as_mut().filter(|_| at == node) else { continue };
                f(ep.as_mut());
                self.after_input(flow, end, Progress::default());
            }
        }
    }

    pub(super) fn after_input(&mut self, flow: usize, end: usize, p: Progress) {
        let relay = self.hybrid.relay[flow];
        let e = &mut self.flows[flow].ends[end];
        e.misplaced |= p.misplaced;
        e.corrupted |= p.corrupted;
        if let Some(ep) = e.ep.as_mut() {
            if e.connected_at.is_none() && ep.is_established() {
                e.connected_at = Some(self.now);
                if relay.is_none() {
                    e.app.on_connected(self.now, ep.as_mut());
                }
            }
        }
        self.service(flow, end);
    }

    /// Lets the application read/write, sends what the endpoint has, and
    /// re-arms the end's single timer.
    pub(super) fn service(&mut self, flow: usize, end: usize) {
        let node = if end == 0 { self.net.flows[flow].from } else { self.flows[flow].server };
        let mut out = std::mem::take(&mut self.out_buf);
        let relay = self.hybrid.relay[flow];
        {
            let e = &mut self.flows[flow].ends[end];
            let Some(ep) = e.ep.as_mut() else {
                self.out_buf = out;
                return;
            };
            if e.connected_at.is_some() && relay.is_none() {
                e.app.pump(self.now, ep.as_mut());
            }
        }
        // A converter's connection: its gateway moves the bytes.
        if let Some((conv, _)) = relay {
            self.converter_pump(conv);
        }
        // A tunnel's gateway writes the frames that wait and takes out the
        // datagrams read whole (routed on below).
        let mut egress = Vec::new();
        if self.hybrid.tunnel_of[flow].is_some() && self.flows[flow].ends[end].connected_at.is_some() {
            self.tunnel_pump(flow, end, &mut egress);
        }
        {
            let e = &mut self.flows[flow].ends[end];
            let Some(ep) = e.ep.as_mut() else {
                self.out_buf = out;
                return;
            };
            // Into the pool at once (one copy of each packet fewer); routed
            // below, once the endpoint is no longer borrowed. Nothing is
            // delivered while routing, so the order of the two is free.
            let binds = ep.binds_new_tuples();
            loop {
                let id = self.pool.alloc();
                let pkt = &mut self.pool.pkts[id as usize];
                if !ep.poll_transmit_into(self.now, pkt) {
                    self.pool.unalloc(id);
                    break;
                }
                if (pkt.tcp.syn() && !pkt.tcp.ack_flag()) || pkt.is_sctp() || binds {
                    // A new subflow's first segment, an SCTP packet on any
                    // of an association's address pairs, a packet on any
                    // of an MPQUIC connection's paths: replies come back
                    // here.
                    let key = (node as u32, u32::from(pkt.src), pkt.tcp.src_port, u32::from(pkt.dst), pkt.tcp.dst_port);
                    self.demux.entry(key).or_insert((flow as u32, end as u8));
                }
                pkt.dst_idx = self.addr_idx.get(&u32::from(pkt.dst)).copied().unwrap_or(NO_ADDR);
                out.push((Hop::of(id, pkt), pkt.src));
            }
        }
        for &(h, src) in &out {
            self.route_out(node, Some(src), h);
        }
        out.clear();
        self.out_buf = out;
        if !egress.is_empty() {
            self.tunnel_egress(node, &mut egress);
        }
        let e = &mut self.flows[flow].ends[end];
        // The application acts only once connected (`pump` above): a stop
        // time that passes while a connection never opens must not re-arm
        // the timer at the same instant forever.
        let app_timer = e.connected_at.and_then(|_| e.app.poll_timer());
        let t = match (e.ep.as_ref().and_then(|ep| ep.poll_timeout()), app_timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(t) = t {
            let t = t.max(self.now);
            if e.timer_at.is_none_or(|cur| t < cur || cur < self.now) {
                e.timer_at = Some(t);
                self.queue.schedule(t, Ev::FlowTimer { flow: flow as u32, end: end as u8 });
            }
        }
    }

}
