//! A sans-IO Multipath TCP connection (RFC 8684, version 1).
//!
//! The connection (the "meta socket") owns its subflows, each a
//! [`tcp::Connection`], and speaks MPTCP in their options: MP_CAPABLE and
//! MP_JOIN handshakes, DSS mappings and DATA_ACKs, DATA_FIN, ADD_ADDR,
//! REMOVE_ADDR, MP_PRIO, MP_FASTCLOSE and MP_TCPRST. Like the TCP engine it
//! works in stream offsets: data offset 0 is the byte with DSN IDSN+1, or
//! with TCP Fast Open the first byte of the SYN, whose bytes come before
//! the data sequence space (`local_base`, `remote_base`).
//!
//! Driving it: hand every segment of any of its 4-tuples to
//! [`Connection::handle_segment`] (a SYN carrying MP_JOIN for a token the
//! host knows goes to [`Connection::accept_join`]), call
//! [`Connection::handle_timeout`] at [`Connection::poll_timeout`], and send
//! what [`Connection::poll_transmit`] returns, each with its own 4-tuple.

mod autotune;
pub mod sndbuf;
pub mod path_manager;
pub mod profile;
pub mod scheduler;
mod subflow;

use core::ops::Range;
use core::time::Duration;
use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};

use mplab_wire::crypto::{self, KeyMaterial};
use mplab_wire::mptcp::{capable_flags, tcprst_reason};
use mplab_wire::{AddAddr, AddrIdList, DataAck, Dss, DssMapping, MpCapable, MpJoin, MptcpOption, TcpHeader, TcpOptions};

use crate::tcp::{self, reassembly::Reassembly, TcpConfig, TcpStats};
use crate::time::Instant;

pub use profile::Profile;
pub use path_manager::{Endpoints, FullMesh, LocalAddr, Limits, NDiffPorts, PathManager, PmAction, PmChoice, PmView, RemoteAddr};
pub use scheduler::{MinRtt, SchedContext, Scheduler, SchedulerChoice, SubflowInfo};
pub use subflow::{Handshake, Origin, Subflow};

/// Option bytes a data segment keeps free for DSS: DATA_ACK and DSN of
/// 64 bits, SSN, length and checksum (4 + 8 + 8 + 4 + 2 + 2).
pub const DSS_RESERVE: u16 = 28;

/// What the Linux profile's connection-level timer resends at once: one
/// data fragment (`mptcp_data_frag`, carved from 32 KiB page fragments).
const HEAD_RETRANSMIT: u64 = 32 * 1024;

/// Pure ACKs without MPTCP options in a row after which the single subflow
/// falls back (data without a mapping falls back at once).
const OPTIONLESS_ACKS_TO_FALL_BACK: u8 = 3;

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
        p.apply_to_tcp(&mut self.tcp);
        if !p.has_opportunistic_retransmit() {
            self.opportunistic_retransmit = false;
            self.penalize = false;
        }
        self
    }
}

/// Why a connection continues as plain TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// The SYN or SYN/ACK had no MP_CAPABLE (peer without MPTCP, or a
    /// middlebox stripped it).
    NoMpCapable,
    /// The handshake's third ACK reached us without MP_CAPABLE.
    ThirdAckStripped,
    /// Data arrived without DSS mappings (options stripped mid-stream).
    NoMapping,
    /// A DSS checksum failed (payload modified on the path).
    Checksum,
}

/// What happened, for the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Established,
    FellBack(Fallback),
    SubflowEstablished { index: usize },
    SubflowClosed { index: usize },
    AddressAnnounced(RemoteAddr),
    /// The peer reset the connection (MP_FASTCLOSE, or every subflow died).
    Reset,
}

/// A join that was refused (the host answers with a RST).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinRefused {
    NotASyn,
    UnknownToken,
    TooManySubflows,
    Closed,
}

/// A segment to send on one subflow.
#[derive(Debug, Clone)]
pub struct Transmit {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub header: TcpHeader,
    /// Data-level offsets of the payload (empty: no payload).
    pub data: Range<u64>,
}

impl Transmit {
    fn as_segment(&self) -> Segment<'_> {
        Segment { local: self.local, remote: self.remote, header: &self.header, data: self.data.clone() }
    }
}

/// A segment to send, lent where it was built (see
/// [`Connection::poll_transmit_with`]); the fields are [`Transmit`]'s.
#[derive(Debug, Clone)]
pub struct Segment<'a> {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub header: &'a TcpHeader,
    pub data: Range<u64>,
}

/// Where a driver finds the bytes of the data stream (for DSS checksums).
pub trait PayloadSource {
    /// Fills `buf` with the stream bytes starting at data offset `off`.
    fn fill(&self, off: u64, buf: &mut [u8]);
}

/// Per-subflow statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct SubflowStats {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub backup: bool,
    pub established: bool,
    pub closed: bool,
    /// Nothing more will pass on it (closed, or in TIME-WAIT).
    pub finished: bool,
    pub stale: bool,
    pub tcp: TcpStats,
}

/// Counters of the connection as a whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MptcpStats {
    pub joins_refused: u64,
    pub checksum_failures: u64,
    /// Segments with payload no mapping covers (a box merged segments or
    /// stripped a DSS): the subflow was reset, or the connection fell back.
    pub unmapped_data: u64,
    pub reinjected_bytes: u64,
    pub add_addr_sent: u64,
    pub add_addr_received: u64,
    /// Bytes sent again by opportunistic retransmission.
    pub opportunistic_bytes: u64,
    /// Times a subflow's window was halved by penalisation.
    pub penalties: u64,
    /// Transmit passes in which the connection-level window (the peer's
    /// receive window, or a full send buffer) held data back while a
    /// subflow had room (see `SchedContext::window_blocked`).
    pub window_blocked: u64,
    /// Segments outside their subflow's window: ACKed, options ignored.
    pub unacceptable_segments: u64,
}

#[derive(Debug, Clone, Copy)]
struct Announce {
    id: u8,
    addr: IpAddr,
    next_at: Instant,
    tries: u32,
}

#[derive(Debug)]
pub struct Connection {
    cfg: MptcpConfig,
    client: bool,
    local: KeyMaterial,
    remote: Option<KeyMaterial>,
    /// DSS checksums in use (either end asked).
    checksum: bool,
    fallback: Option<Fallback>,
    /// After a fallback: data offset minus subflow offset of the stream.
    fb_delta: u64,
    /// The subflow a fallen-back connection runs on (the one alive when it
    /// fell back): its stream is the data stream from then on.
    fb_sub: usize,
    /// An MP_FAIL (the DSN whose checksum failed) to send.
    mp_fail_pending: Option<u64>,
    /// The initial subflow's stream is still the data stream shifted by a
    /// constant, so the connection may fall back to plain TCP (RFC 8684
    /// 3.7). A completed join or a data-level reinjection ends that: the
    /// peer, mapping unmapped bytes after its own data, would place them
    /// wrong (Linux: msk->allow_infinite_fallback).
    may_fall_back: bool,
    established: bool,
    /// Both DATA_FINs are through: the subflows are being closed.
    closing: bool,
    /// The path manager was told the connection is established.
    pm_started: bool,
    reset: bool,
    subflows: Vec<Subflow>,
    scheduler: Box<dyn Scheduler>,
    pm: Box<dyn PathManager>,
    remotes: Vec<RemoteAddr>,
    /// The peer's MP_CAPABLE had the C flag: no joins to its initial
    /// address (remote id 0).
    peer_denies_initial: bool,
    add_addr_accepted: u32,
    announces: Vec<Announce>,
    /// ADD_ADDR echoes to send.
    echoes: VecDeque<(u8, IpAddr, Option<u16>)>,
    remove_pending: Vec<u8>,
    /// Our address ids withdrawn by `remove_local` (until `add_local`):
    /// the path manager does not see them.
    withdrawn: Vec<u8>,
    fastclose_pending: bool,
    rng: u64,

    /// Stream bytes before the data sequence space in each direction (a
    /// Fast Open SYN's): the stream offset of DSN IDSN+1, ours and the
    /// peer's.
    local_base: u64,
    remote_base: u64,

    // ---- send side (data offsets)
    app_end: u64,
    data_una: u64,
    /// Next new data offset to schedule.
    sched_nxt: u64,
    reinject: VecDeque<Range<u64>>,
    /// Peer's data-level window, from DATA_ACK.
    /// The right edge of the peer's window: data offset (DATA_ACK +
    /// window) never moved back.
    wnd_end: u64,
    fin_queued: bool,
    /// The application filled the send buffer and waits for room (with
    /// `MptcpConfig::write_wakeup_third`, for a third of it to be free).
    /// Linux: SOCK_NOSPACE on the socket the subflows share, which also
    /// lets their ACKs grow their send buffers.
    writer_waits: bool,
    fin_next_at: Option<Instant>,
    /// Data-level retransmission timer (deadline, data_una when armed):
    /// data the subflows delivered that the peer never DATA_ACKed.
    data_rto: Option<(Instant, u64)>,
    /// With `stale_by_periods`: the connection timer's period as the last
    /// scheduling pass found it (Linux's `timer_ival`, set by
    /// `mptcp_subflow_get_send` and kept until the next pass).
    timer_ival: Option<Duration>,

    // ---- receive side
    rcv: Reassembly,
    read_off: u64,
    /// Receive-window autotuning (Linux profile).
    autotune: Option<autotune::RcvAutotune>,
    rcv_fin: Option<u64>,
    fin_received: bool,
    /// Out-of-order arrivals still waiting, oldest first: (end offset,
    /// arrival). The front is the oldest data held up by a hole before it
    /// (head-of-line blocking); entries leave once the in-order point
    /// passes their end.
    ooo_waits: VecDeque<(u64, Instant)>,
    /// The data_una an opportunistic retransmission was made for.
    opp_done: Option<u64>,

