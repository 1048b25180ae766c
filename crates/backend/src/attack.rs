//! The attacker of the adversarial matrix: one state machine per attacked
//! link, shared by the simulator's `attacker` middlebox and the kernel
//! backend's link emulator. It sees every segment crossing its link in
//! both directions (`dir` 0 is a→b, 1 is b→a), learns what its position
//! lets it learn, and at the strike time forges, replays or changes
//! segments. It is also the lab's observer: it counts what the victim sent
//! back on the four-tuples it forged, the same way on every backend.
//!
//! What it knows (see `mplab_scenario::attack`): on the path, everything
//! on its link, including the MP_CAPABLE keys of MPTCP v1 (RFC 8684 5
//! leaves such an attacker as strong as against TCP); off the path, only
//! the initial subflow's four-tuple, and it guesses sequence numbers.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};

use mplab_proto::Instant;
use mplab_scenario::attack::{AttackKind, Moment, Mount};
use mplab_wire::tcp::flags;
use mplab_wire::{crypto, AddAddr, AddrIdList, DataAck, Dss, DssMapping, MpCapable, MpJoin, MptcpOption, TcpHeader};

use crate::rng::SimRng;

/// A segment on the attacker's link.
#[derive(Debug, Clone)]
pub struct Seg {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub tcp: TcpHeader,
    pub payload_len: u32,
}

/// What the attacker does to a segment passing it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Touch {
    pub drop: bool,
    /// The header (addresses, ports, options) was changed in place.
    pub header: bool,
    /// The first payload byte is changed (TCP checksum fixed up).
    pub corrupt: bool,
    /// Cut into two segments after this many payload bytes, each with the
    /// original options.
    pub split_at: Option<u32>,
}

/// A forged join SYN that got no reply is sent again, as a host's SYN is:
/// a forgery lost in a full queue is not a victim that kept silent.
const SYN_RETRY_NS: u64 = 1_000_000_000;
/// A flood's SYNs leave one every 100 µs (10,000 a second), as a flooding
/// tool paces them: all at once they would only overflow the queue of the
/// attacker's link and never reach the host.
const FLOOD_GAP_NS: u64 = 100_000;
const SYN_RETRIES: u8 = 3;

/// A forged join SYN waiting for its reply: sent again at `at`.
struct SynRetry {
    syn: Forged,
    at: Instant,
    left: u8,
}

/// A segment the attacker sends into its link.
#[derive(Debug, Clone)]
pub struct Forged {
    /// Link direction it travels (0: a→b, 1: b→a).
    pub dir: usize,
    pub seg: Seg,
    /// The data-level (or TCP) stream offset its payload claims to hold:
    /// the simulator regenerates payload bytes from it, with the first
    /// one changed (the attacker's bytes are never the sender's).
    pub claims: u64,
}

/// Fixed payload length of forged data segments.
pub const FORGED_PAYLOAD: u32 = 1000;
/// The address forged ADD_ADDRs announce: in no scenario's address plan.
pub const FAKE_ADDR: Ipv4Addr = Ipv4Addr::new(10, 254, 254, 1);

/// What the attacker did and saw, for the matrix.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AttackReport {
    /// When it struck (None: never: it had nothing to work with).
    pub struck_ns: Option<u64>,
    pub forged: u64,
    /// Genuine segments it dropped, changed or split.
    pub touched: u64,
    /// Replies on the four-tuples it forged.
    pub syn_acks: u64,
    pub resets: u64,
    pub acks: u64,
    /// SYNs any host sent to the address a forged ADD_ADDR announced.
    pub syns_to_fake_addr: u64,
    /// Why it could not strike, if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One subflow as seen on the link, by its client (SYN sender) and server.
#[derive(Debug, Clone)]
struct Sub {
    c: (Ipv4Addr, u16),
    s: (Ipv4Addr, u16),
    /// Direction the client's segments travel.
    c_dir: usize,
    /// Per side [client, server]: initial sequence number, next sequence
    /// number sent, last ACK sent, last window, last timestamps.
    isn: [Option<u32>; 2],
    nxt: [u32; 2],
    ack: [Option<u32>; 2],
    win: [u16; 2],
    ts: [Option<mplab_wire::Timestamps>; 2],
    /// Payload bytes each side sent.
    sent: [u64; 2],
    /// Last DATA_ACK each side sent, and the end of its last mapping.
    data_ack: [Option<u64>; 2],
    mapped_end: [Option<u64>; 2],
    initial: bool,
}

impl Sub {
    fn side(&self, src: (Ipv4Addr, u16)) -> usize {
        usize::from(src != self.c)
    }
    fn addr(&self, side: usize) -> (Ipv4Addr, u16) {
        if side == 0 {
            self.c
        } else {
            self.s
        }
    }
    fn dir(&self, from_side: usize) -> usize {
        if from_side == 0 {
            self.c_dir
        } else {
            1 - self.c_dir
        }
    }
}

