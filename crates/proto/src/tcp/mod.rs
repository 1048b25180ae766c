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
//!
//! The [`Connection`] and its accessors live here; its behaviour is split
//! by concept: `handshake` (SYN, SYN-ACK, options, Fast Open), `input`
//! (segment arrival, the ACK field), `output` (what goes next and the
//! segment builder), `ack_policy` (delayed and quick ACKs, the advertised
//! window, SACK blocks sent), `recovery` (loss marking, RACK, PRR, the tail
//! loss probe), `cwnd` (window validation, restart after idle),
//! `timeout` (what each timer does when it fires) over the `timers` table,
//! and `app` (the application's calls). [`scoreboard`], [`rtt`],
//! [`reassembly`], [`seq`] and [`timer_clock`] are the data structures
//! under them.

mod ack_policy;
mod app;
mod config;
mod cwnd;
mod handshake;
mod input;
mod output;
pub mod reassembly;
mod recovery;
pub mod rtt;
pub mod scoreboard;
pub mod seq;
mod timeout;
pub mod timer_clock;
mod timers;

use core::ops::Range;
use core::time::Duration;
use std::net::SocketAddr;

use mplab_wire::{TcpHeader, TcpOptions};

use crate::cc::{CcState, CongestionControl, Coupling, PathState};
use crate::time::Instant;

pub use config::{TcpConfig, INITIAL_RCV_SSTHRESH};
pub use timer_clock::TimerClock;
use reassembly::Reassembly;
use rtt::RttEstimator;
use scoreboard::Scoreboard;
use timers::Timers;

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
    /// ACKs not sent for segments outside the window without data (at
    /// most one per [`OOW_ACK_INTERVAL`]; Linux's TCPACKSkippedSeq).
    pub oow_acks_skipped: u64,
    /// RSTs not believed: not at exactly RCV.NXT (RFC 5961 3.2).
    pub rsts_ignored: u64,
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

/// The least time between two ACKs answering data-less segments outside
/// the receive window (Linux's net.ipv4.tcp_invalid_ratelimit default).
pub const OOW_ACK_INTERVAL: core::time::Duration = core::time::Duration::from_millis(500);

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
    /// The largest window the peer has offered (Linux's max_window).
    max_peer_wnd: u64,
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
    /// The retransmission, zero-window probe, tail loss probe and RACK
    /// reordering timers.
    timers: Timers,
    backoff: u32,
    /// First retransmission timeout of the current run without progress.
    stalled_since: Option<Instant>,
    probe_due: bool,
    /// Tail loss probe (RFC 8985 7): whether this tail was probed already,
    /// and whether the probe is owed now.
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
    /// The RST answering a segment that arrived after the connection
    /// closed: (SEQ, ACK field if the RST carries ACK).
    rst_reply: Option<(u32, Option<u32>)>,
    /// When the last ACK answering a data-less segment outside the window
    /// went out.
    last_oow_ack: Option<Instant>,
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
        let rcv_ssthresh = cfg.initial_rcv_ssthresh;
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
            max_peer_wnd: 0,
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
            timers: Timers::default(),
            backoff: 0,
            stalled_since: None,
            probe_due: false,
            tlp_done: false,
            tlp_due: false,
            probe_new_data: false,
            syn_due: true,
            syn_sent_at: None,
            syn_retransmitted: false,
            syn_tries: 0,
            rst_due: false,
            rst_reply: None,
            last_oow_ack: None,
            syn_tx: 0,
            syn_tx_acked: 0,
            syn_rx: 0,
            rcv: Reassembly::new(0),
            read_off: 0,
            rcv_fin: None,
            fin_received: false,
            ack_due: AckDue::None,
            window_cap: None,
            rcv_ssthresh,
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

    /// How far the application has read (stream offset).
    pub fn read_offset(&self) -> u64 {
        self.read_off
    }

    /// RCV.NXT as a wire sequence number (what an on-path observer sees).
    pub fn rcv_nxt_seq(&self) -> u32 {
        seq::wrap(self.rcv.nxt(), self.irs.wrapping_add(1))
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
            self.in_flight(), self.board.lost(), self.board.sacked(), self.board.highest_sack(), self.dupacks, self.peer_wnd, self.timers.rto, self.cwnd_limited
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

    /// Oldest unacknowledged stream offset of the send side.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// SND.UNA as a sequence number: the ACK number an on-path observer
    /// knows to be acceptable.
    pub fn snd_una_seq(&self) -> u32 {
        seq::wrap(self.snd_una, self.iss.wrapping_add(1))
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

    /// The peer's receive window (bytes), as last advertised.
    pub fn peer_window(&self) -> u64 {
        self.peer_wnd
    }

    /// When the next of the timers Linux keeps in a socket's one
    /// retransmission timer slot fires (`icsk_timeout`: the RTO, the zero
    /// window probe, the tail loss probe, RACK's reordering timer): while
    /// a tail loss probe is armed, that is the probe's time, often well
    /// before the RTO. MPTCP's connection-level timer in Linux takes its
    /// period from it (`mptcp_timeout_from_subflow`).
    pub fn retransmit_slot_deadline(&self) -> Option<Instant> {
        self.timers.next_deadline()
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

    /// When a timer armed now for the RTO after `backoff` doublings fires.
    pub(super) fn timer_after_rto(&self, now: Instant, backoff: u32) -> Instant {
        let clock = self.cfg.timer_clock;
        clock.fires(now, clock.backed_off(self.rtt.rto(), backoff, self.rtt.max_backoff()))
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
