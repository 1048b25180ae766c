//! The association: handshake, verification tags, chunk dispatch, the
//! sender (scheduling, SACK processing, retransmission, timers) and the
//! glue to the receiver. See the module documentation for the API.

use core::net::IpAddr;
use core::time::Duration;
use std::collections::VecDeque;

use mplab_wire::sctp::chunk::{ctype, data_flags, sack_flags, Chunk, DataChunk, InitChunk, SackChunk, DATA_HEADER_LEN};
use mplab_wire::sctp::cookie::{CookieContents, CookieError};
use mplab_wire::sctp::param::{ErrorCause, InitParam, UnknownAction};
use mplab_wire::sctp::Packet;

use super::cc::{self, PathView};
use super::cmt::{self, RtxView, SackSummary};
use super::config::SctpConfig;
use super::path::{Destination, PathState, PathStats, SackScratch};
use super::recv::{DataOutcome, Receiver, RecvStats};
use super::rto::Rto;
use super::send::{OutChunk, OutState, Pending, SendQueue};
use super::tsn;
use crate::time::Instant;

/// Association states (RFC 9260 4), plus `Listen` for the passive side
/// that answers INITs statelessly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Listen,
    CookieWait,
    CookieEchoed,
    Established,
    ShutdownPending,
    ShutdownSent,
    ShutdownReceived,
    ShutdownAckSent,
    Closed,
}

/// Why the association ended, if it did not end by SHUTDOWN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    Shutdown,
    /// The peer sent an ABORT (accepted after the tag check).
    PeerAbort(Vec<ErrorCause>),
    /// We aborted: the peer violated the protocol (e.g. a SACK beyond
    /// what was sent).
    ProtocolViolation(&'static str),
    /// Too many retransmissions (Association.Max.Retrans, Max.Init.Retransmits).
    Failed,
    /// The application called `abort`.
    UserAbort,
}

/// A packet to send, with its addresses.
#[derive(Debug, Clone, PartialEq)]
pub struct Transmit {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub packet: Packet,
}

/// Association-wide counters.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AssocStats {
    /// Time the sender had data and congestion window but no peer rwnd.
    pub rwnd_blocked: Duration,
    /// Time the application could not write for a full send buffer.
    pub sndbuf_blocked: Duration,
    pub recv: RecvStats,
    pub packets_received: u64,
    pub dropped_bad_tag: u64,
    pub cookies_bad_mac: u64,
    pub cookies_stale: u64,
    pub unknown_chunks: u64,
    pub errors_sent: u64,
    pub sacks_received: u64,
    pub nr_freed_bytes: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct Blocker {
    since: Option<Instant>,
    total: Duration,
}

impl Blocker {
    fn set(&mut self, now: Instant, blocked: bool) {
        match (self.since, blocked) {
            (None, true) => self.since = Some(now),
            (Some(s), false) => {
                self.total += now.saturating_since(s);
                self.since = None;
            }
            _ => {}
        }
    }
    fn total(&self, now: Instant) -> Duration {
        self.total + self.since.map_or(Duration::ZERO, |s| now.saturating_since(s))
    }
}

/// A 64-bit xorshift: tags, initial TSNs and heartbeat nonces, from a seed.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn nonzero_u32(&mut self) -> u32 {
        loop {
            let v = self.next() as u32;
            if v != 0 {
                return v;
            }
        }
    }
}

pub struct Association {
    cfg: SctpConfig,
    state: State,
    close_reason: Option<CloseReason>,
    local_addrs: Vec<IpAddr>,
    local_port: u16,
    peer_port: u16,
    secret: [u8; 32],
    rng: Rng,
    my_tag: u32,
    peer_tag: u32,
    my_initial_tsn: u32,
    nr_sack: bool,
    dests: Vec<Destination>,
    primary: usize,
    snd: SendQueue,
    rcv: Option<Receiver>,
    /// Control packets waiting to go out, in order.
    ctrl: VecDeque<Transmit>,
    /// INIT / COOKIE ECHO / SHUTDOWN(-ACK) retransmission: the packet, its
    /// deadline, the retries so far and the current timeout.
    t1: Option<(Transmit, Instant, u32, Duration)>,
    /// Where SACKs and other replies go: (our address, peer's address) of
    /// the latest DATA.
    reply_to: Option<(IpAddr, IpAddr)>,
    assoc_errors: u32,
    rr_next: usize,
    /// The first retransmission after a fast retransmit may ignore cwnd.
    fr_bypass: bool,
    /// Fast recovery of plain SCTP: exit at this TSN.
    recover: Option<u64>,
    rwnd_block: Blocker,
    sndbuf_block: Blocker,
    close_requested: bool,
    stats: AssocStats,
}

const HB_INFO_LEN: usize = 18;

/// Leading bits two addresses share (0 across families).
fn common_prefix(a: IpAddr, b: IpAddr) -> u32 {
    match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u32::from(a) ^ u32::from(b)).leading_zeros(),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a) ^ u128::from(b)).leading_zeros(),
        _ => 0,
    }
}
/// Gap blocks of one SACK the sender processes at most.
const MAX_GAP_BLOCKS: usize = 256;

impl Association {
    fn base(cfg: SctpConfig, local_addrs: Vec<IpAddr>, local_port: u16, peer_port: u16, seed: u64) -> Association {
        let mut rng = Rng(seed | 1);
        let my_tag = rng.nonzero_u32();
        let my_initial_tsn = rng.next() as u32;
        let mut secret = [0u8; 32];
        for c in secret.chunks_mut(8) {
            c.copy_from_slice(&rng.next().to_be_bytes());
        }
        let streams = cfg.streams;
        Association {
            state: State::Closed,
            close_reason: None,
            local_addrs,
            local_port,
            peer_port,
            secret,
            rng,
            my_tag,
            peer_tag: 0,
            my_initial_tsn,
            nr_sack: false,
            dests: Vec::new(),
            primary: 0,
            snd: SendQueue::new(tsn::start(my_initial_tsn), streams, 0),
            rcv: None,
            ctrl: VecDeque::new(),
            t1: None,
            reply_to: None,
            assoc_errors: 0,
            rr_next: 0,
            fr_bypass: false,
            recover: None,
            rwnd_block: Blocker::default(),
            sndbuf_block: Blocker::default(),
            close_requested: false,
            stats: AssocStats::default(),
            cfg,
        }
    }

    /// Active open: sends an INIT from `local_addrs[0]` to `remote_addrs[0]`.
    /// `seed` makes tags and TSNs (and so everything else) deterministic.
    pub fn connect(
        cfg: SctpConfig,
        local_addrs: Vec<IpAddr>,
        local_port: u16,
        remote_addrs: Vec<IpAddr>,
        remote_port: u16,
        seed: u64,
        now: Instant,
    ) -> Association {
        let mut a = Self::base(cfg, local_addrs, local_port, remote_port, seed);
        a.state = State::CookieWait;
        let (Some(&src), Some(&dst)) = (a.local_addrs.first(), remote_addrs.first()) else {
            a.close(CloseReason::Failed);
            return a;
        };
        let init = a.init_chunk(None);
        let t = Transmit { src, dst, packet: Packet::new(local_port, remote_port, 0, vec![Chunk::Init(init)]) };
        a.send_with_t1(t, now, a.cfg.rto_initial);
        a
    }

