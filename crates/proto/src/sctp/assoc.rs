//! The association: its state, the application's calls, and the glue
//! between the parts, each in a submodule: `handshake` (INIT, INIT ACK,
//! COOKIE ECHO, verification tags), `input` (chunk dispatch),
//! `sack` (SACK processing), `recovery` (fast retransmit and windows
//! per destination), `output` (scheduling and bundling), `timers`
//! (T1, T3-rtx, heartbeats, delayed SACK) and `shutdown`. See the
//! module documentation of `sctp` for the API.

mod handshake;
mod input;
mod output;
mod recovery;
mod sack;
mod shutdown;
mod timers;

use core::net::IpAddr;
use core::time::Duration;
use std::collections::VecDeque;

use mplab_wire::sctp::chunk::{data_flags, Chunk};
use mplab_wire::sctp::param::ErrorCause;
use mplab_wire::sctp::Packet;

use super::config::SctpConfig;
use crate::rng::SplitMix64;
use super::path::{Destination, PathState, PathStats};
use super::recv::{Receiver, RecvStats};
use super::send::{Pending, SendQueue};
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

pub struct Association {
    cfg: SctpConfig,
    state: State,
    close_reason: Option<CloseReason>,
    local_addrs: Vec<IpAddr>,
    local_port: u16,
    peer_port: u16,
    secret: [u8; 32],
    /// Tags, initial TSNs and heartbeat nonces, from the seed.
    rng: SplitMix64,
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

impl Association {
    fn base(cfg: SctpConfig, local_addrs: Vec<IpAddr>, local_port: u16, peer_port: u16, seed: u64) -> Association {
        let mut rng = SplitMix64::new(seed);
        let my_tag = rng.nonzero_u32();
        let my_initial_tsn = rng.next_u64() as u32;
        let mut secret = [0u8; 32];
        for c in secret.chunks_mut(8) {
            c.copy_from_slice(&rng.next_u64().to_be_bytes());
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

    fn push_ctrl(&mut self, src: IpAddr, dst: IpAddr, chunks: Vec<Chunk>) {
        let p = Packet::new(self.local_port, self.peer_port, self.peer_tag, chunks);
        self.ctrl.push_back(Transmit { src, dst, packet: p });
    }

    fn wrap(&self, src: IpAddr, dst: IpAddr, chunks: Vec<Chunk>) -> Transmit {
        Transmit { src, dst, packet: Packet::new(self.local_port, self.peer_port, self.peer_tag, chunks) }
    }
}
