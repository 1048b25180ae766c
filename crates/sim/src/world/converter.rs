//! Hybrid-access Transport Converters (`app = "converter"`, RFC 8803): the
//! CPE (the flow's `from`) ends every TCP connection of the converter's
//! class that it would forward from its LAN side, answering as the
//! destination; it opens a connection of the converter flow's transport
//! (MPTCP over the access links) to the HAG, led by a Convert message
//! naming the destination; the HAG judges it ([`mplab_backend::convert`]),
//! connects to the server with plain TCP, answers, and both relay bytes.
//!
//! Each converted connection is three connections of the simulator, made
//! as the SYNs arrive and numbered after the scenario's flows: the client
//! leg (its end 1 at the CPE), the carrier (CPE to HAG) and the server leg
//! (its end 0 at the HAG). The client's and the server's ends are the
//! user flow's own, so its summary is measured where the applications
//! run. Relays move bytes between two ends only as the receiving one has
//! room (a proxy with a full socket stops reading), and pass each
//! half-close on once everything before it went.
//!
//! The simulator's streams carry lengths: the Convert messages ride the
//! carrier as the first bytes of each direction, and their bytes are kept
//! here to be judged when the far end has read that many. With
//! `fast_open = true` the CPE writes the request as it opens the carrier,
//! so that it rides the SYN (TCP Fast Open without cookies, as the kernel
//! backend's gateways): the HAG judges it and opens the server leg as the
//! SYN arrives. A TCP carrier's HAG end answers right after its SYN-ACK;
//! an MPTCP one once the third ACK brings the CPE's key, as Linux's.

use std::net::{Ipv4Addr, SocketAddrV4};

use mplab_backend::convert::{self, ConverterSummary, Decision, Policy, Reply, ServerOptions};
use mplab_backend::results::TunnelSummary;
use mplab_wire::convert::ErrorTlv;

use super::flows::{End, FlowRt, Leg};
use super::*;
use crate::apps::{App, Driven, Kind, Sends};

/// The carriers' source ports at the CPE: from here up, one per converted
/// connection (the kernel's ephemeral range starts here too).
const FIRST_CARRIER_PORT: u16 = 32768;

pub(super) struct ConverterRt {
    flow: usize,
    cpe: usize,
    hag: usize,
    /// The CPE's interfaces on links to the HAG (a bit per index).
    access: u64,
    class: network::TrafficClass,
    policy: Policy,
    /// The request rides the carrier's SYN.
    fast_open: bool,
    summary: ConverterSummary,
    next_port: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for the request (HAG) or the answer (CPE).
    Opening,
    Relaying,
    /// Refused, failed or reset: nothing more moves.
    Over,
}

pub(super) struct Conversion {
    converter: usize,
    user: usize,
    client: usize,
    carrier: usize,
    server: Option<usize>,
    /// The Convert messages: the CPE's request, the HAG's answer once
    /// written.
    request: Vec<u8>,
    request_written: bool,
    answer: Option<Vec<u8>>,
    /// The options of the server's SYN+ACK, for the answer.
    server_options: ServerOptions,
    hag: State,
    cpe: State,
    /// Half-closes passed on, at the CPE and at the HAG: towards the
    /// server, towards the client.
    cpe_up_closed: bool,
    cpe_down_closed: bool,
    hag_up_closed: bool,
    hag_down_closed: bool,
}

/// The converters of `net`, and per node the one it is the CPE or the HAG of.
pub(super) fn build(net: &Network) -> (Vec<ConverterRt>, Vec<Option<u32>>) {
    let mut convs = Vec::new();
    let mut at = vec![None; net.nodes.len()];
    for f in &net.flows {
        let network::App::Converter { class, refuse, fast_open } = &f.app else { continue };
        let own = [f.from, f.to].iter().flat_map(|&n| net.nodes[n].interfaces.iter().map(|i| i.addr)).collect();
        let access = net.nodes[f.from].interfaces.iter().filter(|i| i.peer == f.to && i.index < 64).fold(0u64, |m, i| m | 1 << i.index);
        for n in [f.from, f.to] {
            at[n].get_or_insert(convs.len() as u32);
        }
        convs.push(ConverterRt { flow: f.id, cpe: f.from, hag: f.to, access, class: *class, policy: Policy { refuse: refuse.clone(), own }, fast_open: *fast_open, summary: ConverterSummary::default(), next_port: FIRST_CARRIER_PORT });
    }
    (convs, at)
}