    /// Passive open: answers INITs on `local_port` with a sealed cookie and
    /// becomes established on a valid COOKIE ECHO. `secret` keys the cookie MAC.
    pub fn listen(cfg: SctpConfig, local_addrs: Vec<IpAddr>, local_port: u16, secret: [u8; 32], seed: u64) -> Association {
        let mut a = Self::base(cfg, local_addrs, local_port, 0, seed);
        a.secret = secret;
        a.state = State::Listen;
        a
    }

    fn init_chunk(&self, preservative_ms: Option<u32>) -> InitChunk {
        let mut params: Vec<InitParam> = self
            .local_addrs
            .iter()
            .map(|a| match a {
                IpAddr::V4(v) => InitParam::Ipv4(*v),
                IpAddr::V6(v) => InitParam::Ipv6(*v),
            })
            .collect();
        params.push(InitParam::SupportedAddressTypes(vec![5, 6]));
        if self.cfg.nr_sack {
            params.push(InitParam::SupportedExtensions(vec![ctype::NR_SACK]));
        }
        if let Some(ms) = preservative_ms {
            params.push(InitParam::CookiePreservative(ms));
        }
        InitChunk {
            initiate_tag: self.my_tag,
            a_rwnd: self.cfg.recv_buffer.min(u32::MAX as u64) as u32,
            outbound_streams: self.cfg.streams,
            inbound_streams: self.cfg.streams,
            initial_tsn: self.my_initial_tsn,
            params,
        }
    }

    fn send_with_t1(&mut self, t: Transmit, now: Instant, timeout: Duration) {
        self.ctrl.push_back(t.clone());
        self.t1 = Some((t, now + timeout, 0, timeout));
    }

    fn close(&mut self, why: CloseReason) {
        if self.state != State::Closed {
            self.state = State::Closed;
            self.close_reason = Some(why);
            self.t1 = None;
            for d in &mut self.dests {
                d.t3 = None;
                d.hb_at = None;
            }
            if let Some(r) = &mut self.rcv {
                r.sack_timer = None;
                r.sack_now = false;
            }
        }
    }

    /// Sends an ABORT with a cause and closes.
    fn abort_with(&mut self, src: IpAddr, dst: IpAddr, why: &'static str) {
        let p = Packet::new(
            self.local_port,
            self.peer_port,
            self.peer_tag,
            vec![Chunk::Abort { t_bit: false, causes: vec![ErrorCause::ProtocolViolation { info: why.as_bytes().to_vec() }] }],
        );
        self.ctrl.push_back(Transmit { src, dst, packet: p });
        self.close(CloseReason::ProtocolViolation(why));
    }

    // ---------------------------------------------------------------- API

    pub fn state(&self) -> State {
        self.state
    }
    pub fn is_established(&self) -> bool {
        matches!(self.state, State::Established | State::ShutdownPending | State::ShutdownReceived)
    }
    pub fn close_reason(&self) -> Option<&CloseReason> {
        self.close_reason.as_ref()
    }
    pub fn config(&self) -> &SctpConfig {
        &self.cfg
    }
    pub fn nr_sack_negotiated(&self) -> bool {
        self.nr_sack
    }
    pub fn destinations(&self) -> usize {
        self.dests.len()
    }
    pub fn path_state(&self, i: usize) -> Option<PathState> {
        self.dests.get(i).map(|d| d.state)
    }
    /// (our address, the peer's address) of destination `i`.
    pub fn destination(&self, i: usize) -> Option<(IpAddr, IpAddr)> {
        self.dests.get(i).map(|d| (d.local, d.remote))
    }
    /// Receive side: bytes waiting beyond a gap and the oldest one's wait.
    pub fn reorder_probe(&self, now: Instant) -> (u64, Duration) {
        self.rcv.as_ref().map_or((0, Duration::ZERO), |r| r.reorder_probe(now))
    }
    /// The peer's SHUTDOWN arrived (or the association ended): no more
    /// data will come.
    pub fn peer_finished(&self) -> bool {
        matches!(self.state, State::ShutdownReceived | State::ShutdownAckSent | State::Closed)
    }
    pub fn path_stats(&self) -> Vec<PathStats> {
        self.dests.iter().map(Destination::snapshot).collect()
    }
    pub fn stats(&self, now: Instant) -> AssocStats {
        let mut s = self.stats;
        s.rwnd_blocked = self.rwnd_block.total(now);
        s.sndbuf_blocked = self.sndbuf_block.total(now);
        if let Some(r) = &self.rcv {
            s.recv = r.stats;
        }
        s
    }
    /// Free space in the send buffer.
    pub fn send_space(&self) -> u64 {
        self.cfg.send_buffer.saturating_sub(self.snd.buffered)
    }
    /// Bytes written and not yet freed by an ack.
    pub fn buffered(&self) -> u64 {
        self.snd.buffered
    }
    /// Everything written so far has been acknowledged.
    pub fn all_acked(&self) -> bool {
        self.snd.all_acked()
    }

    /// Writes bytes as a stream on stream 0: as many as the send buffer
    /// takes, cut into messages of one packet each. Returns the count taken.
    pub fn send(&mut self, now: Instant, data: &[u8]) -> usize {
        if !matches!(self.state, State::Established | State::CookieWait | State::CookieEchoed) || self.close_requested {
            return 0;
        }
        let take = (self.send_space() as usize).min(data.len());
        let max = self.cfg.max_payload();
        for piece in data[..take].chunks(max) {
            self.enqueue(0, 0, piece, data_flags::B | data_flags::E);
        }
        self.sndbuf_block.set(now, take < data.len());
        self.reset_burst();
        take
    }

    /// Writes one message, fragmented as needed; all or nothing.
    pub fn send_message(&mut self, now: Instant, stream: u16, ppid: u32, msg: &[u8]) -> bool {
        if !matches!(self.state, State::Established | State::CookieWait | State::CookieEchoed)
            || self.close_requested
            || (msg.len() as u64) > self.send_space()
            || stream as usize >= self.snd.ssn.len()
        {
            self.sndbuf_block.set(now, true);
            return false;
        }
        let max = self.cfg.max_payload();
        let n = msg.len().div_ceil(max).max(1);
        let ssn = self.snd.ssn[stream as usize];
        self.snd.ssn[stream as usize] = ssn.wrapping_add(1);
        for i in 0..n {
            let piece = &msg[(i * max).min(msg.len())..((i + 1) * max).min(msg.len())];
            let mut f = 0;
            if i == 0 {
                f |= data_flags::B;
            }
            if i + 1 == n {
                f |= data_flags::E;
            }
            self.snd.unsent.push_back(Pending { stream, ssn, ppid, flags: f, data: piece.to_vec() });
            self.snd.buffered += piece.len() as u64;
        }
        self.sndbuf_block.set(now, false);
        self.reset_burst();
        true
    }

    fn enqueue(&mut self, stream: u16, ppid: u32, piece: &[u8], flags: u8) {
        let ssn = self.snd.ssn[stream as usize];
        self.snd.ssn[stream as usize] = ssn.wrapping_add(1);
        self.snd.unsent.push_back(Pending { stream, ssn, ppid, flags, data: piece.to_vec() });
        self.snd.buffered += piece.len() as u64;
    }

    /// Bytes delivered in order and not yet read.
    pub fn readable(&self) -> u64 {
        self.rcv.as_ref().map_or(0, Receiver::readable)
    }