pub struct Attacker {
    kind: AttackKind,
    /// When it strikes: None while it waits for `after`.
    at: Option<Instant>,
    /// The protocol moment the strike follows, and the delay after it.
    after: Option<Moment>,
    delay_ns: u64,
    count: u32,
    rng: SimRng,
    subs: Vec<Sub>,
    /// Keys of the first MPTCP connection seen (client, server).
    keys: [Option<u64>; 2],
    /// A genuine MP_JOIN SYN and third-ACK HMAC (to replay).
    join_syn: Option<(Seg, usize)>,
    join_ack_hmac: Option<[u8; 20]>,
    /// A genuine ADD_ADDR and the side that sent it.
    add_addr: Option<(AddAddr, usize)>,
    /// Four-tuples it forged: (attacker's end, victim's end), and the
    /// HMAC it answers a join SYN/ACK with.
    forged_tuples: Vec<((Ipv4Addr, u16), (Ipv4Addr, u16))>,
    join_reply: Option<[u8; 20]>,
    out: [VecDeque<Forged>; 2],
    struck: bool,
    /// Segments left to change, for the repeating rewrites.
    budget: u32,
    /// NAT rebinding: the subflow's client end and its new port.
    rebind: Option<((Ipv4Addr, u16), u16)>,
    retry: Option<SynRetry>,
    /// When a flood's next SYN may leave.
    next_flood_ns: u64,
    report: AttackReport,
}

impl Attacker {
    pub fn new(m: &Mount, seed: u64, link: usize) -> Attacker {
        let kind = m.attack;
        let count = m.count.unwrap_or(match kind {
            AttackKind::JoinSynFlood => 2000,
            AttackKind::RemoveAddrOffPath | AttackKind::MpPrioOffPath | AttackKind::MpFailOffPath | AttackKind::RstOffPath => 1000,
            AttackKind::PayloadRewrite => 20,
            _ => u32::MAX,
        });
        let mut report = AttackReport::default();
        if let Some(after) = m.after {
            report.note = Some(format!("its moment ({}) never crossed the attacker's link", moment_words(after)));
        }
        Attacker {
            kind,
            at: m.after.is_none().then_some(Instant(m.at_ns)),
            after: m.after,
            delay_ns: m.at_ns,
            count,
            // Its own stream, apart from the links' and the stacks'.
            rng: SimRng::new(seed, 0xa77a_c000 + link as u64),
            subs: Vec::new(),
            keys: [None; 2],
            join_syn: None,
            join_ack_hmac: None,
            add_addr: None,
            forged_tuples: Vec::new(),
            join_reply: None,
            out: [VecDeque::new(), VecDeque::new()],
            struck: false,
            budget: count,
            rebind: None,
            retry: None,
            next_flood_ns: 0,
            report,
        }
    }

    pub fn kind(&self) -> AttackKind {
        self.kind
    }

    pub fn report(&self) -> &AttackReport {
        &self.report
    }

    /// When it must run next in direction `dir`: a forged segment is
    /// waiting, or the strike is due.
    pub fn next_deadline(&self, dir: usize) -> Option<Instant> {
        if !self.out[dir].is_empty() {
            return Some(if self.kind == AttackKind::JoinSynFlood { Instant(self.next_flood_ns) } else { Instant::ZERO });
        }
        if let Some(r) = self.retry.as_ref().filter(|r| r.syn.dir == dir) {
            return Some(r.at);
        }
        self.at.filter(|_| !self.struck)
    }

    /// Whether the strike is due at `now`.
    fn due(&self, now: Instant) -> bool {
        !self.struck && self.at.is_some_and(|at| now >= at)
    }

    /// The next forged segment for direction `dir`, once the strike is due.
    pub fn poll_forged(&mut self, now: Instant, dir: usize) -> Option<Forged> {
        if self.due(now) {
            self.strike(now);
        }
        self.retry_syn(now, dir);
        if self.kind == AttackKind::JoinSynFlood {
            if now.as_nanos() < self.next_flood_ns {
                return None;
            }
            self.next_flood_ns = now.as_nanos() + FLOOD_GAP_NS;
        }
        let f = self.out[dir].pop_front()?;
        self.report.forged += 1;
        Some(f)
    }