impl World {
    /// A packet reached `node` on `iface`: true when it is for a client
    /// connection the CPE converts (delivered to the CPE's own stack).
    pub(super) fn converter_takes(&self, node: usize, iface: usize, h: Hop) -> bool {
        let Some(c) = self.hybrid.converter_at[node] else { return false };
        let c = &self.hybrid.converters[c as usize];
        let p = &self.pool.pkts[h.id as usize];
        c.cpe == node && p.is_tcp() && (iface >= 64 || c.access & (1 << iface) == 0) && c.class.matches(6, p.tcp.src_port, p.tcp.dst_port) && !self.owns(node, h.dst_idx)
    }

    /// A SYN for no known connection at a converter's gateway: at the CPE
    /// a client's (a new conversion), at the HAG a carrier's. `None`: not
    /// the converter's; `Some(None)`: refused.
    pub(super) fn converter_syn(&mut self, node: usize, id: u32, key: DemuxKey) -> Option<Option<(u32, u8)>> {
        let c = self.hybrid.converter_at[node]? as usize;
        let p = &self.pool.pkts[id as usize];
        let (src, dst, sport, dport) = (p.src, p.dst, p.tcp.src_port, p.tcp.dst_port);
        if self.hybrid.converters[c].hag == node && dport == self.net.flows[self.hybrid.converters[c].flow].dport && self.owns(node, p.dst_idx) {
            return Some(self.carrier_accept(node, id, key, src, sport));
        }
        if self.hybrid.converters[c].cpe != node || self.owns(node, p.dst_idx) {
            return None;
        }
        // The scenario's flow this client connection belongs to.
        let user = self.net.flows[..self.user_flows].iter().position(|f| f.src == src && f.sport == sport && f.dst == dst && f.dport == dport)?;
        if self.hybrid.relay_of_user[user].is_some() {
            return Some(None); // one connection per flow
        }
        let seed = self.rng.stream(0x155_0000 + 2 * user as u64 + 1).next_u64();
        let mut lan = self.net.flows[user].clone();
        lan.transport = network::Transport::TCP;
        lan.mptcp = None;
        lan.to = node;
        let ep = self.factory.accept(&self.net, &lan, dst, src, &self.pool.pkts[id as usize], seed, self.now)?;
        let conv = self.hybrid.conversions.len() as u32;
        let client = self.add_leg(lan, (conv, Leg::Client), node);
        self.flows[client].ends[1].ep = Some(ep);
        self.demux.insert(key, (client as u32, 1));
        self.hybrid.relay_of_user[user] = Some(conv);
        // The carrier: the converter flow's transport, from a port of its own.
        let cv = &mut self.hybrid.converters[c];
        cv.summary.connections += 1;
        let port = cv.next_port;
        cv.next_port = cv.next_port.wrapping_add(1).max(FIRST_CARRIER_PORT);
        let mut carrier = self.net.flows[cv.flow].clone();
        carrier.sport = port;
        carrier.name = format!("{}~{}", carrier.name, self.net.flows[user].name);
        let hag = carrier.to;
        let carrier = self.add_leg(carrier, (conv, Leg::Carrier), hag);
        self.hybrid.conversions.push(Conversion {
            converter: c,
            user,
            client,
            carrier,
            server: None,
            request: convert::request(SocketAddrV4::new(dst, dport)),
            request_written: false,
            answer: None,
            server_options: ServerOptions::default(),
            hag: State::Opening,
            cpe: State::Opening,
            cpe_up_closed: false,
            cpe_down_closed: false,
            hag_up_closed: false,
            hag_down_closed: false,
        });
        self.flow_start(carrier);
        Some(Some((client as u32, 1)))
    }

