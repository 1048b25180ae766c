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
//!
//! The connection's methods are split by concept: `handshake` (keys,
//! MP_CAPABLE, MP_JOIN), `input` (segments in, DSS reception), `output`
//! (segments out, DSS mappings), `scheduling` (the scheduling pass),
//! `fallback` (RFC 8684 3.7, infinite mapping, MP_FAIL), `signalling`
//! (ADD_ADDR, REMOVE_ADDR, MP_PRIO, MP_FASTCLOSE, MP_TCPRST), `timers`,
//! `lifecycle` (the state after each input or timeout), `changes` (which
//! subflows changed), `app` (the application's calls) and `config`.

mod app;
mod autotune;
mod changes;
mod config;
mod fallback;
mod handshake;
mod input;
mod lifecycle;
mod output;
pub mod path_manager;
mod rejoin;
pub mod profile;
pub mod scheduler;
mod scheduling;
mod signalling;
pub mod sndbuf;
mod subflow;
mod timers;

use core::ops::Range;
use core::time::Duration;
use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};

use mplab_wire::crypto::KeyMaterial;
use mplab_wire::{MptcpOption, TcpHeader};

use crate::tcp::{self, reassembly::Reassembly, TcpStats};
use crate::time::Instant;

pub use config::MptcpConfig;
pub use profile::Profile;
pub use rejoin::RejoinBackoff;
pub use path_manager::{Endpoints, FullMesh, LocalAddr, Limits, NDiffPorts, PathManager, PmAction, PmChoice, PmView, RemoteAddr};
pub use scheduler::{MinRtt, SchedContext, Scheduler, SchedulerChoice, SubflowInfo};
pub use subflow::{Handshake, Origin, Subflow};

/// Option bytes a data segment keeps free for DSS: DATA_ACK and DSN of
/// 64 bits, SSN, length and checksum (4 + 8 + 8 + 4 + 2 + 2).
pub const DSS_RESERVE: u16 = 28;

/// Pure ACKs without MPTCP options in a row after which the single subflow
/// falls back (data without a mapping falls back at once).
const OPTIONLESS_ACKS_TO_FALL_BACK: u8 = 3;


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
    /// Mappings that disagreed with one received before on where a
    /// subflow byte goes in the data stream: the subflow was reset, or the
    /// connection fell back.
    pub invalid_mappings: u64,
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
    /// Bytes whose mapping placed them beyond any receive window this end
    /// can have offered: dropped (RFC 8684 3.3.5; Linux's NODSSWINDOW).
    pub data_outside_window: u64,
    /// Chunks the packet scheduler placed while two or more usable
    /// subflows had room in their windows: the decisions in which the
    /// scheduler chose. 0 over a whole run with several subflows means
    /// every scheduler would have sent the same (each chunk had one
    /// subflow to go to).
    pub scheduler_choices: u64,
    /// Subflows opened again after a reset or a timeout (`rejoin`).
    pub subflows_recreated: u64,
    /// Pure ACKs sent on subflows that had heard nothing for a probe
    /// period while data arrived on others.
    pub idle_probes: u64,
}

/// Address signals that ride on pure ACKs (see `add_signalling`).
#[derive(Debug)]
struct PendingSignals {
    /// Our ADD_ADDRs, each resent until the peer echoes it.
    announces: Vec<Announce>,
    /// ADD_ADDR echoes to send.
    echoes: VecDeque<(u8, IpAddr, Option<u16>)>,
    /// Our address ids to send a REMOVE_ADDR for.
    remove_pending: Vec<u8>,
}

/// One of our addresses announced with ADD_ADDR: when it goes again, and
/// how many times it went.
#[derive(Debug, Clone, Copy)]
struct Announce {
    id: u8,
    addr: IpAddr,
    next_at: Instant,
    tries: u32,
}

/// Where the connection stands on falling back to plain TCP.
#[derive(Debug)]
struct FallbackState {
    /// Why it continues as plain TCP (None: it does not).
    reason: Option<Fallback>,
    /// After a fallback: data offset minus subflow offset of the stream.
    delta: u64,
    /// The subflow a fallen-back connection runs on (the one alive when it
    /// fell back): its stream is the data stream from then on.
    sub: usize,
    /// An MP_FAIL (the DSN whose checksum failed) to send.
    mp_fail: Option<u64>,
    /// The initial subflow's stream is still the data stream shifted by a
    /// constant, so the connection may fall back to plain TCP (RFC 8684
    /// 3.7). A completed join or a data-level reinjection ends that: the
    /// peer, mapping unmapped bytes after its own data, would place them
    /// wrong (Linux: msk->allow_infinite_fallback).
    allowed: bool,
}

