//! One destination transport address of the peer (RFC 9260 6.4, 8.2) and
//! everything the sender keeps per destination: congestion window,
//! ssthresh, partial_bytes_acked, flight size, RTO, error counter,
//! heartbeat and T3-rtx timers, and counters.

use core::net::IpAddr;
use core::time::Duration;

use super::rto::Rto;
use crate::time::Instant;

/// Reachability of a destination (RFC 9260 8.2, RFC 7829 for PF).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathState {
    Active,
    /// Potentially failed: no new data until a heartbeat is answered.
    PotentiallyFailed,
    Inactive,
}

/// Counters of one destination, for results.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PathStats {
    pub packets_sent: u64,
    /// DATA payload bytes sent, first transmissions and retransmissions.
    pub bytes_sent: u64,
    pub bytes_retransmitted: u64,
    /// DATA payload bytes acknowledged (cumulatively or by a gap block).
    pub bytes_acked: u64,
    /// User messages whose last fragment was first sent here.
    pub messages_sent: u64,
    pub retransmissions: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub heartbeats_sent: u64,
    pub cwnd: u64,
    pub ssthresh: u64,
    pub max_cwnd: u64,
    pub srtt: Option<Duration>,
    pub rto: Duration,
    pub flight: u64,
}

/// Per-SACK scratch values (reset before each SACK is processed).
#[derive(Debug, Clone, Copy, Default)]
pub struct SackScratch {
    /// Bytes newly acknowledged on this destination by this SACK.
    pub net_ack: u64,
    /// SFR: this SACK newly acked something sent here.
    pub saw_newack: bool,
    /// SFR: the highest TSN sent here that this SACK newly acked.
    pub highest_newack: u64,
    /// CUC: the lowest outstanding TSN sent here, before this SACK.
    pub pseudo_cumack: Option<u64>,
    /// CUC: this SACK acknowledged it.
    pub new_pseudo_cumack: bool,
}

#[derive(Debug, Clone)]
pub struct Destination {
    pub remote: IpAddr,
    /// Our address this destination is reached from (pairing i-th with i-th).
    pub local: IpAddr,
    pub state: PathState,
    pub cwnd: u64,
    pub ssthresh: u64,
    pub partial_bytes_acked: u64,
    /// Bytes of DATA sent here, not yet acked, not marked for retransmission.
    pub flight: u64,
    pub rto: Rto,
    pub error_count: u32,
    pub t3: Option<Instant>,
    pub hb_at: Option<Instant>,
    /// Nonce and send time of the unanswered heartbeat.
    pub hb_outstanding: Option<(u64, Instant)>,
    pub hb_pending: bool,
    pub last_send: Instant,
    /// RTT measurement in progress: TSN and send time (Karn: first sends only).
    pub rtt_probe: Option<(u64, Instant)>,
    /// Fast recovery of this destination (CMT): exit once the cumulative
    /// ack reaches this TSN.
    pub recover: Option<u64>,
    /// Packets this destination may still send in the current event.
    pub burst: u32,
    pub(crate) sack: SackScratch,
    pub stats: PathStats,
}

impl Destination {
    pub fn new(local: IpAddr, remote: IpAddr, mtu: u64, ssthresh: u64, rto: Rto, now: Instant) -> Destination {
        Destination {
            remote,
            local,
            state: PathState::Active,
            // RFC 9260 7.2.1: min(4 MTU, max(2 MTU, 4404)).
            cwnd: (4 * mtu).min((2 * mtu).max(4404)),
            ssthresh,
            partial_bytes_acked: 0,
            flight: 0,
            rto,
            error_count: 0,
            t3: None,
            hb_at: None,
            hb_outstanding: None,
            hb_pending: false,
            last_send: now,
            rtt_probe: None,
            recover: None,
            burst: 0,
            sack: SackScratch::default(),
            stats: PathStats::default(),
        }
    }

    pub fn srtt_or_rto(&self) -> Duration {
        self.rto.srtt().unwrap_or(self.rto.rto())
    }

    pub fn snapshot(&self) -> PathStats {
        PathStats {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            srtt: self.rto.srtt(),
            rto: self.rto.rto(),
            flight: self.flight,
            ..self.stats
        }
    }
}