    /// A genuine segment crossing the link in direction `dir`: learn from
    /// it, count replies to forgeries, and change or drop it if the attack
    /// says so.
    pub fn on_segment(&mut self, now: Instant, dir: usize, seg: &mut Seg) -> Touch {
        if self.at.is_none() && self.after.is_some_and(|m| is_moment(m, &seg.tcp)) {
            self.at = Some(Instant(now.as_nanos() + self.delay_ns));
        }
        if self.due(now) {
            self.strike(now);
        }
        if self.observe_reply(dir, seg) {
            // A reply to a forgery: an on-path attacker keeps it from the
            // host whose address it borrowed (which would reset it).
            return Touch { drop: self.kind.position() == mplab_scenario::attack::Position::OnPath, ..Touch::default() };
        }
        if seg.tcp.syn() && IpAddr::V4(seg.dst) == IpAddr::V4(FAKE_ADDR) {
            self.report.syns_to_fake_addr += 1;
        }
        self.learn(dir, seg);
        if self.struck {
            self.tamper(dir, seg)
        } else {
            Touch::default()
        }
    }

    // ------------------------------------------------------------ learning

    fn sub_index(&self, a: (Ipv4Addr, u16), b: (Ipv4Addr, u16)) -> Option<usize> {
        self.subs.iter().position(|s| (s.c == a && s.s == b) || (s.c == b && s.s == a))
    }

    fn learn(&mut self, dir: usize, seg: &Seg) {
        let (src, dst) = ((seg.src, seg.tcp.src_port), (seg.dst, seg.tcp.dst_port));
        let h = &seg.tcp;
        let i = match self.sub_index(src, dst) {
            Some(i) => i,
            None if h.syn() && !h.ack_flag() => {
                let initial = h.options.mptcp().any(|o| matches!(o, MptcpOption::MpCapable(_)));
                if let Some(MptcpOption::MpJoin(MpJoin::Syn { .. })) = h.options.mptcp().next() {
                    if self.join_syn.is_none() {
                        self.join_syn = Some((seg.clone(), dir));
                    }
                }
                if self.subs.len() >= 64 {
                    return;
                }
                self.subs.push(Sub {
                    c: src,
                    s: dst,
                    c_dir: dir,
                    isn: [None; 2],
                    nxt: [0; 2],
                    ack: [None; 2],
                    win: [0; 2],
                    ts: [None; 2],
                    sent: [0; 2],
                    data_ack: [None; 2],
                    mapped_end: [None; 2],
                    initial,
                });
                self.subs.len() - 1
            }
            None => return,
        };
        let sub = &mut self.subs[i];
        let side = sub.side(src);
        if h.syn() {
            sub.isn[side] = Some(h.seq);
        }
        let end = h.seq.wrapping_add(seg.payload_len).wrapping_add(u32::from(h.syn())).wrapping_add(u32::from(h.fin()));
        if sub.isn[side].is_some() && (sub.sent[side] == 0 && sub.nxt[side] == 0 || seq_after(end, sub.nxt[side])) {
            sub.nxt[side] = end;
        }
        if h.ack_flag() {
            sub.ack[side] = Some(h.ack);
            sub.win[side] = h.window;
        }
        if h.options.timestamps.is_some() {
            sub.ts[side] = h.options.timestamps;
        }
        sub.sent[side] += u64::from(seg.payload_len);
        for o in h.options.mptcp() {
            match *o {
                MptcpOption::MpCapable(MpCapable { sender_key, receiver_key, .. }) => {
                    if let Some(k) = sender_key {
                        self.keys[side].get_or_insert(k);
                    }
                    if let Some(k) = receiver_key {
                        self.keys[1 - side].get_or_insert(k);
                    }
                }
                MptcpOption::Dss(d) => {
                    if let Some(a) = d.data_ack {
                        let sub = &mut self.subs[i];
                        sub.data_ack[side] = Some(expand(sub.data_ack[side], a.value, a.wide));
                    }
                    if let Some(m) = d.mapping {
                        if m.data_len > 0 {
                            let sub = &mut self.subs[i];
                            let start = expand(sub.mapped_end[side], m.dsn, m.dsn_wide);
                            let e = start + u64::from(m.data_len);
                            sub.mapped_end[side] = Some(sub.mapped_end[side].map_or(e, |x| x.max(e)));
                        }
                    }
                }
                MptcpOption::AddAddr(a) if !a.echo && a.hmac.is_some() && self.add_addr.is_none() => self.add_addr = Some((a, side)),
                MptcpOption::MpJoin(MpJoin::Ack { hmac }) if self.join_ack_hmac.is_none() => self.join_ack_hmac = Some(hmac),
                _ => {}
            }
        }
    }

