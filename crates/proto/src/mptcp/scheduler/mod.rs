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

use core::fmt::Debug;
use core::time::Duration;

use crate::time::Instant;

pub mod blest;
pub mod ecf;
pub mod kbest;
pub mod linux;
pub mod minrtt;
pub mod primary;
pub mod redundant;
pub mod roundrobin;

pub use blest::Blest;
pub use ecf::Ecf;
pub use kbest::KBest;
pub use linux::Linux;
pub use minrtt::MinRtt;
pub use primary::Primary;
pub use redundant::Redundant;
pub use roundrobin::RoundRobin;

/// What a scheduler may know about one subflow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubflowInfo {
    /// Position in the connection's subflow list (stable while it lives).
    pub index: usize,
    pub srtt: Option<Duration>,
    /// RTT variation (RFC 6298 RTTVAR); zero before the first sample.
    pub rttvar: Duration,
    pub cwnd: u64,
    pub in_flight: u64,
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

/// Builds a scheduler by scenario name. A parameter follows a colon
/// (`"kbest:3"`); `-` and `_` are the same in names.
pub fn by_name(name: &str) -> Option<Box<dyn Scheduler>> {
    let (base, param) = match name.split_once(':') {
        Some((b, p)) => (b, Some(p.parse::<usize>().ok().filter(|&k| k > 0)?)),
        None => (name, None),
    };
    let base = base.replace('_', "-");
    let s: Box<dyn Scheduler> = match (base.as_str(), param) {
        ("minrtt" | "default", None) => Box::new(MinRtt),
        ("linux", None) => Box::new(Linux),
        ("roundrobin" | "rr", None) => Box::new(RoundRobin::default()),
        ("kbest", k) => Box::new(KBest::new(k.unwrap_or(2))),
        ("redundant", None) => Box::new(Redundant),
        ("primary", None) => Box::new(Primary::overflow()),
        ("primary-standby", None) => Box::new(Primary::standby()),
        ("blest", None) => Box::new(Blest::default()),
        ("ecf", None) => Box::new(Ecf::default()),
        _ => return None,
    };
    Some(s)
}

/// Every name [`by_name`] knows (for messages).
pub const NAMES: &[&str] = &["minrtt", "default", "linux", "roundrobin", "kbest[:K]", "redundant", "primary", "primary-standby", "blest", "ecf"];

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;

    pub fn sf(index: usize, rtt_ms: u64, backup: bool, has_window: bool) -> SubflowInfo {
        SubflowInfo {
            index,
            srtt: Some(Duration::from_millis(rtt_ms)),
            rttvar: Duration::ZERO,
            cwnd: 14_000,
            in_flight: 0,
            mss: 1400,
            backup,
            usable: true,
            has_window,
            unsent: 0,
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
        for n in ["minrtt", "default", "linux", "roundrobin", "kbest", "kbest:3", "redundant", "primary", "primary-standby", "primary_standby", "blest", "ecf"] {
            assert!(by_name(n).is_some(), "{n}");
        }
        assert_eq!(by_name("kbest:3").unwrap().name(), "kbest");
        assert_eq!(by_name("default").unwrap().name(), "minrtt");
        for n in ["kbest:0", "kbest:x", "minrtt:2", "nope"] {
            assert!(by_name(n).is_none(), "{n}");
        }
    }
}
