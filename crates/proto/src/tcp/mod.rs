//! A sans-IO TCP connection (RFC 9293): segments and time in, segments and
//! one timer deadline out. It is the subflow engine MPTCP reuses.
//!
//! Data is never copied here: the connection works in stream offsets. The
//! application (or the MPTCP layer above) says how many bytes it queued;
//! [`Connection::poll_transmit`] says which byte range each segment
//! carries; [`Connection::handle_segment`] says at which stream offsets a
//! received payload belongs. A driver with real bytes keeps them in its own
//! buffers at those offsets; the simulator keeps none at all.
//!
//! Implemented: three-way handshake with MSS / window scale / SACK /
//! timestamps negotiation, SYN retransmission, RFC 6298 RTO with backoff,
//! SACK-based loss recovery (RFC 6675 with FACK-style loss marking) or
//! NewReno without SACK, delayed ACKs, receive window and buffer limits,
//! zero-window probing, congestion control behind a trait, FIN and RST,
//! TCP Fast Open without cookies (RFC 7413; `TcpConfig::fast_open`).

mod config;
pub mod timer_clock;
pub mod reassembly;
pub mod rtt;
pub mod scoreboard;
pub mod seq;

use core::ops::Range;
use core::time::Duration;
use std::net::SocketAddr;

use mplab_wire::tcp::flags;
use mplab_wire::{SackBlock, TcpHeader, TcpOptions, Timestamps};

use crate::cc::{AckEvent, CcState, CongestionControl, Coupling, PathState};
use crate::time::Instant;

pub use config::TcpConfig;
pub use timer_clock::TimerClock;
use reassembly::Reassembly;
use rtt::RttEstimator;
use scoreboard::Scoreboard;

/// How far SYN and SYN-ACK retransmissions back off (TCP_RTO_MAX).
const HANDSHAKE_MAX_BACKOFF: Duration = Duration::from_secs(120);

/// Option bytes a Fast Open SYN keeps free (MAX_TCP_OPTION_SPACE): the
/// SYN's payload is our segment size less the most options a SYN can
/// carry, as Linux's tcp_send_syn_data. The peer's MSS is not known yet,
/// and a box adding options to the SYN must not push it past the path's
/// MTU: 1420 bytes at an MSS of 1460.
const SYN_OPTION_SPACE: u64 = 40;

/// RFC 9293 connection states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
    Closed,
}

/// Loss-recovery state (Linux's CA states, reduced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recovery {
    Open,
    /// Fast recovery until everything sent before it is acknowledged.
    Fast { recover: u64 },
    /// After an RTO: slow start from one segment, resending what was lost.
    Loss { recover: u64 },
}

/// Why `accept` refused a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcceptError {
    NotASyn,
}

/// A segment to send: the header, and the stream bytes it carries.
#[derive(Debug, Clone, Default)]
pub struct Transmit {
    pub header: TcpHeader,
    /// Stream offsets of the payload (empty for control segments).
    pub payload: Range<u64>,
    pub retransmission: bool,
}

/// Counters and the current state, for probes and results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TcpStats {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub srtt: Option<Duration>,
    pub min_rtt: Option<Duration>,
    pub rto: Duration,
    pub in_flight: u64,
    /// The peer's receive window, bytes.
    pub peer_window: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    pub bytes_retransmitted: u64,
    /// Payload bytes cumulatively acknowledged by the peer.
    pub bytes_acked: u64,
    /// Payload bytes received in order.
    pub bytes_received: u64,
    pub segments_sent: u64,
    pub segments_received: u64,
    pub segments_retransmitted: u64,
    pub rto_count: u64,
    pub fast_recoveries: u64,
    pub tail_loss_probes: u64,
    /// Slow start left by HyStart (CUBIC only).
    pub hystart: crate::cc::hystart::HyStartExits,
}

/// What kind of ACK the receiver owes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckDue {
    None,
    At(Instant),
    Now,
}

/// Where Linux's rcv_ssthresh starts: the initial window, 64 KiB rounded
/// down to whole segments of 1448 bytes (65160, as the kernel's SYN-ACKs
/// here advertise).
const INITIAL_RCV_SSTHRESH: u64 = 45 * 1448;

#[derive(Debug)]
pub struct Connection {
    cfg: TcpConfig,
    state: State,
    local_port: u16,
    remote_port: u16,
    /// Set once the handshake completed (the state may have moved on).
    synced: bool,
    reset: bool,

    iss: u32,
    irs: u32,
    /// Payload bytes per full-sized segment.
    mss: u64,
    sack_ok: bool,
    ts_ok: bool,
    /// Shift applied to windows the peer advertises / we advertise.
    snd_wscale: u8,
    rcv_wscale: u8,
    /// Whether the peer sent window scale / SACK / timestamps / MSS in its
    /// SYN (boxed: ~330 bytes read only during the handshake, which would
    /// otherwise sit between the fields every segment reads).
    peer_syn: Box<TcpOptions>,

    // ---- send side (data offsets; the FIN takes offset `app_end`)
    app_end: u64,
    snd_una: u64,
    snd_nxt: u64,
    fin_queued: bool,
    fin_sent: bool,
    /// Ends of records queued with `send_record`: no segment crosses one.
    record_ends: std::collections::VecDeque<u64>,
    board: Scoreboard,
    peer_wnd: u64,
    cc_state: CcState,
    cc: Box<dyn CongestionControl>,
    /// Sibling subflows for a coupled congestion control (set by MPTCP).
    coupling: Option<Coupling>,
    recovery: Recovery,
    dupacks: u32,
    /// Without SACK, each duplicate ACK means a segment left the network
    /// (Linux's "reno sacks"): bytes credited against the pipe.
    dup_credit: u64,
    /// Proportional rate reduction (RFC 6937) during fast recovery: bytes in
    /// flight when it began, bytes the peer received since, bytes we sent.
    recover_fs: u64,
    prr_delivered: u64,
    prr_out: u64,
    /// A fast retransmit may go out once regardless of cwnd.
    rexmit_allowance: bool,
    cwnd_limited: bool,
    /// `cwnd_limited_per_round`: the window was full in the round that
    /// ends when `round_end` is acknowledged, and the most that round had
    /// out (Linux's is_cwnd_limited, max_packets_out, cwnd_usage_seq).
    round_limited: bool,
    round_max_out: u64,
    round_end: u64,
    /// When a segment with payload last left (Linux's lsndtime).
    last_data_tx: Option<Instant>,
    rtt: RttEstimator,
    rto_at: Option<Instant>,
    backoff: u32,
    /// First retransmission timeout of the current run without progress.
    stalled_since: Option<Instant>,
    persist_at: Option<Instant>,
    probe_due: bool,
    /// Tail loss probe (RFC 8985 7): when to probe, and whether this tail
    /// was probed already.
    tlp_at: Option<Instant>,
    /// RACK's reordering timer: when a segment becomes overdue.
    rack_at: Option<Instant>,
    tlp_done: bool,
    tlp_due: bool,
    /// The probe may be one new segment beyond the congestion window.
    probe_new_data: bool,
    /// SYN or SYN-ACK to (re)send.
    syn_due: bool,
    syn_sent_at: Option<Instant>,
    syn_retransmitted: bool,
    syn_tries: u32,
    rst_due: bool,
    /// Fast Open: stream bytes our first SYN carried (offsets 0..syn_tx),
    /// how many of them the SYN-ACK acknowledged, and the bytes of the
    /// peer's SYN we took (acknowledged by our SYN-ACK).
    syn_tx: u64,
    syn_tx_acked: u64,
    syn_rx: u64,