    out: VecDeque<Transmit>,
    // ---- what changed since the last transmit pass
    //
    // A segment arriving on one subflow changes that subflow only, and a
    // transmit pass changes the subflows it gave data to. Work per segment
    // must not grow with the number of subflows: rebuilding every
    // subflow's scheduler view, polling every subflow and taking the
    // minimum of every subflow's timers after each ACK was most of the
    // cost of an 8-subflow connection (each subflow's state is its own
    // cache lines). So the connection tracks which subflows changed and
    // sweeps all of them only after rare events (timeouts, path-manager
    // actions, fallback, API calls that touch subflows).
    /// Every subflow may have changed: the next pass sweeps them all.
    dirty_all: bool,
    /// Subflows an input changed since the last pass.
    dirty: Vec<usize>,
    /// Subflows the last pass gave data or an ACK to send, or that sent.
    touched: Vec<usize>,
    /// Per subflow: `note_cwnd_limited` was applied since the subflow last
    /// changed (applying it again would change nothing).
    noted: Vec<bool>,
    /// Per subflow: its next timer (TCP timers, third-ACK resend), valid
    /// while `timeouts_valid`.
    timeouts: Vec<Option<Instant>>,
    timeouts_valid: bool,
    /// Per subflow: when last polled, its advertised window was small
    /// enough that raising the shared cap may make it owe a window update
    /// (`tcp::Connection::may_owe_window_update`).
    may_owe_update: Vec<bool>,
    /// The receive window cap the subflows advertise (one buffer shared by
    /// all), handed to a subflow right before it may use it rather than
    /// written into every subflow after every segment.
    win_cap: Option<u64>,
    /// (local, remote) of each subflow, beside `subflows`.
    addrs: Vec<(SocketAddr, SocketAddr)>,
    /// The ports of `addrs` (local << 16 | remote), what finding a
    /// segment's subflow scans: a few bytes per subflow where a pair of
    /// socket addresses takes a cache line each.
    ports: Vec<u32>,
    /// Reused by the scheduling loop.
    infos: Vec<SubflowInfo>,
    picks: Vec<usize>,
    events: VecDeque<Event>,
    stats: MptcpStats,
    scratch: Vec<u8>,
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Connection {
    fn new(mut cfg: MptcpConfig, client: bool, seed: u64) -> Connection {
        let mut rng = seed;
        let key = splitmix(&mut rng);
        cfg.tcp.option_reserve = cfg.tcp.option_reserve.max(DSS_RESERVE);
        // mplab: a subflow whose path died keeps probing at least every
        // second (its data already went elsewhere), so it is back in use
        // soon after the path is; Linux backs off to 120 s (see Profile).
        cfg.tcp.max_backoff = cfg.tcp.max_backoff.min(cfg.subflow_max_backoff);
        let scheduler = cfg.scheduler.build();
        let pm = cfg.path_manager.build();
        Connection {
            client,
            local: KeyMaterial::from_key(key),
            remote: None,
            checksum: cfg.checksum,
            fallback: None,
            fb_delta: 0,
            fb_sub: 0,
            mp_fail_pending: None,
            may_fall_back: true,
            established: false,
            closing: false,
            pm_started: false,
            reset: false,
            subflows: Vec::new(),
            scheduler,
            pm,
            remotes: Vec::new(),
            peer_denies_initial: false,
            add_addr_accepted: 0,
            announces: Vec::new(),
            echoes: VecDeque::new(),
            remove_pending: Vec::new(),
            withdrawn: Vec::new(),
            fastclose_pending: false,
            rng,
            local_base: 0,
            remote_base: 0,
            app_end: 0,
            data_una: 0,
            sched_nxt: 0,
            reinject: VecDeque::new(),
            wnd_end: 65535,
            fin_queued: false,
            writer_waits: false,
            fin_next_at: None,
            data_rto: None,
            timer_ival: None,
            rcv: Reassembly::new(0),
            read_off: 0,
            autotune: cfg.rcv_autotune.then(|| autotune::RcvAutotune::new(cfg.rcv_buf)),
            rcv_fin: None,
            fin_received: false,
            ooo_waits: VecDeque::new(),
            opp_done: None,
            out: VecDeque::new(),
            dirty_all: true,
            dirty: Vec::new(),
            touched: Vec::new(),
            noted: Vec::new(),
            timeouts: Vec::new(),
            timeouts_valid: false,
            may_owe_update: Vec::new(),
            win_cap: None,
            addrs: Vec::new(),
            ports: Vec::new(),
            infos: Vec::new(),
            picks: Vec::new(),
            events: VecDeque::new(),
            stats: MptcpStats::default(),
            scratch: Vec::new(),
            cfg,
        }
    }

    /// Opens a connection from `local` to `remote`. `seed` makes the key,
    /// nonces, ISNs and ports (deterministic for a simulator).
    pub fn connect(cfg: MptcpConfig, local: SocketAddr, remote: SocketAddr, seed: u64, now: Instant) -> Connection {
        let mut c = Connection::new(cfg, true, seed);
        let iss = splitmix(&mut c.rng) as u32;
        let tcp = tcp::Connection::connect(c.cfg.tcp.clone(), local, remote, iss, now);
        let mut sf = Subflow::new(tcp, local, remote, Origin::Initial);
        sf.local_id = c.local_id_of(local.ip());
        c.push_subflow(sf);
        c.remotes.push(RemoteAddr { id: 0, addr: remote });
        c
    }

    /// Answers a SYN that reached a listener. A SYN without MP_CAPABLE gives
    /// a connection that is plain TCP from the start.
    pub fn accept(cfg: MptcpConfig, local: SocketAddr, remote: SocketAddr, syn: &TcpHeader, seed: u64, now: Instant) -> Option<Connection> {
        let mut c = Connection::new(cfg, false, seed);
        let iss = splitmix(&mut c.rng) as u32;
        let tcp = tcp::Connection::accept(c.cfg.tcp.clone(), local, remote, syn, iss, now).ok()?;
        let mut sf = Subflow::new(tcp, local, remote, Origin::Initial);
        sf.local_id = c.local_id_of(local.ip());
        match syn.options.mptcp().find_map(|o| if let MptcpOption::MpCapable(m) = o { Some(*m) } else { None }) {
            Some(m) if m.version == 1 => c.checksum |= m.checksum_required(),
            _ => c.fall_back(Fallback::NoMpCapable),
        }
        c.push_subflow(sf);
        c.remotes.push(RemoteAddr { id: 0, addr: remote });
        Some(c)
    }

    fn local_id_of(&self, ip: IpAddr) -> u8 {
        self.cfg.locals.iter().find(|l| l.addr == ip).map_or(0, |l| l.id)
    }

    // -------------------------------------------------------------- queries

    /// Token of our key: a join SYN naming it belongs to this connection.
    pub fn local_token(&self) -> u32 {
        self.local.token
    }
    pub fn local_key(&self) -> u64 {
        self.local.key
    }
    pub fn is_established(&self) -> bool {
        self.established && !self.reset
    }
    pub fn fallback(&self) -> Option<Fallback> {
        self.fallback
    }
    pub fn checksums(&self) -> bool {
        self.checksum && self.fallback.is_none()
    }
    pub fn was_reset(&self) -> bool {
        self.reset
    }
    pub fn subflows(&self) -> &[Subflow] {
        &self.subflows
    }
    pub fn stats(&self) -> &MptcpStats {
        &self.stats
    }
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
    pub fn subflow_stats(&self) -> Vec<SubflowStats> {
        self.subflows
            .iter()
            .map(|s| SubflowStats {
                local: s.local,
                remote: s.remote,
                backup: s.backup || s.peer_backup,
                established: s.handshake == Handshake::Established,
                closed: s.is_closed(),
                finished: s.tcp.is_finished(),
                stale: s.stale,
                tcp: s.tcp.stats(),
            })
            .collect()
    }
    /// One line of internals, for tracing.
    pub fn debug_line(&self) -> String {
        format!(
            "est {} fb {:?} app_end {} data_una {} sched {} snd_buf {} fin_q {} fin_next {:?} rcv_nxt {} rcv_fin {:?} fin_rx {} closing {} reinject {:?} peer_wnd {} sf {:?}",
            self.established, self.fallback, self.app_end, self.data_una, self.sched_nxt, self.snd_buf(), self.fin_queued, self.fin_next_at, self.rcv.nxt(), self.rcv_fin,
            self.fin_received, self.closing, self.reinject, self.peer_wnd(),
            self.subflows.iter().map(|s| (s.handshake, s.usable(), s.stale, s.tcp.backoff(), s.tcp.state())).collect::<Vec<_>>()
        )
    }

    /// Receive side: data-level bytes waiting out of order (the
    /// connection's out-of-order queue).
    /// Data-level bytes received so far, in order or held out of order:
    /// what a segment added is what it brought that was not there (the
    /// first copy of a byte wins).
    pub fn received_bytes(&self) -> u64 {
        self.rcv.nxt() + self.rcv.ooo_bytes()
    }

    pub fn ooo_bytes(&self) -> u64 {
        self.rcv.ooo_bytes()
    }
    /// Receive side: how long the oldest out-of-order data has waited for
    /// the hole before it (None: nothing is blocked).
    pub fn hol_delay(&self, now: Instant) -> Option<Duration> {
        self.ooo_waits.front().map(|&(_, t)| now.saturating_since(t))
    }

    /// Whether a driver must pass payload bytes to `handle_segment` (DSS
    /// checksums are in use).
    pub fn needs_payload(&self) -> bool {
        self.checksums()
    }

    // --------------------------------------------------------- application

    pub fn send_space(&self) -> u64 {
        if self.fin_queued || self.reset {
            return 0;
        }
        let held = self.app_end - self.data_una;
        let free = self.snd_buf().saturating_sub(held);
        if self.cfg.write_wakeup_third && self.writer_waits && free < held / 2 {
            return 0;
        }
        free
    }

    /// The most data written and not yet DATA_ACKed the connection holds.
    /// Stream offset below which every byte was DATA_ACKed: nothing asks a
    /// payload source for those bytes again.
    pub fn acked_offset(&self) -> u64 {
        self.data_una
    }

    /// Bytes the application wrote that the peer has not DATA_ACKed: what
    /// the send buffer holds (Linux: `write_seq - snd_una`, SIOCOUTQ).
    pub fn send_queued(&self) -> u64 {
        self.app_end - self.data_una
    }

    /// The connection's send buffer: `snd_buf`, or under send-buffer
    /// autotuning `tcp_wmem[0]` plus the subflows' buffers (`sndbuf.rs`).
    pub fn snd_buf(&self) -> u64 {
        if !self.cfg.snd_autotune {
            return self.cfg.snd_buf;
        }
        sndbuf::connection_sndbuf(self.subflows.iter().filter(|s| !s.is_closed()).map(|s| s.sndbuf))
    }

    pub fn send(&mut self, n: u64) -> u64 {
        // The subflows' cached timeouts stay valid: writing (or reading)
        // at the data level changes no subflow until the next pass.
        let space = self.send_space();
        if space > 0 {
            self.writer_waits = false;
        }
        let n = n.min(space);
        self.app_end += n;
        if n > 0 && n == space {
            // The buffer is full: a writer with more sleeps until there is
            // room (a third of the buffer, with `write_wakeup_third`).
            self.writer_waits = true;
        }
        n
    }
    pub fn readable(&self) -> u64 {
        self.rcv.nxt() - self.read_off
    }
    pub fn recv(&mut self, max: u64) -> Range<u64> {
        let n = max.min(self.readable());
        let r = self.read_off..self.read_off + n;
        self.read_off += n;
        r
    }
    /// The peer sent DATA_FIN and everything before it was read.
    pub fn peer_closed(&self) -> bool {
        self.fin_received && self.read_off == self.rcv.nxt()
    }
    /// DATA_FIN after the queued data.
    pub fn close(&mut self) {
        self.changed_all();
        self.fin_queued = true;
    }
    /// MP_FASTCLOSE: abort at once, on every subflow.
    pub fn abort(&mut self) {
        self.changed_all();
        self.fastclose_pending = true;
    }
    /// Replaces the packet scheduler (a user's own [`Scheduler`]; the
    /// built-in ones are chosen by name in [`MptcpConfig::scheduler`]).
    pub fn set_scheduler(&mut self, s: Box<dyn Scheduler>) {
        self.changed_all();
        self.scheduler = s;
    }
    /// The packet scheduler's name.
    pub fn scheduler_name(&self) -> &'static str {
        self.scheduler.name()
    }

    /// Asks the peer to use subflow `index` only as a backup (MP_PRIO).
    pub fn set_backup(&mut self, index: usize, backup: bool) {
        self.changed_all();
        if let Some(s) = self.subflows.get_mut(index) {
            s.backup = backup;
            s.prio_pending = true;
            s.tcp.ack_now();
        }
    }
    /// Withdraws one of our addresses: REMOVE_ADDR, its subflows end, and
    /// no subflow uses it again until [`add_local`](Self::add_local).
    pub fn remove_local(&mut self, id: u8) {
        self.changed_all();
        // A connection that is over has no one to tell.
        if !self.remove_pending.contains(&id) && !self.closing {
            self.remove_pending.push(id);
        }
        if !self.withdrawn.contains(&id) {
            self.withdrawn.push(id);
        }
        self.announces.retain(|a| a.id != id);
        for s in self.subflows.iter_mut().filter(|s| s.local_id == id) {
            s.tcp.abort();
        }
    }

    /// Puts a withdrawn address of ours (one of `locals`) back in service:
    /// the path manager announces it or opens subflows from it, as it would
    /// have at establishment (Linux: `ip mptcp endpoint add` again).
    pub fn add_local(&mut self, id: u8) {
        self.changed_all();
        self.withdrawn.retain(|&x| x != id);
        // A REMOVE_ADDR not sent yet would now only confuse the peer.
        self.remove_pending.retain(|&x| x != id);
        let Some(l) = self.cfg.locals.iter().find(|l| l.id == id).copied() else { return };
        if !self.pm_started || self.closing || self.reset || self.fallback.is_some() {
            return;
        }
        let mut out = Vec::new();
        let tuples: Vec<_> = self.subflows.iter().filter(|s| !s.is_closed()).map(|s| (s.local, s.remote)).collect();
        let remotes = self.join_remotes();
        let locals = self.live_locals();
        let v = PmView { client: self.client, locals: &locals, remotes: &remotes, subflows: &tuples, limits: self.cfg.limits, id_order: self.cfg.pm_id_order };
        self.pm.on_local_added(&v, l, &mut out);
        self.apply(out);
    }

    /// The id of our address `ip`, if it is one of `locals`.
    pub fn local_addr_id(&self, ip: IpAddr) -> Option<u8> {
        self.cfg.locals.iter().find(|l| l.addr == ip).map(|l| l.id)
    }

    /// Our addresses the path manager may use (not withdrawn).
    fn live_locals(&self) -> Vec<LocalAddr> {
        self.cfg.locals.iter().filter(|l| !self.withdrawn.contains(&l.id)).copied().collect()
    }

    // ---------------------------------------------------------------- input

    /// A SYN carrying MP_JOIN, addressed to a token this connection owns.
    pub fn accept_join(&mut self, now: Instant, local: SocketAddr, remote: SocketAddr, syn: &TcpHeader) -> Result<usize, JoinRefused> {
        self.changed_all();
        let Some(MpJoin::Syn { backup, addr_id, token, nonce }) = syn.options.mptcp().find_map(|o| if let MptcpOption::MpJoin(j) = o { Some(*j) } else { None }) else {
            return Err(JoinRefused::NotASyn);
        };
        if token != self.local.token {
            self.stats.joins_refused += 1;
            return Err(JoinRefused::UnknownToken);
        }
        if self.reset || self.closing || self.fallback.is_some() || self.remote.is_none() {
            self.stats.joins_refused += 1;
            return Err(JoinRefused::Closed);
        }
        if self.subflows.iter().filter(|s| !s.is_closed()).count() as u32 > self.cfg.limits.subflows {
            self.stats.joins_refused += 1;
            return Err(JoinRefused::TooManySubflows);
        }
        if let Some(i) = self.subflows.iter().position(|s| s.local == local && s.remote == remote && !s.is_closed()) {
            return Ok(i); // a retransmitted SYN: the subflow answers it
        }
        let iss = splitmix(&mut self.rng) as u32;
        let tcp = tcp::Connection::accept(self.cfg.tcp.clone(), local, remote, syn, iss, now).map_err(|_| JoinRefused::NotASyn)?;
        let local_nonce = splitmix(&mut self.rng) as u32;
        let mut sf = Subflow::new(tcp, local, remote, Origin::Join { local_nonce, remote_nonce: nonce });
        sf.local_id = self.local_id_of(local.ip());
        sf.remote_id = addr_id;
        sf.peer_backup = backup;
        self.push_subflow(sf);
        Ok(self.subflows.len() - 1)
    }