/// The connection's own timers (each subflow's TCP keeps its own), with
/// the earliest of their deadlines.
#[derive(Debug, Default)]
struct Timers {
    /// When a DATA_FIN without data may be sent again (None: once due).
    fin_resend: Option<Instant>,
    /// Data-level retransmission timer (deadline, data_una when armed):
    /// data the subflows delivered that the peer never DATA_ACKed.
    data_rto: Option<(Instant, u64)>,
    /// With `stale_by_periods`: the connection timer's period as the last
    /// scheduling pass found it (Linux's `timer_ival`, set by
    /// `mptcp_subflow_get_send` and kept until the next pass).
    timer_ival: Option<Duration>,
    /// With re-creation: every subflow failed while the connection ran,
    /// and it waits for one to come back (`rejoin.rs`).
    alone: Alone,
}

/// A connection's wait without subflows (break before make).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Alone {
    /// A subflow is up, or none has failed yet.
    #[default]
    No,
    /// Every subflow failed; the connection waits until then.
    Until(Instant),
    /// The wait is over: the connection ends when no attempt is left.
    Over,
}

impl Timers {
    /// The earliest deadline (ADD_ADDR resends are the signalling's).
    fn next(&self) -> Option<Instant> {
        let alone = match self.alone {
            Alone::Until(t) => Some(t),
            _ => None,
        };
        self.fin_resend.into_iter().chain(self.data_rto.map(|(t, _)| t)).chain(alone).min()
    }
}

/// What changed since the last transmit pass.
///
/// A segment arriving on one subflow changes that subflow only, and a
/// transmit pass changes the subflows it gave data to. Work per segment
/// must not grow with the number of subflows: rebuilding every
/// subflow's scheduler view, polling every subflow and taking the
/// minimum of every subflow's timers after each ACK was most of the
/// cost of an 8-subflow connection (each subflow's state is its own
/// cache lines). So the connection tracks which subflows changed and
/// sweeps all of them only after rare events (timeouts, path-manager
/// actions, fallback, API calls that touch subflows).
#[derive(Debug)]
struct Changes {
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
}

#[derive(Debug)]
pub struct Connection {
    cfg: MptcpConfig,
    client: bool,
    local: KeyMaterial,
    remote: Option<KeyMaterial>,
    /// DSS checksums in use (either end asked).
    checksum: bool,
    /// Fallback to plain TCP (RFC 8684 3.7).
    fb: FallbackState,
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
    /// Address signals waiting for a pure ACK to carry them.
    signals: PendingSignals,
    /// Subflows to open again after a reset or timeout (`rejoin`).
    rejoins: Vec<rejoin::Rejoin>,
    /// The next look for subflows silent while data arrives on others,
    /// and the data received by then (`rejoin.rs`).
    idle_probe: Option<(Instant, u64)>,
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
    /// The connection's own timers.
    timers: Timers,

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
    /// Which subflows changed since the last transmit pass.
    changes: Changes,
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

use crate::rng::splitmix64 as splitmix;

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
            fb: FallbackState { reason: None, delta: 0, sub: 0, mp_fail: None, allowed: true },
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
            signals: PendingSignals { announces: Vec::new(), echoes: VecDeque::new(), remove_pending: Vec::new() },
            rejoins: Vec::new(),
            idle_probe: None,
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
            timers: Timers::default(),
            rcv: Reassembly::new(0),
            read_off: 0,
            autotune: cfg.rcv_autotune.then(|| autotune::RcvAutotune::new(cfg.rcv_buf)),
            rcv_fin: None,
            fin_received: false,
            ooo_waits: VecDeque::new(),
            opp_done: None,
            out: VecDeque::new(),
            changes: Changes {
                dirty_all: true,
                dirty: Vec::new(),
                touched: Vec::new(),
                noted: Vec::new(),
                timeouts: Vec::new(),
                timeouts_valid: false,
                may_owe_update: Vec::new(),
            },
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
        self.fb.reason
    }

    pub fn checksums(&self) -> bool {
        self.checksum && self.fb.reason.is_none()
    }

    /// Every subflow failed and the connection waits for one to come back
    /// (re-creation's break before make, `rejoin.rs`).
    pub fn waits_for_a_subflow(&self) -> bool {
        !self.reset && self.timers.alone != Alone::No
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
            self.established, self.fb.reason, self.app_end, self.data_una, self.sched_nxt, self.snd_buf(), self.fin_queued, self.timers.fin_resend, self.rcv.nxt(), self.rcv_fin,
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
}

/// A subflow's two ports in one word (see `Connection::ports`).
fn port_key(local: SocketAddr, remote: SocketAddr) -> u32 {
    u32::from(local.port()) << 16 | u32::from(remote.port())
}


#[cfg(test)]
mod tests;