    /// Reads delivered bytes in order. Opening the window may owe the peer
    /// a window-update SACK.
    pub fn recv(&mut self, now: Instant, buf: &mut [u8]) -> usize {
        let Some(r) = &mut self.rcv else { return 0 };
        let n = r.read(now, buf);
        if n > 0 && r.window_update_due() {
            r.sack_now = true;
        }
        n
    }

    /// Graceful close: SHUTDOWN once everything written is acknowledged.
    pub fn shutdown(&mut self, now: Instant) {
        self.close_requested = true;
        if self.state == State::Established {
            self.state = State::ShutdownPending;
        }
        self.maybe_progress_shutdown(now);
    }

    /// Abortive close.
    pub fn abort(&mut self) {
        if self.is_established() {
            if let Some(d) = self.dests.get(self.primary) {
                let p = Packet::new(self.local_port, self.peer_port, self.peer_tag, vec![Chunk::Abort { t_bit: false, causes: vec![] }]);
                self.ctrl.push_back(Transmit { src: d.local, dst: d.remote, packet: p });
            }
        }
        self.close(CloseReason::UserAbort);
    }

    fn reset_burst(&mut self) {
        let b = self.cfg.max_burst.max(1);
        for d in &mut self.dests {
            d.burst = b;
        }
    }

    // ------------------------------------------------------------ input

    /// One received packet, with the addresses it came from and to.
    pub fn on_packet(&mut self, now: Instant, src: IpAddr, dst: IpAddr, pkt: &Packet) {
        self.stats.packets_received += 1;
        if pkt.header.dst_port != self.local_port || pkt.chunks.is_empty() {
            return;
        }
        self.reset_burst();
        let vtag = pkt.header.verification_tag;
        let first = &pkt.chunks[0];
        // RFC 9260 8.5.1: the exceptions to the tag rule.
        let mut accepted_cookie = false;
        match first {
            Chunk::Init(init) => {
                // An INIT travels alone, with tag 0.
                if vtag != 0 || pkt.chunks.len() != 1 {
                    self.stats.dropped_bad_tag += 1;
                    return;
                }
                if self.state == State::Listen {
                    self.answer_init(now, src, dst, pkt.header.src_port, init);
                }
                return;
            }
            Chunk::Abort { t_bit, .. } | Chunk::ShutdownComplete { t_bit } => {
                let ok = if *t_bit { vtag == self.peer_tag && self.peer_tag != 0 } else { vtag == self.my_tag };
                if !ok || self.state == State::Listen {
                    self.stats.dropped_bad_tag += 1;
                    return;
                }
                if let Chunk::Abort { causes, .. } = first {
                    self.close(CloseReason::PeerAbort(causes.clone()));
                } else if self.state == State::ShutdownAckSent {
                    self.close(CloseReason::Shutdown);
                }
                return;
            }
            Chunk::CookieEcho { cookie } if self.state == State::Listen => {
                if !self.accept_cookie(now, src, dst, pkt.header.src_port, vtag, cookie) {
                    return;
                }
                accepted_cookie = true;
            }
            _ => {
                if self.state == State::Listen || vtag != self.my_tag {
                    self.stats.dropped_bad_tag += 1;
                    return;
                }
            }
        }
        if self.state == State::Closed {
            return;
        }
        let mut data_seen = false;
        let mut dup = false;
        let mut immediate = false;
        let had_gap = self.rcv.as_ref().is_some_and(Receiver::has_gaps);
        let mut report: Vec<ErrorCause> = Vec::new();
        // The COOKIE ECHO that just created the association was answered
        // there; only the chunks bundled after it remain.
        for c in &pkt.chunks[usize::from(accepted_cookie)..] {
            if self.state == State::Closed {
                break;
            }
            match c {
                Chunk::Data(d) => {
                    if !self.is_established() && self.state != State::ShutdownSent {
                        continue;
                    }
                    if let Some(r) = &mut self.rcv {
                        data_seen = true;
                        immediate |= d.immediate();
                        match r.on_data(now, d) {
                            DataOutcome::Duplicate => dup = true,
                            DataOutcome::Dropped => immediate = true,
                            _ => {}
                        }
                    }
                }
                Chunk::Sack(s) => {
                    if self.is_established() || matches!(self.state, State::ShutdownPending | State::ShutdownSent) {
                        self.on_sack(now, src, dst, s);
                    }
                }
                Chunk::InitAck(ia) => {
                    if self.state == State::CookieWait {
                        self.on_init_ack(now, src, dst, ia);
                    }
                }
                Chunk::CookieEcho { .. } => {
                    // A duplicate: our COOKIE ACK was lost.
                    if self.is_established() {
                        self.push_ctrl(dst, src, vec![Chunk::CookieAck]);
                    }
                }
                Chunk::CookieAck => {
                    if self.state == State::CookieEchoed {
                        self.t1 = None;
                        self.state = State::Established;
                        self.establish_timers(now);
                    }
                }
                Chunk::Heartbeat { info } => self.push_ctrl(dst, src, vec![Chunk::HeartbeatAck { info: info.clone() }]),
                Chunk::HeartbeatAck { info } => self.on_heartbeat_ack(now, info),
                Chunk::Error { causes } => {
                    if self.state == State::CookieEchoed {
                        if let Some(ErrorCause::StaleCookie { staleness_us }) =
                            causes.iter().find(|c| matches!(c, ErrorCause::StaleCookie { .. }))
                        {
                            // RFC 9260 5.2.6: start over, asking for a longer life.
                            let ms = (staleness_us / 1000).saturating_mul(2).max(1000);
                            let init = self.init_chunk(Some(ms));
                            let t = Transmit {
                                src: dst,
                                dst: src,
                                packet: Packet::new(self.local_port, self.peer_port, 0, vec![Chunk::Init(init)]),
                            };
                            self.state = State::CookieWait;
                            self.send_with_t1(t, now, self.cfg.rto_initial);
                        }
                    }
                }
                Chunk::Shutdown { cum_tsn_ack } => self.on_shutdown(now, src, dst, *cum_tsn_ack),
                Chunk::ShutdownAck => {
                    if matches!(self.state, State::ShutdownSent | State::ShutdownAckSent) {
                        let p = Packet::new(self.local_port, self.peer_port, self.peer_tag, vec![Chunk::ShutdownComplete { t_bit: false }]);
                        self.ctrl.push_back(Transmit { src: dst, dst: src, packet: p });
                        self.close(CloseReason::Shutdown);
                    }
                }
                Chunk::Init(_) | Chunk::Abort { .. } | Chunk::ShutdownComplete { .. } => {
                    // Only legal first (handled above): bundled, they are
                    // ignored.
                }
                Chunk::Unknown { .. } => {
                    self.stats.unknown_chunks += 1;
                    let action = c.unknown_action().unwrap_or(UnknownAction::Stop);
                    if action.reports() {
                        let mut raw = Vec::new();
                        if c.encode(&mut raw).is_ok() {
                            let len = u16::from_be_bytes([raw[2], raw[3]]) as usize;
                            raw.truncate(len);
                            report.push(ErrorCause::UnrecognizedChunkType { chunk: raw });
                        }
                    }
                    if action.stops() {
                        break;
                    }
                }
            }
        }
        if !report.is_empty() && self.state != State::Closed {
            self.stats.errors_sent += 1;
            self.push_ctrl(dst, src, vec![Chunk::Error { causes: report }]);
        }
        if data_seen {
            self.reply_to = Some((dst, src));
            let dac = self.cfg.dac && self.cfg.cmt.is_cmt();
            let (freq, delay) = (self.cfg.sack_freq.max(1), self.cfg.sack_delay);
            if let Some(r) = &mut self.rcv {
                r.end_of_packet(now, had_gap, dup, immediate, dac, freq, delay);
            }
        }
        self.maybe_progress_shutdown(now);
    }