    // ---- receive side (data offsets)
    rcv: Reassembly,
    read_off: u64,
    rcv_fin: Option<u64>,
    fin_received: bool,
    ack_due: AckDue,
    /// Upper bound on the advertised window set by a layer above (MPTCP's
    /// connection-level receive window), bytes.
    window_cap: Option<u64>,
    /// `grow_window_gradually`: the most this end advertises for now
    /// (Linux's rcv_ssthresh).
    rcv_ssthresh: u64,
    unacked_segments: u32,
    ts_recent: u32,
    /// The receiver's RTT estimate from the timestamps echoed on arriving
    /// data (Linux's `rcv_rtt_est`), for receive-window autotuning.
    rcv_rtt: Option<Duration>,
    /// Right edge of the window last advertised (never shrinks).
    adv_right: u64,
    /// The peer's segment size as this receiver estimates it (Linux's
    /// `icsk_ack.rcv_mss`): 536 until a larger segment arrives, then the
    /// largest seen, at most our MSS.
    rcv_mss: u64,
    /// `quick_acks`: immediate ACKs still owed (Linux's `icsk_ack.quick`),
    /// and when in-order data last arrived (`icsk_ack.lrcvtime`).
    quick: u32,
    last_data_rx: Option<Instant>,
    stats: TcpStats,
}

fn now_ms(now: Instant) -> u32 {
    (now.0 / 1_000_000) as u32
}

impl Connection {
    fn new(cfg: TcpConfig, local: SocketAddr, remote: SocketAddr, iss: u32, state: State) -> Connection {
        let cc = cfg.cc.build();
        let mut rtt = RttEstimator::new(cfg.initial_rto, cfg.min_rto);
        if cfg.linux_rtt_variation {
            rtt.use_linux_variation();
        }
        rtt.set_max_backoff(cfg.max_backoff);
        let rcv_wscale = if cfg.wscale { wscale_for(cfg.window_scale_space.unwrap_or(cfg.rcv_buf)) } else { 0 };
        let mss = cfg.mss as u64;
        Connection {
            state,
            local_port: local.port(),
            remote_port: remote.port(),
            synced: false,
            reset: false,
            iss,
            irs: 0,
            mss,
            sack_ok: false,
            ts_ok: false,
            snd_wscale: 0,
            rcv_wscale,
            peer_syn: Box::default(),
            app_end: 0,
            snd_una: 0,
            snd_nxt: 0,
            fin_queued: false,
            fin_sent: false,
            record_ends: std::collections::VecDeque::new(),
            board: Scoreboard::default(),
            peer_wnd: 0,
            cc_state: CcState::new(mss),
            cc,
            coupling: None,
            recovery: Recovery::Open,
            dupacks: 0,
            dup_credit: 0,
            recover_fs: 0,
            prr_delivered: 0,
            prr_out: 0,
            rexmit_allowance: false,
            cwnd_limited: false,
            round_limited: false,
            round_max_out: 0,
            round_end: 0,
            last_data_tx: None,
            rtt,
            rto_at: None,
            backoff: 0,
            stalled_since: None,
            persist_at: None,
            probe_due: false,
            tlp_at: None,
            rack_at: None,
            tlp_done: false,
            tlp_due: false,
            probe_new_data: false,
            syn_due: true,
            syn_sent_at: None,
            syn_retransmitted: false,
            syn_tries: 0,
            rst_due: false,
            syn_tx: 0,
            syn_tx_acked: 0,
            syn_rx: 0,
            rcv: Reassembly::new(0),
            read_off: 0,
            rcv_fin: None,
            fin_received: false,
            ack_due: AckDue::None,
            window_cap: None,
            rcv_ssthresh: INITIAL_RCV_SSTHRESH,
            unacked_segments: 0,
            ts_recent: 0,
            rcv_rtt: None,
            adv_right: 0,
            rcv_mss: 536,
            quick: 0,
            last_data_rx: None,
            stats: TcpStats::default(),
            cfg,
        }
    }

    /// Opens a connection: the first `poll_transmit` yields the SYN.
    pub fn connect(cfg: TcpConfig, local: SocketAddr, remote: SocketAddr, iss: u32, _now: Instant) -> Connection {
        Connection::new(cfg, local, remote, iss, State::SynSent)
    }

    /// Answers a SYN that reached a listener: the first `poll_transmit`
    /// yields the SYN-ACK.
    pub fn accept(cfg: TcpConfig, local: SocketAddr, remote: SocketAddr, syn: &TcpHeader, iss: u32, _now: Instant) -> Result<Connection, AcceptError> {
        if !syn.syn() || syn.ack_flag() || syn.rst() {
            return Err(AcceptError::NotASyn);
        }
        let mut c = Connection::new(cfg, local, remote, iss, State::SynReceived);
        c.irs = syn.seq;
        c.negotiate(&syn.options);
        if let Some(ts) = syn.options.timestamps {
            c.ts_recent = ts.tsval;
        }
        c.peer_wnd = syn.window as u64;
        Ok(c)
    }

    /// Applies the options of the peer's SYN (or SYN-ACK) to ours.
    fn negotiate(&mut self, o: &TcpOptions) {
        *self.peer_syn = *o;
        self.sack_ok = self.cfg.sack && o.sack_permitted;
        self.ts_ok = self.cfg.timestamps && o.timestamps.is_some();
        match (self.cfg.wscale, o.wscale) {
            (true, Some(s)) => self.snd_wscale = s.min(14),
            _ => {
                self.snd_wscale = 0;
                self.rcv_wscale = 0;
            }
        }
        let peer_mss = o.mss.unwrap_or(536) as u64;
        // Options padded together: timestamps (10) and what the layer
        // above reserves, rounded up to 32-bit words.
        let opt_space = ((if self.ts_ok { 10 } else { 0 }) + self.cfg.option_reserve as u64).div_ceil(4) * 4;
        self.mss = (self.cfg.mss as u64).min(peer_mss).saturating_sub(opt_space).max(64);
        self.cc_state = CcState::new(self.mss);
    }

    // ------------------------------------------------------------ accessors