    /// Processes a segment that arrived on the subflow `local` <- `remote`.
    /// `payload` is needed only when [`needs_payload`](Self::needs_payload).
    /// Returns the data-level offsets the payload was placed at, if any.
    pub fn handle_segment(&mut self, now: Instant, local: SocketAddr, remote: SocketAddr, h: &TcpHeader, payload_len: u32, payload: Option<&[u8]>) -> Option<Range<u64>> {
        let i = self.subflow_of(local, remote)?;
        self.changed(i);
        let mut placed = None;
        if self.fallback.is_some() {
            return self.input_as_plain_tcp(now, i, h, payload_len);
        }
        if !self.subflows[i].tcp.acceptable(h, payload_len) {
            // Outside the subflow's window: an ACK back, nothing else. Its
            // MPTCP options are not believed (RFC 7430; Linux reads them
            // only after tcp_sequence()): no fallback for a missing DSS, no
            // MP_FAIL, MP_FASTCLOSE, address or priority change from a
            // sender who does not know where the subflow stands.
            self.subflows[i].tcp.on_unacceptable(h);
            self.stats.unacceptable_segments += 1;
            return None;
        }
        if h.rst() {
            if let Some(k) = h.options.mptcp().find_map(|o| if let MptcpOption::MpFastclose { receiver_key } = o { Some(*receiver_key) } else { None }) {
                if crypto::mac_eq(&k.to_be_bytes(), &self.local.key.to_be_bytes()) {
                    self.on_fastclose();
                    return None;
                }
            }
        }
        let optionless = self.subflows[i].saw_dss && !h.syn() && !h.rst() && h.ack_flag() && !h.options.has_mptcp() && self.fallback_possible_on(i);
        // A copy of bytes already received carries no news either: it counts
        // as an ACK (a forged duplicate without options must not make the
        // connection fall back; RFC 8684 3.7 is about data to be mapped).
        let old_copy = payload_len > 0 && self.subflows[i].tcp.rcv_offset(h.seq).is_some_and(|off| off + u64::from(payload_len) <= self.subflows[i].tcp.rcv_nxt());
        let pure_ack = (payload_len == 0 || old_copy) && !h.fin();
        let run = &mut self.subflows[i].optionless_acks;
        *run = if optionless && pure_ack { run.saturating_add(1) } else { 0 };
        // The client's first data went with MP_CAPABLE; an ACK of it with
        // no MPTCP option at all says the server fell back (it never got
        // the keys: RFC 8684 3.1, 3.7), so the client falls back too, or
        // what it sends again would reach a plain TCP stream twice.
        let sf = &self.subflows[i];
        let acks_first_data = self.client
            && sf.origin == Origin::Initial
            && sf.handshake == Handshake::ThirdAck
            && !sf.saw_dss
            && h.ack_flag()
            && !h.syn()
            && !h.rst()
            && !h.options.has_mptcp()
            && (h.ack.wrapping_sub(sf.tcp.iss().wrapping_add(1)) as i32) as i64 > sf.syn_tx as i64
            && sf.tx_lookup(sf.syn_tx).is_some();
        // An MP_FAIL the connection cannot honour is ignored (Linux sends
        // no reply; the peer's wait for one times out and it resets).
        if h.options.mptcp().any(|o| matches!(o, MptcpOption::MpFail { .. })) && self.fallback_possible_on(i) {
            self.fall_back(Fallback::Checksum);
        } else if acks_first_data && self.alive_subflows() == 1 {
            self.fall_back(Fallback::NoMapping);
        } else if optionless && (!pure_ack || self.subflows[i].optionless_acks >= OPTIONLESS_ACKS_TO_FALL_BACK) {
            // The peer went on as plain TCP (it fell back, or a box strips
            // option 30 from here on): so do we. Data without a mapping
            // says so at once; pure ACKs only when several in a row come
            // without options, so that one ACK whose options a box
            // dropped (or an attacker's) does not make this end fall back
            // while the peer goes on with MPTCP, and resend as plain TCP
            // what the peer then takes twice.
            self.fall_back(Fallback::NoMapping);
        }
        if self.fallback.is_some() {
            return self.input_as_plain_tcp(now, i, h, payload_len);
        }
        if !self.client && h.syn() && !h.ack_flag() && payload_len > 0 && self.subflows[i].origin == Origin::Initial && self.subflows[i].handshake == Handshake::Opening {
            let placed = self.take_syn_data(now, i, h, payload_len);
            self.after_input(now);
            return placed;
        }
        let was_synced = self.subflows[i].tcp.is_established();
        if self.handshake_may_apply(i, h) {
            self.handshake_input(now, i, h);
        }
        if self.fallback.is_some() {
            return self.input_as_plain_tcp(now, i, h, payload_len);
        }
        self.refresh_coupling(i);
        // A server that lost the third ACK (and the first data, which
        // carry the keys) cannot place data yet: it takes none of it (the
        // segment still counts as an ACK), and the client sends it again
        // once the keys are through. Taken now, the bytes would become
        // readable later without their payload ever having been handed over.
        let payload_len = if !self.client && self.remote.is_none() { 0 } else { payload_len };
        // Payload that no mapping places (none in this segment, none
        // received before covers it; RFC 8684 3.3.1) is not taken in: the
        // driver gets no place for it, so taken in it would later be read
        // without its bytes. The subflow is reset, or the connection falls
        // back if it is the only one, and the sender sends it again.
        if payload_len > 0 && self.remote.is_some() && self.subflows[i].tcp.is_established() && !self.payload_mapped(i, h, payload_len) {
            self.stats.unmapped_data += 1;
            self.on_missing_mapping(i);
            if self.fallback.is_some() {
                return self.input_as_plain_tcp(now, i, h, payload_len);
            }
            return None;
        }
        // Bytes below this were received before: a copy of them without a
        // mapping (a retransmission through a box, a forged duplicate) says
        // nothing about the path and changes nothing.
        let rcv_before = self.subflows[i].tcp.rcv_nxt();
        let sub_range = self.sub_tcp(i).handle_segment(now, h, payload_len);
        let new_part = sub_range.as_ref().map(|r| r.start.max(rcv_before)..r.end).filter(|r| !r.is_empty());
        if !was_synced && self.subflows[i].tcp.is_established() && self.subflows[i].handshake == Handshake::Opening {
            self.subflow_synced(now, i);
        }
        // The fourth ACK of a join (RFC 8684 3.2) goes once the third ACK
        // has made this subflow ESTABLISHED: asked for while the subflow was
        // still SYN-RECEIVED (in handshake_input), TCP owed no ACK and the
        // initiator, not allowed to send, waited for its own resend.
        if !self.client && !was_synced && self.subflows[i].tcp.is_established() && self.subflows[i].is_join() && self.subflows[i].handshake == Handshake::Established {
            self.subflows[i].tcp.ack_now();
        }
        let wnd = h.ack_flag().then(|| self.subflows[i].tcp.peer_window());
        let mut dss = None;
        for o in h.options.mptcp() {
            match *o {
                // The initiator's first data, mapped implicitly at IDSN+1
                // and at the subflow's first byte: only a segment starting
                // there carries that mapping (a later one claiming it maps
                // nothing, RFC 8684 3.1).
                MptcpOption::MpCapable(MpCapable { data_len: Some(dl), .. }) if !self.client && self.subflows[i].tcp.rcv_offset(h.seq) == Some(self.subflows[i].syn_rx) => {
                    if let Some(rk) = self.remote {
                        let sub = self.subflows[i].syn_rx;
                        self.subflows[i].add_rx(subflow::RxMap { sub, dsn: rk.idsn.wrapping_add(1), len: dl as u64 });
                        self.subflows[i].saw_dss = true;
                    }
                }
                MptcpOption::Dss(d) => dss = Some(d),
                MptcpOption::AddAddr(a) => self.on_add_addr(a),
                MptcpOption::RemoveAddr(ids) => self.on_remove_addr(ids.as_slice()),
                MptcpOption::MpPrio { backup, .. } => self.subflows[i].peer_backup = backup,
                MptcpOption::MpFastclose { receiver_key } if crypto::mac_eq(&receiver_key.to_be_bytes(), &self.local.key.to_be_bytes()) => {
                    self.on_fastclose();
                    return None;
                }
                _ => {}
            }
        }
        if let (Some(w), None) = (wnd, dss.and_then(|d| d.data_ack)) {
            // No DATA_ACK (a handshake segment): relative to what is
            // acknowledged already.
            self.advance_wnd_end(self.data_una, w);
        }
        if let Some(d) = dss {
            self.subflows[i].saw_dss = true;
            // Only a DATA_ACK shows the peer has our key (RFC 8684 B.3 lets
            // a Fast Open server map data before the third ACK, without one).
            if self.subflows[i].handshake == Handshake::ThirdAck && d.data_ack.is_some() {
                self.subflows[i].handshake = Handshake::Established;
            }
            let failures = self.stats.checksum_failures;
            self.on_dss(now, i, &d, sub_range.clone(), payload);
            if let (Some(w), Some(a)) = (wnd, d.data_ack) {
                self.advance_wnd_end(self.data_ack_offset(a.value, a.wide), w);
            }
            if self.stats.checksum_failures > failures && self.fallback.is_none() {
                // Bytes whose checksum failed are not placed: the driver
                // must not hold them (the first copy of a byte wins, so
                // they would stand for the good copy sent again).
                self.drain_subflow(now, i);
                self.after_input(now);
                return None;
            }
            if self.fallback.is_none() {
                if let Some(r) = new_part.as_ref().filter(|_| self.remote.is_some()) {
                    // A sender never puts bytes of two mappings in one
                    // segment, so payload its own mapping leaves out, that
                    // no earlier mapping covers, never gets one: a box
                    // merged segments and dropped a DSS (RFC 8684 3.7).
                    if self.subflows[i].rx_covers_any(r) && (!self.subflows[i].rx_covers(r.start) || !self.subflows[i].rx_covers(r.end - 1)) {
                        self.stats.unmapped_data += 1;
                        self.on_missing_mapping(i);
                        if self.fallback.is_some() {
                            self.after_fallback_input(i, sub_range.clone());
                            self.after_input(now);
                            return sub_range;
                        }
                    }
                }
            }
            if let (Some(m), Some(r)) = (d.mapping, sub_range.as_ref()) {
                if !m.is_infinite() {
                    let dsn = self.expand_dsn(m.dsn, m.dsn_wide);
                    let sub = self.sub_off_of_ssn(i, m.ssn);
                    if let Some(rid) = self.remote.map(|k| k.idsn.wrapping_add(1)) {
                        // The payload's place, as far as this mapping
                        // reaches from its first byte (the driver copies
                        // the payload from its start).
                        if sub <= r.start {
                            let end = r.end.min(sub + u64::from(m.data_len)).max(r.start);
                            let off = dsn.wrapping_sub(rid).wrapping_add(self.remote_base).wrapping_add(r.start - sub);
                            placed = Some(off..off + (end - r.start));
                        }
                    }
                }
            }
        } else if new_part.as_ref().is_some_and(|r| !self.subflows[i].rx_covers(r.start)) && self.remote.is_some() {
            // Data no mapping covers: options stripped on the path.
            self.on_missing_mapping(i);
            if self.fallback.is_some() {
                self.after_fallback_input(i, sub_range.clone());
                self.after_input(now);
                return sub_range;
            }
        }
        // Data covered by a mapping an earlier segment carried (or by the
        // MP_CAPABLE data_len mapping) is placed by that mapping.
        if placed.is_none() {
            if let (Some(r), Some(rk)) = (sub_range.as_ref().filter(|r| !r.is_empty()), self.remote) {
                if let Some(dsn) = self.subflows[i].rx_dsn_of(r.start) {
                    let off = dsn.wrapping_sub(rk.idsn.wrapping_add(1)).wrapping_add(self.remote_base);
                    placed = Some(off..off + (r.end - r.start));
                }
            }
        }
        self.drain_subflow(now, i);
        self.grow_sndbuf_on_input(i);
        self.after_input(now);
        placed
    }

    /// Send-buffer autotuning as Linux runs it: a subflow's buffer grows
    /// to its current window's worth (`sndbuf::subflow_sndbuf`) only when
    /// a segment arrives on it while the writer waits for room, and only
    /// if the subflow, once it has sent what it holds, still has room in
    /// its window (`tcp_check_space`, `tcp_new_space`,
    /// `tcp_should_expand_sndbuf`, net/ipv4/tcp_input.c; the subflows
    /// share the MPTCP socket's `struct socket`, so its SOCK_NOSPACE is
    /// theirs). A window that peaks while it is full (slow start's
    /// overshoot) leaves the buffer where it was.
    fn grow_sndbuf_on_input(&mut self, i: usize) {
        if !self.cfg.snd_autotune || !self.writer_waits || self.send_space() > 0 {
            return;
        }
        let max = self.cfg.snd_buf;
        let s = &mut self.subflows[i];
        let (cwnd, mss) = (s.tcp.cc_state().cwnd, s.tcp.mss().max(1));
        if s.tcp.is_established() && s.tcp.in_flight() + s.tcp.unsent() + mss <= cwnd {
            s.sndbuf = sndbuf::subflow_sndbuf(s.sndbuf, cwnd / mss, max);
        }
    }

