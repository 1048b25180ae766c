//! Settings of an SCTP association: protocol constants of RFC 9260 15
//! (RTO, retransmission limits, heartbeat interval), buffers, and the
//! CMT switches of usrsctp (`sctp_cmt_on_off`, `sctp_cmt_use_dac`,
//! `sctp_nr_sack_on_off`, `sctp_buffer_splitting`) plus the CMT
//! retransmission policy.

use core::time::Duration;

/// What the sender does with several destinations, and which congestion
/// control couples them. Numbered as usrsctp's `sctp_cmt_on_off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmtMode {
    /// 0: plain SCTP: new data to the primary only; retransmissions that
    /// time out go to an alternate destination.
    Off,
    /// 1: CMT (Iyengar et al.): new data to every destination, each with its
    /// own uncoupled RFC 9260 congestion window; SFR, CUC and (optionally) DAC.
    Cmt,
    /// 2: CMT/RPv1 (Dreibholz et al.): windows grow and shrink in proportion
    /// to each path's share of the summed ssthresh.
    RpV1,
    /// 3: CMT/RPv2: shares weighted by bandwidth (cwnd / srtt).
    RpV2,
    /// 4: "MPTCP-like": the coupled increase of RFC 6356 (LIA).
    MptcpLike,
}

impl CmtMode {
    /// Whether new data is spread over all destinations.
    pub fn is_cmt(self) -> bool {
        self != CmtMode::Off
    }
    /// usrsctp's `sctp_cmt_on_off` value.
    pub fn usrsctp_value(self) -> u32 {
        match self {
            CmtMode::Off => 0,
            CmtMode::Cmt => 1,
            CmtMode::RpV1 => 2,
            CmtMode::RpV2 => 3,
            CmtMode::MptcpLike => 4,
        }
    }
}

/// Where CMT retransmits a chunk (Iyengar et al., section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RtxPolicy {
    /// RTX-SAME: to the destination of the original transmission.
    Same,
    /// RTX-CWND: to the active destination with the largest cwnd.
    Cwnd,
    /// RTX-SSTHRESH: to the active destination with the largest ssthresh.
    Ssthresh,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SctpConfig {
    pub cmt: CmtMode,
    /// CMT Delayed Ack: the receiver keeps delaying SACKs under reordering
    /// and flags how many packets a SACK covers; the sender counts an extra
    /// miss indication when it may.
    pub dac: bool,
    /// Offer NR-SACK (chunk 0x10) in INIT; used when both sides offer it.
    pub nr_sack: bool,
    /// Buffer splitting, send side: a destination may hold at most
    /// send_buffer / (active destinations) bytes in flight.
    pub split_send_buffer: bool,
    /// Buffer splitting, receive side: at most the peer's a_rwnd /
    /// (active destinations) bytes in flight per destination.
    pub split_recv_buffer: bool,
    pub rtx_policy: RtxPolicy,
    /// IP MTU of every path, bytes. A DATA chunk carries at most
    /// mtu - 20 (IPv4) - 12 (common header) - 16 (chunk header) bytes.
    pub mtu: u32,
    /// Send buffer: unsent bytes plus bytes sent and not yet freed.
    pub send_buffer: u64,
    /// Receive buffer: bytes held for reordering plus bytes not yet read.
    pub recv_buffer: u64,
    pub rto_initial: Duration,
    pub rto_min: Duration,
    pub rto_max: Duration,
    pub hb_interval: Duration,
    pub path_max_retrans: u32,
    pub assoc_max_retrans: u32,
    pub max_init_retrans: u32,
    /// Potentially-failed threshold (RFC 7829 PFMR): a destination with more
    /// errors than this gets no new data until a heartbeat answers. `None`
    /// turns the PF state off.
    pub pf_threshold: Option<u32>,
    /// Delayed SACK timer (RFC 9260: at most 500 ms, 200 ms usual).
    pub sack_delay: Duration,
    /// SACK every this many DATA packets (2 in RFC 9260).
    pub sack_freq: u32,
    /// Max.Burst: packets one event may send to one destination.
    pub max_burst: u32,
    /// L of RFC 9260 7.2.1: slow start grows at most L * MTU per SACK.
    pub abc_l: u32,
    pub cookie_lifetime: Duration,
    pub streams: u16,
    /// Bytes the sender charges against the peer's window per outstanding
    /// DATA chunk on top of its payload. RFC 9260 6.2.1 charges the payload
    /// only (0); FreeBSD and usrsctp charge `sctp_peer_chunk_oh` = 256 for
    /// the receiver's per-chunk buffer overhead, which makes a small
    /// receive buffer carry less.
    pub peer_chunk_overhead: u32,
}

impl Default for SctpConfig {
    fn default() -> Self {
        SctpConfig {
            cmt: CmtMode::Off,
            dac: false,
            nr_sack: false,
            split_send_buffer: false,
            split_recv_buffer: false,
            rtx_policy: RtxPolicy::Same,
            mtu: 1500,
            send_buffer: 256 * 1024,
            recv_buffer: 256 * 1024,
            rto_initial: Duration::from_secs(1),
            rto_min: Duration::from_secs(1),
            rto_max: Duration::from_secs(60),
            hb_interval: Duration::from_secs(30),
            path_max_retrans: 5,
            assoc_max_retrans: 10,
            max_init_retrans: 8,
            pf_threshold: Some(0),
            sack_delay: Duration::from_millis(200),
            sack_freq: 2,
            max_burst: 4,
            abc_l: 1,
            cookie_lifetime: Duration::from_secs(60),
            streams: 1,
            peer_chunk_overhead: 0,
        }
    }
}

impl SctpConfig {
    /// CMT with the recommended companions: DAC, NR-SACK, RTX-SSTHRESH.
    pub fn cmt(mode: CmtMode) -> Self {
        SctpConfig { cmt: mode, dac: true, nr_sack: true, rtx_policy: RtxPolicy::Ssthresh, ..Default::default() }
    }
    /// Largest DATA payload that fits one packet.
    pub fn max_payload(&self) -> usize {
        (self.mtu as usize).saturating_sub(20 + 12 + 16).max(1)
    }
}