    /// Counts a segment on a forged four-tuple (returns true), and answers
    /// a join's SYN/ACK with the attacker's third ACK.
    fn observe_reply(&mut self, dir: usize, seg: &Seg) -> bool {
        let (src, dst) = ((seg.src, seg.tcp.src_port), (seg.dst, seg.tcp.dst_port));
        if !self.forged_tuples.iter().any(|&(a, v)| a == dst && v == src) {
            return false;
        }
        let h = &seg.tcp;
        if h.rst() {
            self.report.resets += 1;
        } else if h.syn() && h.ack_flag() {
            self.report.syn_acks += 1;
            if let Some(hmac) = self.join_reply {
                let mut a = TcpHeader { src_port: dst.1, dst_port: src.1, seq: h.ack, ack: h.seq.wrapping_add(1), flags: flags::ACK, window: 512, ..Default::default() };
                let _ = a.options.push_mptcp(MptcpOption::MpJoin(MpJoin::Ack { hmac }));
                self.out[1 - dir].push_back(Forged { dir: 1 - dir, seg: Seg { src: dst.0, dst: src.0, tcp: a, payload_len: 0 }, claims: 0 });
            }
        } else {
            self.report.acks += 1;
        }
        true
    }

    // ------------------------------------------------------------- attacks

    /// The subflow the attack aims at: the initial one (MP_CAPABLE) if it
    /// crosses this link, else the first seen.
    fn target(&self) -> Option<usize> {
        self.subs.iter().position(|s| s.initial && s.isn[1].is_some()).or_else(|| self.subs.iter().position(|s| s.isn[1].is_some()))
    }

    /// The side that sent more payload on `sub`: the data sender.
    fn data_sender(sub: &Sub) -> usize {
        usize::from(sub.sent[1] > sub.sent[0])
    }

    /// A segment from `side` of `sub` to the other, in its window: what the
    /// other side expects next, with `side`'s last ACK, window and
    /// timestamps (PAWS).
    fn in_window(&self, sub: &Sub, side: usize) -> TcpHeader {
        let other = 1 - side;
        let seq = sub.ack[other].unwrap_or(sub.nxt[side]);
        let (src, dst) = (sub.addr(side), sub.addr(other));
        let mut h = TcpHeader { src_port: src.1, dst_port: dst.1, seq, ack: sub.ack[side].unwrap_or(0), flags: flags::ACK, window: sub.win[side].max(1), ..Default::default() };
        h.options.timestamps = sub.ts[side];
        h
    }

    fn send_from(&mut self, sub: usize, side: usize, h: TcpHeader, payload_len: u32, claims: u64) {
        let s = &self.subs[sub];
        let (src, dst, dir) = (s.addr(side).0, s.addr(1 - side).0, s.dir(side));
        self.out[dir].push_back(Forged { dir, seg: Seg { src, dst, tcp: h, payload_len }, claims });
    }

    /// A fresh source port on the client's address for a forged subflow.
    fn forged_join(&mut self, sub: usize, opt: MptcpOption, reply: Option<[u8; 20]>) {
        let s = self.subs[sub].clone();
        let port = 40000 + (self.forged_tuples.len() as u16 % 20000);
        let mut h = TcpHeader { src_port: port, dst_port: s.s.1, seq: self.rng.next_u32(), flags: flags::SYN, window: 65535, ..Default::default() };
        h.options.mss = Some(1460);
        let _ = h.options.push_mptcp(opt);
        self.forged_tuples.push(((s.c.0, port), s.s));
        self.join_reply = reply;
        let syn = Forged { dir: s.c_dir, seg: Seg { src: s.c.0, dst: s.s.0, tcp: h, payload_len: 0 }, claims: 0 };
        if self.kind != AttackKind::JoinSynFlood {
            // Its first try goes now; the retries from the strike on.
            self.retry = Some(SynRetry { syn: syn.clone(), at: Instant(self.report.struck_ns.unwrap_or(0) + SYN_RETRY_NS), left: SYN_RETRIES });
        }
        self.out[s.c_dir].push_back(syn);
    }

    /// The attack cannot be mounted: nothing was forged, and the report
    /// says why (never a verdict on the stack).
    fn nothing(&mut self, why: &str) {
        self.report.note = Some(why.to_string());
        self.report.struck_ns = None;
    }

    /// Sends the forged join SYN again if it is due and nothing answered
    /// yet; forgets it once anything did or its tries are spent.
    fn retry_syn(&mut self, now: Instant, dir: usize) {
        let answered = self.report.syn_acks + self.report.resets + self.report.acks > 0;
        let Some(r) = self.retry.as_mut() else { return };
        if answered || r.left == 0 {
            self.retry = None;
            return;
        }
        if r.syn.dir == dir && now >= r.at {
            r.left -= 1;
            r.at = Instant(now.as_nanos() + SYN_RETRY_NS);
            self.out[dir].push_back(r.syn.clone());
        }
    }