    fn push_ctrl(&mut self, src: IpAddr, dst: IpAddr, chunks: Vec<Chunk>) {
        let p = Packet::new(self.local_port, self.peer_port, self.peer_tag, chunks);
        self.ctrl.push_back(Transmit { src, dst, packet: p });
    }

    /// Peer addresses from INIT / INIT ACK: the source first, then the listed ones.
    fn peer_addresses(src: IpAddr, params: &[InitParam]) -> Vec<IpAddr> {
        let mut v = vec![src];
        for p in params {
            let a = match p {
                InitParam::Ipv4(a) => IpAddr::V4(*a),
                InitParam::Ipv6(a) => IpAddr::V6(*a),
                _ => continue,
            };
            if !v.contains(&a) {
                v.push(a);
            }
        }
        v
    }

    fn offers_nr_sack(params: &[InitParam]) -> bool {
        params.iter().any(|p| matches!(p, InitParam::SupportedExtensions(e) if e.contains(&ctype::NR_SACK)))
    }

    /// Unrecognised parameters by their action bits (RFC 9260 3.2.1): the
    /// ones to report, whole TLVs.
    fn unknown_params(params: &[InitParam]) -> Vec<u8> {
        let mut report = Vec::new();
        for p in params {
            if let InitParam::Unknown { .. } = p {
                let a = p.action();
                if a.reports() {
                    let _ = p.encode(&mut report);
                }
                if a.stops() {
                    break;
                }
            }
        }
        report
    }

    fn answer_init(&mut self, now: Instant, src: IpAddr, dst: IpAddr, peer_port: u16, init: &InitChunk) {
        if init.initiate_tag == 0 || init.inbound_streams == 0 || init.outbound_streams == 0 {
            return;
        }
        let local_tag = self.rng.nonzero_u32();
        let local_tsn = self.rng.next() as u32;
        let preservative = init.params.iter().find_map(|p| match p {
            InitParam::CookiePreservative(ms) => Some(*ms),
            _ => None,
        });
        let lifetime = self.cfg.cookie_lifetime + Duration::from_millis(preservative.unwrap_or(0).min(3_600_000) as u64);
        let c = CookieContents {
            local_tag,
            peer_tag: init.initiate_tag,
            local_initial_tsn: local_tsn,
            peer_initial_tsn: init.initial_tsn,
            peer_a_rwnd: init.a_rwnd,
            peer_outbound_streams: init.outbound_streams,
            peer_inbound_streams: init.inbound_streams,
            local_port: self.local_port,
            peer_port,
            nr_sack: self.cfg.nr_sack && Self::offers_nr_sack(&init.params),
            created_ns: now.as_nanos(),
            lifetime_ns: lifetime.as_nanos().min(u64::MAX as u128) as u64,
            peer_addrs: Self::peer_addresses(src, &init.params),
        };
        let mut ack = self.init_chunk(None);
        ack.initiate_tag = local_tag;
        ack.initial_tsn = local_tsn;
        ack.params.push(InitParam::StateCookie(c.seal(&self.secret)));
        let unknown = Self::unknown_params(&init.params);
        if !unknown.is_empty() {
            ack.params.push(InitParam::UnrecognizedParameter(unknown));
        }
        let p = Packet::new(self.local_port, peer_port, init.initiate_tag, vec![Chunk::InitAck(ack)]);
        self.ctrl.push_back(Transmit { src: dst, dst: src, packet: p });
    }

