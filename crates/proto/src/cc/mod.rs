//! Congestion control behind one trait, so that a TCP connection or an
//! MPTCP subflow can run any algorithm and a user can add one in one file.
//!
//! The connection owns the window ([`CcState`]: cwnd, ssthresh, MSS, all in
//! bytes) and tells the algorithm what happened: data acknowledged, a
//! congestion event (fast retransmit), a retransmission timeout, the end of
//! recovery. The algorithm moves cwnd and ssthresh; it never sees segments.

use core::fmt::Debug;
use core::time::Duration;

use crate::registry::{self, Choice, Entry, KernelMap};
use crate::time::Instant;

pub mod balia;
mod coupled;
mod cubic;
pub mod hystart;
pub mod lia;
pub mod olia;
mod reno;

pub use balia::Balia;
pub use cubic::Cubic;
pub use lia::Lia;
pub use olia::Olia;
pub use reno::Reno;

/// Initial window: 10 segments (RFC 6928, Linux's default).
pub const INITIAL_WINDOW_SEGMENTS: u64 = 10;

/// The congestion window as the connection and the algorithm share it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CcState {
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes (`u64::MAX` until the first loss).
    pub ssthresh: u64,
    /// Payload bytes of a full segment.
    pub mss: u64,
    /// Bytes acknowledged since the last congestion event, and between the
    /// two before it (OLIA's l1 and l2; kept by the connection).
    pub acked_since_loss: u64,
    pub acked_last_interval: u64,
    /// How often slow start was left by each of HyStart's signals, and
    /// the windows it was left at (Linux's TCPHystart* counters).
    pub hystart: hystart::HyStartExits,
}

impl CcState {
    pub fn new(mss: u64) -> Self {
        CcState { cwnd: INITIAL_WINDOW_SEGMENTS * mss, ssthresh: u64::MAX, mss, acked_since_loss: 0, acked_last_interval: 0, hystart: Default::default() }
    }
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
    /// The floor every algorithm keeps: two segments.
    pub fn min_cwnd(&self) -> u64 {
        2 * self.mss
    }
}

/// One subflow of a multipath connection, as a coupled congestion control
/// sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathState {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub mss: u64,
    pub srtt: Option<Duration>,
    /// Bytes acknowledged between its last losses: max(l1, l2) in OLIA.
    pub loss_interval: u64,
}

/// What a coupled (multipath) congestion control knows about the subflows
/// of its connection. The MPTCP connection refreshes it before each ACK a
/// subflow processes; plain TCP has none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Coupling {
    /// This subflow's position in `paths`.
    pub me: usize,
    /// Every established, non-backup subflow carrying data, this one included.
    pub paths: Vec<PathState>,
}

/// New data was cumulatively acknowledged.
#[derive(Debug, Clone, Copy)]
pub struct AckEvent<'a> {
    pub now: Instant,
    /// Bytes newly acknowledged by this ACK.
    pub acked: u64,
    /// Smoothed and minimum RTT of the connection, when measured.
    pub srtt: Option<Duration>,
    pub min_rtt: Option<Duration>,
    /// Whether the sender was limited by cwnd (not by the application or
    /// the receive window) since the last ACK: windows grow only then
    /// (RFC 7661's idea; Linux's `tcp_is_cwnd_limited`).
    pub cwnd_limited: bool,
    /// The sibling subflows, for coupled algorithms (None on plain TCP).
    pub coupling: Option<&'a Coupling>,
}

/// A congestion-control algorithm. One instance per connection (subflow).
pub trait CongestionControl: Debug {
    /// Name as scenario files write it (`"reno"`, `"cubic"`, ...).
    fn name(&self) -> &'static str;
    /// Whether it needs [`AckEvent::coupling`] (multipath-aware).
    fn coupled(&self) -> bool {
        false
    }
    /// An RTT sample taken from an ACK (Linux's `pkts_acked`), before
    /// `on_ack` and also during recovery.
    fn on_rtt_sample(&mut self, _s: &mut CcState, _x: &hystart::RttSample) {}
    /// Grow the window on new acknowledged data (outside loss recovery).
    fn on_ack(&mut self, s: &mut CcState, ev: &AckEvent<'_>);
    /// Loss detected by duplicate ACKs / SACK: set ssthresh and cwnd for the
    /// recovery period.
    fn on_congestion_event(&mut self, s: &mut CcState, now: Instant, in_flight: u64);
    /// Retransmission timeout: collapse the window.
    fn on_rto(&mut self, s: &mut CcState, now: Instant, in_flight: u64) {
        self.on_congestion_event(s, now, in_flight);
        s.cwnd = s.mss;
    }
    /// Fast recovery ended (all data outstanding at its start is acked).
    fn on_recovery_end(&mut self, s: &mut CcState, _now: Instant) {
        s.cwnd = s.ssthresh.max(s.min_cwnd());
    }
}

/// Slow start (RFC 5681 with RFC 3465 byte counting, as Linux does it: no
/// L limit), capped at ssthresh; returns the bytes left for congestion
/// avoidance when the ACK crossed ssthresh.
pub fn slow_start(s: &mut CcState, acked: u64) -> u64 {
    let room = s.ssthresh.saturating_sub(s.cwnd);
    let grow = acked.min(room);
    s.cwnd += grow;
    acked - grow
}

/// The bytes of this ACK left for congestion avoidance: none when the
/// sender was not limited by cwnd (windows grow only then), and slow
/// start's share already applied to `s`.
pub fn avoidance_bytes(s: &mut CcState, ev: &AckEvent<'_>) -> u64 {
    if !ev.cwnd_limited {
        return 0;
    }
    if s.in_slow_start() {
        slow_start(s, ev.acked)
    } else {
        ev.acked
    }
}

/// A validated congestion-control choice (see [`crate::registry`]).
pub type CcChoice = Choice<dyn CongestionControl>;

const COUPLED: KernelMap = KernelMap::Refuse("upstream Linux has no coupled congestion control for MPTCP subflows");

/// The built-in congestion controls by scenario name: one line each.
pub static REGISTRY: &[Entry<dyn CongestionControl>] = &[
    Entry { name: "reno", aliases: &[], params: "", kernel: KernelMap::Linux("reno"), build: |p| p.is_none().then(|| Box::new(Reno::default()) as Box<dyn CongestionControl>) },
    Entry { name: "cubic", aliases: &[], params: "", kernel: KernelMap::Linux("cubic"), build: |p| p.is_none().then(|| Box::new(Cubic::default()) as Box<dyn CongestionControl>) },
    Entry { name: "lia", aliases: &[], params: "", kernel: COUPLED, build: |p| p.is_none().then(|| Box::new(Lia::default()) as Box<dyn CongestionControl>) },
    Entry { name: "olia", aliases: &[], params: "", kernel: COUPLED, build: |p| p.is_none().then(|| Box::new(Olia::default()) as Box<dyn CongestionControl>) },
    Entry { name: "balia", aliases: &[], params: "", kernel: COUPLED, build: |p| p.is_none().then(|| Box::new(Balia::default()) as Box<dyn CongestionControl>) },
];

/// The congestion control `name` names, validated.
pub fn lookup(name: &str) -> Result<CcChoice, String> {
    registry::lookup(REGISTRY, "congestion control", name)
}

impl Default for CcChoice {
    fn default() -> Self {
        lookup("cubic").expect("cubic is registered")
    }
}