    /// The subflow with this 4-tuple.
    fn subflow_of(&self, local: SocketAddr, remote: SocketAddr) -> Option<usize> {
        let key = port_key(local, remote);
        self.ports.iter().enumerate().filter(|&(_, &k)| k == key).map(|(i, _)| i).find(|&i| self.addrs[i] == (local, remote))
    }

    /// Subflow `i`'s TCP, told the current receive window cap first.
    fn sub_tcp(&mut self, i: usize) -> &mut tcp::Connection {
        let t = &mut self.subflows[i].tcp;
        t.set_window_cap(self.win_cap);
        t
    }

    /// Gives subflow `i`'s congestion control the state of its siblings,
    /// if it is a coupled one (LIA, OLIA, BALIA).
    fn refresh_coupling(&mut self, i: usize) {
        // Only a subflow with data in flight can take an ACK that grows its
        // window (a pure receiver never does): skip the refresh otherwise.
        if !self.subflows[i].tcp.cc_coupled() || self.subflows[i].tcp.in_flight() == 0 {
            return;
        }
        let mut c = self.subflows[i].tcp.take_coupling().unwrap_or_default();
        c.paths.clear();
        c.me = 0;
        for (k, s) in self.subflows.iter().enumerate() {
            if k == i {
                c.me = c.paths.len();
                c.paths.push(s.tcp.path_state());
            } else if s.usable() && !(s.backup || s.peer_backup) {
                c.paths.push(s.tcp.path_state());
            }
        }
        self.subflows[i].tcp.set_coupling(Some(c));
    }

    /// SSN (relative, on the wire) -> subflow receive offset.
    /// Whether the first payload byte of `h` on subflow `i` has a mapping:
    /// the segment's own DSS (or MP_CAPABLE data_len) mapping, or one an
    /// earlier segment carried.
    fn payload_mapped(&self, i: usize, h: &TcpHeader, payload_len: u32) -> bool {
        let Some(off) = self.subflows[i].tcp.rcv_offset(h.seq) else { return true };
        if off + u64::from(payload_len) <= self.subflows[i].tcp.rcv_nxt() {
            return true; // all old: nothing is taken in
        }
        for o in h.options.mptcp() {
            match o {
                MptcpOption::MpCapable(MpCapable { data_len: Some(_), .. }) if off == self.subflows[i].syn_rx => return true,
                MptcpOption::Dss(Dss { mapping: Some(m), .. }) => {
                    if m.is_infinite() {
                        return true;
                    }
                    let sub = self.sub_off_of_ssn(i, m.ssn);
                    if sub <= off && off < sub + u64::from(m.data_len) {
                        return true;
                    }
                }
                _ => {}
            }
        }
        self.subflows[i].rx_covers(off)
    }

    /// Relative subflow sequence number 1 is the subflow's first byte
    /// after its SYN's (see `Subflow::syn_rx`).
    fn sub_off_of_ssn(&self, i: usize, ssn: u32) -> u64 {
        let s = &self.subflows[i];
        tcp::seq::unwrap(ssn, 1u32.wrapping_sub(s.syn_rx as u32), s.tcp.rcv_nxt()).unwrap_or(0)
    }

    /// The DSN of our stream offset `off`.
    fn local_dsn(&self, off: u64) -> u64 {
        self.local.idsn.wrapping_add(1).wrapping_add(off.wrapping_sub(self.local_base))
    }

    fn expand_dsn(&self, v: u64, wide: bool) -> u64 {
        if wide {
            return v;
        }
        let reference = self.remote.map_or(0, |k| k.idsn.wrapping_add(1).wrapping_add(self.rcv.nxt().wrapping_sub(self.remote_base)));
        crypto::expand_seq32(reference, v as u32)
    }

    fn expand_data_ack(&self, v: u64, wide: bool) -> u64 {
        if wide {
            return v;
        }
        crypto::expand_seq32(self.local_dsn(self.data_una), v as u32)
    }

    /// A segment of a fallen-back connection: subflow `i` is a plain TCP
    /// connection now (kept out of line: the multipath path is the hot one).
    #[cold]
    #[inline(never)]
    fn input_as_plain_tcp(&mut self, now: Instant, i: usize, h: &TcpHeader, payload_len: u32) -> Option<Range<u64>> {
        // The subflow's bytes continue the data stream where it stands
        // (read in order and appended at RCV.NXT: an infinite mapping), so
        // a subflow offset is a data offset shifted by what the two had
        // read when the connection fell back. The driver is told the data
        // offset: the subflow's may differ (data sent twice on it, or by
        // other subflows before).
        let (nxt, read) = (self.rcv.nxt(), self.subflows[i].tcp.read_offset());
        let sub_range = self.sub_tcp(i).handle_segment(now, h, payload_len);
        self.after_fallback_input(i, sub_range.clone());
        self.grow_sndbuf_on_input(i);
        self.after_input(now);
        if i != self.fb_sub {
            return None;
        }
        // Subflow bytes from before the data stream's start (the part of
        // the subflow read before the fallback that the stream does not
        // continue) are old: no place for them.
        let r = sub_range?;
        let start = (r.start + nxt).checked_sub(read)?;
        Some(start..start + (r.end - r.start))
    }

    /// Whether `h` may still take part in subflow `i`'s MPTCP handshake.
    /// Only a repeated MP_JOIN third ACK concerns an established subflow
    /// of a connection whose keys are known (see `handshake_input`); every
    /// other data segment skips the handshake checks.
    fn handshake_may_apply(&self, i: usize, h: &TcpHeader) -> bool {
        let s = &self.subflows[i];
        s.handshake != Handshake::Established
            || self.remote.is_none()
            || h.syn()
            || (!self.client && s.is_join() && h.options.mptcp().any(|o| matches!(o, MptcpOption::MpJoin(_))))
    }

    /// MP_CAPABLE / MP_JOIN processing before the TCP engine sees the segment.
    fn handshake_input(&mut self, now: Instant, i: usize, h: &TcpHeader) {
        let cap = h.options.mptcp().find_map(|o| if let MptcpOption::MpCapable(m) = o { Some(*m) } else { None });
        let join = h.options.mptcp().find_map(|o| if let MptcpOption::MpJoin(j) = o { Some(*j) } else { None });
        let sf = &self.subflows[i];
        match sf.origin {
            Origin::Initial if self.client && h.syn() && h.ack_flag() && sf.handshake == Handshake::Opening => match cap {
                Some(m) if m.sender_key.is_some() => {
                    self.remote = m.sender_key.map(KeyMaterial::from_key);
                    self.checksum |= m.checksum_required();
                    self.peer_denies_initial = m.flags & capable_flags::C != 0;
                }
                _ => self.fall_back(Fallback::NoMpCapable),
            },
            Origin::Initial if !self.client && self.remote.is_none() && !h.syn() => match cap {
                Some(m) if m.receiver_key == Some(self.local.key) => {
                    self.remote = m.sender_key.map(KeyMaterial::from_key);
                    self.subflows[i].handshake = Handshake::Established;
                    let _ = now;
                }
                // Only a segment with no MPTCP option at all says the third
                // ACK's MP_CAPABLE was stripped (not merely lost).
                _ if h.ack_flag() && !h.options.has_mptcp() => self.fall_back(Fallback::ThirdAckStripped),
                _ => {}
            },
            Origin::Join { local_nonce, .. } if self.client && h.syn() && h.ack_flag() && sf.handshake == Handshake::Opening => {
                let ok = match (join, self.remote) {
                    (Some(MpJoin::SynAck { backup, addr_id, hmac, nonce }), Some(rk)) => {
                        let expect = crypto::join_synack_hmac(rk.key, self.local.key, nonce, local_nonce);
                        if crypto::mac_eq(&expect.to_be_bytes(), &hmac.to_be_bytes()) {
                            let s = &mut self.subflows[i];
                            s.origin = Origin::Join { local_nonce, remote_nonce: nonce };
                            s.peer_backup = backup;
                            s.remote_id = addr_id;
                            self.may_fall_back = false;
                            true
                        } else {
                            false
                        }
                    }
                    _ => false,
                };
                if !ok {
                    self.stats.joins_refused += 1;
                    let s = &mut self.subflows[i];
                    s.reset_reason = Some(tcprst_reason::MPTCP_SPECIFIC);
                    s.tcp.abort();
                }
            }
            Origin::Join { local_nonce, remote_nonce } if !self.client || sf.handshake == Handshake::ThirdAck => {
                // The initiator repeats its third ACK: our fourth ACK was
                // lost (or not sent); answer it again.
                if !self.client && sf.handshake == Handshake::Established && !h.syn() && matches!(join, Some(MpJoin::Ack { .. })) {
                    self.subflows[i].tcp.ack_now();
                    return;
                }
                // Responder: the third ACK must carry the initiator's HMAC.
                if !self.client && sf.handshake != Handshake::Established && !h.syn() && h.ack_flag() {
                    let ok = match (join, self.remote) {
                        (Some(MpJoin::Ack { hmac }), Some(rk)) => crypto::mac_eq(&crypto::join_ack_hmac(rk.key, self.local.key, remote_nonce, local_nonce), &hmac),
                        _ => false,
                    };
                    let s = &mut self.subflows[i];
                    if ok {
                        s.handshake = Handshake::Established;
                        // The fourth ACK goes once TCP is ESTABLISHED, below.
                        self.may_fall_back = false;
                    } else {
                        self.stats.joins_refused += 1;
                        s.reset_reason = Some(tcprst_reason::MPTCP_SPECIFIC);
                        s.tcp.abort();
                    }
                }
            }
            _ => {}
        }
    }

    /// Fast Open, server: the initiator's first SYN carried bytes. Taken
    /// (if the subflow's TCP takes them), they are the stream's first,
    /// readable at once, before the data sequence space, as Linux places
    /// them (mptcp_fastopen_subflow_synack_set_params: out of the MPTCP
    /// sequence space, `map_seq = -len` before the IDSN+1 of the next).
    fn take_syn_data(&mut self, now: Instant, i: usize, h: &TcpHeader, payload_len: u32) -> Option<Range<u64>> {
        let r = self.sub_tcp(i).handle_segment(now, h, payload_len)?;
        let n = r.end - r.start;
        let s = &mut self.subflows[i];
        s.tcp.recv(n);
        s.syn_rx = n;
        self.remote_base = n;
        self.rcv.insert(0..n);
        Some(0..n)
    }

    /// The TCP handshake of subflow `i` completed on our side.
    fn subflow_synced(&mut self, now: Instant, i: usize) {
        let s = &mut self.subflows[i];
        if self.client && s.origin == Origin::Initial {
            // Fast Open: the SYN's bytes the SYN-ACK acknowledged precede
            // the data sequence space; any others go again, mapped at
            // IDSN+1 (their subflow bytes keep their send mapping).
            let acked = s.tcp.syn_data_acked();
            s.syn_tx = acked;
            self.local_base = acked;
            self.data_una = self.data_una.max(acked);
        }
        let s = &mut self.subflows[i];
        if self.client {
            // We owe the third ACK (keys / HMAC) and resend it until the peer
            // shows it arrived.
            s.handshake = Handshake::ThirdAck;
            s.third_ack_at = Some(now);
            s.tcp.ack_now();
        }
    }

    /// Our data offset a DATA_ACK names.
    fn data_ack_offset(&self, value: u64, wide: bool) -> u64 {
        let ack = self.expand_data_ack(value, wide);
        ack.wrapping_sub(self.local.idsn.wrapping_add(1)).wrapping_add(self.local_base)
    }

    /// The peer's window from an ACK whose DATA_ACK is at offset `ack`:
    /// the right edge (DATA_ACK + window) only moves forward, whichever
    /// subflow and however late the ACK came (RFC 8684 3.3.4; Linux's
    /// `ack_update_msk` keeps the largest `wnd_end`). A DATA_ACK beyond
    /// what was sent is not believed.
    fn advance_wnd_end(&mut self, ack: u64, wnd: u64) {
        let max = self.app_end + u64::from(self.fin_queued);
        if ack <= max {
            self.wnd_end = self.wnd_end.max(ack.saturating_add(wnd));
        }
    }

    /// The peer's window beyond what it acknowledged.
    fn peer_wnd(&self) -> u64 {
        self.wnd_end.saturating_sub(self.data_una)
    }