    fn strike(&mut self, now: Instant) {
        self.struck = true;
        self.report.note = None;
        let Some(t) = self.target() else {
            return self.nothing("no established subflow crossed the attacker's link");
        };
        self.report.struck_ns = Some(now.as_nanos());
        let sub = self.subs[t].clone();
        let sender = Self::data_sender(&sub);
        let receiver = 1 - sender;
        match self.kind {
            AttackKind::JoinUnknownToken => {
                let token = self.rng.next_u32();
                let nonce = self.rng.next_u32();
                self.forged_join(t, MptcpOption::MpJoin(MpJoin::Syn { backup: false, addr_id: 7, token, nonce }), None);
            }
            AttackKind::JoinStolenToken => {
                // The token from the server's key (MP_CAPABLE seen on the
                // initial subflow's link) or as a genuine MP_JOIN SYN
                // carried it (on a joined subflow's link).
                let seen_in_join = self.join_syn.as_ref().and_then(|(syn, _)| {
                    syn.tcp.options.mptcp().find_map(|o| if let MptcpOption::MpJoin(MpJoin::Syn { token, .. }) = o { Some(*token) } else { None })
                });
                let Some(token) = self.keys[1].map(crypto::token).or(seen_in_join) else {
                    return self.nothing("neither the server's key nor an MP_JOIN crossed the link: no token to steal");
                };
                let nonce = self.rng.next_u32();
                let mut guess = [0u8; 20];
                guess.iter_mut().for_each(|b| *b = self.rng.next_u32() as u8);
                self.forged_join(t, MptcpOption::MpJoin(MpJoin::Syn { backup: false, addr_id: 7, token, nonce }), Some(guess));
            }
            AttackKind::JoinReplayedHmac => {
                let (Some((syn, _)), Some(hmac)) = (self.join_syn.clone(), self.join_ack_hmac) else {
                    return self.nothing("no genuine MP_JOIN handshake crossed the link to replay");
                };
                let Some(opt) = syn.tcp.options.mptcp().next().copied() else { return self.nothing("the MP_JOIN SYN seen carried no option to replay") };
                self.forged_join(t, opt, Some(hmac));
            }
            AttackKind::JoinSynFlood => {
                for _ in 0..self.count {
                    let (token, nonce) = (self.rng.next_u32(), self.rng.next_u32());
                    self.forged_join(t, MptcpOption::MpJoin(MpJoin::Syn { backup: false, addr_id: 7, token, nonce }), None);
                }
            }
            AttackKind::AddAddrBadHmac | AttackKind::AddAddrReplayed => {
                // To the client, which is the one that opens subflows to
                // announced addresses, as if from the server.
                let hmac = match self.kind {
                    AttackKind::AddAddrReplayed => match self.add_addr {
                        Some((a, _)) => a.hmac,
                        None => return self.nothing("no genuine ADD_ADDR crossed the link to replay"),
                    },
                    _ => Some(self.rng.next_u64()),
                };
                let mut h = self.in_window(&sub, 1);
                let _ = h.options.push_mptcp(MptcpOption::AddAddr(AddAddr { echo: false, addr_id: 42, addr: IpAddr::V4(FAKE_ADDR), port: None, hmac }));
                self.send_from(t, 1, h, 0, 0);
            }
            AttackKind::RemoveAddrOffPath | AttackKind::MpPrioOffPath | AttackKind::MpFailOffPath | AttackKind::RstOffPath => {
                // Blind: the four-tuple is known, the sequence numbers are
                // guesses. Aimed at the data sender (a backup flag, a
                // removed address or a fallback there would hurt most).
                let from = receiver;
                for _ in 0..self.count {
                    let mut h = self.in_window(&sub, from);
                    h.seq = self.rng.next_u32();
                    h.ack = self.rng.next_u32();
                    h.options.timestamps = None;
                    let opt = match self.kind {
                        AttackKind::RemoveAddrOffPath => {
                            AddrIdList::from_slice(&[0, 1]).map(MptcpOption::RemoveAddr)
                        }
                        AttackKind::MpPrioOffPath => Some(MptcpOption::MpPrio { backup: true, addr_id: None }),
                        AttackKind::MpFailOffPath => Some(MptcpOption::MpFail { dsn: self.rng.next_u64() }),
                        _ => {
                            h.flags = flags::RST;
                            None
                        }
                    };
                    if let Some(o) = opt {
                        let _ = h.options.push_mptcp(o);
                    }
                    self.send_from(t, from, h, 0, 0);
                }
            }
            AttackKind::FastcloseWrongKey => {
                let key = self.keys[sender].map_or(1, |k| k ^ 0x5555_5555_5555_5555);
                let mut h = self.in_window(&sub, receiver);
                let _ = h.options.push_mptcp(MptcpOption::MpFastclose { receiver_key: key });
                self.send_from(t, receiver, h, 0, 0);
            }
            AttackKind::InfiniteMapping | AttackKind::DssOverlap | AttackKind::DssOutOfWindow | AttackKind::DssBadChecksum => {
                let Some(isn) = sub.isn[sender] else { return self.nothing("the data sender's initial sequence number was not seen") };
                let Some(data_next) = sub.data_ack[receiver] else { return self.nothing("no DATA_ACK seen: the data level is unknown") };
                let mut h = self.in_window(&sub, sender);
                let ssn = h.seq.wrapping_sub(isn);
                let (dsn, len, payload, checksum) = match self.kind {
                    AttackKind::InfiniteMapping => (data_next, 0, 0, None),
                    AttackKind::DssOverlap => (data_next.saturating_sub(u64::from(FORGED_PAYLOAD)), FORGED_PAYLOAD as u16, FORGED_PAYLOAD, None),
                    AttackKind::DssOutOfWindow => (data_next + (1 << 40), FORGED_PAYLOAD as u16, FORGED_PAYLOAD, None),
                    // A checksum that cannot match (checksums are not
                    // secret: an attacker that wanted could compute one).
                    _ => (data_next, FORGED_PAYLOAD as u16, FORGED_PAYLOAD, Some(self.rng.next_u32() as u16)),
                };
                let mapping = DssMapping { dsn, dsn_wide: true, ssn, data_len: len, checksum };
                let _ = h.options.push_mptcp(MptcpOption::Dss(Dss { data_ack: sub.data_ack[sender].map(|v| DataAck { value: v, wide: true }), mapping: Some(mapping), data_fin: false }));
                // The stream offset the mapping claims (relative to the
                // sender's initial data sequence number).
                let claims = self.keys[sender].map_or(dsn, |k| dsn.wrapping_sub(crypto::idsn(k)).wrapping_sub(1));
                self.send_from(t, sender, h, payload, claims);
            }
            AttackKind::RstOnPath => {
                let h = TcpHeader { flags: flags::RST, ..self.in_window(&sub, receiver) };
                self.send_from(t, receiver, h, 0, 0);
            }
            AttackKind::NatRebinding => {
                let new_port = sub.c.1 ^ 0x2000;
                self.rebind = Some((sub.c, if new_port == 0 { 1 } else { new_port }));
            }
            // Rewriting attacks act on genuine segments (`tamper`).
            AttackKind::StripMidConnection | AttackKind::PayloadRewrite | AttackKind::SegmentSplit => {}
        }
    }

