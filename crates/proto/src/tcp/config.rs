//! Per-connection TCP settings (what `sysctl net.ipv4.tcp_*` and socket
//! options set on Linux).

use core::time::Duration;

use crate::cc::CcChoice;
use super::TimerClock;

#[derive(Debug, Clone, PartialEq)]
pub struct TcpConfig {
    /// MSS we advertise: the largest segment (header-less) we accept.
    pub mss: u16,
    pub sack: bool,
    pub timestamps: bool,
    pub wscale: bool,
    /// ACK every second full segment or after `delayed_ack_timeout`.
    pub delayed_ack: bool,
    pub delayed_ack_timeout: Duration,
    /// Receive buffer: the most the receiver advertises (like iperf -w).
    pub rcv_buf: u64,
    /// Send buffer: data written but not yet acknowledged.
    pub snd_buf: u64,
    pub cc: CcChoice,
    pub initial_rto: Duration,
    pub min_rto: Duration,
    /// SYN / SYN-ACK retransmissions before the attempt fails.
    pub syn_retries: u32,
    /// Ceiling of the exponential RTO backoff (never below the RTO
    /// itself): 120 s as in Linux; MPTCP subflows probe a dead path more
    /// often so they come back soon after it does.
    pub max_backoff: Duration,
    /// Time without progress after which the connection is abandoned.
    pub user_timeout: Duration,
    /// Option bytes kept free in every data segment for a layer above
    /// (MPTCP's DSS): the payload per segment shrinks by this much.
    pub option_reserve: u16,
    /// Whether timers fire exactly when asked or on Linux's jiffies and
    /// timer wheel (the `linux` stack profile).
    pub timer_clock: TimerClock,
    /// TCP Fast Open (RFC 7413) without cookies, as Linux's
    /// `net.ipv4.tcp_fastopen = 0x207`: a client puts what the application
    /// wrote before its first SYN in that SYN (no TFO option), a server
    /// takes the bytes of a SYN, acknowledges them in its SYN-ACK and may
    /// send before the handshake completes (MPTCP's waits for its third
    /// ACK). Off: SYN bytes are ignored.
    pub fast_open: bool,
    /// Congestion window validation after idle (RFC 2861, Linux's
    /// `tcp_slow_start_after_idle`, on by default there): data sent after
    /// more than an RTO with nothing outstanding starts from a window
    /// halved once per RTO of silence, down to the initial window.
    /// mplab keeps the window (off).
    pub slow_start_after_idle: bool,
    /// How the congestion window learns it was the limit (it grows only
    /// then). Off (mplab): an ACK grows it if the last attempt to send
    /// found it full. On (Linux, `tcp_cwnd_validate` and
    /// `tcp_is_cwnd_limited`): once full, it counts as the limit for the
    /// rest of that round of data, and in slow start it may grow to twice
    /// the most the round had out. A sender given data in bursts (an MPTCP
    /// subflow) thus grows its window, and Linux its send buffer, further.
    pub cwnd_limited_per_round: bool,
    /// The receiver opens its window gradually and ACKs at once while it
    /// does (Linux's `rcv_ssthresh`, `tcp_grow_window`): the window it
    /// advertises is at most a threshold that starts at 64 KiB and grows by
    /// two segments for every segment received while the buffer has room
    /// beyond it, and each such segment is ACKed at once (quick ACK)
    /// rather than every second one. mplab: the whole window at once,
    /// delayed ACKs throughout (off).
    pub grow_window_gradually: bool,
    /// Linux's quick-ACK mode (`tcp_event_data_recv`, `tcp_incr_quickack`,
    /// net/ipv4/tcp_input.c): the first data, and data after a silence
    /// longer than the RTO, start a run of ACKs sent at once for each
    /// segment, as many as the window holds pairs of segments, at most 16,
    /// so that a sender in slow start (or restarting after idle) gets an
    /// ACK per segment. mplab: delayed ACKs from the first segment (off).
    pub quick_acks: bool,
    /// The RTO's variation estimated as Linux does (`tcp_rtt_estimator`,
    /// see `rtt.rs`): the largest deviation of the last round of data, at
    /// least `min_rto`, decaying per round. Off (mplab): RFC 6298.
    pub linux_rtt_variation: bool,
    /// The buffer the window-scale shift is chosen for (`None`: `rcv_buf`,
    /// mplab). Linux chooses it for the largest buffer autotuning may
    /// reach, or for a buffer the application fixed (see
    /// `Profile::window_scale_space`).
    pub window_scale_space: Option<u64>,
    /// Without window scaling, the window advertised is a whole number of
    /// the peer's segments, kept as it is while within one segment of the
    /// free space (Linux's `__tcp_select_window`), so a sender held by the
    /// window sends full-sized segments. Off (mplab): the free space.
    pub round_window_to_mss: bool,
    /// Where the receive threshold of `grow_window_gradually` starts
    /// (Linux's first `rcv_ssthresh`, the window `tcp_select_initial_window`
    /// offers): 64 KiB in whole segments for the default buffer; a buffer
    /// the application set (SO_RCVBUF) is offered whole from the start.
    pub initial_rcv_ssthresh: u64,
}

/// Where Linux's rcv_ssthresh starts with the default receive buffer: the
/// initial window, 64 KiB rounded down to whole segments of 1448 bytes
/// (65160, as the kernel's SYN-ACKs here advertise).
pub const INITIAL_RCV_SSTHRESH: u64 = 45 * 1448;

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1460,
            sack: true,
            timestamps: true,
            wscale: true,
            delayed_ack: true,
            // Linux's TCP_DELACK_MIN.
            delayed_ack_timeout: Duration::from_millis(40),
            // Linux's tcp_rmem / tcp_wmem maxima are 6 MiB and 4 MiB.
            rcv_buf: 6 << 20,
            snd_buf: 4 << 20,
            cc: CcChoice::default(),
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_millis(200),
            syn_retries: 6,
            option_reserve: 0,
            max_backoff: Duration::from_secs(120),
            user_timeout: Duration::from_secs(900),
            timer_clock: TimerClock::Exact,
            fast_open: false,
            slow_start_after_idle: false,
            cwnd_limited_per_round: false,
            grow_window_gradually: false,
            quick_acks: false,
            linux_rtt_variation: false,
            window_scale_space: None,
            round_window_to_mss: false,
            initial_rcv_ssthresh: INITIAL_RCV_SSTHRESH,
        }
    }
}