    /// Returns whether the association now exists (the rest of the packet
    /// is then processed).
    fn accept_cookie(&mut self, now: Instant, src: IpAddr, dst: IpAddr, peer_port: u16, vtag: u32, cookie: &[u8]) -> bool {
        let c = match CookieContents::open(&self.secret, cookie) {
            Ok(c) => c,
            Err(CookieError::BadMac) | Err(CookieError::Malformed) => {
                self.stats.cookies_bad_mac += 1;
                return false;
            }
        };
        if vtag != c.local_tag || c.local_port != self.local_port || c.peer_port != peer_port {
            self.stats.dropped_bad_tag += 1;
            return false;
        }
        let age = now.as_nanos().saturating_sub(c.created_ns);
        if age > c.lifetime_ns {
            self.stats.cookies_stale += 1;
            let us = ((age - c.lifetime_ns) / 1000).min(u32::MAX as u64) as u32;
            let p = Packet::new(self.local_port, peer_port, c.peer_tag, vec![Chunk::Error { causes: vec![ErrorCause::StaleCookie { staleness_us: us }] }]);
            self.stats.errors_sent += 1;
            self.ctrl.push_back(Transmit { src: dst, dst: src, packet: p });
            return false;
        }
        self.peer_port = peer_port;
        self.my_tag = c.local_tag;
        self.peer_tag = c.peer_tag;
        self.my_initial_tsn = c.local_initial_tsn;
        self.nr_sack = c.nr_sack;
        self.setup(now, c.local_initial_tsn, c.peer_initial_tsn, c.peer_a_rwnd, &c.peer_addrs, src, c.peer_inbound_streams);
        self.state = State::Established;
        self.establish_timers(now);
        self.push_ctrl(dst, src, vec![Chunk::CookieAck]);
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn setup(&mut self, now: Instant, my_tsn: u32, peer_tsn: u32, peer_rwnd: u32, peer_addrs: &[IpAddr], primary_remote: IpAddr, peer_in_streams: u16) {
        let streams = self.cfg.streams.min(peer_in_streams.max(1));
        // Data written before the handshake finished keeps its SSNs.
        let unsent = core::mem::take(&mut self.snd.unsent);
        let buffered = self.snd.buffered;
        let mut ssn = core::mem::take(&mut self.snd.ssn);
        self.snd = SendQueue::new(tsn::start(my_tsn), streams, peer_rwnd as u64);
        ssn.resize(self.snd.ssn.len(), 0);
        self.snd.ssn = ssn;
        self.snd.unsent = unsent;
        self.snd.buffered = buffered;
        self.rcv = Some(Receiver::new(peer_tsn, self.cfg.recv_buffer, now));
        let mtu = self.cfg.max_payload() as u64;
        self.dests = peer_addrs
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                // Pair each peer address with the local address sharing
                // the longest prefix with it (on parallel paths: the one on
                // its subnet), the i-th local one on a tie; same family if
                // possible.
                let same: Vec<IpAddr> = self.local_addrs.iter().copied().filter(|l| l.is_ipv4() == r.is_ipv4()).collect();
                let pool = if same.is_empty() { &self.local_addrs } else { &same };
                let best = pool.iter().map(|&l| common_prefix(l, r)).max().unwrap_or(0);
                let local = if common_prefix(pool[i % pool.len()], r) == best { pool[i % pool.len()] } else { pool.iter().copied().find(|&l| common_prefix(l, r) == best).unwrap_or(pool[0]) };
                let rto = Rto::new(self.cfg.rto_initial, self.cfg.rto_min, self.cfg.rto_max);
                Destination::new(local, r, mtu, peer_rwnd.max(1) as u64, rto, now)
            })
            .collect();
        self.primary = peer_addrs.iter().position(|a| *a == primary_remote).unwrap_or(0);
        // Use the primary's local address for the path the handshake used.
        self.reset_burst();
    }

    fn on_init_ack(&mut self, now: Instant, src: IpAddr, dst: IpAddr, ia: &InitChunk) {
        let Some(cookie) = ia.params.iter().find_map(|p| match p {
            InitParam::StateCookie(c) => Some(c.clone()),
            _ => None,
        }) else {
            // Mandatory parameter missing: abort (RFC 9260 5.1).
            self.peer_tag = ia.initiate_tag;
            let p = Packet::new(
                self.local_port,
                self.peer_port,
                ia.initiate_tag,
                vec![Chunk::Abort { t_bit: false, causes: vec![ErrorCause::MissingMandatoryParameter { types: vec![7] }] }],
            );
            self.ctrl.push_back(Transmit { src: dst, dst: src, packet: p });
            self.close(CloseReason::ProtocolViolation("INIT ACK without a state cookie"));
            return;
        };
        if ia.initiate_tag == 0 {
            return;
        }
        self.peer_tag = ia.initiate_tag;
        self.nr_sack = self.cfg.nr_sack && Self::offers_nr_sack(&ia.params);
        let addrs = Self::peer_addresses(src, &ia.params);
        // The primary path is the address the INIT went to (the one the
        // application connected to), even when the INIT ACK came from
        // another of the peer's addresses (usrsctp answers from the address
        // its routing picks).
        let init_dst = self.t1.as_ref().map(|t| t.0.dst).filter(|d| addrs.contains(d)).unwrap_or(src);
        self.setup(now, self.my_initial_tsn, ia.initial_tsn, ia.a_rwnd, &addrs, init_dst, ia.inbound_streams);
        let mut chunks = vec![Chunk::CookieEcho { cookie }];
        let unknown = Self::unknown_params(&ia.params);
        if !unknown.is_empty() {
            chunks.push(Chunk::Error { causes: vec![ErrorCause::UnrecognizedParameters { params: unknown }] });
        }
        let t = Transmit { src: dst, dst: src, packet: Packet::new(self.local_port, self.peer_port, self.peer_tag, chunks) };
        self.state = State::CookieEchoed;
        self.send_with_t1(t, now, self.cfg.rto_initial);
    }

    fn establish_timers(&mut self, now: Instant) {
        let hb = self.cfg.hb_interval;
        for d in &mut self.dests {
            d.hb_at = Some(now + hb + d.rto.rto());
            d.last_send = now;
        }
    }

    fn on_heartbeat_ack(&mut self, now: Instant, info: &[u8]) {
        if info.len() != HB_INFO_LEN {
            return;
        }
        let i = u16::from_be_bytes([info[0], info[1]]) as usize;
        let nonce = u64::from_be_bytes(info[2..10].try_into().unwrap_or([0; 8]));
        let hb = self.cfg.hb_interval;
        let Some(d) = self.dests.get_mut(i) else { return };
        let Some((n, sent)) = d.hb_outstanding else { return };
        if n != nonce {
            return;
        }
        d.hb_outstanding = None;
        d.rto.on_sample(now.saturating_since(sent));
        d.error_count = 0;
        d.state = PathState::Active;
        d.hb_at = Some(now + hb + d.rto.rto());
        self.assoc_errors = 0;
    }

    fn on_shutdown(&mut self, now: Instant, src: IpAddr, dst: IpAddr, cum: u32) {
        if !matches!(self.state, State::Established | State::ShutdownPending | State::ShutdownSent | State::ShutdownReceived) {
            return;
        }
        // The SHUTDOWN's cumulative ack counts like a SACK's.
        let s = SackChunk { cum_tsn_ack: cum, a_rwnd: self.snd.peer_a_rwnd as u32, ..Default::default() };
        self.on_sack(now, src, dst, &s);
        if self.state == State::Closed {
            return;
        }
        if self.state != State::ShutdownSent {
            self.state = State::ShutdownReceived;
        }
        self.close_requested = true;
        self.maybe_progress_shutdown(now);
    }

    fn maybe_progress_shutdown(&mut self, now: Instant) {
        if !self.snd.all_acked() {
            return;
        }
        let Some(d) = self.dests.get(self.primary) else { return };
        let (src, dst) = (d.local, d.remote);
        match self.state {
            State::ShutdownPending => {
                let cum = self.rcv.as_ref().map_or(0, |r| tsn::wire(r.cum));
                let t = Transmit { src, dst, packet: Packet::new(self.local_port, self.peer_port, self.peer_tag, vec![Chunk::Shutdown { cum_tsn_ack: cum }]) };
                self.state = State::ShutdownSent;
                let rto = d.rto.rto();
                self.send_with_t1(t, now, rto);
            }
            State::ShutdownReceived => {
                let t = Transmit { src, dst, packet: Packet::new(self.local_port, self.peer_port, self.peer_tag, vec![Chunk::ShutdownAck]) };
                self.state = State::ShutdownAckSent;
                let rto = d.rto.rto();
                self.send_with_t1(t, now, rto);
            }
            _ => {}
        }
    }

    // ------------------------------------------------------------- SACK

    fn on_sack(&mut self, now: Instant, src: IpAddr, dst: IpAddr, s: &SackChunk) {
        self.stats.sacks_received += 1;
        let cum = tsn::unwrap(s.cum_tsn_ack, self.snd.cum_ack);
        if cum < self.snd.cum_ack {
            return; // an old SACK, overtaken (RFC 9260 6.2.1 D i)
        }
        if cum >= self.snd.next_tsn {
            // RFC 9260 6.2.1 / 8.x: acking what was never sent.
            self.abort_with(dst, src, "cumulative TSN ack beyond the highest TSN sent");
            return;
        }
        let cmt = self.cfg.cmt.is_cmt();
        for d in &mut self.dests {
            d.sack = SackScratch::default();
        }
        // CUC: each destination's lowest outstanding TSN before this SACK.
        let mut missing = self.dests.len();
        for c in &self.snd.sent {
            if missing == 0 {
                break;
            }
            if c.state != OutState::GapAcked {
                let sc = &mut self.dests[c.dest].sack;
                if sc.pseudo_cumack.is_none() {
                    sc.pseudo_cumack = Some(c.tsn);
                    missing -= 1;
                }
            }
        }
        let cum_advanced = cum > self.snd.cum_ack;
        let mut sum = SackSummary { cmt, dac: self.cfg.dac, dac_flag: s.flags & sack_flags::DAC != 0, lowest_newack: u64::MAX, ..Default::default() };
        let mut any_new = false;
        // Cumulative part: these chunks leave the buffer.
        while self.snd.cum_ack < cum {
            let Some(c) = self.snd.sent.pop_front() else { break };
            self.snd.cum_ack += 1;
            if c.state != OutState::GapAcked {
                self.newly_acked(now, &c, &mut sum);
                any_new = true;
            }
            if c.state == (OutState::Marked { fast: true }) || c.state == (OutState::Marked { fast: false }) {
                self.snd.marked = self.snd.marked.saturating_sub(1);
            }
            if !c.freed {
                self.snd.buffered = self.snd.buffered.saturating_sub(c.len);
            }
        }
        // Gap blocks.
        // At most MAX_GAP_BLOCKS blocks are looked at: bounds the work a
        // hostile SACK can cause.
        for g in s.gaps.iter().take(MAX_GAP_BLOCKS) {
            if g.start == 0 || g.start > g.end {
                continue;
            }
            let (lo, hi) = (cum + g.start as u64, (cum + g.end as u64).min(self.snd.next_tsn - 1));
            if lo > hi {
                continue;
            }
            for t in lo..=hi {
                let Some(c) = self.snd.get_mut(t) else { break };
                if c.state == OutState::GapAcked {
                    continue;
                }
                let was_marked = matches!(c.state, OutState::Marked { .. });
                c.state = OutState::GapAcked;
                let c = c.clone_meta();
                if was_marked {
                    self.snd.marked = self.snd.marked.saturating_sub(1);
                }
                self.newly_acked(now, &c, &mut sum);
                if let Some(cc) = self.snd.get_mut(t) {
                    cc.in_flight = false;
                }
                any_new = true;
            }
        }
        // Non-renegable gaps: free the data at once (NR-SACK).
        if let Some(nr) = &s.nr_gaps {
            for g in nr.iter().take(MAX_GAP_BLOCKS) {
                if g.start == 0 || g.start > g.end {
                    continue;
                }
                let hi = (cum + g.end as u64).min(self.snd.next_tsn - 1);
                for t in cum + g.start as u64..=hi {
                    let before = self.snd.buffered;
                    self.snd.free(t);
                    self.stats.nr_freed_bytes += before - self.snd.buffered;
                }
            }
        }
        // Miss indications (SFR / DAC) and fast retransmit.
        sum.dests_newly_acked = self.dests.iter().filter(|d| d.sack.saw_newack).count();
        if sum.dests_newly_acked > 0 {
            let limit = if cmt { self.dests.iter().map(|d| d.sack.highest_newack).max().unwrap_or(0) } else { sum.highest_newack };
            let mut fr_dests: Vec<usize> = Vec::new();
            for c in self.snd.sent.iter_mut() {
                if c.tsn >= limit {
                    break;
                }
                if c.state != OutState::Outstanding {
                    continue;
                }
                let inc = cmt::miss_increment(&sum, c.tsn, &self.dests[c.dest].sack);
                c.misses += inc;
                if c.misses >= 3 && !c.fast_retransmitted {
                    c.state = OutState::Marked { fast: true };
                    c.fast_retransmitted = true;
                    if c.in_flight {
                        c.in_flight = false;
                        self.dests[c.dest].flight = self.dests[c.dest].flight.saturating_sub(c.len);
                    }
                    self.snd.marked += 1;
                    self.dests[c.dest].stats.fast_retransmits += 1;
                    if !fr_dests.contains(&c.dest) {
                        fr_dests.push(c.dest);
                    }
                }
            }
            for d in fr_dests {
                self.enter_fast_recovery(d);
            }
        }
        // Congestion window growth.
        let agg = self.aggregate();
        let mtu = self.cfg.max_payload() as u64;
        let mode = self.cfg.cmt;
        let in_recovery = self.recover.is_some();
        for i in 0..self.dests.len() {
            let d = &mut self.dests[i];
            let net_ack = d.sack.net_ack;
            if net_ack == 0 {
                continue;
            }
            // CUC: with CMT a destination grows when its own pseudo-cumack
            // moves; plain SCTP when the cumulative ack moves, outside
            // fast recovery (RFC 9260 7.2.1, 7.2.4).
            let may_grow = if cmt { d.sack.new_pseudo_cumack } else { cum_advanced && !in_recovery };
            let fully_used = d.flight + net_ack >= d.cwnd;
            if may_grow && fully_used {
                let me = PathView { cwnd: d.cwnd, ssthresh: d.ssthresh, srtt: d.rto.srtt().map(|r| r.as_secs_f64()) };
                if d.cwnd <= d.ssthresh {
                    d.cwnd += cc::slow_start_increase(mode, &agg, &me, net_ack, mtu, self.cfg.abc_l as u64);
                } else {
                    d.partial_bytes_acked += net_ack;
                    if d.partial_bytes_acked >= d.cwnd {
                        d.partial_bytes_acked -= d.cwnd;
                        d.cwnd += cc::avoidance_increase(mode, &agg, &me, mtu);
                    }
                }
                d.stats.max_cwnd = d.stats.max_cwnd.max(d.cwnd);
            }
            if d.flight == 0 {
                d.partial_bytes_acked = 0;
            }
        }
        // Leave fast recovery.
        if self.recover.is_some_and(|r| self.snd.cum_ack >= r) {
            self.recover = None;
        }
        let cum_now = self.snd.cum_ack;
        for d in &mut self.dests {
            if d.recover.is_some_and(|r| cum_now >= r) {
                d.recover = None;
            }
            // T3-rtx (RFC 9260 6.3.2 R2, R3).
            if d.flight == 0 {
                d.t3 = None;
            } else if d.sack.new_pseudo_cumack || (d.sack.saw_newack && d.t3.is_none()) {
                d.t3 = Some(now + d.rto.rto());
            }
        }
        if any_new {
            self.assoc_errors = 0;
        }
        // Peer window (RFC 9260 6.2.1): a_rwnd less what is still in flight
        // (and the per-chunk overhead a FreeBSD-like sender charges).
        let flight: u64 = self.dests.iter().map(|d| d.flight).sum();
        let overhead = match self.cfg.peer_chunk_overhead {
            0 => 0,
            oh => self.snd.sent.iter().filter(|c| c.in_flight).count() as u64 * u64::from(oh),
        };
        self.snd.peer_a_rwnd = s.a_rwnd as u64;
        self.snd.peer_rwnd = (s.a_rwnd as u64).saturating_sub(flight + overhead);
        self.maybe_progress_shutdown(now);
    }

    fn newly_acked(&mut self, now: Instant, c: &OutChunk, sum: &mut SackSummary) {
        let d = &mut self.dests[c.dest];
        if c.in_flight {
            d.flight = d.flight.saturating_sub(c.len);
        }
        d.sack.net_ack += c.len;
        d.sack.saw_newack = true;
        d.sack.highest_newack = d.sack.highest_newack.max(c.tsn);
        if d.sack.pseudo_cumack == Some(c.tsn) {
            d.sack.new_pseudo_cumack = true;
        }
        d.stats.bytes_acked += c.len;
        if let Some((t, at)) = d.rtt_probe {
            if t == c.tsn {
                if c.transmissions == 1 {
                    d.rto.on_sample(now.saturating_since(at));
                }
                d.rtt_probe = None;
            }
        }
        d.error_count = 0;
        if d.state != PathState::Active && d.hb_outstanding.is_none() {
            d.state = PathState::Active;
        }
        sum.lowest_newack = sum.lowest_newack.min(c.tsn);
        sum.highest_newack = sum.highest_newack.max(c.tsn);
    }

    fn aggregate(&self) -> cc::Aggregate {
        cc::aggregate(self.dests.iter().filter(|d| d.state != PathState::Inactive).map(|d| PathView {
            cwnd: d.cwnd,
            ssthresh: d.ssthresh,
            srtt: d.rto.srtt().map(|r| r.as_secs_f64()),
        }))
    }

    fn enter_fast_recovery(&mut self, i: usize) {
        let cmt = self.cfg.cmt.is_cmt();
        let already = if cmt { self.dests[i].recover.is_some() } else { self.recover.is_some() };
        if already {
            return;
        }
        let agg = self.aggregate();
        let mtu = self.cfg.max_payload() as u64;
        let high = self.snd.next_tsn - 1;
        let d = &mut self.dests[i];
        let me = PathView { cwnd: d.cwnd, ssthresh: d.ssthresh, srtt: d.rto.srtt().map(|r| r.as_secs_f64()) };
        d.ssthresh = cc::ssthresh_after_loss(self.cfg.cmt, &agg, &me, mtu);
        d.cwnd = d.ssthresh;
        d.partial_bytes_acked = 0;
        if cmt {
            d.recover = Some(high);
        } else {
            self.recover = Some(high);
        }
        self.fr_bypass = true;
    }

    // ----------------------------------------------------------- timers

    /// The earliest deadline of any timer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.state == State::Closed {
            return None;
        }
        let mut t = self.t1.as_ref().map(|x| x.1);
        let mut take = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        for d in &self.dests {
            take(d.t3);
            take(d.hb_at);
        }
        take(self.rcv.as_ref().and_then(|r| r.sack_timer));
        t
    }

    pub fn on_timeout(&mut self, now: Instant) {
        self.reset_burst();
        if let Some((t, at, n, to)) = self.t1.take() {
            if at <= now {
                if n + 1 > self.cfg.max_init_retrans {
                    self.close(CloseReason::Failed);
                    return;
                }
                let to2 = (to * 2).min(self.cfg.rto_max);
                self.ctrl.push_back(t.clone());
                self.t1 = Some((t, now + to2, n + 1, to2));
            } else {
                self.t1 = Some((t, at, n, to));
            }
        }
        if let Some(r) = &mut self.rcv {
            if r.sack_timer.is_some_and(|t| t <= now) {
                r.sack_timer = None;
                r.sack_now = true;
            }
        }
        for i in 0..self.dests.len() {
            if self.dests[i].t3.is_some_and(|t| t <= now) {
                self.t3_expired(now, i);
            }
            if self.state == State::Closed {
                return;
            }
            if self.dests[i].hb_at.is_some_and(|t| t <= now) {
                self.heartbeat_due(now, i);
            }
        }
    }

    /// A destination missed a T3-rtx or a heartbeat (RFC 9260 8.1, 8.2).
    fn path_error(&mut self, now: Instant, i: usize) {
        let d = &mut self.dests[i];
        d.error_count += 1;
        d.rto.backoff();
        let was = d.state;
        if d.error_count > self.cfg.path_max_retrans {
            d.state = PathState::Inactive;
        } else if self.cfg.pf_threshold.is_some_and(|pf| d.error_count > pf) {
            d.state = PathState::PotentiallyFailed;
        }
        // RFC 7829: a destination entering PF is probed by a heartbeat at
        // once (then every RTO), so that it comes back as soon as it answers.
        if d.state != PathState::Active && was == PathState::Active && d.hb_outstanding.is_none() {
            d.hb_at = Some(now);
        }
        self.assoc_errors += 1;
        if self.assoc_errors > self.cfg.assoc_max_retrans {
            self.close(CloseReason::Failed);
        }
    }

    fn t3_expired(&mut self, now: Instant, i: usize) {
        self.dests[i].t3 = None;
        self.dests[i].stats.timeouts += 1;
        // E1: every chunk in flight here is marked for retransmission.
        for c in self.snd.sent.iter_mut() {
            if c.dest == i && c.state == OutState::Outstanding {
                c.state = OutState::Marked { fast: false };
                self.snd.marked += 1;
                if c.in_flight {
                    c.in_flight = false;
                    self.dests[i].flight = self.dests[i].flight.saturating_sub(c.len);
                }
            }
        }
        let agg = self.aggregate();
        let mtu = self.cfg.max_payload() as u64;
        let d = &mut self.dests[i];
        let me = PathView { cwnd: d.cwnd, ssthresh: d.ssthresh, srtt: d.rto.srtt().map(|r| r.as_secs_f64()) };
        d.ssthresh = cc::ssthresh_after_loss(self.cfg.cmt, &agg, &me, mtu);
        d.cwnd = mtu;
        d.partial_bytes_acked = 0;
        d.rtt_probe = None;
        d.recover = None;
        if !self.cfg.cmt.is_cmt() {
            self.recover = None;
        }
        self.path_error(now, i);
    }

    fn heartbeat_due(&mut self, now: Instant, i: usize) {
        if self.dests[i].hb_outstanding.take().is_some() {
            self.path_error(now, i);
            if self.state == State::Closed {
                return;
            }
        }
        let hb = self.cfg.hb_interval;
        let d = &mut self.dests[i];
        let idle = now.saturating_since(d.last_send) >= hb;
        if d.state != PathState::Active || idle {
            d.hb_pending = true;
            d.hb_at = Some(now + d.rto.rto());
        } else {
            d.hb_at = Some(d.last_send + hb + d.rto.rto());
        }
    }

    // ---------------------------------------------------------- output

    /// The next packet to send, if any.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if let Some(t) = self.ctrl.pop_front() {
            return Some(t);
        }
        if self.state == State::Closed || self.dests.is_empty() {
            return None;
        }
        // SACK, to where the latest DATA came from.
        if self.rcv.as_ref().is_some_and(|r| r.sack_now) {
            let nr = self.nr_sack;
            let dac = self.cfg.dac && self.cfg.cmt.is_cmt();
            let max_blocks = (self.cfg.mtu as usize).saturating_sub(64) / 8;
            let (src, dst) = self.reply_to.unwrap_or((self.dests[self.primary].local, self.dests[self.primary].remote));
            if let Some(r) = &mut self.rcv {
                let s = r.build_sack(nr, dac, max_blocks.max(1));
                return Some(self.wrap(src, dst, vec![Chunk::Sack(s)]));
            }
        }
        // Heartbeats.
        for i in 0..self.dests.len() {
            if self.dests[i].hb_pending {
                let nonce = self.rng.next();
                let d = &mut self.dests[i];
                d.hb_pending = false;
                d.hb_outstanding = Some((nonce, now));
                d.stats.heartbeats_sent += 1;
                let mut info = Vec::with_capacity(HB_INFO_LEN);
                info.extend_from_slice(&(i as u16).to_be_bytes());
                info.extend_from_slice(&nonce.to_be_bytes());
                info.extend_from_slice(&now.as_nanos().to_be_bytes());
                let (src, dst) = (d.local, d.remote);
                return Some(self.wrap(src, dst, vec![Chunk::Heartbeat { info }]));
            }
        }
        if !matches!(self.state, State::Established | State::ShutdownPending | State::ShutdownReceived) {
            return None;
        }
        if let Some(t) = self.retransmit(now) {
            return Some(t);
        }
        self.send_new(now)
    }

    fn wrap(&self, src: IpAddr, dst: IpAddr, chunks: Vec<Chunk>) -> Transmit {
        Transmit { src, dst, packet: Packet::new(self.local_port, self.peer_port, self.peer_tag, chunks) }
    }

    fn rtx_views(&self) -> Vec<RtxView> {
        self.dests.iter().map(|d| RtxView { state: d.state, cwnd: d.cwnd, ssthresh: d.ssthresh }).collect()
    }

    fn data_chunk(c: &OutChunk) -> Chunk {
        Chunk::Data(DataChunk { flags: c.flags, tsn: tsn::wire(c.tsn), stream_id: c.stream, ssn: c.ssn, ppid: c.ppid, payload: c.data.clone() })
    }

    fn retransmit(&mut self, now: Instant) -> Option<Transmit> {
        if self.snd.marked == 0 {
            return None;
        }
        let views = self.rtx_views();
        let cmt = self.cfg.cmt.is_cmt();
        let max = self.cfg.max_payload() + DATA_HEADER_LEN;
        let mut target: Option<usize> = None;
        let mut chunks = Vec::new();
        let mut size = 0;
        for idx in 0..self.snd.sent.len() {
            let c = &self.snd.sent[idx];
            let OutState::Marked { fast } = c.state else { continue };
            let to = cmt::rtx_destination(cmt, self.cfg.rtx_policy, !fast, c.dest, &views);
            match target {
                None => {
                    let d = &self.dests[to];
                    if !(self.fr_bypass || d.flight < d.cwnd) || d.burst == 0 {
                        return None;
                    }
                    target = Some(to);
                }
                Some(t) if t != to => continue,
                _ => {}
            }
            let clen = DATA_HEADER_LEN + c.data.len().div_ceil(4) * 4;
            if size + clen > max && !chunks.is_empty() {
                break;
            }
            size += clen;
            let c = &mut self.snd.sent[idx];
            c.state = OutState::Outstanding;
            c.in_flight = true;
            c.transmissions += 1;
            c.sent_at = now;
            c.misses = 0;
            let old = c.dest;
            c.dest = to;
            let len = c.len;
            chunks.push(Self::data_chunk(c));
            let tsn_ = c.tsn;
            self.snd.marked = self.snd.marked.saturating_sub(1);
            if self.dests[old].rtt_probe.is_some_and(|(t, _)| t == tsn_) {
                self.dests[old].rtt_probe = None;
            }
            let d = &mut self.dests[to];
            d.flight += len;
            d.stats.retransmissions += 1;
            d.stats.bytes_retransmitted += len;
            d.stats.bytes_sent += len;
        }
        let to = target?;
        self.fr_bypass = false;
        let d = &mut self.dests[to];
        d.burst -= 1;
        d.stats.packets_sent += 1;
        d.last_send = now;
        if d.t3.is_none() {
            d.t3 = Some(now + d.rto.rto());
        }
        let (src, dst) = (d.local, d.remote);
        Some(self.wrap(src, dst, chunks))
    }

    /// Picks the destination for new data, or says why none.
    fn pick_destination(&self) -> Option<usize> {
        let n = self.dests.len();
        let active = self.dests.iter().filter(|d| d.state == PathState::Active).count().max(1) as u64;
        let ok = |d: &Destination| {
            d.burst > 0
                && d.flight < d.cwnd
                && (!self.cfg.split_send_buffer || d.flight < self.cfg.send_buffer / active)
                && (!self.cfg.split_recv_buffer || d.flight < self.snd.peer_a_rwnd / active)
        };
        if self.cfg.cmt.is_cmt() {
            for want in [PathState::Active, PathState::PotentiallyFailed] {
                if want == PathState::PotentiallyFailed && self.dests.iter().any(|d| d.state == PathState::Active) {
                    break;
                }
                for k in 0..n {
                    let i = (self.rr_next + k) % n;
                    if self.dests[i].state == want && ok(&self.dests[i]) {
                        return Some(i);
                    }
                }
            }
            return None;
        }
        // Plain SCTP: the primary, or the first usable alternate.
        let order = (0..n).map(|k| (self.primary + k) % n);
        let chosen = order
            .clone()
            .find(|&i| self.dests[i].state == PathState::Active)
            .or_else(|| order.clone().find(|&i| self.dests[i].state == PathState::PotentiallyFailed))
            .unwrap_or(self.primary);
        ok(&self.dests[chosen]).then_some(chosen)
    }

    fn send_new(&mut self, now: Instant) -> Option<Transmit> {
        // Blocked by the peer's window only when there is data and a
        // destination whose cwnd would take it.
        let Some(first_len) = self.snd.unsent.front().map(|p| p.data.len() as u64) else {
            self.rwnd_block.set(now, false);
            return None;
        };
        let Some(i) = self.pick_destination() else {
            self.rwnd_block.set(now, false);
            return None;
        };
        let total_flight: u64 = self.dests.iter().map(|d| d.flight).sum();
        // RFC 9260 6.1 A: no new data beyond the peer's window, except one
        // chunk when nothing is in flight (zero window probe).
        if first_len > self.snd.peer_rwnd && total_flight > 0 {
            self.rwnd_block.set(now, true);
            return None;
        }
        self.rwnd_block.set(now, false);
        let max = self.cfg.max_payload() + DATA_HEADER_LEN;
        let mut chunks = Vec::new();
        let mut size = 0;
        let mut sent_bytes = 0;
        while let Some(p) = self.snd.unsent.front() {
            let len = p.data.len() as u64;
            let clen = DATA_HEADER_LEN + p.data.len().div_ceil(4) * 4;
            if !chunks.is_empty() && (size + clen > max || len > self.snd.peer_rwnd) {
                break;
            }
            let Some(p) = self.snd.unsent.pop_front() else { break };
            size += clen;
            let tsn_ = self.snd.next_tsn;
            self.snd.next_tsn += 1;
            let c = OutChunk {
                tsn: tsn_,
                stream: p.stream,
                ssn: p.ssn,
                ppid: p.ppid,
                flags: p.flags,
                len,
                data: p.data,
                dest: i,
                sent_at: now,
                transmissions: 1,
                state: OutState::Outstanding,
                in_flight: true,
                misses: 0,
                fast_retransmitted: false,
                freed: false,
            };
            chunks.push(Self::data_chunk(&c));
            let ending = c.flags & data_flags::E != 0;
            self.snd.sent.push_back(c);
            self.snd.peer_rwnd = self.snd.peer_rwnd.saturating_sub(len + u64::from(self.cfg.peer_chunk_overhead));
            sent_bytes += len;
            let d = &mut self.dests[i];
            d.stats.messages_sent += ending as u64;
            if d.rtt_probe.is_none() {
                d.rtt_probe = Some((tsn_, now));
            }
        }
        let d = &mut self.dests[i];
        d.flight += sent_bytes;
        d.stats.bytes_sent += sent_bytes;
        d.stats.packets_sent += 1;
        d.burst -= 1;
        d.last_send = now;
        if d.t3.is_none() {
            d.t3 = Some(now + d.rto.rto());
        }
        let (src, dst) = (d.local, d.remote);
        self.rr_next = (i + 1) % self.dests.len();
        Some(self.wrap(src, dst, chunks))
    }
}

impl OutChunk {
    /// A copy without the payload, for accounting.
    fn clone_meta(&self) -> OutChunk {
        OutChunk {
            tsn: self.tsn,
            stream: self.stream,
            ssn: self.ssn,
            ppid: self.ppid,
            flags: self.flags,
            data: Vec::new(),
            len: self.len,
            dest: self.dest,
            sent_at: self.sent_at,
            transmissions: self.transmissions,
            state: self.state,
            in_flight: self.in_flight,
            misses: self.misses,
            fast_retransmitted: self.fast_retransmitted,
            freed: self.freed,
        }
    }
}
