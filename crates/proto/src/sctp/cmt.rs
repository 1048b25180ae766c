//! The CMT sender algorithms of Iyengar, Amer and Stewart ("Concurrent
//! Multipath Transfer Using SCTP Multihoming Over Independent End-to-End
//! Paths", IEEE/ACM ToN 2006), as pure functions:
//!
//! * SFR, split fast retransmit: a missing TSN gets a miss indication only
//!   if this SACK newly acked a later TSN sent to the *same* destination.
//!   Without CMT, any later newly acked TSN counts (RFC 9260 7.2.4, with
//!   usrsctp's highest-newly-acked rule).
//! * DAC, delayed ack for CMT: when the SACK says it covers two packets,
//!   all its new acks went to one destination, and the missing TSN lies
//!   below every newly acked TSN, the miss counts twice.
//! * CUC (in the association): cwnd grows when a destination's
//!   pseudo-cumack (its lowest outstanding TSN) advances.
//! * Retransmission destination: RTX-SAME, RTX-CWND, RTX-SSTHRESH; plain
//!   SCTP sends timeouts to an alternate destination (RFC 9260 6.4).

use super::config::RtxPolicy;
use super::path::{PathState, SackScratch};

/// What one SACK newly acknowledged, across destinations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SackSummary {
    pub cmt: bool,
    pub dac: bool,
    /// The SACK's DAC flag: it covers two DATA packets.
    pub dac_flag: bool,
    /// Destinations with a newly acked TSN in this SACK.
    pub dests_newly_acked: usize,
    pub lowest_newack: u64,
    pub highest_newack: u64,
}

/// Miss indications a still-missing `tsn` sent to a destination with
/// scratch `dest` collects from this SACK.
pub fn miss_increment(s: &SackSummary, tsn: u64, dest: &SackScratch) -> u32 {
    if !s.cmt {
        return (s.dests_newly_acked > 0 && tsn < s.highest_newack) as u32;
    }
    if !dest.saw_newack || tsn >= dest.highest_newack {
        return 0;
    }
    let extra = s.dac && s.dac_flag && s.dests_newly_acked == 1 && tsn < s.lowest_newack;
    1 + extra as u32
}

/// A destination as the retransmission policies see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtxView {
    pub state: PathState,
    pub cwnd: u64,
    pub ssthresh: u64,
}

fn best(d: &[RtxView], key: impl Fn(&RtxView) -> u64) -> Option<usize> {
    let mut best: Option<usize> = None;
    for want in [PathState::Active, PathState::PotentiallyFailed] {
        for (i, v) in d.iter().enumerate() {
            if v.state == want && best.is_none_or(|b| key(v) > key(&d[b])) {
                best = Some(i);
            }
        }
        if best.is_some() {
            return best;
        }
    }
    None
}

/// Destination for retransmitting a chunk last sent to `orig`.
pub fn rtx_destination(cmt: bool, policy: RtxPolicy, timeout: bool, orig: usize, d: &[RtxView]) -> usize {
    let usable = |i: usize| d.get(i).is_some_and(|v| v.state == PathState::Active);
    if !cmt {
        if !timeout && usable(orig) {
            return orig;
        }
        // An alternate: the next active destination after `orig`.
        let n = d.len();
        for k in 1..=n {
            let i = (orig + k) % n;
            if usable(i) {
                return i;
            }
        }
        return best(d, |_| 0).unwrap_or(orig);
    }
    match policy {
        RtxPolicy::Same if usable(orig) => orig,
        RtxPolicy::Same | RtxPolicy::Cwnd => best(d, |v| v.cwnd).unwrap_or(orig),
        RtxPolicy::Ssthresh => best(d, |v| v.ssthresh).unwrap_or(orig),
    }
}
