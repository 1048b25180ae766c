//! Per-destination congestion control (RFC 9260 7.2) and the
//! resource-pooling variants of CMT, as functions of one destination and
//! an aggregate over all of them.
//!
//! * Standard (`Off`, `Cmt`): slow start grows by min(acked, L*MTU) per
//!   SACK, congestion avoidance by one MTU per cwnd acknowledged; a loss
//!   sets ssthresh = max(cwnd/2, 4 MTU).
//! * CMT/RPv1 (Dreibholz, Becke et al., AINA 2010; usrsctp
//!   `SCTP_CMT_RPV1`): increases scaled by ssthresh_i / sum(ssthresh);
//!   after a loss ssthresh_i = max(cwnd_i - sum(cwnd)/2, 4 MTU *
//!   ssthresh_i / sum(ssthresh)), at least 1 MTU.
//! * CMT/RPv2 (`SCTP_CMT_RPV2`): the same with the bandwidth share
//!   (cwnd_i/srtt_i) / sum(cwnd_j/srtt_j) in place of the ssthresh share.
//! * MPTCP-like (`SCTP_CMT_MPTCP`): RFC 6356 LIA in congestion avoidance,
//!   min(alpha * MTU * cwnd_i / sum(cwnd), MTU) per cwnd acknowledged,
//!   alpha = sum(cwnd) * max(cwnd_i/rtt_i^2) / (sum(cwnd_i/rtt_i))^2;
//!   slow start and decrease uncoupled, as RFC 6356 says (usrsctp also
//!   couples slow start; we do not).

use super::config::CmtMode;

/// One destination as the coupled algorithms see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathView {
    pub cwnd: u64,
    pub ssthresh: u64,
    /// Smoothed RTT in seconds; `None` before the first measurement.
    pub srtt: Option<f64>,
}

/// Sums over the usable destinations.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Aggregate {
    pub sum_cwnd: f64,
    pub sum_ssthresh: f64,
    /// sum(cwnd_i / srtt_i) over destinations with an RTT sample.
    pub sum_bw: f64,
    /// max(cwnd_i / srtt_i^2).
    pub max_cwnd_rtt2: f64,
}

pub fn aggregate(paths: impl IntoIterator<Item = PathView>) -> Aggregate {
    let mut a = Aggregate::default();
    for p in paths {
        a.sum_cwnd += p.cwnd as f64;
        a.sum_ssthresh += p.ssthresh as f64;
        if let Some(r) = p.srtt.filter(|r| *r > 0.0) {
            a.sum_bw += p.cwnd as f64 / r;
            a.max_cwnd_rtt2 = a.max_cwnd_rtt2.max(p.cwnd as f64 / (r * r));
        }
    }
    a
}

/// This destination's share of the pool, for RPv1/RPv2; 1 when undefined.
fn share(mode: CmtMode, agg: &Aggregate, me: &PathView) -> f64 {
    let s = match mode {
        CmtMode::RpV1 if agg.sum_ssthresh > 0.0 => me.ssthresh as f64 / agg.sum_ssthresh,
        CmtMode::RpV2 => match me.srtt.filter(|r| *r > 0.0) {
            Some(r) if agg.sum_bw > 0.0 => (me.cwnd as f64 / r) / agg.sum_bw,
            _ => 1.0,
        },
        _ => 1.0,
    };
    s.clamp(0.0, 1.0)
}

/// cwnd increase in slow start for a SACK that newly acked `net_ack` bytes.
pub fn slow_start_increase(mode: CmtMode, agg: &Aggregate, me: &PathView, net_ack: u64, mtu: u64, abc_l: u64) -> u64 {
    let base = net_ack.min(abc_l.max(1) * mtu);
    match mode {
        CmtMode::RpV1 | CmtMode::RpV2 => ((base as f64 * share(mode, agg, me)) as u64).max(1),
        _ => base,
    }
}