    /// The HAG accepts a carrier's SYN (its conversion found by the
    /// CPE's address and port).
    fn carrier_accept(&mut self, node: usize, id: u32, key: DemuxKey, src: Ipv4Addr, sport: u16) -> Option<(u32, u8)> {
        let conv = self.hybrid.conversions.iter().position(|v| {
            let f = &self.net.flows[v.carrier];
            f.src == src && f.sport == sport
        })?;
        let carrier = self.hybrid.conversions[conv].carrier;
        if self.flows[carrier].ends[1].ep.is_some() {
            return None;
        }
        let seed = self.rng.stream(0x155_0000 + 2 * carrier as u64 + 1).next_u64();
        let p = &self.pool.pkts[id as usize];
        let ep = self.factory.accept(&self.net, &self.net.flows[carrier], p.dst, p.src, p, seed, self.now)?;
        if let Some(t) = ep.token() {
            self.tokens.insert((node as u32, t), (carrier as u32, 1));
        }
        self.demux.insert(key, (carrier as u32, 1));
        self.flows[carrier].ends[1].ep = Some(ep);
        Some((carrier as u32, 1))
    }

    /// A connection of a conversion: a flow after the scenario's, with no
    /// application of its own.
    fn add_leg(&mut self, mut f: network::Flow, relay: (u32, Leg), server: usize) -> usize {
        let id = self.net.flows.len();
        f.id = id;
        f.start_ns = self.now.0;
        let stop = Some(Instant(f.stop_ns));
        let end = || End { ep: None, app: App::new(Kind::Driven(Driven), true, stop), timer_at: None, connected_at: None, misplaced: false, corrupted: false };
        self.flows.push(FlowRt {
            ends: [end(), end()],
            server,
            start: self.now,
            last_delivered: 0,
            srtt_sum_ns: 0.0,
            srtt_samples: 0,
            last_path_acked: Vec::new(),
            closed_sampled: Vec::new(),
            ended_sampled: false,
            ended: None,
        });
        self.hybrid.add_flow(Some(relay));
        self.net.flows.push(f);
        id
    }

    /// The server's SYN+ACK reached the HAG's server leg: its options go
    /// into the answer.
    pub(super) fn converter_syn_ack(&mut self, conv: u32, o: &mplab_wire::TcpOptions) {
        self.hybrid.conversions[conv as usize].server_options = ServerOptions { mss: o.mss, wscale: o.wscale, sack_permitted: o.sack_permitted };
    }

    /// Moves what can move in conversion `conv`, then lets every leg send.
    pub(super) fn converter_pump(&mut self, conv: u32) {
        if self.hybrid.pumping {
            return;
        }
        self.hybrid.pumping = true;
        let v = conv as usize;
        self.pump_cpe(v);
        self.pump_hag(v);
        let c = &self.hybrid.conversions[v];
        let legs = [(c.client, 1), (c.carrier, 0), (c.carrier, 1)].into_iter().chain(c.server.map(|s| (s, 0)));
        for (flow, end) in legs.collect::<Vec<_>>() {
            self.service(flow, end);
        }
        self.hybrid.pumping = false;
    }