    /// After the strike: the attacks that change genuine segments.
    fn tamper(&mut self, _dir: usize, seg: &mut Seg) -> Touch {
        let mut t = Touch::default();
        match self.kind {
            AttackKind::StripMidConnection if seg.tcp.options.has_mptcp() => {
                seg.tcp.options.clear_mptcp();
                t.header = true;
            }
            AttackKind::PayloadRewrite if seg.payload_len > 0 && self.budget > 0 => {
                self.budget -= 1;
                t.corrupt = true;
            }
            AttackKind::SegmentSplit if seg.payload_len > 1 && !seg.tcp.syn() => t.split_at = Some(seg.payload_len / 2),
            AttackKind::NatRebinding => {
                let Some(((addr, port), new)) = self.rebind else { return t };
                if seg.src == addr && seg.tcp.src_port == port {
                    seg.tcp.src_port = new;
                    t.header = true;
                } else if seg.dst == addr && seg.tcp.dst_port == new {
                    seg.tcp.dst_port = port;
                    t.header = true;
                }
            }
            _ => {}
        }
        if t != Touch::default() {
            self.report.touched += 1;
        }
        t
    }
}

/// `a` is after `b` in sequence space.
fn seq_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// A 64-bit data sequence number from a possibly 32-bit field, near `prev`.
fn expand(prev: Option<u64>, v: u64, wide: bool) -> u64 {
    if wide {
        v
    } else {
        crypto::expand_seq32(prev.unwrap_or(0), v as u32)
    }
}

/// Whether `h` is the segment that marks moment `m`.
fn is_moment(m: Moment, h: &TcpHeader) -> bool {
    let syn = h.syn() && !h.ack_flag();
    h.options.mptcp().any(|o| match (m, o) {
        (Moment::MpCapable, MptcpOption::MpCapable(_)) => syn,
        (Moment::MpJoin, MptcpOption::MpJoin(MpJoin::Syn { .. })) => syn,
        (Moment::AddAddr, MptcpOption::AddAddr(a)) => !a.echo,
        (Moment::DataFin, MptcpOption::Dss(d)) => d.data_fin,
        _ => false,
    })
}