/// cwnd increase in congestion avoidance, once per cwnd acknowledged.
pub fn avoidance_increase(mode: CmtMode, agg: &Aggregate, me: &PathView, mtu: u64) -> u64 {
    match mode {
        CmtMode::RpV1 | CmtMode::RpV2 => ((mtu as f64 * share(mode, agg, me)) as u64).max(1),
        CmtMode::MptcpLike => {
            if agg.sum_bw <= 0.0 || agg.sum_cwnd <= 0.0 || me.srtt.is_none() {
                return mtu;
            }
            let alpha = agg.sum_cwnd * agg.max_cwnd_rtt2 / (agg.sum_bw * agg.sum_bw);
            let inc = alpha * mtu as f64 * me.cwnd as f64 / agg.sum_cwnd;
            (inc as u64).clamp(1, mtu)
        }
        _ => mtu,
    }
}

/// ssthresh after a congestion event (fast retransmit or T3-rtx timeout).
pub fn ssthresh_after_loss(mode: CmtMode, agg: &Aggregate, me: &PathView, mtu: u64) -> u64 {
    match mode {
        CmtMode::RpV1 | CmtMode::RpV2 => {
            let mut s = (4.0 * mtu as f64 * share(mode, agg, me)) as u64;
            let half_total = (agg.sum_cwnd / 2.0) as u64;
            if me.cwnd > half_total && s < me.cwnd - half_total {
                s = me.cwnd - half_total;
            }
            s.max(mtu)
        }
        _ => (me.cwnd / 2).max(4 * mtu),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MTU: u64 = 1452;

    fn two(c1: u64, c2: u64, r1: f64, r2: f64) -> [PathView; 2] {
        [PathView { cwnd: c1, ssthresh: c1, srtt: Some(r1) }, PathView { cwnd: c2, ssthresh: c2, srtt: Some(r2) }]
    }

    #[test]
    fn standard_is_rfc_9260() {
        let p = two(20 * MTU, 10 * MTU, 0.1, 0.1);
        let a = aggregate(p);
        assert_eq!(slow_start_increase(CmtMode::Cmt, &a, &p[0], 5000, MTU, 1), MTU);
        assert_eq!(slow_start_increase(CmtMode::Cmt, &a, &p[0], 500, MTU, 1), 500);
        assert_eq!(avoidance_increase(CmtMode::Off, &a, &p[0], MTU), MTU);
        assert_eq!(ssthresh_after_loss(CmtMode::Cmt, &a, &p[0], MTU), 10 * MTU);
        assert_eq!(ssthresh_after_loss(CmtMode::Cmt, &a, &PathView { cwnd: 2 * MTU, ..p[0] }, MTU), 4 * MTU);
    }

    #[test]
    fn resource_pooling_shares() {
        // Two equal paths: each gets half the increase of one TCP-like path.
        let p = two(20 * MTU, 20 * MTU, 0.1, 0.1);
        let a = aggregate(p);
        assert_eq!(avoidance_increase(CmtMode::RpV1, &a, &p[0], MTU), MTU / 2);
        assert_eq!(avoidance_increase(CmtMode::RpV2, &a, &p[0], MTU), MTU / 2);
        // LIA with two equal paths: alpha = 1/2, and each path grows by
        // alpha * cwnd_i / sum(cwnd) = 1/4 MTU per cwnd acknowledged.
        let lia = avoidance_increase(CmtMode::MptcpLike, &a, &p[0], MTU);
        assert!(lia.abs_diff(MTU / 4) <= 1, "{lia}");
        // Decrease: cwnd_i - sum/2 = 0, so 4 MTU * share = 2 MTU.
        assert_eq!(ssthresh_after_loss(CmtMode::RpV1, &a, &p[0], MTU), 2 * MTU);
        // One path alone: the RP variants reduce to the standard ones.
        let one = [p[0]];
        let a1 = aggregate(one);
        assert_eq!(avoidance_increase(CmtMode::RpV1, &a1, &one[0], MTU), MTU);
        assert_eq!(ssthresh_after_loss(CmtMode::RpV2, &a1, &one[0], MTU), 10 * MTU);
        // RPv2 favours the faster path.
        let p = two(20 * MTU, 20 * MTU, 0.05, 0.2);
        let a = aggregate(p);
        assert!(avoidance_increase(CmtMode::RpV2, &a, &p[0], MTU) > avoidance_increase(CmtMode::RpV2, &a, &p[1], MTU));
    }
}