    /// The CPE: the request, the client's bytes up, the answer, the
    /// server's bytes down.
    fn pump_cpe(&mut self, v: usize) {
        let (client, carrier) = (self.hybrid.conversions[v].client, self.hybrid.conversions[v].carrier);
        let [a, b] = two_ends(&mut self.flows, (client, 1), (carrier, 0));
        let (Some(lan), Some(up)) = (a.ep.as_deref_mut(), b.ep.as_deref_mut()) else { return };
        let c = &mut self.hybrid.conversions[v];
        let cv = &mut self.hybrid.converters[c.converter];
        let s = &mut cv.summary;
        if c.cpe == State::Over {
            return;
        }
        // With Fast Open the first pump comes as the carrier opens, before
        // its SYN is sent: the request goes in that SYN.
        let in_syn = cv.fast_open && !up.is_established();
        if !c.request_written && (up.is_established() || in_syn) {
            up.send(c.request.len() as u64);
            s.message_bytes += c.request.len() as u64;
            s.fast_open += u64::from(in_syn);
            c.request_written = true;
        }
        if c.request_written {
            s.bytes_up += relay(lan, up, &mut a.app);
            pass_close(lan, up, &mut c.cpe_up_closed);
        }
        if c.cpe == State::Opening {
            let Some(answer) = c.answer.as_ref() else { return };
            if up.readable() < answer.len() as u64 {
                return;
            }
            up.recv(answer.len() as u64);
            match convert::read_reply(answer) {
                Reply::Connected { .. } => c.cpe = State::Relaying,
                Reply::Refused { .. } | Reply::Malformed | Reply::NeedMore => {
                    // The client's connection is reset, as the server's
                    // refusal would have reset it.
                    lan.abort();
                    up.close();
                    c.cpe = State::Over;
                    return;
                }
            }
        }
        s.bytes_down += relay(up, lan, &mut b.app);
        pass_close(up, lan, &mut c.cpe_down_closed);
        if reset_together(lan, up) {
            c.cpe = State::Over;
        }
    }

    /// The HAG: the request judged, the server leg opened, the answer,
    /// then bytes both ways.
    fn pump_hag(&mut self, v: usize) {
        let carrier = self.hybrid.conversions[v].carrier;
        if self.hybrid.conversions[v].hag == State::Opening && self.hybrid.conversions[v].server.is_none() {
            let Some(down) = self.flows[carrier].ends[1].ep.as_deref_mut() else { return };
            let c = &mut self.hybrid.conversions[v];
            if down.readable() < c.request.len() as u64 {
                return;
            }
            down.recv(c.request.len() as u64);
            let conv = &mut self.hybrid.converters[c.converter];
            match conv.policy.judge(&c.request) {
                Decision::Connect { dst, .. } => self.open_server_leg(v, dst),
                Decision::Answer { reply, code } => {
                    if let Some(code) = code {
                        conv.summary.count_error(code);
                    }
                    conv.summary.message_bytes += reply.len() as u64;
                    down.send(reply.len() as u64);
                    down.close();
                    c.answer = Some(reply);
                    c.hag = State::Over;
                }
                Decision::NeedMore => {}
                Decision::Reset { .. } => {
                    conv.summary.resets += 1;
                    down.abort();
                    c.hag = State::Over;
                }
            }
            return;
        }
        let Some(server) = self.hybrid.conversions[v].server else { return };
        let [a, b] = two_ends(&mut self.flows, (carrier, 1), (server, 0));
        let (Some(down), Some(out)) = (a.ep.as_deref_mut(), b.ep.as_deref_mut()) else { return };
        let c = &mut self.hybrid.conversions[v];
        let conv = &mut self.hybrid.converters[c.converter];
        if c.hag == State::Opening {
            if let Some(timed_out) = out.failure() {
                // The server reset the connection, or never answered.
                let e = if timed_out { ErrorTlv::DestinationUnreachable { icmp_code: 1 } } else { ErrorTlv::ConnectionReset };
                conv.summary.count_error(e.code());
                let reply = convert::reply_error(e);
                conv.summary.message_bytes += reply.len() as u64;
                down.send(reply.len() as u64);
                down.close();
                c.answer = Some(reply);
                c.hag = State::Over;
                return;
            }
            if !out.is_established() {
                return;
            }
            let reply = convert::reply_ok(c.server_options);
            conv.summary.message_bytes += reply.len() as u64;
            conv.summary.converted += 1;
            down.send(reply.len() as u64);
            c.answer = Some(reply);
            c.hag = State::Relaying;
        }
        if c.hag != State::Relaying {
            return;
        }
        relay(down, out, &mut a.app);
        pass_close(down, out, &mut c.hag_up_closed);
        relay(out, down, &mut b.app);
        pass_close(out, down, &mut c.hag_down_closed);
        if reset_together(down, out) {
            c.hag = State::Over;
        }
    }