fn moment_words(m: Moment) -> &'static str {
    match m {
        Moment::MpCapable => "the first MP_CAPABLE SYN",
        Moment::MpJoin => "the first MP_JOIN SYN",
        Moment::AddAddr => "the first ADD_ADDR",
        Moment::DataFin => "the first DATA_FIN",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syn(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, seq: u32, opt: MptcpOption) -> Seg {
        let mut tcp = TcpHeader { src_port: sport, dst_port: dport, seq, flags: flags::SYN, window: 65535, ..Default::default() };
        tcp.options.push_mptcp(opt).unwrap();
        Seg { src: src.into(), dst: dst.into(), tcp, payload_len: 0 }
    }

    fn handshake(a: &mut Attacker) {
        let mut s = syn([10, 0, 0, 1], 5000, [10, 0, 1, 2], 80, 100, MptcpOption::MpCapable(MpCapable { version: 1, flags: 0, sender_key: None, receiver_key: None, data_len: None, checksum: None }));
        a.on_segment(Instant(0), 0, &mut s);
        let mut sa = syn([10, 0, 1, 2], 80, [10, 0, 0, 1], 5000, 900, MptcpOption::MpCapable(MpCapable { version: 1, flags: 0, sender_key: Some(0xabcd), receiver_key: None, data_len: None, checksum: None }));
        sa.tcp.flags |= flags::ACK;
        sa.tcp.ack = 101;
        a.on_segment(Instant(1), 1, &mut sa);
    }

    #[test]
    fn a_stolen_token_join_uses_the_servers_token_and_answers_its_syn_ack() {
        let mut a = Attacker::new(&Mount { attack: AttackKind::JoinStolenToken, at_ns: 10, after: None, count: None }, 1, 0);
        handshake(&mut a);
        assert!(a.poll_forged(Instant(5), 0).is_none(), "not before the strike time");
        let f = a.poll_forged(Instant(10), 0).expect("the forged SYN");
        let Some(MptcpOption::MpJoin(MpJoin::Syn { token, .. })) = f.seg.tcp.options.mptcp().next().copied() else { panic!("{f:?}") };
        assert_eq!(token, crypto::token(0xabcd));
        // The server's SYN/ACK on the forged tuple is counted, kept from the
        // client, and answered with a third ACK.
        let mut reply = syn([10, 0, 1, 2], 80, [10, 0, 0, 1], f.seg.tcp.src_port, 7, MptcpOption::MpJoin(MpJoin::SynAck { backup: false, addr_id: 0, hmac: 1, nonce: 2 }));
        reply.tcp.flags |= flags::ACK;
        reply.tcp.ack = f.seg.tcp.seq.wrapping_add(1);
        assert!(a.on_segment(Instant(11), 1, &mut reply).drop);
        let ack = a.poll_forged(Instant(11), 0).expect("third ACK");
        assert!(matches!(ack.seg.tcp.options.mptcp().next(), Some(MptcpOption::MpJoin(MpJoin::Ack { .. }))));
        assert_eq!(a.report().syn_acks, 1);
    }

    /// A join SYN flood leaves at the flooding tool's pace, one SYN every
    /// `FLOOD_GAP_NS`, not all in one burst that a full queue would drop.
    #[test]
    fn a_syn_flood_is_paced() {
        let mut a = Attacker::new(&Mount { attack: AttackKind::JoinSynFlood, at_ns: 10, after: None, count: Some(3) }, 1, 0);
        handshake(&mut a);
        assert!(a.poll_forged(Instant(10), 0).is_some(), "the first SYN at the strike");
        assert!(a.poll_forged(Instant(10), 0).is_none(), "not two at once");
        assert_eq!(a.next_deadline(0), Some(Instant(10 + FLOOD_GAP_NS)));
        assert!(a.poll_forged(Instant(10 + FLOOD_GAP_NS - 1), 0).is_none());
        assert!(a.poll_forged(Instant(10 + FLOOD_GAP_NS), 0).is_some());
        assert!(a.poll_forged(Instant(10 + 2 * FLOOD_GAP_NS), 0).is_some());
        assert!(a.poll_forged(Instant(10 + 3 * FLOOD_GAP_NS), 0).is_none(), "three in all");
        assert_eq!(a.report().forged, 3);
    }

    #[test]
    fn off_path_guesses_are_deterministic_and_counted() {
        let run = || {
            let mut a = Attacker::new(&Mount { attack: AttackKind::RstOffPath, at_ns: 10, after: None, count: Some(5) }, 9, 0);
            handshake(&mut a);
            std::iter::from_fn(|| a.poll_forged(Instant(20), 0).or_else(|| a.poll_forged(Instant(20), 1))).map(|f| f.seg.tcp.seq).collect::<Vec<_>>()
        };
        let (x, y) = (run(), run());
        assert_eq!(x.len(), 5);
        assert_eq!(x, y);
    }

    #[test]
    fn without_a_subflow_it_says_why_it_did_not_strike() {
        let mut a = Attacker::new(&Mount { attack: AttackKind::FastcloseWrongKey, at_ns: 0, after: None, count: None }, 1, 0);
        assert!(a.poll_forged(Instant(1), 0).is_none());
        assert!(a.report().struck_ns.is_none() && a.report().note.is_some());
    }

    #[test]
    fn nat_rebinding_rewrites_both_ways() {
        let mut a = Attacker::new(&Mount { attack: AttackKind::NatRebinding, at_ns: 10, after: None, count: None }, 1, 0);
        handshake(&mut a);
        let _ = a.poll_forged(Instant(10), 0);
        let mut up = Seg { src: [10, 0, 0, 1].into(), dst: [10, 0, 1, 2].into(), tcp: TcpHeader { src_port: 5000, dst_port: 80, flags: flags::ACK, ..Default::default() }, payload_len: 10 };
        assert!(a.on_segment(Instant(11), 0, &mut up).header);
        let new = up.tcp.src_port;
        assert_ne!(new, 5000);
        let mut down = Seg { src: [10, 0, 1, 2].into(), dst: [10, 0, 0, 1].into(), tcp: TcpHeader { src_port: 80, dst_port: new, flags: flags::ACK, ..Default::default() }, payload_len: 0 };
        assert!(a.on_segment(Instant(12), 1, &mut down).header);
        assert_eq!(down.tcp.dst_port, 5000);
    }

    /// Tied to the first MP_JOIN SYN, the strike waits for it, however
    /// late the clock; it comes `at` after that SYN crossed the link.
    #[test]
    fn a_strike_tied_to_a_moment_waits_for_it() {
        let mut a = Attacker::new(&Mount { attack: AttackKind::JoinStolenToken, at_ns: 5, after: Some(Moment::MpJoin), count: None }, 1, 0);
        handshake(&mut a);
        assert!(a.poll_forged(Instant(1_000_000), 0).is_none(), "no join seen yet");
        assert!(a.next_deadline(0).is_none());
        assert!(a.report().note.as_deref().is_some_and(|n| n.contains("MP_JOIN")));
        let mut join = syn([10, 0, 0, 1], 5001, [10, 0, 1, 2], 80, 300, MptcpOption::MpJoin(MpJoin::Syn { backup: false, addr_id: 1, token: 7, nonce: 9 }));
        a.on_segment(Instant(2_000_000), 0, &mut join);
        assert_eq!(a.next_deadline(0), Some(Instant(2_000_005)));
        assert!(a.poll_forged(Instant(2_000_004), 0).is_none());
        assert!(a.poll_forged(Instant(2_000_005), 0).is_some());
        assert_eq!((a.report().struck_ns, a.report().note.as_deref()), (Some(2_000_005), None));
    }

    /// A forged join SYN nothing answered goes again a second later, as a
    /// host's SYN does, three times at most; an answer ends the retries.
    #[test]
    fn an_unanswered_forged_join_is_sent_again() {
        let mut a = Attacker::new(&Mount { attack: AttackKind::JoinUnknownToken, at_ns: 10, after: None, count: None }, 1, 0);
        handshake(&mut a);
        let first = a.poll_forged(Instant(10), 0).expect("the forged SYN");
        assert!(a.poll_forged(Instant(500_000_000), 0).is_none());
        let mut sent = vec![first.seg.tcp.seq];
        for t in 1..=5u64 {
            while let Some(f) = a.poll_forged(Instant(10 + t * SYN_RETRY_NS), 0) {
                sent.push(f.seg.tcp.seq);
            }
        }
        assert_eq!(sent, vec![first.seg.tcp.seq; 1 + SYN_RETRIES as usize]);
        // Answered after its first try: no retry.
        let mut b = Attacker::new(&Mount { attack: AttackKind::JoinUnknownToken, at_ns: 10, after: None, count: None }, 1, 0);
        handshake(&mut b);
        let f = b.poll_forged(Instant(10), 0).unwrap();
        let mut rst = Seg { src: f.seg.dst, dst: f.seg.src, tcp: TcpHeader { src_port: f.seg.tcp.dst_port, dst_port: f.seg.tcp.src_port, flags: flags::RST | flags::ACK, ..Default::default() }, payload_len: 0 };
        b.on_segment(Instant(20), 1, &mut rst);
        assert!(b.poll_forged(Instant(10 + 2 * SYN_RETRY_NS), 0).is_none());
        assert_eq!(b.report().resets, 1);
    }
}
