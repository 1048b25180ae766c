//! Packet schedulers: which subflow carries the next chunk of data.
//!
//! A scheduler sees a read-only view of every subflow ([`SubflowInfo`]) and
//! of the connection ([`SchedContext`]) and names the subflow(s) that should
//! carry the next chunk of data; the connection does the rest (mapping,
//! sending, reinjection). Writing a new one is one file implementing
//! [`Scheduler`]; see `docs/schedulers.md` and
//! `crates/proto/examples/my_scheduler.rs`.
//!
//! | name | module |
//! |---|---|
//! | `minrtt` (alias `default`) | [`minrtt`] |
//! | `linux` | [`linux`] |
//! | `roundrobin` | [`roundrobin`] |
//! | `kbest` / `kbest:K` | [`kbest`] |
//! | `redundant` | [`redundant`] |
//! | `primary`, `primary-standby` | [`primary`] |
//! | `blest` | [`blest`] |
//! | `ecf` | [`ecf`] |
//! | `weighted:W0/W1/...` | [`weighted`] |

use core::fmt::Debug;
use core::time::Duration;

use crate::registry::{self, Choice, Entry, KernelMap};
use crate::time::Instant;

pub mod blest;
pub mod ecf;
pub mod kbest;
pub mod linux;
pub mod minrtt;
pub mod primary;
pub mod redundant;
pub mod roundrobin;
pub mod weighted;

pub use blest::Blest;
pub use ecf::Ecf;
pub use kbest::KBest;
pub use linux::Linux;
pub use minrtt::MinRtt;
pub use primary::Primary;
pub use redundant::Redundant;
pub use roundrobin::RoundRobin;
pub use weighted::Weighted;

/// What a scheduler may know about one subflow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubflowInfo {
    /// Position in the connection's subflow list (stable while it lives).
    pub index: usize,
    pub srtt: Option<Duration>,
    /// RTT variation (RFC 6298 RTTVAR); zero before the first sample.
    pub rttvar: Duration,
    pub cwnd: u64,
    /// Slow-start threshold, bytes (`u64::MAX` before the first loss).
    pub ssthresh: u64,
    /// Bytes in the network by the loss detector's estimate (RFC 6675 pipe).
    pub in_flight: u64,
    /// Bytes sent and not yet cumulatively acknowledged, SACKed ones
    /// included (at least `in_flight`'s segments).
    pub unacked: u64,
    /// Payload bytes per full segment.
    pub mss: u64,
    /// Either end asked for this subflow to be used only as a backup.
    pub backup: bool,
    /// Established, joined and not stale: it can carry data.
    pub usable: bool,
    /// A full segment would go out now (cwnd and receive window permit).
    pub has_window: bool,
    /// Bytes queued on it and not yet sent.
    pub unsent: u64,
    /// Its send buffer, bytes: what it may hold, sent or not, until
    /// acknowledged (Linux: `sk_sndbuf`, autotuned by the `linux` profile).
    pub sndbuf: u64,
}

impl SubflowInfo {
    /// Smoothed RTT, or "infinitely far" before the first sample.
    pub fn rtt(&self) -> Duration {
        self.srtt.unwrap_or(Duration::MAX)
    }
    /// Congestion window in segments (at least one).
    pub fn cwnd_segments(&self) -> f64 {
        (self.cwnd as f64 / self.mss.max(1) as f64).max(1.0)
    }
}

/// What a scheduler may know about the connection for the chunk at hand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SchedContext {
    /// Bytes in this chunk.
    pub len: u64,
    pub now: Instant,
    /// The chunk is a reinjection (data some subflow already carried).
    pub reinjection: bool,
    /// Data-level bytes the application queued that no subflow carries yet
    /// (this chunk included).
    pub queued: u64,
    /// Data-level bytes handed to subflows and not yet DATA_ACKed.
    pub outstanding: u64,
    /// The data-level send window: min(peer's receive window, send buffer).
    pub send_window: u64,
    /// How many times so far the connection-level window (the peer's
    /// receive window, or a full send buffer) held data back while a
    /// subflow had room: head-of-line blocking as the sender sees it. A
    /// scheduler compares it with the value it last saw (BLEST adapts its
    /// lambda on it).
    pub window_blocked: u64,
}

/// The scheduler's decision for one chunk of data.
pub trait Scheduler: Debug {
    fn name(&self) -> &'static str;
    /// Picks the subflows that carry the next `cx.len` bytes: push their
    /// indices into `out` (one for most schedulers, several for a redundant
    /// one); leave it empty to wait until windows open.
    fn schedule(&mut self, subflows: &[SubflowInfo], cx: &SchedContext, out: &mut Vec<usize>);
    /// A scheduling pass begins: the connection is about to hand out what
    /// it may send now (Linux's push). Schedulers that keep a choice for a
    /// while decide here whether it outlives the push.
    fn begin_pass(&mut self) {}
}

/// The subflows a scheduler may use at all: usable ones, and backups only
/// when no regular subflow is usable (RFC 8684 3.3.8, Linux).
pub fn active(sf: &[SubflowInfo]) -> impl Iterator<Item = &SubflowInfo> {
    let any_regular = sf.iter().any(|s| s.usable && !s.backup);
    sf.iter().filter(move |s| s.usable && !(any_regular && s.backup))
}

/// The usable subflow with the lowest RTT (window or not).
pub fn fastest(sf: &[SubflowInfo]) -> Option<&SubflowInfo> {
    active(sf).min_by_key(|s| (s.rtt(), s.index))
}