    fn on_dss(&mut self, now: Instant, i: usize, d: &Dss, sub_range: Option<Range<u64>>, payload: Option<&[u8]>) {
        if let Some(a) = d.data_ack {
            let off = self.data_ack_offset(a.value, a.wide);
            // Acceptable: within what we sent (plus the DATA_FIN).
            let max = self.app_end + u64::from(self.fin_queued);
            if off <= max && off > self.data_una {
                self.data_una = off;
            }
            if self.client && self.subflows[i].origin == Origin::Initial && self.subflows[i].handshake == Handshake::ThirdAck {
                self.subflows[i].handshake = Handshake::Established;
            }
        }
        let Some(m) = d.mapping else { return };
        if m.is_infinite() {
            // RFC 8684 3.7: an infinite mapping ends multipath only on a
            // connection that never had more than its initial subflow
            // (Linux: msk->allow_infinite_fallback, cleared when a join
            // completes or data is reinjected). On any other it is an error on this subflow,
            // which is reset: a forged one must not make a connection of
            // several subflows fall back and lose the others' data.
            if !self.fallback_possible_on(i) {
                self.changed_all();
                let s = &mut self.subflows[i];
                s.reset_reason = Some(tcprst_reason::MIDDLEBOX_INTERFERENCE);
                s.tcp.abort();
            } else {
                self.fall_back(Fallback::NoMapping);
            }
            return;
        }
        let dsn = self.expand_dsn(m.dsn, m.dsn_wide);
        let mut len = m.data_len as u64;
        if d.data_fin {
            // The DATA_FIN takes the last DSN of the mapping.
            len = len.saturating_sub(1);
            if let Some(rk) = self.remote {
                self.rcv_fin = Some(dsn.wrapping_sub(rk.idsn.wrapping_add(1)).wrapping_add(self.remote_base).wrapping_add(len));
            }
        }
        if len == 0 || m.ssn == 0 {
            return; // DATA_FIN alone
        }
        let sub = self.sub_off_of_ssn(i, m.ssn);
        if let (Some(c), Some(r), Some(p)) = (m.checksum, sub_range.as_ref(), payload) {
            // Verifiable here when this segment holds the whole mapping
            // (always so for mplab's and Linux's segments, which carry
            // their own mapping; a coalescing box may add bytes around it).
            let inside = r.start <= sub && sub + len <= r.end && p.len() as u64 == r.end - r.start;
            if self.checksum && inside {
                let at = (sub - r.start) as usize;
                if !crypto::dss_checksum_ok(dsn, m.ssn, m.data_len, &p[at..at + len as usize], c) {
                    self.stats.checksum_failures += 1;
                    self.on_checksum_failure(i, dsn);
                    return;
                }
            }
        }
        let _ = now;
        self.subflows[i].add_rx(subflow::RxMap { sub, dsn, len });
    }

    /// Moves in-order subflow data into the connection's reassembly.
    fn drain_subflow(&mut self, now: Instant, i: usize) {
        let Some(rk) = self.remote else { return };
        let base = rk.idsn.wrapping_add(1).wrapping_sub(self.remote_base);
        let s = &mut self.subflows[i];
        loop {
            let avail = s.tcp.readable();
            if avail == 0 {
                break;
            }
            let start = s.tcp.rcv_nxt() - avail;
            let Some((dsn, left)) = s.rx_lookup(start) else { break };
            let n = s.tcp.recv(avail.min(left));
            let off = dsn.wrapping_sub(base);
            let len = n.end - n.start;
            // Beyond the in-order point: it waits (bounded bookkeeping; the
            // receive buffer bounds it anyway).
            if off > self.rcv.nxt() && len > 0 && self.ooo_waits.len() < 1 << 16 {
                self.ooo_waits.push_back((off + len, now));
            }
            self.rcv.insert(off..off + len);
        }
        let nxt = self.rcv.nxt();
        while self.ooo_waits.front().is_some_and(|&(end, _)| end <= nxt) {
            self.ooo_waits.pop_front();
        }
        if !self.rcv.has_holes() {
            self.ooo_waits.clear();
        }
        self.check_data_fin();
    }

    fn check_data_fin(&mut self) {
        if !self.fin_received && self.rcv_fin == Some(self.rcv.nxt()) {
        self.changed_all();
            self.fin_received = true;
            // Acknowledge it promptly.
            if let Some(s) = self.subflows.iter_mut().find(|s| s.usable()) {
                s.tcp.ack_now();
            }
        }
    }

    fn alive_subflows(&self) -> usize {
        self.subflows.iter().filter(|s| !s.is_closed()).count()
    }

    /// Whether the connection may fall back to plain TCP on subflow `i`:
    /// it is the initial subflow, the only one alive (a late segment on
    /// one already reset says nothing of the one carrying the data now),
    /// and nothing has been sent out of the stream's order.
    fn fallback_possible_on(&self, i: usize) -> bool {
        self.may_fall_back && self.alive_subflows() == 1 && self.subflows[i].origin == Origin::Initial && !self.subflows[i].is_closed()
    }

    fn on_missing_mapping(&mut self, i: usize) {
        self.changed_all();
        // Where it may not fall back, Linux resets the subflow too
        // (MPTCP_RST_EMPTCP): either way the unmapped bytes are not taken.
        if self.fallback_possible_on(i) {
            self.fall_back(Fallback::NoMapping);
        } else {
            let s = &mut self.subflows[i];
            s.reset_reason = Some(tcprst_reason::MIDDLEBOX_INTERFERENCE);
            s.tcp.abort();
        }
    }

    fn on_checksum_failure(&mut self, i: usize, dsn: u64) {
        self.changed_all();
        if self.fallback_possible_on(i) {
            // RFC 8684 3.7: tell the sender (MP_FAIL) and go on as TCP.
            self.mp_fail_pending = Some(dsn);
            self.fall_back(Fallback::Checksum);
            self.subflows[i].tcp.ack_now();
        } else {
            let s = &mut self.subflows[i];
            s.reset_reason = Some(tcprst_reason::MIDDLEBOX_INTERFERENCE);
            s.tcp.abort();
        }
    }

    fn on_add_addr(&mut self, a: AddAddr) {
        self.changed_all();
        if a.echo {
            self.announces.retain(|x| x.id != a.addr_id);
            return;
        }
        let Some(rk) = self.remote else { return };
        // The HMAC proves the sender holds the keys (RFC 8684 3.4.1).
        let ok = a.hmac.is_some_and(|got| crypto::mac_eq(&got.to_be_bytes(), &crypto::add_addr_hmac(rk.key, self.local.key, a.addr_id, a.addr, a.port).to_be_bytes()));
        if !ok {
            return;
        }
        self.stats.add_addr_received += 1;
        self.echoes.push_back((a.addr_id, a.addr, a.port));
        if let Some(s) = self.subflows.iter_mut().find(|s| s.usable()) {
            s.tcp.ack_now();
        }
        let port = a.port.unwrap_or_else(|| self.remotes.first().map_or(0, |r| r.addr.port()));
        let r = RemoteAddr { id: a.addr_id, addr: SocketAddr::new(a.addr, port) };
        if self.remotes.iter().any(|x| x.addr == r.addr) || self.add_addr_accepted >= self.cfg.limits.add_addr_accepted {
            return;
        }
        self.add_addr_accepted += 1;
        self.remotes.push(r);
        self.events.push_back(Event::AddressAnnounced(r));
        let mut out = Vec::new();
        let tuples: Vec<_> = self.subflows.iter().filter(|s| !s.is_closed()).map(|s| (s.local, s.remote)).collect();
        let remotes = self.join_remotes();
        let locals = self.live_locals();
        let v = PmView { client: self.client, locals: &locals, remotes: &remotes, subflows: &tuples, limits: self.cfg.limits, id_order: self.cfg.pm_id_order };
        self.pm.on_add_addr(&v, r, &mut out);
        self.apply(out);
    }

    /// The peer addresses joins may go to: all but the initial one when the
    /// peer set the C flag.
    fn join_remotes(&self) -> Vec<RemoteAddr> {
        self.remotes.iter().filter(|r| !(self.peer_denies_initial && r.id == 0)).copied().collect()
    }

    fn on_remove_addr(&mut self, ids: &[u8]) {
        self.changed_all();
        for s in self.subflows.iter_mut().filter(|s| ids.contains(&s.remote_id) && s.is_join()) {
            s.tcp.abort();
        }
        // A removed address no longer counts against the ADD_ADDR limit
        // (as Linux's `add_addr_accepted`): announced again, it is taken.
        let before = self.remotes.len();
        self.remotes.retain(|r| r.id == 0 || !ids.contains(&r.id));
        self.add_addr_accepted = self.add_addr_accepted.saturating_sub((before - self.remotes.len()) as u32);
    }

    fn on_fastclose(&mut self) {
        self.changed_all();
        self.reset = true;
        for s in &mut self.subflows {
            s.tcp.abort();
        }
        self.events.push_back(Event::Reset);
    }

    fn fall_back(&mut self, why: Fallback) {
        self.changed_all();
        if self.fallback.is_none() {
            self.fallback = Some(why);
            // From now on the single subflow's stream is the data stream,
            // shifted by whatever other subflows carried before.
            // The subflow it runs on: the one still open (subflow 0 if
            // none is); any other is closed (RFC 8684 3.7: a connection
            // falls back on a single subflow).
            self.fb_sub = self.subflows.iter().position(|s| !s.is_closed()).unwrap_or(0);
            for (k, s) in self.subflows.iter_mut().enumerate() {
                if k != self.fb_sub && !s.is_closed() {
                    s.tcp.abort();
                }
            }
            if let Some(s) = self.subflows.get_mut(self.fb_sub) {
                // Bytes queued on the subflow but not yet sent (a data-level
                // reinjection, say) would reach the peer as the stream's
                // continuation, whatever data offset their mapping named:
                // take them back and go on from just after the last byte
                // the subflow sent. Bytes already sent under an older
                // mapping would need the MP_FAIL exchange (docs/security.md).
                let sent_end = s.tcp.send_offset() - s.tcp.unsent();
                if s.tcp.retract_unsent() > 0 {
                    s.truncate_tx(sent_end);
                    let cont = if s.sent_high.0 == sent_end && sent_end > 0 { s.sent_high.1 } else { self.data_una };
                    self.sched_nxt = cont.max(self.data_una).min(self.sched_nxt);
                }
                self.fb_delta = self.sched_nxt.wrapping_sub(s.tcp.send_offset());
            }
            self.events.push_back(Event::FellBack(why));
        }
    }

    fn after_fallback_input(&mut self, i: usize, _sub_range: Option<Range<u64>>) {
        if i != self.fb_sub {
            return;
        }
        let fb = self.fb_sub;
        let s = &mut self.subflows[fb];
        let avail = s.tcp.readable();
        if avail > 0 {
            let r = s.tcp.recv(avail);
            let off = self.rcv.nxt();
            self.rcv.insert(off..off + (r.end - r.start));
        }
        if s.tcp.peer_closed() {
            self.fin_received = true;
        }
        let una = self.subflows[fb].tcp.snd_una().wrapping_add(self.fb_delta);
        self.data_una = self.data_una.max(una.min(self.app_end));
        if !self.established && self.subflows[fb].tcp.is_established() {
            self.established = true;
            self.events.push_back(Event::Established);
        }
    }

    /// Bookkeeping after any input: establishment, stale subflows, closed
    /// subflows, path manager.
    fn after_input(&mut self, now: Instant) {
        let rtt = self.autotune_rtt();
        if let Some(a) = &mut self.autotune {
            a.on_read(now, self.read_off, rtt, self.cfg.rcv_buf);
        }
        self.update_subflows();
        self.arm_data_rto(now);
    }

    /// The round trip receive-buffer autotuning measures over: the slowest
    /// subflow's receiver-side estimate, so the window covers data still on
    /// its way over the longest path. As Linux's `mptcp_rcv_space_adjust`,
    /// a subflow without a receiver sample (one that carried no data yet,
    /// however long its handshake took) does not count, and with none the
    /// window does not grow.
    fn autotune_rtt(&self) -> Option<Duration> {
        self.subflows.iter().filter(|s| s.usable()).filter_map(|s| s.tcp.rcv_rtt()).max()
    }

    /// Data the subflows sent and had acknowledged (nothing in flight or
    /// queued on any subflow) but the peer has not DATA_ACKed: a receiver
    /// may drop such data (Linux prunes its MPTCP-level queue under memory
    /// pressure), so after an RTO without progress it is reinjected, like
    /// Linux's MPTCP retransmit timer (RFC 8684 3.3.6). With
    /// `head_retransmit_on_idle` (the Linux profile) the timer runs as soon
    /// as one usable subflow is idle, and resends only the head chunk.
    fn arm_data_rto(&mut self, now: Instant) {
        // The cheap conditions first: the subflow sweep only when needed.
        let idle = |s: &Subflow| s.tcp.in_flight() == 0 && s.tcp.unsent() == 0;
        let ready = || {
            if self.cfg.stale_by_periods {
                // Linux's timer runs whenever the data level makes no
                // progress: it also counts stale periods.
                true
            } else if self.cfg.head_retransmit_on_idle {
                self.subflows.iter().any(|s| s.usable() && idle(s))
            } else {
                self.subflows.iter().filter(|s| !s.is_closed()).all(idle)
            }
        };
        if !(self.established && self.fallback.is_none() && self.data_una < self.sched_nxt && self.reinject.is_empty() && ready()) {
            self.data_rto = None;
        } else if self.data_rto.is_none_or(|(_, una)| una != self.data_una) {
            let rto = if self.cfg.stale_by_periods {
                self.timer_ival.unwrap_or_else(|| self.timer_ival_now(now))
            } else {
                self.subflows.iter().filter(|s| s.usable()).map(|s| s.tcp.stats().rto).min().unwrap_or(Duration::from_secs(1))
            };
            self.data_rto = Some((now + rto, self.data_una));
        }
    }

