//! Groups TCP segments into MPTCP connections and subflows, the way a person
//! reads a capture in Wireshark, and recomputes every token, HMAC and DSS
//! checksum the capture lets us recompute.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use mplab_wire::crypto::{self, KeyMaterial};
use mplab_wire::mptcp::{tcprst_reason, MpJoin, MptcpOption};
use mplab_wire::packet::{NotTcp, TcpPacket};
use mplab_wire::tcp::flags;

use super::model::*;
use crate::capture::Capture;

/// Canonical key of a subflow: the two endpoints, smaller one first.
type FlowKey = (SocketAddr, SocketAddr);

fn flow_key(a: SocketAddr, b: SocketAddr) -> FlowKey {
    if a <= b { (a, b) } else { (b, a) }
}

/// Which end of the MPTCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Server,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
    fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

/// Per-subflow state of the analysis.
struct SubflowState {
    conn: Option<usize>,
    /// Index in the connection's subflow list, or in `tcp_flows`.
    index: usize,
    initiator_addr: SocketAddr,
    /// Connection end that sent the SYN (for joins, learnt from the token).
    initiator_side: Side,
    isn: [Option<u32>; 2],
    /// MP_JOIN nonces: [initiator R_A, responder R_B].
    nonce: [Option<u32>; 2],
    synack_hmac: Option<(usize, u64)>,
    ack_hmac: Option<(usize, [u8; 20])>,
    joined_verified: bool,
    mptcp: bool,
    /// Highest sequence end seen per direction, to count retransmitted bytes.
    high_seq: [Option<u32>; 2],
    last_header: [Option<(mplab_wire::TcpHeader, usize)>; 2],
    dss_seen: bool,
    /// Each way: (sequence end, send time) of segments sent once and not
    /// yet acknowledged, oldest first: the RTT samples' candidates.
    unacked: [std::collections::VecDeque<(u32, f64)>; 2],
}

#[derive(Default)]
struct ConnState {
    keys: [Option<u64>; 2],
    first_dsn_checked: [bool; 2],
}

pub fn analyze(file: &str, cap: &Capture) -> TraceReport {
    let mut rep = TraceReport { file: file.to_string(), frames: cap.frames.len(), truncated: cap.truncated.clone(), ..Default::default() };
    let mut flows: BTreeMap<FlowKey, SubflowState> = BTreeMap::new();
    let mut conns: Vec<ConnState> = Vec::new();

    // Times are reported relative to the first frame, as Wireshark does.
    let t0 = cap.frames.first().map(|f| f.time).unwrap_or(0.0);
    for (i, f) in cap.frames.iter().enumerate() {
        let frame = i + 1;
        let Some(link) = f.link else {
            rep.other_frames += 1;
            continue;
        };
        let p = match TcpPacket::parse_frame(link, &f.data) {
            Ok(p) => p,
            Err(NotTcp::Other) => {
                rep.other_frames += 1;
                continue;
            }
            Err(NotTcp::Malformed(e)) => {
                rep.malformed.push(Malformed { frame, error: e.to_string() });
                continue;
            }
        };
        rep.tcp_segments += 1;
        let mut a = Analyzer { rep: &mut rep, conns: &mut conns, frame, time: f.time - t0 };
        a.segment(&mut flows, &p);
    }
    for c in &rep.connections {
        for ch in &c.checks {
            if ch.ok {
                rep.checks_ok += 1;
            } else {
                rep.checks_mismatch += 1;
            }
        }
    }
    rep
}

struct Analyzer<'a> {
    rep: &'a mut TraceReport,
    conns: &'a mut Vec<ConnState>,
    frame: usize,
    time: f64,
}

fn hex64(v: u64) -> String {
    format!("{v:016x}")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn reason_name(r: u8) -> &'static str {
    match r {
        tcprst_reason::UNSPECIFIED => "unspecified",
        tcprst_reason::MPTCP_SPECIFIC => "MPTCP-specific error",
        tcprst_reason::LACK_OF_RESOURCES => "lack of resources",
        tcprst_reason::ADMIN_PROHIBITED => "administratively prohibited",
        tcprst_reason::TOO_MUCH_OUTSTANDING => "too much outstanding data",
        tcprst_reason::UNACCEPTABLE_PERFORMANCE => "unacceptable performance",
        tcprst_reason::MIDDLEBOX_INTERFERENCE => "middlebox interference",
        _ => "unknown reason",
    }
}