/// A validated scheduler choice (see [`crate::registry`]).
pub type SchedulerChoice = Choice<dyn Scheduler>;

fn no_param<S: Scheduler + 'static>(make: fn() -> S) -> impl Fn(Option<&str>) -> Option<Box<dyn Scheduler>> {
    move |p| p.is_none().then(|| Box::new(make()) as Box<dyn Scheduler>)
}

/// The built-in schedulers by scenario name: one line each.
pub static REGISTRY: &[Entry<dyn Scheduler>] = &[
    // `default` is each stack's own default: minRTT in mplab's stack, the
    // in-kernel scheduler on the kernel backend (a stack difference, see
    // docs/schedulers.md).
    Entry { name: "default", aliases: &[], params: "", kernel: KernelMap::Linux("default"), build: |p| no_param(|| MinRtt)(p) },
    Entry { name: "minrtt", aliases: &[], params: "", kernel: KernelMap::Refuse("Linux's in-kernel scheduler is not plain minRTT (`linux` models it, `default` runs it)"), build: |p| no_param(|| MinRtt)(p) },
    Entry { name: "linux", aliases: &[], params: "", kernel: KernelMap::Linux("default"), build: |p| no_param(Linux::default)(p) },
    Entry { name: "roundrobin", aliases: &["rr"], params: "", kernel: KernelMap::Refuse("Linux has no round-robin MPTCP scheduler (only BPF ones, none registered here)"), build: |p| no_param(RoundRobin::default)(p) },
    Entry {
        name: "kbest",
        aliases: &[],
        params: "K",
        kernel: KernelMap::Refuse("Linux has no k-best MPTCP scheduler"),
        build: |p| match p {
            None => Some(Box::new(KBest::new(2))),
            Some(k) => k.parse::<usize>().ok().filter(|&k| k > 0).map(|k| Box::new(KBest::new(k)) as Box<dyn Scheduler>),
        },
    },
    Entry { name: "redundant", aliases: &[], params: "", kernel: KernelMap::Refuse("Linux has no redundant MPTCP scheduler"), build: |p| no_param(|| Redundant)(p) },
    Entry { name: "primary", aliases: &[], params: "", kernel: KernelMap::Refuse("Linux has no primary/overflow MPTCP scheduler"), build: |p| no_param(Primary::overflow)(p) },
    Entry { name: "primary-standby", aliases: &[], params: "", kernel: KernelMap::Refuse("Linux expresses standby with backup endpoints, not a scheduler"), build: |p| no_param(Primary::standby)(p) },
    Entry { name: "blest", aliases: &[], params: "", kernel: KernelMap::Refuse("Linux has no BLEST MPTCP scheduler"), build: |p| no_param(Blest::default)(p) },
    Entry { name: "ecf", aliases: &[], params: "", kernel: KernelMap::Refuse("Linux has no ECF MPTCP scheduler"), build: |p| no_param(Ecf::default)(p) },
    Entry { name: "weighted", aliases: &[], params: "W0/W1/...", kernel: KernelMap::Refuse("Linux has no weighted MPTCP scheduler"), build: |p| p.map_or(Some(Weighted::equal()), Weighted::parse).map(|w| Box::new(w) as Box<dyn Scheduler>) },
];

impl Default for SchedulerChoice {
    fn default() -> Self {
        lookup("minrtt").expect("minrtt is registered")
    }
}

/// The scheduler `name` names (`"kbest:3"`), validated.
pub fn lookup(name: &str) -> Result<SchedulerChoice, String> {
    registry::lookup(REGISTRY, "scheduler", name)
}

/// Builds a scheduler by scenario name (None: unknown or a bad parameter).
pub fn by_name(name: &str) -> Option<Box<dyn Scheduler>> {
    lookup(name).ok().map(|c| c.build())
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;

    pub fn sf(index: usize, rtt_ms: u64, backup: bool, has_window: bool) -> SubflowInfo {
        SubflowInfo {
            index,
            srtt: Some(Duration::from_millis(rtt_ms)),
            rttvar: Duration::ZERO,
            cwnd: 14_000,
            ssthresh: u64::MAX,
            in_flight: 0,
            unacked: 0,
            mss: 1400,
            backup,
            usable: true,
            has_window,
            unsent: 0,
            sndbuf: crate::mptcp::sndbuf::subflow_sndbuf(0, 10, 4 << 20),
        }
    }

    pub fn cx() -> SchedContext {
        SchedContext { len: 1400, now: Instant(0), reinjection: false, queued: 1400, outstanding: 0, send_window: 1 << 20, window_blocked: 0 }
    }

    pub fn pick(s: &mut dyn Scheduler, sf: &[SubflowInfo]) -> Vec<usize> {
        let mut out = vec![];
        s.schedule(sf, &cx(), &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_build_and_parameters_parse() {
        for n in ["minrtt", "default", "linux", "roundrobin", "kbest", "kbest:3", "redundant", "primary", "primary-standby", "primary_standby", "blest", "ecf", "weighted", "weighted:70/30"] {
            assert!(by_name(n).is_some(), "{n}");
        }
        assert_eq!(by_name("kbest:3").unwrap().name(), "kbest");
        assert_eq!(by_name("default").unwrap().name(), "minrtt");
        for n in ["kbest:0", "kbest:x", "minrtt:2", "nope", "weighted:0/0"] {
            assert!(by_name(n).is_none(), "{n}");
            assert!(lookup(n).is_err(), "{n}");
        }
        assert!(lookup("nope").unwrap_err().contains("kbest[:K]"));
        assert_eq!(lookup("kbest:3").unwrap().name(), "kbest:3");
    }
}