    pub fn state(&self) -> State {
        self.state
    }
    /// The handshake completed (data may flow).
    pub fn is_established(&self) -> bool {
        self.synced && self.state != State::Closed
    }
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }
    /// Whether a segment falls in the receive window once the connection
    /// is synchronized (RFC 9293 3.10.7.4), tolerating old duplicates up
    /// to a window behind RCV.NXT as Linux's tcp_sequence() does. A
    /// segment outside gets an ACK and nothing else: an off-path sender
    /// must guess the sequence number to within a window before anything
    /// it carries is believed (RFC 5961, RFC 7430). Before the handshake
    /// completes the handshake's own checks apply: `true`.
    pub fn acceptable(&self, h: &TcpHeader, payload_len: u32) -> bool {
        if !self.synced {
            return true;
        }
        let nxt = self.rcv.nxt();
        let Some(start) = seq::unwrap(h.seq, self.irs.wrapping_add(1), nxt) else { return false };
        let wnd = self.rcv_window().max(self.adv_right.saturating_sub(nxt));
        let end = start + u64::from(payload_len) + u64::from(h.fin());
        start <= nxt + wnd.max(1) && end + wnd.max(self.mss) >= nxt
    }
    /// The stream offset of sequence number `seq` (relative to the
    /// peer's ISN + 1), once synchronized.
    pub fn rcv_offset(&self, seq: u32) -> Option<u64> {
        if !self.synced {
            return None;
        }
        seq::unwrap(seq, self.irs.wrapping_add(1), self.rcv.nxt())
    }
    /// How far the application has read (stream offset).
    pub fn read_offset(&self) -> u64 {
        self.read_off
    }
    /// RCV.NXT as a wire sequence number (what an on-path observer sees).
    pub fn rcv_nxt_seq(&self) -> u32 {
        seq::wrap(self.rcv.nxt(), self.irs.wrapping_add(1))
    }
    /// An unacceptable segment ([`acceptable`](Self::acceptable)): an ACK
    /// goes back (not for a RST), the segment is otherwise dropped.
    pub fn on_unacceptable(&mut self, h: &TcpHeader) {
        self.stats.segments_received += 1;
        if !h.rst() {
            self.ack_due = AckDue::Now;
        }
    }
    /// Nothing more will be sent or received (closed, or in TIME-WAIT).
    pub fn is_finished(&self) -> bool {
        matches!(self.state, State::Closed | State::TimeWait)
    }
    /// The peer reset the connection (or it timed out).
    pub fn was_reset(&self) -> bool {
        self.reset
    }
    /// The handshake gave up: no answer to any of the SYNs.
    pub fn syn_timed_out(&self) -> bool {
        self.reset && !self.synced && self.syn_tries > self.cfg.syn_retries
    }
    /// The peer sent its FIN and every byte before it was read.
    pub fn peer_closed(&self) -> bool {
        self.fin_received && self.read_off == self.rcv.nxt()
    }
    /// Payload bytes per full segment, after negotiation.
    pub fn mss(&self) -> u64 {
        self.mss
    }
    /// The options of the peer's SYN / SYN-ACK.
    pub fn peer_syn_options(&self) -> &TcpOptions {
        &self.peer_syn
    }
    pub fn cc_state(&self) -> &CcState {
        &self.cc_state
    }
    /// The receiver-side RTT (Linux's `rcv_rtt_est`): measured from our
    /// timestamps echoed on the peer's data, so `None` until data has
    /// echoed one; a subflow that only sent (or only shook hands) has no
    /// estimate, whatever its srtt. Without timestamps the srtt stands in
    /// (Linux then times a window's worth of data, `tcp_rcv_rtt_measure`).
    pub fn rcv_rtt(&self) -> Option<Duration> {
        if self.ts_ok {
            self.rcv_rtt
        } else {
            self.rtt.srtt()
        }
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }
    /// RTT variation (RFC 6298 RTTVAR).
    pub fn rttvar(&self) -> Duration {
        self.rtt.rttvar()
    }
    /// Halves the congestion window and sets ssthresh to it (MPTCP's
    /// subflow penalisation, Raiciu et al. NSDI 2012), at least two segments.
    pub fn penalize(&mut self) {
        let s = &mut self.cc_state;
        s.cwnd = (s.cwnd / 2).max(s.min_cwnd());
        s.ssthresh = s.cwnd;
    }
    pub fn in_flight(&self) -> u64 {
        self.board.in_flight(self.snd_nxt - self.snd_una).saturating_sub(self.dup_credit)
    }
    /// The running congestion control's name.
    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }
    /// Whether the congestion control wants the sibling subflows' state.
    pub fn cc_coupled(&self) -> bool {
        self.cc.coupled()
    }

    /// This subflow as a sibling sees it (for [`Coupling`]).
    pub fn path_state(&self) -> PathState {
        let s = &self.cc_state;
        PathState { cwnd: s.cwnd, ssthresh: s.ssthresh, mss: s.mss, srtt: self.rtt.srtt(), loss_interval: s.acked_since_loss.max(s.acked_last_interval) }
    }

    /// The coupling a multipath layer keeps up to date (taken and put back
    /// to reuse its allocation).
    pub fn take_coupling(&mut self) -> Option<Coupling> {
        self.coupling.take()
    }
    pub fn set_coupling(&mut self, c: Option<Coupling>) {
        self.coupling = c;
    }

    /// One line of sender internals, for tracing a misbehaving flow.
    pub fn debug_line(&self) -> String {
        format!(
            "sack_ok {} {:?} {:?} una {} nxt {} app_end {} cwnd {} ssthresh {} pipe {} lost {} sacked {} hsack {} dupacks {} peer_wnd {} rto_at {:?} cwnd_limited {}",
            self.sack_ok, self.state, self.recovery, self.snd_una, self.snd_nxt, self.app_end, self.cc_state.cwnd, self.cc_state.ssthresh,
            self.in_flight(), self.board.lost(), self.board.sacked(), self.board.highest_sack(), self.dupacks, self.peer_wnd, self.rto_at, self.cwnd_limited
        )
    }

    pub fn stats(&self) -> TcpStats {
        let mut s = self.stats.clone();
        s.cwnd = self.cc_state.cwnd;
        s.ssthresh = self.cc_state.ssthresh;
        s.srtt = self.rtt.srtt();
        s.min_rtt = self.rtt.min_rtt();
        s.rto = self.cfg.timer_clock.backed_off(self.rtt.rto(), self.backoff, self.rtt.max_backoff());
        s.in_flight = self.in_flight();
        s.peer_window = self.peer_wnd;
        s.hystart = self.cc_state.hystart;
        s
    }

    // --------------------------------------------------------- application

    /// Bytes the send buffer accepts now.
    pub fn send_space(&self) -> u64 {
        if self.fin_queued || matches!(self.state, State::Closed) {
            return 0;
        }
        self.cfg.snd_buf.saturating_sub(self.app_end - self.snd_una)
    }

    /// Queues `n` more stream bytes; returns how many were taken.
    pub fn send(&mut self, n: u64) -> u64 {
        let n = n.min(self.send_space());
        self.app_end += n;
        n
    }

    /// Queues `n` bytes as one record: segments never span two records (a
    /// layer above maps each record somewhere else, like MPTCP's DSS).
    /// Returns how many were taken (all or nothing).
    pub fn send_record(&mut self, n: u64) -> u64 {
        if n == 0 || n > self.send_space() {
            return 0;
        }
        self.app_end += n;
        self.record_ends.push_back(self.app_end);
        n
    }

    /// Takes back the bytes queued but never sent, for a layer above to
    /// place again (MPTCP at fallback, where the subflow's stream becomes
    /// the data stream). Returns how many; none once a FIN is queued (its
    /// sequence number is fixed).
    pub fn retract_unsent(&mut self) -> u64 {
        if self.fin_queued {
            return 0;
        }
        let n = self.unsent();
        self.app_end -= n;
        let end = self.app_end;
        self.record_ends.retain(|&e| e <= end);
        n
    }

    /// Oldest unacknowledged stream offset of the send side.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// Next stream offset the receive side expects.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv.nxt()
    }

    /// Bytes sent and not yet cumulatively acknowledged, SACKed ones
    /// included: what the sender still holds in its retransmission queue.
    pub fn unacked(&self) -> u64 {
        self.snd_nxt.saturating_sub(self.snd_una)
    }

    /// Bytes queued but never sent.
    pub fn unsent(&self) -> u64 {
        self.app_end.saturating_sub(self.snd_nxt.min(self.app_end))
    }

    /// Whether a full segment of new data would go out now (congestion and
    /// receive windows permitting): what a multipath scheduler asks.
    pub fn can_send(&self) -> bool {
        self.synced
            && matches!(self.state, State::Established | State::CloseWait)
            && !self.fin_queued
            && self.in_flight() + self.mss <= self.cc_state.cwnd
            && self.snd_nxt + self.mss <= self.snd_una + self.peer_wnd.max(self.mss)
    }

    /// A layer above had data for this connection but its congestion window
    /// was full: the window may grow on the next ACK (as when `send`
    /// itself is blocked by cwnd).
    pub fn note_cwnd_limited(&mut self) {
        if self.in_flight() + self.mss > self.cc_state.cwnd {
            self.cwnd_limited = true;
            if self.cfg.cwnd_limited_per_round {
                self.validate_cwnd(true);
            }
        }
    }

    /// After an attempt to send new data: whether the window was the
    /// limit, remembered for the round (Linux's `tcp_cwnd_validate`).
    fn validate_cwnd(&mut self, limited: bool) {
        let out = self.snd_nxt - self.snd_una;
        if self.snd_una >= self.round_end || limited || (!self.round_limited && out > self.round_max_out) {
            self.round_limited = limited;
            self.round_max_out = out;
            self.round_end = self.snd_nxt;
        }
    }

    /// Whether an ACK may grow the window.
    fn is_cwnd_limited(&self) -> bool {
        if !self.cfg.cwnd_limited_per_round {
            return self.cwnd_limited;
        }
        if self.round_limited {
            return true;
        }
        // Slow start: let the window reach twice what the round had out.
        self.cc_state.in_slow_start() && self.cc_state.cwnd < 2 * self.round_max_out
    }

    /// Nothing is outstanding and new data is about to go: after more than
    /// an RTO of silence the window is halved once per RTO elapsed, not
    /// below the initial window, and ssthresh keeps three quarters of the
    /// old window (Linux's `tcp_cwnd_restart`).
    fn restart_after_idle(&mut self, now: Instant) {
        let Some(last) = self.last_data_tx else { return };
        let rto = self.rtt.rto().as_nanos() as u64;
        let mut idle = now.saturating_since(last).as_nanos() as u64;
        if rto == 0 || idle <= rto {
            return;
        }
        let cc = &mut self.cc_state;
        if matches!(self.recovery, Recovery::Open) {
            cc.ssthresh = cc.ssthresh.max(cc.cwnd / 2 + cc.cwnd / 4);
        }
        let restart = (crate::cc::INITIAL_WINDOW_SEGMENTS * cc.mss).min(cc.cwnd);
        let mut cwnd = cc.cwnd;
        while idle > rto && cwnd > restart {
            idle -= rto;
            cwnd /= 2;
        }
        cc.cwnd = cwnd.max(restart);
        // Restarted once: the next check measures from here.
        self.last_data_tx = Some(now);
    }

    /// The peer's receive window (bytes), as last advertised.
    pub fn peer_window(&self) -> u64 {
        self.peer_wnd
    }

    /// Whether a larger window cap could make this end send a window
    /// update (see `window_update_due`): the window it last advertised is
    /// below half its buffer. A multipath layer raising the shared cap
    /// polls only these subflows again.
    pub fn may_owe_window_update(&self) -> bool {
        self.synced && !self.fin_received && self.adv_right.saturating_sub(self.rcv.nxt()) < self.cfg.rcv_buf / 2
    }

    /// Caps the window this end advertises (MPTCP shares one receive
    /// buffer among subflows); `None` removes the cap.
    pub fn set_window_cap(&mut self, cap: Option<u64>) {
        self.window_cap = cap;
    }

    /// Sends a pure ACK at the next `poll_transmit` (to carry options of a
    /// layer above, or a window update).
    pub fn ack_now(&mut self) {
        if self.synced {
            self.ack_due = AckDue::Now;
        }
    }

    /// When the next of the timers Linux keeps in a socket's one
    /// retransmission timer slot fires (`icsk_timeout`: the RTO, the zero
    /// window probe, the tail loss probe, RACK's reordering timer): while
    /// a tail loss probe is armed, that is the probe's time, often well
    /// before the RTO. MPTCP's connection-level timer in Linux takes its
    /// period from it (`mptcp_timeout_from_subflow`).
    pub fn retransmit_slot_deadline(&self) -> Option<Instant> {
        [self.rto_at, self.persist_at, self.tlp_at, self.rack_at].into_iter().flatten().min()
    }

    /// Segments received so far: unchanged over a period means nothing
    /// came back (Linux's `rcv_tstamp` serves the same purpose).
    pub fn segments_received(&self) -> u64 {
        self.stats.segments_received
    }

    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// Initial sequence numbers (ours, the peer's): MPTCP's DSS carries
    /// subflow sequence numbers relative to them.
    pub fn iss(&self) -> u32 {
        self.iss
    }
    pub fn irs(&self) -> u32 {
        self.irs
    }

    /// Fast Open: how many stream bytes the next SYN may carry (a client
    /// with `fast_open` whose first SYN has not gone out), else 0.
    pub fn syn_data_room(&self) -> u64 {
        if !self.cfg.fast_open || self.state != State::SynSent || self.syn_sent_at.is_some() {
            return 0;
        }
        (self.cfg.mss as u64).saturating_sub(SYN_OPTION_SPACE)
    }
    /// Fast Open, client: the bytes of our first SYN the peer's SYN-ACK
    /// acknowledged (stream offsets 0..n); the rest went again as data.
    pub fn syn_data_acked(&self) -> u64 {
        self.syn_tx_acked
    }
    /// Fast Open, server: the bytes of the peer's SYN taken (stream
    /// offsets 0..n), readable before the handshake completes.
    pub fn syn_data_received(&self) -> u64 {
        self.syn_rx
    }
    /// Fast Open, server: the SYN's bytes were taken and the handshake is
    /// not complete yet: data may go out after the SYN-ACK (RFC 7413
    /// 4.2.2), within the initial window and the window of the peer's SYN.
    pub fn sends_early(&self) -> bool {
        self.syn_rx > 0 && self.state == State::SynReceived && !self.synced
    }

    /// Stream offset of the next byte `send` will queue.
    pub fn send_offset(&self) -> u64 {
        self.app_end
    }

    /// In-order bytes ready for the application.
    pub fn readable(&self) -> u64 {
        self.rcv.nxt() - self.read_off
    }

    /// Consumes up to `max` in-order bytes; returns their stream offsets.
    pub fn recv(&mut self, max: u64) -> Range<u64> {
        let n = max.min(self.readable());
        let r = self.read_off..self.read_off + n;
        self.read_off += n;
        r
    }

    /// Closes the sending direction after the queued data (FIN).
    pub fn close(&mut self) {
        if self.fin_queued {
            return;
        }
        self.fin_queued = true;
        self.state = match self.state {
            State::Established => State::FinWait1,
            State::CloseWait => State::LastAck,
            // Before the handshake completes the FIN waits for it (the data
            // queued so far is still sent).
            s => s,
        };
    }

    /// Aborts: the next `poll_transmit` is a RST, then nothing. In
    /// TIME-WAIT the peer is done too: no RST (RFC 9293 3.10.5).
    pub fn abort(&mut self) {
        if self.state != State::Closed {
            self.rst_due = (self.synced || self.state == State::SynReceived) && self.state != State::TimeWait;
            self.state = State::Closed;
        }
    }

    // -------------------------------------------------------------- timers

    /// The earliest time [`handle_timeout`](Self::handle_timeout) must run.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.state == State::Closed {
            return None;
        }
        let delack = match self.ack_due {
            AckDue::At(t) => Some(t),
            _ => None,
        };
        [self.rto_at, self.persist_at, delack, self.tlp_at, self.rack_at].into_iter().flatten().min()
    }

    /// Arms the tail loss probe: two smoothed RTTs after the last send or
    /// ACK (plus the peer's delayed-ACK allowance when one segment is out),
    /// never after the RTO. Without it a window lost whole (no duplicate
    /// ACK comes back) waits for the RTO: 200 ms at least.
    fn arm_tlp(&mut self, now: Instant) {
        self.tlp_at = None;
        let Some(srtt) = self.rtt.srtt() else { return };
        if !self.sack_ok || self.tlp_done || self.recovery != Recovery::Open || self.board.is_empty() {
            return;
        }
        let mut pto = srtt * 2;
        if self.in_flight() <= self.mss {
            pto = pto.max(srtt * 3 / 2 + self.cfg.delayed_ack_timeout);
        }
        let pto = pto.max(Duration::from_micros(200));
        let at = self.cfg.timer_clock.fires(now, pto);
        if self.rto_at.is_none_or(|r| at < r) {
            self.tlp_at = Some(at);
        }
    }

    /// When a timer armed now for the RTO after `backoff` doublings fires.
    fn timer_after_rto(&self, now: Instant, backoff: u32) -> Instant {
        let clock = self.cfg.timer_clock;
        clock.fires(now, clock.backed_off(self.rtt.rto(), backoff, self.rtt.max_backoff()))
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if let AckDue::At(t) = self.ack_due {
            if t <= now {
                self.ack_due = AckDue::Now;
            }
        }
        if self.persist_at.is_some_and(|t| t <= now) {
            self.persist_at = None;
            self.probe_due = true;
        }
        if self.rack_at.is_some_and(|t| t <= now) {
            self.rack_at = None;
            self.detect_loss(now);
            if let Recovery::Fast { .. } = self.recovery {
                self.reduce_rate(0);
            }
        }
        if self.tlp_at.is_some_and(|t| t <= now) {
            self.tlp_at = None;
            if self.recovery == Recovery::Open && !self.board.is_empty() && matches!(self.state, State::Established | State::CloseWait | State::FinWait1 | State::Closing | State::LastAck) {
                self.tlp_done = true;
                self.tlp_due = true;
                self.stats.tail_loss_probes += 1;
                // The probe restarts the retransmission timer.
                self.rto_at = Some(self.timer_after_rto(now, self.backoff));
            }
        }
        if self.rto_at.is_some_and(|t| t <= now) {
            self.rto_at = None;
            self.tlp_at = None;
            self.on_rto(now);
        }
    }

    fn on_rto(&mut self, now: Instant) {
        match self.state {
            State::SynSent | State::SynReceived => {
                self.syn_tries += 1;
                if self.syn_tries > self.cfg.syn_retries {
                    self.state = State::Closed;
                    self.reset = true;
                    return;
                }
                self.backoff += 1;
                self.syn_due = true;
                self.syn_retransmitted = true;
            }
            State::Closed | State::TimeWait => {}
            _ => {
                if self.board.is_empty() {
                    return;
                }
                self.stats.rto_count += 1;
                let in_flight = self.in_flight();
                if self.backoff == 0 {
                    self.cc_state.acked_last_interval = self.cc_state.acked_since_loss;
                    self.cc_state.acked_since_loss = 0;
                    self.cc.on_rto(&mut self.cc_state, now, in_flight);
                } else {
                    // A repeated timeout: the window is already one
                    // segment; ssthresh keeps what the first one set (as
                    // Linux's tcp_enter_loss does).
                    self.cc_state.cwnd = self.cc_state.mss;
                }
                self.board.mark_all_lost();
                self.recovery = Recovery::Loss { recover: self.snd_nxt };
                self.dupacks = 0;
                self.dup_credit = 0;
                self.backoff += 1;
                // Give up after `user_timeout` without progress (Linux's
                // tcp_retries2 = 15 comes to about 15 minutes).
                let since = *self.stalled_since.get_or_insert(now);
                if now - since > self.cfg.user_timeout {
                    self.state = State::Closed;
                    self.reset = true;
                    return;
                }
                self.rto_at = Some(self.timer_after_rto(now, self.backoff));
            }
        }
    }

    // ------------------------------------------------------------- receive

    /// Processes one segment addressed to this connection. Returns the
    /// stream offsets its payload belongs at, when it carried payload the
    /// connection accepted (even partly); the driver places the bytes there.
    pub fn handle_segment(&mut self, now: Instant, h: &TcpHeader, payload_len: u32) -> Option<Range<u64>> {
        self.stats.segments_received += 1;
        match self.state {
            State::Closed => None,
            State::SynSent => {
                self.on_syn_sent(now, h);
                None
            }
            State::SynReceived => {
                if h.rst() {
                    self.state = State::Closed;
                    self.reset = true;
                    return None;
                }
                if h.syn() && !h.ack_flag() {
                    // The SYN itself (a driver hands it over after
                    // `accept`), or a copy: our SYN-ACK was lost.
                    self.syn_due = true;
                    return self.take_syn_data(h, payload_len);
                }
                // The handshake's ACK may also acknowledge data sent early.
                let acked = seq::unwrap(h.ack, self.iss.wrapping_add(1), self.snd_una);
                if !h.ack_flag() || acked.is_none_or(|a| a > self.snd_nxt) {
                    return None;
                }
                self.handshake_done(now);
                self.state = if self.fin_queued { State::FinWait1 } else { State::Established };
                self.on_synced_segment(now, h, payload_len)
            }
            _ if !self.acceptable(h, payload_len) => {
                // RFC 9293 3.10.7.4: an ACK back, nothing else (its ACK
                // number and window are not believed either).
                if !h.rst() {
                    self.ack_due = AckDue::Now;
                }
                None
            }
            _ => self.on_synced_segment(now, h, payload_len),
        }
    }

    /// Fast Open, server: takes the bytes of the peer's SYN, once, before
    /// the SYN-ACK that acknowledges them goes out. A SYN arriving after
    /// a SYN-ACK acknowledged only the SYN (its bytes ignored) gives none:
    /// the client sends them again after the handshake.
    fn take_syn_data(&mut self, h: &TcpHeader, payload_len: u32) -> Option<Range<u64>> {
        if !self.cfg.fast_open || payload_len == 0 || h.seq != self.irs || self.syn_sent_at.is_some() || self.syn_rx > 0 {
            return None;
        }
        let n = u64::from(payload_len).min(self.rcv_window());
        if n == 0 {
            return None;
        }
        let ins = self.rcv.insert(0..n);
        self.stats.bytes_received += ins.advanced;
        self.syn_rx = n;
        Some(0..n)
    }

    fn on_syn_sent(&mut self, now: Instant, h: &TcpHeader) {
        // The SYN-ACK acknowledges the SYN and, with Fast Open, possibly
        // the bytes it carried (all, some or none of them).
        let acked = seq::unwrap(h.ack, self.iss.wrapping_add(1), 0).filter(|&a| a <= self.syn_tx);
        let ack_ok = h.ack_flag() && acked.is_some();
        if h.rst() {
            if ack_ok {
                self.state = State::Closed;
                self.reset = true;
            }
            return;
        }
        if !(h.syn() && ack_ok) {
            return;
        }
        self.irs = h.seq;
        self.negotiate(&h.options);
        if let Some(ts) = h.options.timestamps {
            self.ts_recent = ts.tsval;
        }
        self.peer_wnd = h.window as u64; // never scaled in a SYN
        // SYN bytes left unacknowledged go again as ordinary data.
        let acked = acked.unwrap_or(0);
        self.syn_tx_acked = acked;
        self.snd_una = acked;
        self.snd_nxt = acked;
        self.stats.bytes_acked += acked;
        self.handshake_done(now);
        self.state = if self.fin_queued { State::FinWait1 } else { State::Established };
        self.ack_due = AckDue::Now;
    }

    fn handshake_done(&mut self, now: Instant) {
        self.synced = true;
        self.syn_due = false;
        if let (Some(t), false) = (self.syn_sent_at, self.syn_retransmitted) {
            self.rtt.sample_at(now - t, self.snd_una, self.snd_nxt);
            self.cc_rtt_sample(now, now - t);
        }
        self.backoff = 0;
        // Data a Fast Open server sent before the handshake completed
        // stays timed.
        self.rto_at = (!self.board.is_empty()).then(|| self.timer_after_rto(now, 0));
    }

    fn on_synced_segment(&mut self, now: Instant, h: &TcpHeader, payload_len: u32) -> Option<Range<u64>> {
        let rcv_base = self.irs.wrapping_add(1);
        let seg_start = seq::unwrap(h.seq, rcv_base, self.rcv.nxt());
        if h.rst() {
            // Accept a RST whose sequence number is in the window (RFC 5961's
            // exact-match refinement is not needed in a closed world).
            if seg_start.is_some_and(|s| s >= self.rcv.nxt() && s <= self.adv_right.max(self.rcv.nxt())) {
                self.state = State::Closed;
                self.reset = true;
            }
            return None;
        }
        if h.syn() {
            // A retransmitted SYN-ACK: our handshake ACK was lost.
            self.ack_due = AckDue::Now;
            return None;
        }
        if h.ack_flag() {
            self.on_ack(now, h, payload_len == 0 && !h.fin());
        }
        let seg_start = seg_start?;
        let len = payload_len as u64;
        if let (Some(ts), true) = (h.options.timestamps, self.ts_ok) {
            if seg_start <= self.rcv.nxt() {
                self.ts_recent = ts.tsval;
            }
            // Data echoing one of our timestamps: the time since we sent it
            // is a round trip through the data's queues (tcp_rcv_rtt_measure_ts).
            if len > 0 && ts.tsecr != 0 {
                let ms = now_ms(now).wrapping_sub(ts.tsecr);
                if (1..=60_000).contains(&ms) {
                    let m = Duration::from_millis(u64::from(ms));
                    self.rcv_rtt = Some(self.rcv_rtt.map_or(m, |r| (r * 7 + m) / 8));
                }
            }
        }
        let mut placed = None;
        if len > 0 {
            // Only what fits in the window is placed (and reported so: the
            // caller writes the payload where this says).
            placed = self.on_payload(now, seg_start..seg_start + len);
        }
        if h.fin() {
            self.rcv_fin = Some(seg_start + len);
            self.ack_due = AckDue::Now;
        }
        self.check_fin_received();
        placed
    }

    /// Takes in a segment's payload; returns the part inside the window
    /// (from the segment's first byte), `None` if none is.
    fn on_payload(&mut self, now: Instant, r: Range<u64>) -> Option<Range<u64>> {
        // Accept what fits in the window we advertised (or could advertise).
        let right = self.adv_right.max(self.rcv.nxt() + self.rcv_window());
        if r.start >= right {
            self.ack_due = AckDue::Now;
            return None;
        }
        let r = r.start..r.end.min(right);
        let placed = Some(r.clone());
        let len = r.end - r.start;
        if len >= self.rcv_mss {
            self.rcv_mss = len.min(u64::from(self.cfg.mss));
        }
        let offered = self.adv_right.saturating_sub(self.rcv.nxt());
        let in_order = r.start == self.rcv.nxt();
        let ins = self.rcv.insert(r);
        self.stats.bytes_received += ins.advanced;
        if self.cfg.quick_acks && in_order && !ins.duplicate {
            self.note_in_order_data(now, offered);
        }
        let grew = self.cfg.grow_window_gradually && !ins.duplicate && self.grow_rcv_ssthresh(len);
        if grew && self.cfg.quick_acks {
            // `icsk_ack.quick |= 1`: one more quick ACK only when the count
            // is even, so a run under way is kept going, not lengthened.
            self.quick |= 1;
        }
        if ins.duplicate || ins.out_of_order || ins.had_holes || !self.cfg.delayed_ack || grew || self.quick > 0 {
            self.quick = self.quick.saturating_sub(1);
            self.ack_due = AckDue::Now;
            return placed;
        }
        self.unacked_segments += 1;
        if self.unacked_segments >= 2 {
            self.ack_due = AckDue::Now;
        } else if self.ack_due == AckDue::None {
            self.ack_due = AckDue::At(now + self.cfg.delayed_ack_timeout);
        }
        placed
    }

    /// In-order data arrived (`quick_acks`): the first, or the first after
    /// a silence longer than the RTO, owes immediate ACKs for as many
    /// segments as the window offered (`offered`) holds pairs of them, at
    /// least 2 and at most 16 (`tcp_incr_quickack`).
    fn note_in_order_data(&mut self, now: Instant, offered: u64) {
        const MAX_QUICKACKS: u64 = 16;
        let silent = match self.last_data_rx {
            None => true,
            Some(t) => now.saturating_since(t) > self.rtt.rto(),
        };
        self.last_data_rx = Some(now);
        if silent {
            let wnd = if offered > 0 { offered } else { self.rcv_window() };
            let q = match wnd / (2 * self.rcv_mss.max(1)) {
                0 => 2,
                q => q.min(MAX_QUICKACKS),
            };
            self.quick = self.quick.max(q as u32);
        }
    }

    /// A segment of `len` bytes arrived: while the buffer has room beyond
    /// the threshold, the threshold grows by two segments (at least twice
    /// this one), and the caller ACKs at once (Linux's `tcp_grow_window`
    /// setting `icsk_ack.quick`). Segments under 128 bytes do not count.
    fn grow_rcv_ssthresh(&mut self, len: u64) -> bool {
        if len < 128 {
            return false;
        }
        let space = self.rcv_space();
        let room = space.saturating_sub(self.rcv_ssthresh);
        if room == 0 {
            return false;
        }
        self.rcv_ssthresh += room.min((2 * u64::from(self.cfg.mss)).max(2 * len));
        true
    }

    fn check_fin_received(&mut self) {
        if self.fin_received || self.rcv_fin != Some(self.rcv.nxt()) {
            return;
        }
        self.fin_received = true;
        self.ack_due = AckDue::Now;
        self.state = match self.state {
            State::Established => State::CloseWait,
            State::FinWait1 if self.fin_acked() => State::TimeWait,
            State::FinWait1 => State::Closing,
            State::FinWait2 => State::TimeWait,
            s => s,
        };
    }

    fn fin_acked(&self) -> bool {
        self.fin_sent && self.snd_una > self.app_end
    }

    /// The ACK field and window of a segment (the sender's half).
    fn on_ack(&mut self, now: Instant, h: &TcpHeader, pure: bool) {
        let Some(ack) = seq::unwrap(h.ack, self.iss.wrapping_add(1), self.snd_una) else { return };
        if ack > self.snd_nxt {
            self.ack_due = AckDue::Now; // acks what we never sent
            return;
        }
        if ack < self.snd_una {
            return; // old
        }
        let old_wnd = self.peer_wnd;
        self.peer_wnd = (h.window as u64) << self.snd_wscale;
        if self.peer_wnd > 0 {
            self.persist_at = None;
        }
        let outstanding_before = self.snd_nxt - self.snd_una;
        let (una_before, sacked_before) = (self.snd_una, self.board.sacked());
        let mut newly_sacked = 0;
        if self.sack_ok && !h.options.sack().is_empty() {
            let mut blocks: [Range<u64>; 4] = Default::default();
            let mut n = 0;
            for b in h.options.sack() {
                let (Some(l), Some(r)) = (seq::unwrap(b.left, self.iss.wrapping_add(1), self.snd_una), seq::unwrap(b.right, self.iss.wrapping_add(1), self.snd_una)) else {
                    continue;
                };
                let (l, r) = (l.max(ack), r.min(self.snd_nxt));
                if l < r {
                    blocks[n] = l..r;
                    n += 1;
                }
            }
            newly_sacked = self.board.sack(&blocks[..n]);
        }

        if ack > self.snd_una {
            let a = self.board.ack(ack);
            let payload = a.bytes - u64::from(self.fin_sent && ack > self.app_end && self.snd_una <= self.app_end);
            self.stats.bytes_acked += payload;
            self.snd_una = ack;
            self.dupacks = 0;
            self.dup_credit = self.dup_credit.saturating_sub(a.bytes);
            if let Some(t) = a.rtt_from {
                self.rtt.sample_at(now - t, ack, self.snd_nxt);
                self.cc_rtt_sample(now, now - t);
            }
            self.backoff = 0;
            self.stalled_since = None;
            self.tlp_done = false;
            self.rto_at = if self.board.is_empty() { None } else { Some(now + self.rtt.rto()) };
            self.after_new_ack(now, a.bytes);
        } else if pure && outstanding_before > 0 && self.peer_wnd == old_wnd && (!self.sack_ok || newly_sacked > 0 || !h.options.sack().is_empty()) {
            // With SACK a duplicate ACK reports a hole (RFC 6675 2 asks
            // for new SACKed data; a receiver repeating its blocks still
            // reports one, and Linux's do while a retransmission is lost).
            // A pure ACK with no SACK block at all only carries options —
            // MPTCP's ADD_ADDR, its echo, DATA_ACK updates — and three of
            // those must not look like a loss.
            self.dupacks += 1;
            if !self.sack_ok {
                self.dup_credit = (self.dup_credit + self.mss).min(outstanding_before);
            }
        } else if newly_sacked > 0 {
            // A SACK with a window update still reports a hole.
            self.dupacks += 1;
        }

        self.detect_loss(now);
        self.arm_tlp(now);
        if let Recovery::Fast { .. } = self.recovery {
            let delivered = (self.snd_una - una_before + self.board.sacked()).saturating_sub(sacked_before);
            self.reduce_rate(delivered);
        }

        if self.fin_acked() {
            self.state = match self.state {
                State::FinWait1 => State::FinWait2,
                State::Closing => State::TimeWait,
                State::LastAck => State::Closed,
                s => s,
            };
        }
    }

    fn cc_rtt_sample(&mut self, now: Instant, rtt: Duration) {
        let x = crate::cc::hystart::RttSample { now, rtt, snd_una: self.snd_una, snd_nxt: self.snd_nxt };
        self.cc.on_rtt_sample(&mut self.cc_state, &x);
    }

    fn after_new_ack(&mut self, now: Instant, acked: u64) {
        match self.recovery {
            Recovery::Fast { recover } => {
                if self.snd_una >= recover {
                    self.recovery = Recovery::Open;
                    self.cc.on_recovery_end(&mut self.cc_state, now);
                } else if !self.sack_ok {
                    // NewReno partial ACK: the next hole is lost too.
                    self.board.mark_head_lost();
                }
                return; // no window growth during fast recovery
            }
            Recovery::Loss { recover } if self.snd_una >= recover => self.recovery = Recovery::Open,
            _ => {}
        }
        self.cc_state.acked_since_loss += acked;
        let ev = AckEvent { now, acked, srtt: self.rtt.srtt(), min_rtt: self.rtt.min_rtt(), cwnd_limited: self.is_cwnd_limited(), coupling: self.coupling.as_ref() };
        self.cc.on_ack(&mut self.cc_state, &ev);
        self.cwnd_limited = false;
    }

    fn detect_loss(&mut self, now: Instant) {
        if self.board.is_empty() {
            return;
        }
        if self.sack_ok {
            self.board.mark_lost_by_sack(3 * self.mss);
            // RACK's reordering window: a quarter of the minimum RTT.
            let reo_wnd = self.rtt.min_rtt().unwrap_or_default() / 4;
            self.board.detect_lost_retransmits(reo_wnd);
            let rack_rtt = self.rtt.latest().or(self.rtt.srtt()).unwrap_or_default();
            let (_, timer) = self.board.rack_detect(now, rack_rtt, reo_wnd, 256);
            self.rack_at = timer;
        }
        if self.recovery == Recovery::Open && self.dupacks >= 3 && self.board.lost() == 0 {
            self.board.mark_head_lost();
        }
        if self.recovery == Recovery::Open && self.board.lost() > 0 {
            let in_flight = self.in_flight() + self.board.lost();
            self.cc_state.acked_last_interval = self.cc_state.acked_since_loss;
            self.cc_state.acked_since_loss = 0;
            self.cc.on_congestion_event(&mut self.cc_state, now, in_flight);
            self.recovery = Recovery::Fast { recover: self.snd_nxt };
            self.rexmit_allowance = true;
            self.stats.fast_recoveries += 1;
            self.recover_fs = self.snd_nxt - self.snd_una;
            self.prr_delivered = 0;
            self.prr_out = 0;
        }
    }

    /// PRR (RFC 6937, with slow-start reduction bound): during recovery the
    /// sender may send about what the peer received, scaled down to
    /// ssthresh, so the window shrinks smoothly instead of going silent and
    /// then bursting a whole window of retransmissions into a full queue.
    fn reduce_rate(&mut self, delivered: u64) {
        self.prr_delivered += delivered;
        let pipe = self.in_flight();
        let ssthresh = self.cc_state.ssthresh;
        let sndcnt = if pipe > ssthresh {
            let allowed = (self.prr_delivered as u128 * ssthresh as u128).div_ceil(self.recover_fs.max(1) as u128) as u64;
            allowed.saturating_sub(self.prr_out)
        } else {
            let limit = self.prr_delivered.saturating_sub(self.prr_out).max(delivered) + self.mss;
            (ssthresh - pipe).min(limit)
        };
        self.cc_state.cwnd = (pipe + sndcnt).max(self.mss);
    }

    // ------------------------------------------------------------ transmit

    /// The window we can advertise now: buffer space not held by data the
    /// application has not read.
    fn rcv_window(&self) -> u64 {
        let space = self.rcv_space();
        if self.cfg.grow_window_gradually {
            space.min(self.rcv_ssthresh)
        } else {
            space
        }
    }

    /// The window the next segment offers: the free space
    /// ([`rcv_window`](Self::rcv_window)), under `round_window_to_mss`
    /// without window scaling a whole number of the peer's segments
    /// (Linux keeps its last offer while that is within one segment of
    /// the free space, else rounds the free space down).
    fn window_to_advertise(&self) -> u64 {
        let free = self.rcv_window();
        if !self.cfg.round_window_to_mss || self.rcv_wscale != 0 {
            return free;
        }
        let mss = self.rcv_mss.max(1);
        let offered = self.adv_right.saturating_sub(self.rcv.nxt());
        if offered + mss > free && offered <= free {
            offered
        } else {
            free / mss * mss
        }
    }

    /// Buffer space not held by data the application has not read, within
    /// the cap a layer above set.
    fn rcv_space(&self) -> u64 {
        let own = self.cfg.rcv_buf.saturating_sub(self.rcv.nxt() - self.read_off);
        self.window_cap.map_or(own, |c| own.min(c))
    }

    /// The next segment to send, if any. Call until it returns `None`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        let mut t = Transmit::default();
        self.poll_transmit_into(now, &mut t).then_some(t)
    }

    /// [`poll_transmit`](Self::poll_transmit) into the caller's `t`: the
    /// segment is built where the caller keeps it (a multipath layer adds
    /// its options there), not returned up through every layer. Returns
    /// false (and leaves `t` unspecified) when there is nothing to send.
    pub fn poll_transmit_into(&mut self, now: Instant, t: &mut Transmit) -> bool {
        match self.state {
            State::Closed if self.rst_due => {
                self.rst_due = false;
                self.segment(now, self.snd_nxt, 0, flags::RST | flags::ACK, false, t);
                t.header.options = TcpOptions::new();
                return true;
            }
            State::Closed => return false,
            State::SynSent | State::SynReceived if !self.synced => {
                if self.syn_due {
                    self.syn_segment(now, t);
                    return true;
                }
                if !self.sends_early() {
                    return false;
                }
            }
            _ => {}
        }
        if self.retransmit(now, t) {
            return true;
        }
        if self.tlp_due {
            // The probe: new data if there is some (the window is ignored
            // once), else the last segment again.
            self.tlp_due = false;
            self.probe_new_data = true;
            let sent = self.new_data(now, t);
            self.probe_new_data = false;
            if sent {
                return true;
            }
            if let Some(r) = self.board.probe_tail() {
                let len = r.range.end - r.range.start;
                let payload = len - u64::from(r.fin);
                self.stats.segments_retransmitted += 1;
                self.stats.bytes_retransmitted += payload;
                let fl = flags::ACK | if r.fin { flags::FIN } else { 0 };
                self.segment(now, r.range.start, payload, fl, true, t);
                return true;
            }
        }
        if self.new_data(now, t) {
            return true;
        }
        if self.probe_due {
            self.probe_due = false;
            self.zero_window_probe(now, t);
            return true;
        }
        if self.ack_due == AckDue::Now || self.window_update_due() {
            self.segment(now, self.snd_nxt, 0, flags::ACK, false, t);
            return true;
        }
        false
    }

    fn syn_segment(&mut self, now: Instant, t: &mut Transmit) {
        self.syn_due = false;
        let room = self.syn_data_room();
        if self.syn_sent_at.is_none() {
            self.syn_sent_at = Some(now);
        }
        let mut o = TcpOptions::new();
        let server = self.state == State::SynReceived;
        o.mss = Some(self.cfg.mss);
        // A SYN-ACK carries an option only if the SYN offered it.
        if self.cfg.wscale && (!server || self.peer_syn.wscale.is_some()) {
            o.wscale = Some(self.rcv_wscale);
        }
        o.sack_permitted = self.cfg.sack && (!server || self.peer_syn.sack_permitted);
        if self.cfg.timestamps && (!server || self.peer_syn.timestamps.is_some()) {
            o.timestamps = Some(Timestamps { tsval: now_ms(now), tsecr: if server { self.ts_recent } else { 0 } });
        }
        let mut fl = flags::SYN;
        let mut ack = 0;
        if server {
            fl |= flags::ACK;
            ack = self.irs.wrapping_add(1).wrapping_add(self.syn_rx as u32);
        }
        // Fast Open: the first SYN carries what was written before it (up
        // to the first record's end); a retransmitted SYN goes bare, as
        // Linux's, and the bytes follow the handshake unless the SYN-ACK
        // acknowledges them (the first SYN may have arrived).
        let mut n = 0;
        if room > 0 {
            n = self.app_end.min(room);
            if let Some(&e) = self.record_ends.front() {
                n = n.min(e);
            }
            self.syn_tx = n;
            self.snd_nxt = n;
            self.stats.bytes_sent += n;
        }
        let header = TcpHeader {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: self.iss,
            ack,
            flags: fl,
            window: self.cfg.rcv_buf.min(65535) as u16,
            urgent: 0,
            options: o,
        };
        self.adv_right = self.cfg.rcv_buf.min(65535);
        // The handshake backs off to TCP's own ceiling (Linux: 1, 2, 4 ...
        // s, about a minute in all over tcp_syn_retries): a ceiling set for
        // an established subflow's data (mplab's 1 s) would make a SYN
        // give up after 7 s on a congested path.
        let clock = self.cfg.timer_clock;
        self.rto_at = Some(clock.fires(now, clock.backed_off(self.rtt.rto(), self.backoff, HANDSHAKE_MAX_BACKOFF)));
        self.stats.segments_sent += 1;
        *t = Transmit { header, payload: 0..n, retransmission: self.syn_tries > 0 };
    }

    fn retransmit(&mut self, now: Instant, t: &mut Transmit) -> bool {
        let Some(r) = self.board.next_resend() else { return false };
        let len = r.range.end - r.range.start;
        if self.in_flight() + len > self.cc_state.cwnd && !self.rexmit_allowance {
            self.cwnd_limited = true;
            return false;
        }
        self.rexmit_allowance = false;
        self.board.resent(r.range.start, now);
        self.prr_out += len;
        let payload = len - u64::from(r.fin);
        self.stats.segments_retransmitted += 1;
        self.stats.bytes_retransmitted += payload;
        if self.rto_at.is_none() {
            self.rto_at = Some(self.timer_after_rto(now, self.backoff));
        }
        let fl = flags::ACK | if r.fin { flags::FIN } else { 0 };
        self.segment(now, r.range.start, payload, fl, true, t);
        true
    }

    fn new_data(&mut self, now: Instant, t: &mut Transmit) -> bool {
        let avail = self.app_end.saturating_sub(self.snd_nxt);
        // No FIN before the handshake completes (a Fast Open server's
        // early data): the state machine takes it from ESTABLISHED.
        let fin_now = self.fin_queued && !self.fin_sent && self.synced;
        if avail == 0 && !(fin_now && self.snd_nxt == self.app_end) {
            return false;
        }
        let mut len = avail.min(self.mss);
        while self.record_ends.front().is_some_and(|&e| e <= self.snd_nxt) {
            self.record_ends.pop_front();
        }
        if let Some(&e) = self.record_ends.front() {
            len = len.min(e - self.snd_nxt);
        }
        let wnd_end = self.snd_una + self.peer_wnd;
        if len > 0 && self.snd_nxt + len > wnd_end {
            if self.snd_nxt >= wnd_end || (wnd_end - self.snd_nxt < self.mss && self.snd_nxt > self.snd_una) {
                // Receiver-limited. With nothing in flight no ACK will come
                // to reopen the window: probe it when the persist timer fires.
                if self.board.is_empty() && self.persist_at.is_none() {
                    self.persist_at = Some(self.timer_after_rto(now, self.backoff));
                }
                return false;
            }
            len = wnd_end - self.snd_nxt;
        }
        if self.cfg.slow_start_after_idle && self.snd_nxt == self.snd_una {
            self.restart_after_idle(now);
        }
        if len > 0 && self.in_flight() + len > self.cc_state.cwnd && !self.probe_new_data {
            self.cwnd_limited = true;
            if self.cfg.cwnd_limited_per_round {
                self.validate_cwnd(true);
            }
            return false;
        }
        let fin = fin_now && self.snd_nxt + len == self.app_end;
        let start = self.snd_nxt;
        let seq_len = len + u64::from(fin);
        self.board.push(start..start + seq_len, fin, now);
        self.snd_nxt += seq_len;
        self.prr_out += seq_len;
        if fin {
            self.fin_sent = true;
        }
        if self.rto_at.is_none() {
            self.rto_at = Some(self.timer_after_rto(now, self.backoff));
        }
        self.arm_tlp(now);
        if self.cfg.cwnd_limited_per_round {
            let full = self.in_flight() + self.mss > self.cc_state.cwnd;
            self.validate_cwnd(full);
        }
        let fl = flags::ACK | if fin { flags::FIN } else { 0 } | if len > 0 && self.snd_nxt >= self.app_end { flags::PSH } else { 0 };
        self.segment(now, start, len, fl, false, t);
        true
    }

    /// One byte beyond a zero window (RFC 9293 3.8.6.1); it is sent as new
    /// data and retransmitted like any other when the window reopens.
    fn zero_window_probe(&mut self, now: Instant, t: &mut Transmit) {
        self.persist_at = Some(self.timer_after_rto(now, self.backoff + 1));
        self.backoff = (self.backoff + 1).min(15);
        if self.snd_nxt < self.app_end && self.board.is_empty() {
            let start = self.snd_nxt;
            self.board.push(start..start + 1, false, now);
            self.snd_nxt += 1;
            self.rto_at = Some(self.timer_after_rto(now, self.backoff));
            return self.segment(now, start, 1, flags::ACK, false, t);
        }
        self.segment(now, self.snd_nxt, 0, flags::ACK, false, t);
    }

    /// After the application read a lot, tell a sender that may be stalled.
    fn window_update_due(&self) -> bool {
        if !self.synced || self.fin_received {
            return false;
        }
        let right = self.rcv.nxt() + self.rcv_window();
        let last_wnd = self.adv_right.saturating_sub(self.rcv.nxt());
        right >= self.adv_right + 2 * self.mss && last_wnd < self.cfg.rcv_buf / 2
    }

    /// Builds a segment starting at data offset `start` with `len` payload
    /// bytes; every segment carries the current ACK and window.
    fn segment(&mut self, now: Instant, start: u64, len: u64, fl: u8, retransmission: bool, t: &mut Transmit) {
        if len > 0 {
            self.last_data_tx = Some(now);
        }
        let wnd = self.window_to_advertise();
        let right = (self.rcv.nxt() + wnd).max(self.adv_right);
        self.adv_right = right;
        let field = ((right - self.rcv.nxt()) >> self.rcv_wscale).min(65535) as u16;
        let rcv_seq = self.rcv.nxt() + u64::from(self.fin_received);
        // Built in the caller's slot, options filled in place: the header
        // is ~350 bytes and every segment of a simulation is made here.
        *t = Transmit {
            header: TcpHeader {
                src_port: self.local_port,
                dst_port: self.remote_port,
                seq: seq::wrap(start, self.iss.wrapping_add(1)),
                ack: seq::wrap(rcv_seq, self.irs.wrapping_add(1)),
                flags: fl,
                window: field,
                urgent: 0,
                options: TcpOptions::new(),
            },
            payload: start..start + len,
            retransmission,
        };
        let o = &mut t.header.options;
        if self.ts_ok {
            o.timestamps = Some(Timestamps { tsval: now_ms(now), tsecr: self.ts_recent });
        }
        if self.sack_ok && self.rcv.has_holes() {
            let mut r: [Range<u64>; 4] = Default::default();
            let max = if self.ts_ok { 3 } else { 4 };
            let n = self.rcv.sack_blocks(&mut r[..max]);
            // A FIN held out of order occupies its sequence number in the
            // block that ends at it, as Linux's receiver reports it (the
            // FIN is part of the queued skb's end_seq): the sender's last
            // segment then counts as SACKed, FIN and all.
            if let Some(fin) = self.rcv_fin {
                for x in r[..n].iter_mut().filter(|x| x.end == fin) {
                    x.end += 1;
                }
            }
            let base = self.irs.wrapping_add(1);
            let mut blocks = [SackBlock::default(); 4];
            for (b, x) in blocks.iter_mut().zip(&r[..n]) {
                *b = SackBlock { left: seq::wrap(x.start, base), right: seq::wrap(x.end, base) };
            }
            o.set_sack(&blocks[..n]);
        }
        self.ack_due = AckDue::None;
        self.unacked_segments = 0;
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len;
    }
}

/// The smallest window-scale shift that lets `buf` be advertised.
fn wscale_for(buf: u64) -> u8 {
    let mut s = 0;
    while s < 14 && (buf >> s) > 65535 {
        s += 1;
    }
    s
}

#[cfg(test)]
mod tests;