    /// Linux's `timer_ival` (`__mptcp_set_timeout`): the longest time left
    /// on the timer of a subflow not yet counting stale periods, else
    /// TCP_RTO_MIN.
    fn timer_ival_now(&self, now: Instant) -> Duration {
        let left = self.subflows.iter().filter(|s| s.usable() && s.stale_count == 0).filter_map(|s| s.tcp.retransmit_slot_deadline()).map(|t| t.saturating_since(now)).max();
        left.filter(|d| !d.is_zero()).unwrap_or(self.cfg.tcp.min_rto)
    }

    /// The unacknowledged data the connection-level timer sends again.
    fn data_rto_range(&self) -> Range<u64> {
        if self.cfg.head_retransmit_on_idle {
            // Linux's head data fragment: its send path packs the stream
            // into 32 KiB page fragments.
            self.data_una..(self.data_una + HEAD_RETRANSMIT).min(self.sched_nxt)
        } else {
            self.data_una..self.sched_nxt
        }
    }

    /// The `k`-th subflow to look at again (`None` past the last): all
    /// after a rare event, else those inputs changed.
    fn changed_at(&self, k: usize) -> Option<usize> {
        if self.dirty_all {
            (k < self.subflows.len()).then_some(k)
        } else {
            self.dirty.get(k).copied()
        }
    }

    /// Queues everything subflow `idx` sent and has not had acknowledged
    /// for reinjection on the others.
    fn reinject_sent_on(&mut self, idx: usize) {
        let ranges: Vec<Range<u64>> = self.subflows[idx].tx.iter().map(|m| m.data..m.data + m.len).collect();
        for r in ranges {
            self.push_reinject(r);
        }
    }

    fn update_subflows(&mut self) {
        let mut newly_established = false;
        let mut k = 0;
        while let Some(idx) = self.changed_at(k) {
            k += 1;
            let s = &mut self.subflows[idx];
            if !s.announced_up && s.handshake == Handshake::Established && s.tcp.is_established() {
                s.announced_up = true;
                self.events.push_back(Event::SubflowEstablished { index: idx });
                if s.origin == Origin::Initial && !self.established {
                    newly_established = true;
                }
            }
            if self.cfg.snd_autotune && s.tcp.is_established() {
                // The buffer an established subflow starts from
                // (`tcp_init_buffer_space`): its initial window's worth.
                s.sndbuf = sndbuf::subflow_sndbuf(s.sndbuf, 0, self.cfg.snd_buf);
            }
            // Stale after `stale_after` timeouts in a row: its data goes
            // elsewhere. (Linux's rule runs with the connection-level
            // timer, `count_stale_periods`; anything received ends it.)
            let stale = if self.cfg.stale_by_periods {
                s.stale && s.tcp.segments_received() == s.stale_rx
            } else {
                s.tcp.backoff() >= self.cfg.stale_after
            };
            if self.cfg.stale_by_periods && s.stale && !stale {
                s.stale_count = 0;
            }
            if stale && !s.stale {
                s.stale = true;
                self.reinject_sent_on(idx);
            } else if !stale && self.subflows[idx].stale {
                self.subflows[idx].stale = false;
            }
            // The peer closed this subflow alone (a FIN without a DATA_FIN)
            // while the connection goes on: it carries nothing more either
            // way, so it is closed now and its data goes elsewhere, as in
            // Linux's `__mptcp_close_subflow`. Left half-open it would hold
            // its unacknowledged data until the connection ends.
            let s = &mut self.subflows[idx];
            if self.fallback.is_none() && self.rcv_fin.is_none() && !self.fin_received && s.tcp.state() == tcp::State::CloseWait {
                s.tcp.close();
                self.reinject_sent_on(idx);
            }
            let s = &mut self.subflows[idx];
            if s.is_closed() && !s.announced_down {
                s.announced_down = true;
                self.events.push_back(Event::SubflowClosed { index: idx });
                self.reinject_sent_on(idx);
            }
        }
        let _ = newly_established;
        if self.fallback.is_none() && !self.established && self.remote.is_some() && self.subflows.first().is_some_and(|s| s.usable()) {
            self.established = true;
            self.events.push_back(Event::Established);
        }
        // More subflows only once the peer has shown it holds our keys (the
        // first subflow is fully established), and not while closing.
        if self.established && !self.pm_started && !self.closing && self.subflows.first().is_some_and(|s| s.handshake == Handshake::Established) {
            self.pm_started = true;
            let mut out = Vec::new();
            let tuples: Vec<_> = self.subflows.iter().map(|s| (s.local, s.remote)).collect();
            let remotes = self.join_remotes();
            let locals = self.live_locals();
        let v = PmView { client: self.client, locals: &locals, remotes: &remotes, subflows: &tuples, limits: self.cfg.limits, id_order: self.cfg.pm_id_order };
            self.pm.on_established(&v, &mut out);
            self.apply(out);
        }
        if !self.reset && !self.subflows.is_empty() && self.subflows.iter().all(|s| s.is_closed()) && !self.all_done() {
            self.reset = true;
            self.events.push_back(Event::Reset);
        }
        if self.all_done() && !self.closing {
            // Both DATA_FINs are acknowledged: the subflows end with FINs.
            self.closing = true;
            self.changed_all();
            for s in &mut self.subflows {
                if s.tcp.is_established() {
                    s.tcp.close();
                } else {
                    s.tcp.abort(); // a join still opening is not needed any more
                }
            }
        }
        let cap = self.rcv_window();
        if self.win_cap.is_some_and(|old| cap > old) {
            // A larger cap opens every subflow's window: those that last
            // advertised a small one may owe the peer a window update.
            for j in 0..self.may_owe_update.len() {
                if self.may_owe_update[j] {
                    self.changed(j);
                }
            }
        }
        self.win_cap = Some(cap);
        // (Path-manager actions above may have added subflows: then all.)
        let mut k = 0;
        while let Some(idx) = self.changed_at(k) {
            k += 1;
            self.subflows[idx].prune_tx();
        }
    }

    fn push_reinject(&mut self, r: Range<u64>) {
        let r = r.start.max(self.data_una)..r.end;
        if r.is_empty() {
            return;
        }
        self.stats.reinjected_bytes += r.end - r.start;
        self.reinject.push_back(r);
    }

    fn apply(&mut self, actions: Vec<PmAction>) {
        for a in actions {
            match a {
                PmAction::Open { local, remote, backup } => self.open_subflow(local, remote, backup),
                PmAction::Announce { id, addr } => {
                    self.announces.push(Announce { id, addr, next_at: Instant::ZERO, tries: 0 });
                }
            }
        }
    }

    fn open_subflow(&mut self, local_ip: IpAddr, remote: RemoteAddr, backup: bool) {
        let Some(rk) = self.remote else { return };
        let _ = rk;
        let port = 32768 + (splitmix(&mut self.rng) % 28000) as u16;
        let local = SocketAddr::new(local_ip, port);
        let iss = splitmix(&mut self.rng) as u32;
        let nonce = splitmix(&mut self.rng) as u32;
        let tcp = tcp::Connection::connect(self.cfg.tcp.clone(), local, remote.addr, iss, Instant::ZERO);
        let mut sf = Subflow::new(tcp, local, remote.addr, Origin::Join { local_nonce: nonce, remote_nonce: 0 });
        sf.local_id = self.local_id_of(local_ip);
        sf.remote_id = remote.id;
        sf.backup = backup;
        self.push_subflow(sf);
    }

    fn push_subflow(&mut self, sf: Subflow) {
        self.addrs.push((sf.local, sf.remote));
        self.ports.push(port_key(sf.local, sf.remote));
        self.subflows.push(sf);
        self.changed_all();
    }

    /// Any subflow may have changed (rare events): the next pass sweeps all.
    fn changed_all(&mut self) {
        self.dirty_all = true;
        self.timeouts_valid = false;
    }

    /// Subflow `i` changed (a segment arrived on it).
    fn changed(&mut self, i: usize) {
        if !self.dirty.contains(&i) {
            self.dirty.push(i);
        }
        self.timeouts_valid = false;
    }

    fn all_done(&self) -> bool {
        self.fin_received && self.fin_queued && self.data_una > self.app_end
    }

    // --------------------------------------------------------------- timers

    pub fn poll_timeout(&self) -> Option<Instant> {
        let ann = self.announces.iter().map(|a| a.next_at);
        let fin = self.fin_next_at;
        let data = self.data_rto.map(|(t, _)| t);
        let own = ann.chain(fin).chain(data).min();
        let subs = if self.timeouts_valid {
            self.timeouts.iter().flatten().min().copied()
        } else {
            (0..self.subflows.len()).filter_map(|i| self.subflow_timeout(i)).min()
        };
        own.into_iter().chain(subs).min()
    }

    /// The connection's receive window: one receive buffer for all
    /// subflows, each advertising its free space (given to a subflow when
    /// it is next used, see `sub_tcp`).
    fn rcv_window(&self) -> u64 {
        let buf = self.autotune.as_ref().map_or(self.cfg.rcv_buf, |a| a.window());
        let ooo = if self.cfg.window_counts_ooo { self.rcv.ooo_bytes() } else { 0 };
        buf.saturating_sub(self.rcv.nxt() - self.read_off + ooo)
    }

    /// Subflow `i`'s next timer: its TCP timers, and the join initiator's
    /// third-ACK resend.
    fn subflow_timeout(&self, i: usize) -> Option<Instant> {
        let s = &self.subflows[i];
        let third = (s.handshake == Handshake::ThirdAck && s.is_join()).then(|| s.third_ack_at.map(|t| t + s.tcp.stats().rto)).flatten();
        s.tcp.poll_timeout().into_iter().chain(third).min()
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        self.changed_all();
        let cap = self.win_cap;
        for s in &mut self.subflows {
            if s.tcp.poll_timeout().is_some_and(|t| t <= now) {
                s.tcp.set_window_cap(cap);
                s.tcp.handle_timeout(now);
            }
            if s.handshake == Handshake::ThirdAck && s.is_join() && s.third_ack_at.is_some_and(|t| t + s.tcp.stats().rto <= now) {
                s.third_ack_at = Some(now);
                s.tcp.ack_now();
            }
        }
        if self.fin_next_at.is_some_and(|t| t <= now) {
            self.fin_next_at = None; // poll_transmit resends it
        }
        if self.data_rto.is_some_and(|(t, una)| t <= now && una == self.data_una) {
            self.data_rto = None;
            if self.cfg.stale_by_periods {
                self.count_stale_periods();
            }
            if !self.cfg.head_retransmit_on_idle {
                let r = self.data_rto_range();
                self.reinject.push_back(r);
            } else if let Some(p) = self.retransmit_subflow() {
                let r = self.data_rto_range();
                self.retransmit_head_on(p, r);
            }
        }
        self.update_subflows();
        self.arm_data_rto(now);
    }

    /// The subflow Linux sends the head of the unacknowledged data again on
    /// (`mptcp_subflow_get_retrans`): one with nothing queued, a non-backup
    /// first; a backup only once every subflow holding data has gone more
    /// than one retransmission period without hearing from the peer
    /// (`min_stale_count > 1`); else none, and the timer runs again.
    fn retransmit_subflow(&self) -> Option<usize> {
        let idle = |s: &Subflow| s.usable() && s.tcp.in_flight() == 0 && s.tcp.unsent() == 0;
        let is_backup = |s: &Subflow| s.backup || s.peer_backup;
        if let Some(p) = self.subflows.iter().position(|s| idle(s) && !is_backup(s)) {
            return Some(p);
        }
        let min_stale = self.subflows.iter().filter(|s| s.usable() && !idle(s)).map(|s| s.stale_count).min().unwrap_or(u32::MAX);
        self.subflows.iter().position(|s| idle(s) && is_backup(s)).filter(|_| min_stale > 1)
    }

    /// Queues `r` on subflow `p`, in segments, as a retransmission.
    fn retransmit_head_on(&mut self, p: usize, r: Range<u64>) {
        let mss = u64::from(self.subflows[p].tcp.mss()).max(1);
        let mut at = r.start;
        while at < r.end {
            let len = (r.end - at).min(mss);
            let s = &mut self.subflows[p];
            let sub = s.tcp.send_offset();
            if s.tcp.send_record(len) != len {
                break;
            }
            s.tx.push_back(subflow::TxMap { sub, data: at, len });
            at += len;
            self.may_fall_back = false;
        }
        self.stats.reinjected_bytes += at - r.start;
        self.touch(p);
    }