impl Analyzer<'_> {
    fn check(&mut self, conn: usize, what: String, expected: String, got: String) {
        let ok = expected == got;
        self.rep.connections[conn].checks.push(Check { frame: self.frame, what, expected, got, ok });
    }

    fn event(&mut self, conn: usize, subflow: usize, kind: &'static str, from: Side, detail: String) {
        self.rep.connections[conn].events.push(Event { time: self.time, frame: self.frame, subflow, kind, from: from.name(), detail });
    }

    fn set_key(&mut self, conn: usize, side: Side, key: u64) {
        let st = &mut self.conns[conn];
        if st.keys[side as usize].is_some() {
            return;
        }
        st.keys[side as usize] = Some(key);
        let km = KeyMaterial::from_key(key);
        let info = KeyInfo { key: Some(hex64(key)), token: Some(format!("{:08x}", km.token)), idsn: Some(hex64(km.idsn)) };
        match side {
            Side::Client => self.rep.connections[conn].client_keys = info,
            Side::Server => self.rep.connections[conn].server_keys = info,
        }
    }

    fn key(&self, conn: usize, side: Side) -> Option<u64> {
        self.conns[conn].keys[side as usize]
    }

    fn segment(&mut self, flows: &mut BTreeMap<FlowKey, SubflowState>, p: &TcpPacket) {
        let src = SocketAddr::new(p.src, p.tcp.src_port);
        let dst = SocketAddr::new(p.dst, p.tcp.dst_port);
        let key = flow_key(src, dst);
        let is_syn = p.tcp.flags & (flags::SYN | flags::ACK) == flags::SYN;

        if is_syn {
            let fresh = match flows.get(&key) {
                Some(s) => s.isn[0] != Some(p.tcp.seq) || s.initiator_addr != src,
                None => true,
            };
            if fresh {
                let st = self.new_subflow(src, dst, p);
                flows.insert(key, st);
            }
        }
        let Some(st) = flows.get_mut(&key) else {
            // Mid-stream capture of a flow whose SYN we never saw.
            let idx = self.rep.tcp_flows.len();
            self.rep.tcp_flows.push(TcpFlow { src: src.to_string(), dst: dst.to_string(), note: "no SYN in capture".into(), ..Default::default() });
            flows.insert(
                key,
                SubflowState {
                    conn: None,
                    index: idx,
                    initiator_addr: src,
                    initiator_side: Side::Client,
                    isn: [Some(p.tcp.seq), None],
                    nonce: [None; 2],
                    synack_hmac: None,
                    ack_hmac: None,
                    joined_verified: false,
                    mptcp: false,
                    high_seq: [None; 2],
                    last_header: [None; 2],
                    dss_seen: false,
                    unacked: Default::default(),
                },
            );
            let st = flows.get_mut(&key).expect("just inserted");
            self.count(st, 0, p);
            return;
        };
        let dir = if src == st.initiator_addr { 0 } else { 1 };
        // The same segment captured twice in a row (e.g. on both sides of a
        // router) is counted once.
        let sig = (p.tcp, p.payload_len);
        if st.last_header[dir] == Some(sig) {
            self.rep.duplicates += 1;
            return;
        }
        st.last_header[dir] = Some(sig);
        if p.tcp.flags & (flags::SYN | flags::ACK) == (flags::SYN | flags::ACK) && st.isn[1].is_none() {
            st.isn[1] = Some(p.tcp.seq);
        }
        self.count(st, dir, p);
        if let Some(conn) = st.conn {
            self.mptcp_segment(conn, st, dir, p);
        }
    }

    fn count(&mut self, st: &mut SubflowState, dir: usize, p: &TcpPacket) {
        let len = p.payload_len as u32;
        let end = p.tcp.seq.wrapping_add(len);
        let retx = match st.high_seq[dir] {
            Some(h) if len > 0 => {
                let over = h.wrapping_sub(p.tcp.seq) as i32;
                if over > 0 { over.min(len as i32) as u64 } else { 0 }
            }
            _ => 0,
        };
        if st.high_seq[dir].is_none_or(|h| (end.wrapping_sub(h) as i32) > 0) {
            st.high_seq[dir] = Some(end);
        }
        let d = match st.conn {
            Some(c) => {
                let sf = &mut self.rep.connections[c].subflows[st.index];
                sf.last_time = self.time;
                if dir == 0 { &mut sf.forward } else { &mut sf.reverse }
            }
            None => {
                let fl = &mut self.rep.tcp_flows[st.index];
                if dir == 0 { &mut fl.forward } else { &mut fl.reverse }
            }
        };
        d.segments += 1;
        d.bytes += p.payload_len as u64;
        d.retransmitted_bytes += retx;
        if let Some(c) = st.conn {
            self.time_sequence(c, st, dir, p, retx > 0);
        }
    }

    /// The time-sequence and RTT samples of an MPTCP subflow's segment.
    fn time_sequence(&mut self, conn: usize, st: &mut SubflowState, dir: usize, p: &TcpPacket, resent: bool) {
        let len = p.payload_len as u32;
        let sf = &mut self.rep.connections[conn].subflows[st.index];
        if len > 0 {
            let base = st.isn[dir].map_or(p.tcp.seq, |i| i.wrapping_add(1));
            sf.seq[dir].push((self.time, u64::from(p.tcp.seq.wrapping_sub(base)), resent));
            let end = p.tcp.seq.wrapping_add(len);
            if resent {
                // Every copy in flight of these bytes is now ambiguous.
                st.unacked[dir].retain(|&(e, _)| (p.tcp.seq.wrapping_sub(e) as i32) >= 0);
            } else {
                st.unacked[dir].push_back((end, self.time));
            }
        }
        if p.tcp.flags & flags::ACK != 0 {
            let q = &mut st.unacked[1 - dir];
            let mut newest = None;
            while let Some(&(end, t)) = q.front() {
                if (p.tcp.ack.wrapping_sub(end) as i32) < 0 {
                    break;
                }
                newest = Some(t);
                q.pop_front();
            }
            if let Some(t) = newest {
                sf.rtt[1 - dir].push((self.time, (self.time - t) * 1e3));
            }
        }
    }

    fn new_subflow(&mut self, src: SocketAddr, dst: SocketAddr, p: &TcpPacket) -> SubflowState {
        let mut st = SubflowState {
            conn: None,
            index: 0,
            initiator_addr: src,
            initiator_side: Side::Client,
            isn: [Some(p.tcp.seq), None],
            nonce: [None; 2],
            synack_hmac: None,
            ack_hmac: None,
            joined_verified: false,
            mptcp: false,
            high_seq: [None; 2],
            last_header: [None; 2],
            dss_seen: false,
            unacked: Default::default(),
        };
        let mut plain_note = "no MP_CAPABLE in SYN".to_string();
        for o in p.tcp.options.mptcp() {
            match o {
                MptcpOption::MpCapable(c) => {
                    let id = self.rep.connections.len();
                    self.conns.push(ConnState::default());
                    self.rep.connections.push(Connection {
                        id,
                        version: c.version,
                        client: src.to_string(),
                        server: dst.to_string(),
                        checksums: c.checksum_required(),
                        ..Default::default()
                    });
                    st.conn = Some(id);
                    st.mptcp = true;
                    st.index = 0;
                    self.rep.connections[id].subflows.push(Subflow {
                        index: 0,
                        kind: "MP_CAPABLE",
                        src: src.to_string(),
                        dst: dst.to_string(),
                        initiator: "client",
                        local_addr_id: Some(0),
                        remote_addr_id: Some(0),
                        first_time: self.time,
                        last_time: self.time,
                        ..Default::default()
                    });
                    return st;
                }
                MptcpOption::MpJoin(MpJoin::Syn { backup, addr_id, token, nonce }) => {
                    // The token names the key of the SYN's receiver.
                    let found = (0..self.conns.len()).rev().find_map(|c| {
                        [Side::Client, Side::Server]
                            .into_iter()
                            .find(|s| self.conns[c].keys[*s as usize].is_some_and(|k| crypto::token(k) == *token))
                            .map(|s| (c, s))
                    });
                    let Some((conn, receiver)) = found else {
                        plain_note = format!("MP_JOIN with unknown token {token:08x}");
                        break;
                    };
                    st.conn = Some(conn);
                    st.mptcp = true;
                    st.initiator_side = receiver.other();
                    st.nonce[0] = Some(*nonce);
                    let sfs = &mut self.rep.connections[conn].subflows;
                    st.index = sfs.len();
                    sfs.push(Subflow {
                        index: st.index,
                        kind: "MP_JOIN",
                        src: src.to_string(),
                        dst: dst.to_string(),
                        initiator: st.initiator_side.name(),
                        local_addr_id: Some(*addr_id),
                        backup: *backup,
                        first_time: self.time,
                        last_time: self.time,
                        ..Default::default()
                    });
                    let expected = format!("{:08x}", crypto::token(self.key(conn, receiver).expect("found by key")));
                    self.check(conn, format!("MP_JOIN SYN token = token({} key)", receiver.name()), expected, format!("{token:08x}"));
                    return st;
                }
                _ => {}
            }
        }
        st.index = self.rep.tcp_flows.len();
        self.rep.tcp_flows.push(TcpFlow { src: src.to_string(), dst: dst.to_string(), note: plain_note, ..Default::default() });
        st
    }

    /// Side of the connection that sent a segment in direction `dir`.
    fn sender(st: &SubflowState, dir: usize) -> Side {
        if dir == 0 { st.initiator_side } else { st.initiator_side.other() }
    }

    fn mptcp_segment(&mut self, conn: usize, st: &mut SubflowState, dir: usize, p: &TcpPacket) {
        let from = Self::sender(st, dir);
        let synack = p.tcp.flags & (flags::SYN | flags::ACK) == (flags::SYN | flags::ACK);
        let is_capable_flow = self.rep.connections[conn].subflows[st.index].kind == "MP_CAPABLE";
        if synack && is_capable_flow && !p.tcp.options.mptcp().any(|o| matches!(o, MptcpOption::MpCapable(_))) {
            self.fallback(conn, "SYN/ACK without MP_CAPABLE: the peer or a middlebox refused MPTCP");
        }
        if p.tcp.flags & flags::RST != 0 {
            let reason = p.tcp.options.mptcp().find_map(|o| match o {
                MptcpOption::MpTcpRst { flags, reason } => Some(format!(
                    "MP_TCPRST reason {reason} ({}){}",
                    reason_name(*reason),
                    if flags & 1 != 0 { ", transient" } else { "" }
                )),
                _ => None,
            });
            let sf = &mut self.rep.connections[conn].subflows[st.index];
            sf.closed_by = Some(format!("RST from {}{}", from.name(), reason.map(|r| format!(": {r}")).unwrap_or_default()));
        } else if p.tcp.flags & flags::FIN != 0 && self.rep.connections[conn].subflows[st.index].closed_by.is_none() {
            self.rep.connections[conn].subflows[st.index].closed_by = Some(format!("FIN from {}", from.name()));
        }
        let mut had_dss = false;
        for o in p.tcp.options.mptcp() {
            match o {
                MptcpOption::MpCapable(c) => self.mp_capable(conn, st, from, synack, c, p),
                MptcpOption::MpJoin(j) => self.mp_join(conn, st, dir, j),
                MptcpOption::Dss(d) => {
                    had_dss = true;
                    st.dss_seen = true;
                    self.dss(conn, st, from, d, p);
                }
                MptcpOption::AddAddr(a) => {
                    let what = if a.echo { "echo" } else { "announce" };
                    let port = a.port.map(|p| format!(" port {p}")).unwrap_or_default();
                    self.event(conn, st.index, "ADD_ADDR", from, format!("{what} id {} {}{}", a.addr_id, a.addr, port));
                    if let (Some(h), Some(ks), Some(kr)) = (a.hmac, self.key(conn, from), self.key(conn, from.other())) {
                        let want = crypto::add_addr_hmac(ks, kr, a.addr_id, a.addr, a.port);
                        self.check(conn, format!("ADD_ADDR HMAC (id {} {} from {})", a.addr_id, a.addr, from.name()), hex64(want), hex64(h));
                    }
                }
                MptcpOption::RemoveAddr(ids) => {
                    self.event(conn, st.index, "REMOVE_ADDR", from, format!("ids {:?}", ids.as_slice()));
                }
                MptcpOption::MpPrio { backup, .. } => {
                    self.event(conn, st.index, "MP_PRIO", from, format!("backup={backup}"));
                    self.rep.connections[conn].subflows[st.index].backup = *backup;
                }
                MptcpOption::MpFail { dsn } => {
                    self.event(conn, st.index, "MP_FAIL", from, format!("dsn {dsn:016x}"));
                    self.fallback(conn, "MP_FAIL (DSS checksum failure)");
                }
                MptcpOption::MpFastclose { receiver_key } => {
                    self.event(conn, st.index, "MP_FASTCLOSE", from, format!("key {receiver_key:016x}"));
                    if let Some(k) = self.key(conn, from.other()) {
                        self.check(conn, format!("MP_FASTCLOSE carries the {} key", from.other().name()), hex64(k), hex64(*receiver_key));
                    }
                }
                MptcpOption::MpTcpRst { flags, reason } => {
                    self.event(conn, st.index, "MP_TCPRST", from, format!("reason {reason} ({}) flags {flags:x}", reason_name(*reason)));
                }
                MptcpOption::Unknown { subtype, .. } => {
                    self.event(conn, st.index, "UNKNOWN", from, format!("MPTCP subtype {subtype}"));
                }
            }
        }
        // Data without DSS once DSS was in use: option 30 stripped mid-stream.
        if p.payload_len > 0 && !had_dss && st.dss_seen && self.rep.connections[conn].fallback.is_none() {
            let established = !p.tcp.options.mptcp().any(|o| matches!(o, MptcpOption::MpCapable(_)));
            if established {
                self.fallback(conn, "data segment without DSS after MPTCP was established (options stripped?)");
            }
        }
    }

    fn fallback(&mut self, conn: usize, why: &str) {
        let c = &mut self.rep.connections[conn];
        if c.fallback.is_none() {
            c.fallback = Some(format!("{why} (frame {})", self.frame));
        }
    }

    fn mp_capable(&mut self, conn: usize, st: &mut SubflowState, from: Side, synack: bool, c: &mplab_wire::MpCapable, p: &TcpPacket) {
        if synack {
            self.rep.connections[conn].checksums |= c.checksum_required();
            self.rep.connections[conn].subflows[st.index].established = true;
        }
        if let Some(k) = c.sender_key {
            if let Some(known) = self.key(conn, from) {
                self.check(conn, format!("MP_CAPABLE {} key repeated", from.name()), hex64(known), hex64(k));
            }
            self.set_key(conn, from, k);
        }
        if let Some(k) = c.receiver_key {
            let to = from.other();
            if let Some(known) = self.key(conn, to) {
                self.check(conn, format!("MP_CAPABLE {} key echoed by {}", to.name(), from.name()), hex64(known), hex64(k));
            }
            self.set_key(conn, to, k);
        }
        if c.data_len.is_some() && p.payload_len > 0 {
            // The first data rode in MP_CAPABLE (its DSN is IDSN+1 by
            // definition): the first DSS mapping that follows starts later.
            self.conns[conn].first_dsn_checked[from as usize] = true;
        }
        if let (Some(len), Some(ck)) = (c.data_len, c.checksum) {
            // MP_CAPABLE with data: the mapping starts at IDSN+1, SSN 1.
            if let Some(k) = self.key(conn, from) {
                if p.payload.len() == len as usize {
                    let dsn = crypto::idsn(k).wrapping_add(1);
                    let want = crypto::dss_checksum(dsn, 1, len, p.payload);
                    self.check(conn, format!("MP_CAPABLE data checksum ({} bytes from {})", len, from.name()), format!("{want:04x}"), format!("{ck:04x}"));
                }
            }
        }
    }

    fn mp_join(&mut self, conn: usize, st: &mut SubflowState, dir: usize, j: &MpJoin) {
        match *j {
            MpJoin::Syn { .. } => {}
            MpJoin::SynAck { backup, addr_id, hmac, nonce } if dir == 1 => {
                st.nonce[1] = Some(nonce);
                st.synack_hmac = Some((self.frame, hmac));
                let sf = &mut self.rep.connections[conn].subflows[st.index];
                sf.remote_addr_id = Some(addr_id);
                sf.established = true;
                if backup {
                    sf.backup = true;
                }
            }
            MpJoin::Ack { hmac } if dir == 0 => st.ack_hmac = Some((self.frame, hmac)),
            _ => {}
        }
        if st.joined_verified {
            return;
        }
        let a = st.initiator_side;
        let (Some(ka), Some(kb), Some(ra), Some(rb)) = (self.key(conn, a), self.key(conn, a.other()), st.nonce[0], st.nonce[1]) else {
            return;
        };
        if let Some((frame, got)) = st.synack_hmac.take() {
            let want = crypto::join_synack_hmac(kb, ka, rb, ra);
            let ok = want == got;
            self.rep.connections[conn].checks.push(Check {
                frame,
                what: format!("MP_JOIN SYN/ACK HMAC, subflow {} (R_A {ra:08x}, R_B {rb:08x})", st.index),
                expected: hex64(want),
                got: hex64(got),
                ok,
            });
        }
        if let Some((frame, got)) = st.ack_hmac.take() {
            let want = crypto::join_ack_hmac(ka, kb, ra, rb);
            self.rep.connections[conn].checks.push(Check {
                frame,
                what: format!("MP_JOIN ACK HMAC, subflow {}", st.index),
                expected: hex(&want),
                got: hex(&got),
                ok: want == got,
            });
            st.joined_verified = true;
        }
    }

    fn dss(&mut self, conn: usize, st: &mut SubflowState, from: Side, d: &mplab_wire::Dss, p: &TcpPacket) {
        if d.data_fin {
            let msg = format!("DATA_FIN from {} (frame {})", from.name(), self.frame);
            let c = &mut self.rep.connections[conn];
            if !c.data_fin.iter().any(|m| m.starts_with(&format!("DATA_FIN from {}", from.name()))) {
                c.data_fin.push(msg);
            }
        }
        let Some(m) = d.mapping else { return };
        self.rep.connections[conn].dss_mappings += 1;
        self.rep.connections[conn].subflows[st.index].dss_mappings += 1;
        if m.is_infinite() && !d.data_fin {
            self.fallback(conn, "infinite DSS mapping (fallback to TCP)");
            return;
        }
        let idsn = self.key(conn, from).map(crypto::idsn);
        let dsn = match (m.dsn_wide, idsn) {
            (true, _) => m.dsn,
            (false, Some(i)) => crypto::expand_seq32(i, m.dsn as u32),
            (false, None) => m.dsn,
        };
        if let (Some(i), true) = (idsn, p.payload_len > 0) {
            // The segment's own data sequence: the mapping's start plus the
            // segment's offset in it.
            let dir = if from == st.initiator_side { 0 } else { 1 };
            // SSNs count from the ISN: the first data octet is SSN 1.
            let rel_ssn = st.isn[dir].map(|isn| p.tcp.seq.wrapping_sub(isn));
            if let Some(r) = rel_ssn {
                let off = r.wrapping_sub(m.ssn);
                if off < m.data_len as u32 {
                    self.rep.connections[conn].dsn[from as usize].push((self.time, dsn.wrapping_add(u64::from(off)).wrapping_sub(i.wrapping_add(1)), st.index));
                }
            }
        }
        if let Some(i) = idsn {
            if !self.conns[conn].first_dsn_checked[from as usize] && p.payload_len > 0 && st.index == 0 {
                self.conns[conn].first_dsn_checked[from as usize] = true;
                let want = i.wrapping_add(1);
                let (e, g) = if m.dsn_wide { (want, dsn) } else { (want & 0xffff_ffff, m.dsn) };
                self.check(conn, format!("first DSN from {} = IDSN+1", from.name()), hex64(e), hex64(g));
            }
        }
        let Some(ck) = m.checksum else { return };
        // Recompute only when this segment carries exactly the mapping and
        // the capture holds all of its bytes (a DATA_FIN counts one octet).
        let fin = (d.data_fin && m.data_len as usize == p.payload_len + 1) as usize;
        if m.data_len as usize == p.payload_len + fin && p.payload.len() == p.payload_len {
            let want = crypto::dss_checksum(dsn, m.ssn, m.data_len, p.payload);
            self.check(
                conn,
                format!("DSS checksum dsn {dsn:016x} ssn {} len {} from {}", m.ssn, m.data_len, from.name()),
                format!("{want:04x}"),
                format!("{ck:04x}"),
            );
        }
    }
}