    /// The HAG connects to `dst` for conversion `v`, from its address on
    /// the way there.
    fn open_server_leg(&mut self, v: usize, dst: SocketAddrV4) {
        let c = &self.hybrid.conversions[v];
        let conv = &mut self.hybrid.converters[c.converter];
        let hag = conv.hag;
        let port = conv.next_port;
        conv.next_port = conv.next_port.wrapping_add(1).max(FIRST_CARRIER_PORT);
        let node = &self.net.nodes[hag];
        let src = node.lookup(None, *dst.ip()).and_then(|r| r.nexthops.first().map(|h| node.interfaces[h.iface].addr)).unwrap_or(node.interfaces[0].addr);
        let mut f = self.net.flows[c.user].clone();
        f.name = format!("{}~server", f.name);
        f.transport = network::Transport::TCP;
        f.mptcp = None;
        f.from = hag;
        f.src = src;
        f.sport = port;
        f.dst = *dst.ip();
        f.dport = dst.port();
        let to = f.to;
        let leg = self.add_leg(f, (v as u32, Leg::Server), to);
        self.hybrid.conversions[v].server = Some(leg);
        self.flow_start(leg);
    }

    /// Per conversion, whether its carrier sends towards the CPE (the
    /// user flow is a download).
    pub(super) fn carriers_download(&self) -> Vec<bool> {
        self.hybrid.conversions.iter().map(|c| self.flows[c.user].ends[0].app.kind.sends() == Sends::Server).collect()
    }

    /// A converter flow's summary.
    pub(super) fn converter_summary(&self, flow: usize) -> Option<TunnelSummary> {
        let c = self.hybrid.converters.iter().find(|c| c.flow == flow)?;
        Some(TunnelSummary { converter: Some(c.summary.clone()), ..Default::default() })
    }
}

/// Passes `from`'s half-close on to `to` once every byte before it went.
fn pass_close(from: &dyn crate::endpoint::Endpoint, to: &mut dyn crate::endpoint::Endpoint, done: &mut bool) {
    if !*done && from.peer_closed() && from.readable() == 0 {
        to.close();
        *done = true;
    }
}

/// A reset on either side of a relay resets the other; true if one came.
fn reset_together(a: &mut dyn crate::endpoint::Endpoint, b: &mut dyn crate::endpoint::Endpoint) -> bool {
    let reset = a.failure().is_some() || b.failure().is_some();
    if reset {
        a.abort();
        b.abort();
    }
    reset
}

/// Two ends of two different flows, borrowed together.
fn two_ends(flows: &mut [FlowRt], a: (usize, usize), b: (usize, usize)) -> [&mut End; 2] {
    let [fa, fb] = flows.get_disjoint_mut([a.0, b.0]).unwrap_or_else(|_| unreachable!("legs are distinct flows"));
    [&mut fa.ends[a.1], &mut fb.ends[b.1]]
}

/// Moves what `from` has to read into `to`, as far as `to` has room;
/// counts it as read by `reader` (the relaying end's application).
fn relay(from: &mut dyn crate::endpoint::Endpoint, to: &mut dyn crate::endpoint::Endpoint, reader: &mut App) -> u64 {
    let n = from.readable().min(to.send_space());
    if n == 0 {
        return 0;
    }
    let got = from.recv(n);
    let n = got.end - got.start;
    to.send(n);
    reader.rx.delivered += n;
    n
}