    /// Linux's staleness (`mptcp_pm_subflow_chk_stale`, run from the
    /// connection-level retransmission): each period a subflow spends with
    /// data outstanding and nothing received counts; past `stale_after`,
    /// if another subflow is healthy (fewer than `stale_after - 2` such
    /// periods), it is stale and everything unacknowledged at the data
    /// level is sent again.
    fn count_stale_periods(&mut self) {
        for s in &mut self.subflows {
            if !s.usable() || (s.tcp.in_flight() == 0 && s.tcp.unsent() == 0) {
                continue;
            }
            let rx = s.tcp.segments_received();
            if s.stale_count == 0 {
                s.stale_rx = rx;
                s.stale_count = 1;
            } else if s.stale_rx == rx {
                s.stale_count = s.stale_count.saturating_add(1);
            } else {
                s.stale_count = 0;
            }
        }
        let healthy = self.cfg.stale_after.saturating_sub(2).max(1);
        for i in 0..self.subflows.len() {
            let s = &self.subflows[i];
            if !s.usable() || s.stale_count < self.cfg.stale_after || (s.tcp.in_flight() == 0 && s.tcp.unsent() == 0) {
                continue;
            }
            let alternative = self.subflows.iter().enumerate().any(|(j, o)| j != i && o.usable() && o.stale_count < healthy);
            if alternative {
                self.subflows[i].stale = true;
                self.changed(i);
                self.push_reinject(self.data_una..self.sched_nxt);
            }
        }
    }

    // ------------------------------------------------------------- transmit

    fn info_of(&self, index: usize) -> SubflowInfo {
        let s = &self.subflows[index];
        let st = s.tcp.cc_state();
        SubflowInfo {
            index,
            srtt: s.tcp.srtt(),
            rttvar: s.tcp.rttvar(),
            cwnd: st.cwnd,
            ssthresh: st.ssthresh,
            in_flight: s.tcp.in_flight(),
            unacked: s.tcp.unacked(),
            mss: s.tcp.mss(),
            backup: s.backup || s.peer_backup,
            usable: s.usable(),
            has_window: s.tcp.can_send() && s.tcp.unsent() == 0,
            unsent: s.tcp.unsent(),
            sndbuf: if self.cfg.snd_autotune {
                s.sndbuf
            } else if self.cfg.subflows_share_snd_buf {
                self.cfg.snd_buf
            } else {
                sndbuf::subflow_sndbuf(0, st.cwnd / s.tcp.mss().max(1), self.cfg.snd_buf)
            },
        }
    }

    /// The scheduler's view of every subflow: rebuilt whole after a rare
    /// event (`full`), else refreshed for the subflows that changed.
    fn infos_into(&self, out: &mut Vec<SubflowInfo>, full: bool, changed: &[usize]) {
        if !full && out.len() == self.subflows.len() {
            for &i in changed {
                out[i] = self.info_of(i);
            }
            return;
        }
        out.clear();
        out.extend((0..self.subflows.len()).map(|i| self.info_of(i)));
    }

    /// Tells the usable subflows whose window is full that data waited
    /// (see `tcp::Connection::note_cwnd_limited`); a subflow unchanged
    /// since it was last told needs nothing.
    fn note_cwnd_limited(&mut self) {
        for (s, noted) in self.subflows.iter_mut().zip(self.noted.iter_mut()) {
            if !*noted && s.usable() {
                s.tcp.note_cwnd_limited();
                *noted = true;
            }
        }
    }

    fn touch(&mut self, i: usize) {
        if !self.touched.contains(&i) {
            self.touched.push(i);
        }
    }

    /// Hands chunks of data (reinjections first) to the subflows the
    /// scheduler picks, while it picks.
    fn schedule(&mut self, now: Instant, full: bool, changed: &[usize]) {
        if self.fallback.is_some() {
            let s = &mut self.subflows[self.fb_sub];
            let want = self.app_end - self.sched_nxt;
            if want > 0 && s.tcp.is_established() {
                self.sched_nxt += s.tcp.send(want);
            }
            if self.fin_queued && self.sched_nxt >= self.app_end {
                s.tcp.close();
            }
            return;
        }
        if !self.established {
            self.schedule_early();
            return;
        }
        let mut picks = std::mem::take(&mut self.picks);
        let mut infos = std::mem::take(&mut self.infos);
        self.infos_into(&mut infos, full, changed);
        let mut had_data = false;
        let mut had_timer_ival = false;
        self.scheduler.begin_pass();
        for _ in 0..4096 {
            let (range, reinjected) = match self.reinject.front() {
                Some(r) => (r.clone(), true),
                None => {
                    let limit = self.app_end.min(self.data_una + self.peer_wnd());
                    if self.sched_nxt >= limit {
                        break;
                    }
                    (self.sched_nxt..limit, false)
                }
            };
            let mss = infos.iter().filter(|i| i.usable).map(|i| i.mss).min().unwrap_or(1400);
            let len = (range.end - range.start).min(mss);
            had_data = true;
            picks.clear();
            let cx = SchedContext {
                len,
                now,
                reinjection: reinjected,
                queued: self.app_end - self.sched_nxt,
                outstanding: self.sched_nxt - self.data_una,
                send_window: self.peer_wnd().min(self.snd_buf()),
                window_blocked: self.stats.window_blocked,
            };
            if self.cfg.stale_by_periods && !had_timer_ival {
                had_timer_ival = true;
                self.timer_ival = Some(self.timer_ival_now(now));
            }
            self.scheduler.schedule(&infos, &cx, &mut picks);
            if picks.is_empty() {
                // Data waits for windows: the subflows' windows may grow.
                self.note_cwnd_limited();
                break;
            }
            for &p in &picks {
                self.touch(p);
                let Some(s) = self.subflows.get_mut(p) else { continue };
                let sub = s.tcp.send_offset();
                if s.tcp.send_record(len) == len {
                    s.tx.push_back(subflow::TxMap { sub, data: range.start, len });
                }
                // It has data waiting now: what the scheduler sees next.
                if let Some(i) = infos.get_mut(p) {
                    i.unsent += len;
                    i.has_window = false;
                }
            }
            if reinjected {
                self.may_fall_back = false;
                let f = self.reinject.front_mut().expect("front");
                f.start += len;
                if f.is_empty() || f.end <= self.data_una {
                    self.reinject.pop_front();
                }
            } else {
                self.sched_nxt += len;
            }
        }
        if had_data {
            // Data was waiting: a subflow whose window is full was limited
            // by it (even if another subflow took the data), so its window
            // may grow (Linux's tcp_is_cwnd_limited on a full window).
            self.note_cwnd_limited();
        }
        if self.sched_nxt > self.data_una && infos.iter().any(|i| i.usable && i.has_window) {
            let mss = infos.iter().filter(|i| i.usable).map(|i| i.mss).min().unwrap_or(1400);
            if self.window_limited(mss) {
                self.stats.window_blocked += 1;
            }
        }
        if (self.cfg.opportunistic_retransmit || self.cfg.penalize) && self.reinject.is_empty() {
            self.receive_buffer_optimisations(now, &infos);
        }
        self.picks = picks;
        self.infos = infos;
        // Reinjections already acknowledged at the data level are moot.
        while self.reinject.front().is_some_and(|r| r.end <= self.data_una) {
            self.reinject.pop_front();
        }
    }

    /// Before the connection is established only a Fast Open client
    /// moves data: its first SYN carries what was written before it. A
    /// server that took a SYN's bytes still waits for the third ACK to
    /// answer: RFC 8684 Appendix B.3 lets it send mappings without a
    /// DATA_ACK before, but a Linux client (6.18, options.c
    /// check_fully_established) takes a first in-sequence segment with
    /// neither a DATA_ACK nor MP_CAPABLE as a reason to fall back to TCP,
    /// and Linux's server does not send before then either (its subflow
    /// is not yet ESTABLISHED, `__mptcp_subflow_active`).
    fn schedule_early(&mut self) {
        if !self.client || self.fallback.is_some() || self.closing || self.reset {
            return;
        }
        let Some(s) = self.subflows.first_mut() else { return };
        if s.origin != Origin::Initial || s.is_closed() || self.sched_nxt != 0 || !s.tx.is_empty() {
            return;
        }
        let n = self.app_end.min(s.tcp.syn_data_room());
        if n > 0 && s.tcp.send_record(n) == n {
            s.tx.push_back(subflow::TxMap { sub: 0, data: 0, len: n });
            self.sched_nxt = n;
            self.touch(0);
        }
    }

    /// New data is held back by the connection-level window: the peer's
    /// receive window is full, or everything the application wrote is
    /// out and the send buffer has no room for another segment.
    fn window_limited(&self, mss: u64) -> bool {
        let una = self.data_una;
        let rwnd_limited = self.app_end > self.sched_nxt && self.sched_nxt + mss > una + self.peer_wnd();
        let sndbuf_limited = self.sched_nxt == self.app_end && self.snd_buf().saturating_sub(self.app_end - una) < mss;
        rwnd_limited || sndbuf_limited
    }

    /// Opportunistic retransmission and penalisation (Raiciu et al., "How
    /// hard can it be?", NSDI 2012, section 4.2), run after scheduling when
    /// no new data could go out because of the window or the send buffer.
    fn receive_buffer_optimisations(&mut self, now: Instant, infos: &[SubflowInfo]) {
        let una = self.data_una;
        if self.sched_nxt <= una {
            return;
        }
        let mss = infos.iter().filter(|i| i.usable).map(|i| i.mss).min().unwrap_or(1400);
        if !self.window_limited(mss) {
            return;
        }
        // The subflow holding the window head (not yet acked at its level).
        let holds = |s: &Subflow| s.tx.iter().any(|m| m.data <= una && una < m.data + m.len && m.sub + (una - m.data) >= s.tcp.snd_una());
        let Some(h) = self.subflows.iter().position(&holds) else { return };
        let h_rtt = infos.get(h).map_or(Duration::MAX, |i| i.rtt());
        // A faster subflow with window space that does not hold it yet.
        let cand = infos
            .iter()
            .filter(|i| i.usable && i.has_window && i.index != h && i.rtt() < h_rtt && !holds(&self.subflows[i.index]))
            .min_by_key(|i| (i.rtt(), i.index))
            .map(|i| i.index);
        let Some(c) = cand else { return };
        if self.cfg.penalize {
            let s = &mut self.subflows[h];
            let rtt = s.tcp.srtt().unwrap_or(Duration::from_millis(200));
            if s.penalized_at.is_none_or(|t| now.saturating_since(t) >= rtt) {
                self.touch(h); // its window shrank
                let s = &mut self.subflows[h];
                s.penalized_at = Some(now);
                s.tcp.penalize();
                self.stats.penalties += 1;
            }
        }
        if self.cfg.opportunistic_retransmit && self.opp_done != Some(una) {
            // The mapping chunk that starts at (or contains) the head.
            let end = self.subflows[h].tx.iter().find(|m| m.data <= una && una < m.data + m.len).map_or(una + mss, |m| m.data + m.len);
            let len = (end - una).min(mss).min(self.sched_nxt - una);
            self.touch(c);
            let s = &mut self.subflows[c];
            let sub = s.tcp.send_offset();
            if len > 0 && s.tcp.send_record(len) == len {
                s.tx.push_back(subflow::TxMap { sub, data: una, len });
                self.opp_done = Some(una);
                self.stats.opportunistic_bytes += len;
            }
        }
    }

    /// The next segment to send, on whichever subflow.
    pub fn poll_transmit(&mut self, now: Instant, src: &dyn PayloadSource) -> Option<Transmit> {
        self.poll_transmit_with(now, src, |s| Transmit { local: s.local, remote: s.remote, header: *s.header, data: s.data })
    }

