//! Stack profiles: where mplab's MPTCP stack departs from Linux's on
//! purpose, each departure one setting, so that the simulator can say both
//! what mplab does and what Linux 6.18 would do on the same scenario.
//! docs/validation.md holds the table of differences with their Linux
//! source and their measured effect.

use core::time::Duration;

use crate::tcp::TimerClock;

/// Which stack's choices an mplab connection makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// mplab's own choices (the default).
    #[default]
    Mplab,
    /// Linux 6.18's in-kernel MPTCP, wherever it changes results.
    Linux,
}

/// `net.core.wmem_max` / `rmem_max` of Linux 6.18 (4 MiB): the most
/// SO_SNDBUF / SO_RCVBUF take before doubling.
const SOCK_BUF_MAX: u64 = 4 << 20;
/// SOCK_MIN_SNDBUF and SOCK_MIN_RCVBUF (include/net/sock.h) with this
/// kernel's skb sizes.
const SOCK_MIN_SNDBUF: u64 = 4608;
const SOCK_MIN_RCVBUF: u64 = 2304;
/// `tcp_rmem[2]` of Linux 6.18 (`sysctl net.ipv4.tcp_rmem`: 4096 131072
/// 33554432), above `rmem_max`.
const RMEM_MAX: u64 = 32 << 20;

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Mplab => "mplab",
            Profile::Linux => "linux",
        }
    }

    pub fn from_name(s: &str) -> Option<Profile> {
        match s {
            "mplab" => Some(Profile::Mplab),
            "linux" => Some(Profile::Linux),
            _ => None,
        }
    }

    /// Whether a subflow that was reset or timed out is opened again, and
    /// after what backoff (`rejoin.rs`). mplab: from 1 s, doubling to
    /// 30 s. Linux 6.18: never; its in-kernel path manager creates
    /// subflows only when the connection is established or an address is
    /// announced or added (net/mptcp/pm_kernel.c).
    pub fn recreates_subflows(self) -> Option<super::RejoinBackoff> {
        match self {
            Profile::Mplab => Some(super::RejoinBackoff::default()),
            Profile::Linux => None,
        }
    }

    /// Whether subflows are opened and joins accepted only while the
    /// connection is established at the data level: not once this end's
    /// application closed its sending side (DATA_FIN queued) or the peer's
    /// DATA_FIN arrived. Linux: `__mptcp_subflow_connect` and
    /// `mptcp_can_accept_new_subflow` (net/mptcp/subflow.c) both ask
    /// `mptcp_is_fully_established`, which wants the msk in
    /// TCP_ESTABLISHED; a responder then resets the join at its third ACK
    /// (MPTCP_RST_EPROHIBIT). A sized upload whose bytes all fit in the
    /// send buffer closes at once and stays on its first subflow. mplab:
    /// until both DATA_FINs are through, so that the tail of a transfer
    /// still spreads over every path.
    pub fn joins_only_while_established(self) -> bool {
        self == Profile::Linux
    }

    /// The scheduler `scheduler = "default"` means: minRTT in mplab;
    /// Linux's `mptcp_subflow_get_send` (least linger time) in Linux.
    pub fn default_scheduler(self) -> &'static str {
        match self {
            Profile::Mplab => "minrtt",
            Profile::Linux => "linux",
        }
    }

    /// The longest a subflow's retransmission timer may back off to.
    /// mplab: 1 s, so a subflow whose path came back carries data again
    /// within about a second. Linux: TCP_RTO_MAX (120 s), as for any TCP
    /// socket: after a long outage the subflow waits out its backed-off
    /// timer before it probes the path again.
    pub fn subflow_max_backoff(self) -> Duration {
        match self {
            Profile::Mplab => Duration::from_secs(1),
            Profile::Linux => Duration::from_secs(120),
        }
    }

    /// When a subflow is stale: left out of scheduling and data sent
    /// again elsewhere. mplab: after 2 of its own retransmission timeouts
    /// in a row; its own data is sent again. Linux: after more than
    /// `net.mptcp.stale_loss_cnt` (default 4) connection-level
    /// retransmission periods (each 200 ms when no healthy subflow has a
    /// timer pending) in which it had data outstanding and received
    /// nothing, while another subflow makes progress
    /// (`mptcp_pm_subflow_chk_stale`, net/mptcp/pm.c); the whole
    /// unacknowledged stream is then sent again
    /// (`__mptcp_retransmit_pending_data`). So 5, counted in periods.
    pub fn stale_after(self) -> u32 {
        match self {
            Profile::Mplab => 2,
            Profile::Linux => 5,
        }
    }

    /// How subflow timers are quantised. mplab: exactly. Linux: on
    /// jiffies at HZ = 250 (this machine's CONFIG_HZ) through the timer
    /// wheel, whose coarse buckets delay a long backed-off RTO by up to
    /// 2 s (tcp/timer_clock.rs). `phase` is where the jiffies counter
    /// stands at time zero: arbitrary on a real machine, drawn from the
    /// seed in the simulator.
    pub fn timer_clock(self, phase: u32) -> TimerClock {
        match self {
            Profile::Mplab => TimerClock::Exact,
            Profile::Linux => TimerClock::Jiffies { hz: 250, phase },
        }
    }

    /// Whether the send buffer follows the subflows' congestion windows
    /// (Linux, `__mptcp_sync_sndbuf` over `tcp_sndbuf_expand`; see
    /// `sndbuf.rs`) or is `snd_buf` from the start (mplab). Setting the
    /// buffer in the scenario (SO_SNDBUF on the kernel) turns it off.
    pub fn autotunes_send_buffer(self) -> bool {
        self == Profile::Linux
    }

    /// Whether a writer that filled the send buffer is let in again only
    /// once a third of it is free (Linux: the socket wakes a blocked
    /// sender when its free space is at least half of what it holds,
    /// `sk_stream_write_space` / `__sk_stream_is_writeable`,
    /// include/net/sock.h) or as soon as any room frees (mplab). Linux's
    /// application thus writes in large pieces, and each piece is spread
    /// over the subflows in 64 KiB bursts, a slow subflow's included.
    pub fn wakes_writer_at_a_third(self) -> bool {
        self == Profile::Linux
    }

    /// Whether a subflow that sends again after more than an RTO of
    /// silence restarts from a smaller window (Linux: RFC 2861's restart,
    /// `tcp_slow_start_after_idle` = 1, net/ipv4/tcp_output.c
    /// `tcp_cwnd_restart`) or keeps its window (mplab). See
    /// `TcpConfig::slow_start_after_idle`.
    pub fn restarts_window_after_idle(self) -> bool {
        self == Profile::Linux
    }

    /// Whether a subflow's receiver opens the window it advertises two
    /// segments per segment received, ACKing each such segment at once
    /// (Linux: `rcv_ssthresh`, net/ipv4/tcp_input.c `tcp_grow_window`,
    /// net/ipv4/tcp_output.c `__tcp_select_window`), or advertises the
    /// whole window and ACKs every second segment (mplab). See
    /// `TcpConfig::grow_window_gradually`.
    pub fn grows_receive_window_gradually(self) -> bool {
        self == Profile::Linux
    }

    /// Whether a receiver ACKs each of the first segments of a transfer,
    /// and of one resumed after more than an RTO of silence, at once (up
    /// to 16; Linux's quick-ACK mode, net/ipv4/tcp_input.c
    /// `tcp_event_data_recv`), or delays ACKs from the first segment on
    /// (mplab). See `TcpConfig::quick_acks`.
    pub fn acks_each_segment_after_silence(self) -> bool {
        self == Profile::Linux
    }

    /// Whether the RTO's variation is Linux's (the worst deviation of the
    /// last round, at least TCP_RTO_MIN, decaying per round:
    /// net/ipv4/tcp_input.c `tcp_rtt_estimator`) or RFC 6298's (mplab).
    /// See `TcpConfig::linux_rtt_variation`.
    pub fn estimates_rto_as_linux(self) -> bool {
        self == Profile::Linux
    }

    /// Whether a window that was full counts as the limit for the rest of
    /// its round, and in slow start up to twice what the round had out
    /// (Linux: `tcp_cwnd_validate`, net/ipv4/tcp_output.c;
    /// `tcp_is_cwnd_limited`, include/net/tcp.h), or only on the ACK after
    /// a send found it full (mplab). See `TcpConfig::cwnd_limited_per_round`.
    pub fn latches_cwnd_limited(self) -> bool {
        self == Profile::Linux
    }

    /// The send buffer a socket gets when its application sets SO_SNDBUF
    /// to `requested` bytes (the scenario's `snd_buf`). Linux doubles the
    /// value, after capping it at `net.core.wmem_max` (4 MiB by default
    /// since 6.10, as here), to allow for its own bookkeeping
    /// (net/core/sock.c `sk_setsockopt`, `__sock_set_sndbuf`: at least
    /// SOCK_MIN_SNDBUF): `iperf -w 256K` gets 512 KB. An MPTCP socket
    /// hands the locked value to every subflow (net/mptcp/sockopt.c
    /// `mptcp_sol_socket_sync_intval`). mplab takes the value as it is.
    pub fn send_buffer_set_by_application(self, requested: u64) -> u64 {
        match self {
            Profile::Linux => (2 * requested.min(SOCK_BUF_MAX)).max(SOCK_MIN_SNDBUF),
            Profile::Mplab => requested,
        }
    }

    /// The receive window a socket can advertise at most when its
    /// application sets SO_RCVBUF to `requested` bytes (the scenario's
    /// `rcv_buf`). Linux doubles the value as for SO_SNDBUF (capped at
    /// `net.core.rmem_max`, at least SOCK_MIN_RCVBUF) and advertises that
    /// buffer less its skb overhead (`tcp_win_from_space`): a 32000-byte
    /// SO_RCVBUF on this kernel gives windows of 38448 bytes (27 segments
    /// of 1424) with nothing unread. mplab advertises the value as it is.
    pub fn receive_window_set_by_application(self, requested: u64) -> u64 {
        match self {
            Profile::Linux => super::autotune::window_from_space((2 * requested.min(SOCK_BUF_MAX)).max(SOCK_MIN_RCVBUF)),
            Profile::Mplab => requested,
        }
    }

    /// Where the receive threshold starts when the application set the
    /// receive buffer and its window is `window` bytes: Linux offers the
    /// whole window at once (`tcp_select_initial_window` makes the first
    /// `rcv_wnd`, hence `rcv_ssthresh`, the buffer's space rounded down to
    /// whole segments), so a 1.4 MB SO_RCVBUF is a 1.4 MB window from the
    /// first ACK, where the default buffer starts at 64 KiB and grows.
    /// A window below the default threshold is offered whole either way
    /// (the threshold stays where it was, above the free space).
    /// `None`: the threshold is not used (mplab advertises the free space).
    pub fn initial_receive_threshold(self, window: u64, mss: u64) -> Option<u64> {
        match self {
            Profile::Linux => Some((window - window % mss.max(1)).max(crate::tcp::INITIAL_RCV_SSTHRESH)),
            Profile::Mplab => None,
        }
    }

    /// The buffer a connection's window-scale shift is chosen for (the
    /// SYN fixes it), given the window of a receive buffer the application
    /// set, if it did: `None` leaves it to the receive buffer. Linux
    /// chooses it for the set buffer's window when SO_RCVBUF locked it
    /// (net/ipv4/tcp_output.c `tcp_select_initial_window`, bounded by
    /// `window_clamp`): a 32000-byte SO_RCVBUF gets no scaling, so its
    /// windows are whole segments (see `TcpConfig::round_window_to_mss`).
    /// Otherwise Linux uses max(`tcp_rmem[2]`, `rmem_max`), 32 MiB on 6.18,
    /// shift 10; the `linux` profile keeps the shift of its 6 MB buffer
    /// (7): shift 10 moved the unequal-path rows of the validation suite
    /// by up to a third (docs/validation.md, "Socket buffers the
    /// application sets").
        pub fn window_scale_space(self, set_window: Option<u64>) -> Option<u64> {
        match self {
            Profile::Linux => set_window.map(|w| w.min(RMEM_MAX)),
            Profile::Mplab => None,
        }
    }

    /// Whether an MPTCP socket whose application set SO_SNDBUF gives each
    /// subflow that whole buffer (Linux: the subflows' `sk_sndbuf` is the
    /// connection's, locked), rather than one growing with the subflow's
    /// window up to it (mplab's view of a subflow's room).
    pub fn subflows_share_a_set_send_buffer(self) -> bool {
        self == Profile::Linux
    }

    /// Sets the TCP behaviour this profile changes (plain TCP flows and
    /// MPTCP subflows alike) on `c`, all but the timer clock, which needs
    /// the run's jiffies phase ([`Profile::timer_clock`]).
    pub fn apply_to_tcp(self, c: &mut crate::tcp::TcpConfig) {
        c.slow_start_after_idle = self.restarts_window_after_idle();
        c.grow_window_gradually = self.grows_receive_window_gradually();
        c.quick_acks = self.acks_each_segment_after_silence();
        c.cwnd_limited_per_round = self.latches_cwnd_limited();
        c.linux_rtt_variation = self.estimates_rto_as_linux();
        c.window_scale_space = self.window_scale_space(None);
        c.round_window_to_mss = self == Profile::Linux;
    }

    /// Whether the profile has opportunistic retransmission and
    /// penalisation at all (Linux 6.18 has neither; mplab has both, off
    /// unless the scenario asks).
    pub fn has_opportunistic_retransmit(self) -> bool {
        self == Profile::Mplab
    }

    /// Whether staleness counts connection-level retransmission periods
    /// without progress (Linux) or the subflow's own timeouts (mplab).
    pub fn stale_by_retransmission_periods(self) -> bool {
        self == Profile::Linux
    }

    /// What the connection-level retransmission timer does when the peer
    /// has not DATA_ACKed data the subflows sent. mplab: once every subflow
    /// is idle, everything unacknowledged is sent again. Linux
    /// (`__mptcp_retrans`, net/mptcp/protocol.c): whenever some subflow is
    /// idle (`mptcp_subflow_get_retrans`), the first unacknowledged chunk is
    /// sent again on it, which is how a connection gets past data stuck on
    /// a dead subflow before that subflow is declared stale.
    pub fn retransmits_head_on_idle_subflow(self) -> bool {
        self == Profile::Linux
    }

    /// Whether the receive window starts small and grows with what the
    /// application reads (Linux's autotuning, `tcp_rmem` 4 KB / 128 KB /
    /// 6 MB, net/mptcp/protocol.c `mptcp_rcv_space_adjust`) or is the
    /// whole buffer from the start (mplab).
    pub fn autotunes_receive_buffer(self) -> bool {
        self == Profile::Linux
    }

    /// Whether data held out of order takes its room from the window the
    /// connection advertises (Linux: the free space is the receive
    /// buffer less everything queued, in-order unread and out-of-order
    /// alike, `__mptcp_space`, net/mptcp/protocol.h, so while a slow
    /// subflow holds a hole the right edge barely moves), or the window
    /// counts from the next byte expected and data beyond it already lies
    /// inside (mplab, RFC 9293's window: the right edge moves with every
    /// byte the hole fills).
    pub fn window_counts_out_of_order(self) -> bool {
        self == Profile::Linux
    }

    /// The path manager opens a mesh's subflows from its local addresses
    /// in id order (Linux's endpoint list, net/mptcp/pm_kernel.c
    /// `fill_local_addresses_vec`); `mplab` starts with the addresses that
    /// carry no subflow yet, so a mesh the limit cuts short spreads over
    /// the interfaces.
    pub fn walks_endpoints_in_id_order(self) -> bool {
        self == Profile::Linux
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SO_SNDBUF / SO_RCVBUF as Linux takes them: capped at 4 MiB, then
    /// doubled, never below the minimum; the receive side as a window.
    #[test]
    fn linux_doubles_a_socket_buffer_within_its_limits() {
        let l = Profile::Linux;
        assert_eq!(l.send_buffer_set_by_application(256_000), 512_000);
        assert_eq!(l.send_buffer_set_by_application(100 << 20), 8 << 20, "rmem_max caps the request");
        assert_eq!(l.send_buffer_set_by_application(1), SOCK_MIN_SNDBUF);
        assert_eq!(l.receive_window_set_by_application(32_000), 39_000);
        assert_eq!(l.receive_window_set_by_application(1), SOCK_MIN_RCVBUF * 156 / 256);
        assert_eq!(l.window_scale_space(Some(39_000)), Some(39_000));
        assert_eq!(l.window_scale_space(Some(100 << 20)), Some(RMEM_MAX));
        let m = Profile::Mplab;
        assert_eq!((m.send_buffer_set_by_application(256_000), m.receive_window_set_by_application(256_000), m.window_scale_space(Some(1))), (256_000, 256_000, None));
    }
}
