//! The connection's settings, and how a stack profile sets them.

use core::time::Duration;

use crate::tcp::TcpConfig;

use super::path_manager::{Limits, LocalAddr, PmChoice};
use super::profile::Profile;
use super::scheduler::SchedulerChoice;

#[derive(Debug, Clone)]
pub struct MptcpConfig {
    /// Settings of every subflow (the DSS reserve is added).
    pub tcp: TcpConfig,
    /// Ask for DSS checksums (they are used if either end asks).
    pub checksum: bool,
    pub snd_buf: u64,
    pub rcv_buf: u64,
    pub scheduler: SchedulerChoice,
    pub path_manager: PmChoice,
    pub limits: Limits,
    /// This host's addresses (id 0 first), with endpoint flags.
    pub locals: Vec<LocalAddr>,
    /// Opportunistic retransmission (Raiciu et al., NSDI 2012): when the
    /// connection is limited by the receive window or the send buffer and
    /// a faster subflow has window space, the data blocking the window
    /// head is sent again on it.
    pub opportunistic_retransmit: bool,
    /// Subflow penalisation (same paper): in that situation the subflow
    /// holding up the window head has its cwnd halved, at most once per
    /// its RTT.
    pub penalize: bool,
    /// How far a subflow's retransmission timer backs off, at most.
    pub subflow_max_backoff: Duration,
    /// Consecutive timeouts (or, with `stale_by_periods`, connection-level
    /// retransmission periods without progress) after which a subflow is
    /// stale.
    pub stale_after: u32,
    /// Linux's staleness rule (see [`Profile::stale_after`]).
    pub stale_by_periods: bool,
    /// The connection-level retransmission sends the first unacknowledged
    /// chunk again as soon as one subflow is idle (Linux), rather than
    /// everything once all are (mplab); see [`Profile`].
    pub head_retransmit_on_idle: bool,
    /// The receive window starts small and grows with what the application
    /// reads per RTT (Linux's autotuning), up to `rcv_buf`.
    pub rcv_autotune: bool,
    /// Data held out of order takes its room from the advertised window
    /// ([`Profile::window_counts_out_of_order`]).
    pub window_counts_ooo: bool,
    /// The send buffer is the sum of the subflows' buffers, each growing
    /// with its congestion window up to `snd_buf` (Linux's autotuning,
    /// `sndbuf.rs`); else it is `snd_buf`.
    pub snd_autotune: bool,
    /// Without autotuning, each subflow's buffer is the whole `snd_buf`
    /// ([`Profile::subflows_share_a_set_send_buffer`]), not one growing
    /// with its window up to it.
    pub subflows_share_snd_buf: bool,
    /// A writer that filled the send buffer writes again only once a third
    /// of it is free ([`Profile::wakes_writer_at_a_third`]).
    pub write_wakeup_third: bool,
    /// The path manager walks local addresses in id order, as Linux's
    /// does ([`Profile::walks_endpoints_in_id_order`]).
    pub pm_id_order: bool,
    /// This end refuses joins to the address and port of the initial
    /// subflow: MP_CAPABLE's C flag (RFC 8684 3.1), Linux's
    /// `net.mptcp.allow_join_initial_addr_port = 0`. A load-balanced
    /// server sets it and announces an address of its own instead.
    pub deny_join_initial: bool,
    /// A subflow that was reset or timed out is opened again after this
    /// backoff ([`Profile::recreates_subflows`]); None: never (Linux).
    pub rejoin: Option<super::RejoinBackoff>,
    /// No subflow is opened or accepted once either DATA_FIN is on its way
    /// ([`Profile::joins_only_while_established`]).
    pub joins_only_while_established: bool,
}

impl Default for MptcpConfig {
    fn default() -> Self {
        MptcpConfig {
            tcp: TcpConfig::default(),
            checksum: false,
            snd_buf: 4 << 20,
            rcv_buf: 6 << 20,
            scheduler: SchedulerChoice::default(),
            path_manager: PmChoice::default(),
            limits: Limits { subflows: 8, add_addr_accepted: 8 },
            locals: Vec::new(),
            opportunistic_retransmit: false,
            penalize: false,
            subflow_max_backoff: Profile::Mplab.subflow_max_backoff(),
            stale_after: Profile::Mplab.stale_after(),
            stale_by_periods: false,
            head_retransmit_on_idle: false,
            rcv_autotune: false,
            window_counts_ooo: false,
            snd_autotune: false,
            subflows_share_snd_buf: false,
            write_wakeup_third: false,
            pm_id_order: false,
            deny_join_initial: false,
            rejoin: Profile::Mplab.recreates_subflows(),
            joins_only_while_established: false,
        }
    }
}

impl MptcpConfig {
    /// Applies a stack profile's choices (the scheduler is chosen by the
    /// caller: `scheduler = "default"` means the profile's default).
    pub fn with_profile(mut self, p: Profile) -> Self {
        self.subflow_max_backoff = p.subflow_max_backoff();
        self.stale_after = p.stale_after();
        self.stale_by_periods = p.stale_by_retransmission_periods();
        self.head_retransmit_on_idle = p.retransmits_head_on_idle_subflow();
        self.rcv_autotune = p.autotunes_receive_buffer();
        self.window_counts_ooo = p.window_counts_out_of_order();
        self.snd_autotune = p.autotunes_send_buffer();
        self.subflows_share_snd_buf = p.subflows_share_a_set_send_buffer();
        self.write_wakeup_third = p.wakes_writer_at_a_third();
        self.pm_id_order = p.walks_endpoints_in_id_order();
        self.joins_only_while_established = p.joins_only_while_established();
        // A backoff the scenario set stays; the profile says whether.
        self.rejoin = p.recreates_subflows().map(|d| self.rejoin.unwrap_or(d));
        p.apply_to_tcp(&mut self.tcp);
        if !p.has_opportunistic_retransmit() {
            self.opportunistic_retransmit = false;
            self.penalize = false;
        }
        self
    }
}
