//! Unit tests of the CMT sender rules (SFR, DAC, retransmission policies).

use super::cmt::{miss_increment, rtx_destination, RtxView, SackSummary};
use super::config::RtxPolicy;
use super::path::{PathState, SackScratch};

fn scratch(saw: bool, highest: u64) -> SackScratch {
    SackScratch { saw_newack: saw, highest_newack: highest, ..Default::default() }
}

#[test]
fn sfr_counts_only_later_acks_on_the_same_destination() {
    // TSN 10 went to destination A; this SACK newly acked TSN 12 and 13,
    // both sent to destination B.
    let s = SackSummary { cmt: true, dests_newly_acked: 1, lowest_newack: 12, highest_newack: 13, ..Default::default() };
    let a = scratch(false, 0);
    let b = scratch(true, 13);
    assert_eq!(miss_increment(&s, 10, &a), 0, "SFR: B's acks say nothing about A's TSN");
    assert_eq!(miss_increment(&s, 11, &b), 1, "a TSN sent to B, below B's highest new ack");
    assert_eq!(miss_increment(&s, 14, &b), 0, "not below the highest new ack");
    // Without CMT every later newly acked TSN counts (RFC 9260 7.2.4).
    let plain = SackSummary { cmt: false, ..s };
    assert_eq!(miss_increment(&plain, 10, &a), 1);
    assert_eq!(miss_increment(&plain, 13, &a), 0);
}

#[test]
fn dac_adds_a_miss_when_the_sack_covers_two_packets() {
    let b = scratch(true, 20);
    let base = SackSummary { cmt: true, dac: true, dac_flag: true, dests_newly_acked: 1, lowest_newack: 18, highest_newack: 20 };
    assert_eq!(miss_increment(&base, 15, &b), 2, "two packets acked, one destination, TSN below all new acks");
    assert_eq!(miss_increment(&SackSummary { dac_flag: false, ..base }, 15, &b), 1, "SACK covers one packet");
    assert_eq!(miss_increment(&SackSummary { dests_newly_acked: 2, ..base }, 15, &b), 1, "mixed SACK");
    assert_eq!(miss_increment(&base, 19, &b), 1, "TSN between newly acked ones");
    assert_eq!(miss_increment(&SackSummary { dac: false, ..base }, 15, &b), 1, "DAC off");
}

#[test]
fn retransmission_policies() {
    let v = |state, cwnd, ssthresh| RtxView { state, cwnd, ssthresh };
    let d = [v(PathState::Active, 10, 50), v(PathState::Active, 30, 20), v(PathState::Active, 20, 40)];
    assert_eq!(rtx_destination(true, RtxPolicy::Same, true, 0, &d), 0);
    assert_eq!(rtx_destination(true, RtxPolicy::Cwnd, true, 0, &d), 1);
    assert_eq!(rtx_destination(true, RtxPolicy::Ssthresh, false, 1, &d), 0);
    // RTX-SAME falls back to the largest cwnd when the original is down.
    let down = [v(PathState::PotentiallyFailed, 10, 50), d[1], d[2]];
    assert_eq!(rtx_destination(true, RtxPolicy::Same, true, 0, &down), 1);
    // Inactive destinations are never chosen while another is usable.
    let inact = [v(PathState::Inactive, 99, 99), d[1]];
    assert_eq!(rtx_destination(true, RtxPolicy::Ssthresh, true, 0, &inact), 1);
    // Plain SCTP: fast retransmit to the same, timeout to an alternate.
    assert_eq!(rtx_destination(false, RtxPolicy::Ssthresh, false, 0, &d), 0);
    assert_eq!(rtx_destination(false, RtxPolicy::Ssthresh, true, 0, &d), 1);
    assert_eq!(rtx_destination(false, RtxPolicy::Ssthresh, true, 2, &d), 0);
    // One destination: the alternate is itself.
    assert_eq!(rtx_destination(false, RtxPolicy::Same, true, 0, &d[..1]), 0);
}