    /// [`poll_transmit`](Self::poll_transmit) for a caller that copies the
    /// segment somewhere of its own (a simulator's packet slot): `emit`
    /// sees it where it was built, so the ~350-byte header is copied once,
    /// by the caller, instead of on every return on the way up.
    pub fn poll_transmit_with<R>(&mut self, now: Instant, src: &dyn PayloadSource, emit: impl FnOnce(Segment<'_>) -> R) -> Option<R> {
        if let Some(t) = self.out.pop_front() {
            return Some(emit(t.as_segment()));
        }
        if self.fastclose_pending {
            self.fastclose_pending = false;
            self.emit_fastclose(now);
            return self.out.pop_front().map(|t| emit(t.as_segment()));
        }
        // What changed since the last pass: what inputs changed, and what
        // the last pass itself gave data to or saw send. After a rare event
        // (or while fallen back to one TCP stream) everything.
        let n = self.subflows.len();
        let full = self.dirty_all || self.fallback.is_some() || self.noted.len() != n;
        let mut changed = std::mem::take(&mut self.dirty);
        changed.append(&mut self.touched);
        changed.sort_unstable();
        changed.dedup();
        if full {
            self.noted.clear();
            self.noted.resize(n, false);
            self.timeouts.resize(n, None);
            self.may_owe_update.resize(n, false);
        } else {
            for &i in &changed {
                self.noted[i] = false;
            }
        }
        self.dirty_all = false;
        self.schedule(now, full, &changed);
        self.queue_control(now);
        // Poll what changed or was just given something, in index order
        // (as a sweep of all would send them); the others have nothing.
        let mut polled = changed;
        if full {
            polled.clear();
            polled.extend(0..n);
        } else {
            polled.extend_from_slice(&self.touched);
            polled.sort_unstable();
            polled.dedup();
        }
        // The first segment goes straight to `emit` (most passes make one),
        // the others wait in `out`.
        let mut emit = Some(emit);
        let mut first = None;
        // The subflows build their segments here, on the stack (in cache,
        // where a slot of each connection's own would be cold): the
        // ~350-byte header is written once, in place, not moved around.
        let mut t = tcp::Transmit::default();
        for &i in &polled {
            let mut sent = false;
            for _ in 0..1024 {
                if !self.sub_tcp(i).poll_transmit_into(now, &mut t) {
                    break;
                }
                let data = self.decorate(now, i, &mut t, src);
                let s = &mut self.subflows[i];
                if t.payload.end > s.sent_high.0 && data.end > data.start {
                    s.sent_high = (t.payload.end, data.end);
                }
                let (local, remote) = (self.subflows[i].local, self.subflows[i].remote);
                match emit.take() {
                    Some(f) => first = Some(f(Segment { local, remote, header: &t.header, data })),
                    None => self.out.push_back(Transmit { local, remote, header: t.header, data }),
                }
                sent = true;
            }
            // What a subflow sent (a retransmission, say) changed its view.
            if sent {
                self.touch(i);
            }
            self.timeouts[i] = self.subflow_timeout(i);
            self.may_owe_update[i] = self.subflows[i].tcp.may_owe_window_update();
        }
        self.timeouts_valid = true;
        polled.clear();
        self.dirty = polled; // keep the allocation
        first
    }

    /// Pure ACKs that must go out to carry options (DATA_FIN, ADD_ADDR,
    /// echoes, REMOVE_ADDR).
    fn queue_control(&mut self, now: Instant) {
        let fin_due = self.fallback.is_none() && self.fin_queued && self.sched_nxt >= self.app_end && self.data_una <= self.app_end && self.fin_next_at.is_none();
        let ann_due = self.announces.iter().any(|a| a.next_at <= now);
        if fin_due || ann_due || !self.echoes.is_empty() || !self.remove_pending.is_empty() {
            let Some(carrier) = self.subflows.iter().position(|s| s.usable()) else { return };
            self.subflows[carrier].tcp.ack_now();
            self.touch(carrier);
        }
    }

    fn emit_fastclose(&mut self, now: Instant) {
        // Without the peer's key (a Fast Open server refusing what its SYN
        // brought) the subflows end with plain RSTs.
        let rk = self.remote;
        if rk.is_none() && !self.subflows.iter().any(|s| s.tcp.syn_data_received() > 0) {
            return;
        }
        self.changed_all();
        let cap = self.win_cap;
        for i in 0..self.subflows.len() {
            let s = &mut self.subflows[i];
            if s.is_closed() {
                continue;
            }
            s.tcp.set_window_cap(cap);
            s.tcp.abort();
            if let Some(mut t) = s.tcp.poll_transmit(now) {
                t.header.options = TcpOptions::new();
                if let Some(rk) = rk {
                    let _ = t.header.options.push_mptcp(MptcpOption::MpFastclose { receiver_key: rk.key });
                }
                self.out.push_back(Transmit { local: s.local, remote: s.remote, header: t.header, data: 0..0 });
            }
        }
        self.reset = true;
    }

    /// Adds the MPTCP options subflow `i`'s segment carries, within 40
    /// bytes, in place; returns the data-level offsets of its payload.
    fn decorate(&mut self, now: Instant, i: usize, t: &mut tcp::Transmit, src: &dyn PayloadSource) -> Range<u64> {
        let data = self.decorate_inner(now, i, &mut t.header, t.payload.clone(), src);
        fit_options(&mut t.header);
        data
    }

    /// Adds the MPTCP options to subflow `i`'s segment `h` carrying
    /// subflow-stream bytes `sub`; returns their data-level offsets.
    fn decorate_inner(&mut self, now: Instant, i: usize, h: &mut TcpHeader, sub: Range<u64>, src: &dyn PayloadSource) -> Range<u64> {
        let mut data = 0..0;
        if self.fallback.is_some() {
            if i != self.fb_sub {
                return data; // closed when the connection fell back: nothing of the stream
            }
            // Bytes sent before the fallback go again under the mapping they
            // first went out with; the rest continue the data stream.
            data = match self.subflows[i].tx_lookup(sub.start) {
                Some((d, _)) if sub.start < self.sched_nxt.wrapping_sub(self.fb_delta) => d..d + (sub.end - sub.start),
                _ => sub.start.wrapping_add(self.fb_delta)..sub.end.wrapping_add(self.fb_delta),
            };
            if let Some(dsn) = self.mp_fail_pending.take() {
                let _ = h.options.push_mptcp(MptcpOption::MpFail { dsn });
            }
            return data;
        }
        if h.rst() {
            if let Some(reason) = self.subflows[i].reset_reason {
                let _ = h.options.push_mptcp(MptcpOption::MpTcpRst { flags: 0, reason });
            }
            return data;
        }
        let cap_flags = capable_flags::H | if self.cfg.checksum || self.checksum { capable_flags::A } else { 0 } | if self.cfg.deny_join_initial { capable_flags::C } else { 0 };
        let s = &self.subflows[i];
        if h.syn() {
            let o = match s.origin {
                Origin::Initial if !h.ack_flag() => MptcpOption::MpCapable(MpCapable { version: 1, flags: cap_flags, sender_key: None, receiver_key: None, data_len: None, checksum: None }),
                Origin::Initial => MptcpOption::MpCapable(MpCapable { version: 1, flags: cap_flags, sender_key: Some(self.local.key), receiver_key: None, data_len: None, checksum: None }),
                Origin::Join { local_nonce, .. } if !h.ack_flag() => {
                    let token = self.remote.map_or(0, |k| k.token);
                    MptcpOption::MpJoin(MpJoin::Syn { backup: s.backup, addr_id: s.local_id, token, nonce: local_nonce })
                }
                Origin::Join { local_nonce, remote_nonce } => {
                    let rk = self.remote.map_or(0, |k| k.key);
                    let hmac = crypto::join_synack_hmac(self.local.key, rk, local_nonce, remote_nonce);
                    MptcpOption::MpJoin(MpJoin::SynAck { backup: s.backup, addr_id: s.local_id, hmac, nonce: local_nonce })
                }
            };
            let _ = h.options.push_mptcp(o);
            // A Fast Open SYN's bytes: stream offsets 0..n, no mapping.
            if let Some((d, _)) = s.tx_lookup(sub.start).filter(|_| !sub.is_empty()) {
                data = d..d + (sub.end - sub.start);
            }
            return data;
        }
        let Some(rk) = self.remote else {
            return data;
        };
        let payload_len = sub.end - sub.start;
        let fin_due = self.fin_queued && self.sched_nxt >= self.app_end && self.data_una <= self.app_end && self.fin_next_at.is_none_or(|t| t <= now);
        // The initiator repeats its keys / HMAC until the peer confirms.
        if s.handshake == Handshake::ThirdAck && self.client {
            match s.origin {
                Origin::Initial => {
                    // The MP_CAPABLE data form maps the subflow's first byte
                    // to the first data byte: a copy of that data sent
                    // again later in the subflow goes with a DSS mapping.
                    let first_data = payload_len > 0 && sub.start == s.syn_tx && s.tx_lookup(sub.start).is_some_and(|(d, _)| d == self.local_base);
                    if (payload_len == 0 && (!fin_due || !s.keys_sent)) || first_data {
                        let (data_len, checksum) = if first_data {
                            let dl = payload_len as u16;
                            let base = self.local_base;
                            let c = self.checksum.then(|| self.checksum_of(base, 1, dl, src));
                            data = base..base + payload_len;
                            (Some(dl), c)
                        } else {
                            (None, None)
                        };
                        let o = MpCapable { version: 1, flags: cap_flags, sender_key: Some(self.local.key), receiver_key: Some(rk.key), data_len, checksum };
                        self.subflows[i].keys_sent = true;
                        let _ = h.options.push_mptcp(MptcpOption::MpCapable(o));
                        return data;
                    }
                }
                Origin::Join { local_nonce, remote_nonce } => {
                    if payload_len == 0 {
                        let hmac = crypto::join_ack_hmac(self.local.key, rk.key, local_nonce, remote_nonce);
                        let _ = h.options.push_mptcp(MptcpOption::MpJoin(MpJoin::Ack { hmac }));
                        return data;
                    }
                }
            }
        }
        // DSS: DATA_ACK always, a mapping for payload, DATA_FIN when due.
        let data_ack = rk.idsn.wrapping_add(1).wrapping_add(self.rcv.nxt() - self.remote_base).wrapping_add(u64::from(self.fin_received));
        let mut dss = Dss { data_ack: Some(DataAck { value: data_ack, wide: true }), mapping: None, data_fin: false };
        if payload_len > 0 {
            if let Some((d, _)) = self.subflows[i].tx_lookup(sub.start) {
                let dsn = self.local_dsn(d);
                let ssn = sub.start.wrapping_sub(self.subflows[i].syn_tx).wrapping_add(1) as u32;
                let dl = payload_len as u16;
                let checksum = self.checksum.then(|| self.checksum_of(d, ssn, dl, src));
                dss.mapping = Some(DssMapping { dsn, dsn_wide: true, ssn, data_len: dl, checksum });
                data = d..d + payload_len;
            }
        } else if fin_due {
            let dsn = self.local_dsn(self.app_end);
            // A DATA_FIN without data: SSN 0, length 1, and a checksum over
            // the pseudo-header alone.
            let checksum = self.checksum.then(|| crypto::dss_checksum(dsn, 0, 1, &[]));
            dss.mapping = Some(DssMapping { dsn, dsn_wide: true, ssn: 0, data_len: 1, checksum });
            dss.data_fin = true;
            let rto = self.subflows[i].tcp.stats().rto;
            self.fin_next_at = Some(now + rto);
        }
        let _ = h.options.push_mptcp(MptcpOption::Dss(dss));
        if payload_len == 0 {
            self.add_signalling(now, i, h, rk);
        }
        data
    }

    /// ADD_ADDR, echoes, MP_PRIO and REMOVE_ADDR ride on pure ACKs, each
    /// only if it fits (SACK blocks give way); what does not fit waits.
    fn add_signalling(&mut self, now: Instant, i: usize, h: &mut TcpHeader, rk: KeyMaterial) {
        if self.subflows[i].prio_pending && try_push(h, MptcpOption::MpPrio { backup: self.subflows[i].backup, addr_id: None }) {
            self.subflows[i].prio_pending = false;
        }
        if let Some(&(id, addr, port)) = self.echoes.front() {
            if try_push(h, MptcpOption::AddAddr(AddAddr { echo: true, addr_id: id, addr, port, hmac: None })) {
                self.echoes.pop_front();
            }
        } else if let Some(a) = self.announces.iter_mut().find(|a| a.next_at <= now && a.tries < 8) {
            let hmac = crypto::add_addr_hmac(self.local.key, rk.key, a.id, a.addr, None);
            if try_push(h, MptcpOption::AddAddr(AddAddr { echo: false, addr_id: a.id, addr: a.addr, port: None, hmac: Some(hmac) })) {
                a.tries += 1;
                // Resent until echoed (RFC 8684 3.4.1), backing off.
                a.next_at = now + Duration::from_secs(1) * (1 << a.tries.min(6));
                self.stats.add_addr_sent += 1;
            }
        }
        if !self.remove_pending.is_empty() {
            if let Some(ids) = AddrIdList::from_slice(&self.remove_pending) {
                if try_push(h, MptcpOption::RemoveAddr(ids)) {
                    self.remove_pending.clear();
                }
            }
        }
    }

    fn checksum_of(&mut self, data_off: u64, ssn: u32, len: u16, src: &dyn PayloadSource) -> u16 {
        let dsn = self.local_dsn(data_off);
        self.scratch.resize(len as usize, 0);
        src.fill(data_off, &mut self.scratch);
        crypto::dss_checksum(dsn, ssn, len, &self.scratch)
    }
}

/// A subflow's two ports in one word (see `Connection::ports`).
fn port_key(local: SocketAddr, remote: SocketAddr) -> u32 {
    u32::from(local.port()) << 16 | u32::from(remote.port())
}

/// Adds `o` if the options still fit in 40 bytes, dropping SACK blocks
/// to make room if needed.
fn try_push(h: &mut TcpHeader, o: MptcpOption) -> bool {
    let mut trial = h.options;
    if trial.push_mptcp(o).is_err() {
        return false;
    }
    let mut sack: Vec<_> = trial.sack().to_vec();
    loop {
        if trial.wire_len().is_ok_and(|l| l <= 40) {
            h.options = trial;
            return true;
        }
        if sack.pop().is_none() {
            return false;
        }
        trial.set_sack(&sack);
    }
}

/// Keeps the options within 40 bytes: SACK blocks go first (the DSS is
/// what keeps the connection alive; SACK is an optimisation).
fn fit_options(h: &mut TcpHeader) {
    while h.options.wire_len().map_or(true, |l| l > 40) {
        let n = h.options.sack().len();
        if n == 0 {
            break;
        }
        let blocks: Vec<_> = h.options.sack()[..n - 1].to_vec();
        h.options.set_sack(&blocks);
    }
}

#[cfg(test)]
mod tests;
