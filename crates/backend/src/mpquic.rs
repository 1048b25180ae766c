//! Multipath QUIC (RFC 10069, from draft-ietf-quic-multipath): one end of
//! a connection of noq-proto, n0's multipath fork of quinn-proto, as a byte
//! stream for mplab's applications. Sans-IO like `quic`: datagrams and
//! time in, datagrams and a timer out, each datagram with the local address
//! of the path it belongs to.
//!
//! The byte stream is `quic`'s: a unidirectional stream each way carrying
//! the stream pattern, checked by the reader. TLS is `quic_common`'s.
//!
//! Paths. The client opens them ([`MpQuicEnd::open_path`]) once both ends
//! have negotiated multipath; the server takes each as its first packet
//! arrives and answers from the address that packet came to. Both ends
//! carry any path's acknowledgements on any path. A path that hears nothing
//! for [`PATH_IDLE_TIMEOUT`] is abandoned, and its packets still in flight
//! are declared lost once it drains (3 PTO later) so their data goes out
//! again on the others; each path sends a PING after [`PATH_KEEP_ALIVE`] of
//! silence so that a quiet (backup) path is not. noq sets neither by
//! default: a dead path would then hold its data until it came back.
//!
//! Scheduling is noq's: each `poll_transmit` walks the paths in PathId
//! order and the first with room in its congestion window and pacer takes
//! the next packet, so stream data fills path 0, then spills to the next.
//! A backup path carries data only while no validated available path has
//! connection IDs. Each path has its own controller, pacer, RTT and packet
//! number space; lost stream data is queued for the connection, not the
//! path, and goes out on whichever path sends next.
//!
//! Determinism: every random draw comes from the flow's seed: noq's
//! endpoint and connection RNGs, the connection IDs, the client's first
//! destination ID, the stateless reset key, the certificate's key, and
//! rustls' randoms and X25519 key shares (`quic_common`'s seeded provider,
//! fed from this end's stream during each of its calls). One exception:
//! noq 1.4.0 gives BBRv3's probe timing no seed setter, so with
//! [`MpQuicCc::Bbr3`] the timing after the first bandwidth probe differs
//! from run to run.

use core::ops::Range;
use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use noq_proto::{
    ClosePathError, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, Event, FourTuple, PathError, PathEvent, PathId, PathStatus,
    SetPathStatusError, StreamEvent, StreamId, Transmit, VarInt,
};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::apps::fill_pattern;
use crate::quic_common::{self, at, ns};

mod setup;

use setup::{client_config, endpoint_config, server_config, InFlight, Seeds};

/// Bytes the reader pulls from noq ahead of the application.
const READ_AHEAD: usize = 1 << 20;
/// Bytes one `send` takes at most, and what `send_space` offers.
const SEND_CHUNK: u64 = 64 * 1024;
/// Silence after which a path is abandoned (noq arms it at no less than 3 PTO).
pub const PATH_IDLE_TIMEOUT: Duration = Duration::from_secs(3);
/// Silence after which a path sends a PING, well inside the idle timeout.
pub const PATH_KEEP_ALIVE: Duration = Duration::from_secs(1);

/// Path ids an end allows its peer: every path, even one abandoned, keeps
/// its id, and the path manager (not noq) bounds how many are alive. noq
/// raises the limit by itself only when the peer abandons a path it knew;
/// a path opened while its link was down, abandoned before its first packet
/// arrived, is never counted, and a client that lost a path a few times
/// could then not open another. So: 16 ids beyond the live paths to begin
/// with (NEW_CONNECTION_ID frames for each, ~0.5 KB in the first flights),
/// and one more per path this end has seen abandoned.
fn path_id_budget(max_paths: u32, abandoned: u32) -> u32 {
    max_paths + 16 + abandoned
}

/// Per-path congestion control as noq offers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpQuicCc {
    NewReno,
    Cubic,
    /// BBRv3. Its probe timing draws from the OS (noq 1.4.0 takes no seed
    /// for it), so runs part ways after its first bandwidth probe.
    Bbr3,
}

#[derive(Clone)]
pub struct MpQuicConfig {
    /// Paths the end allows at once (transport parameter initial_max_path_id + 1); 1 (or 0) = multipath not offered.
    pub max_paths: u32,
    pub cc: MpQuicCc,
    /// Receives the TLS secrets, so that captures can be decrypted
    /// (`rustls::KeyLogFile` appends them to $SSLKEYLOGFILE).
    pub keylog: Option<Arc<dyn rustls::KeyLog>>,
    /// The receive buffer: what the peer may send ahead of the reader,
    /// the stream's and the connection's flow-control window (and this
    /// end's read-ahead). None: noq's defaults, 1 MB read-ahead.
    pub rcv_buf: Option<u64>,
    /// The send buffer: bytes sent and not yet acknowledged at most
    /// (noq's send window). None: noq's default.
    pub snd_buf: Option<u64>,
    /// Opens the connection's qlog trace (crate::quic_artefacts); None:
    /// noq's $QLOGDIR files if that is set, else no trace.
    pub qlog: Option<Arc<dyn noq_proto::QlogFactory>>,
}

impl Default for MpQuicConfig {
    fn default() -> Self {
        MpQuicConfig { max_paths: 4, cc: MpQuicCc::Cubic, keylog: None, rcv_buf: None, snd_buf: None, qlog: None }
    }
}

impl std::fmt::Debug for MpQuicConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpQuicConfig")
            .field("max_paths", &self.max_paths)
            .field("cc", &self.cc)
            .field("keylog", &self.keylog.is_some())
            .field("rcv_buf", &self.rcv_buf)
            .field("snd_buf", &self.snd_buf)
            .field("qlog", &self.qlog.is_some())
            .finish()
    }
}

/// One datagram to send: from `local` (the path's local address) to `remote`.
#[derive(Debug, Clone)]
pub struct MpTransmit {
    pub local: Option<SocketAddr>,
    pub remote: SocketAddr,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpPathState {
    Validating,
    Available,
    Backup,
    Abandoned,
}

#[derive(Debug, Clone)]
pub struct MpPath {
    /// The path's PathId.
    pub id: u32,
    pub local: Option<SocketAddr>,
    pub remote: SocketAddr,
    pub state: MpPathState,
    /// Its status is (or was, once abandoned) standby.
    pub backup: bool,
    /// Smoothed RTT, once the path is validated.
    pub rtt_ns: Option<u64>,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Bytes of ack-eliciting packets in flight (exact at each ACK, counted between).
    pub in_flight: u64,
    /// UDP payload bytes sent on the path.
    pub sent_bytes: u64,
    /// QUIC packets sent on the path (coalesced ones count one each).
    pub sent_packets: u64,
    pub lost_packets: u64,
}

/// What this end knows of one path, kept after noq forgets it.
#[derive(Debug, Clone)]
struct PathRecord {
    local: Option<SocketAddr>,
    remote: SocketAddr,
    established: bool,
    abandoned: bool,
    backup: bool,
    /// The status the client gave the path, for the server to take (even
    /// when it arrives before the path's first packet).
    peer_status: Option<PathStatus>,
    rtt_ns: Option<u64>,
    cwnd: u64,
    in_flight: u64,
    sent_bytes: u64,
    sent_packets: u64,
    lost_packets: u64,
}

impl PathRecord {
    fn new(local: Option<SocketAddr>, remote: SocketAddr) -> PathRecord {
        PathRecord {
            local,
            remote,
            established: false,
            abandoned: false,
            backup: false,
            peer_status: None,
            rtt_ns: None,
            cwnd: 0,
            in_flight: 0,
            sent_bytes: 0,
            sent_packets: 0,
            lost_packets: 0,
        }
    }

    fn stats(&mut self, s: &noq_proto::PathStats) {
        self.cwnd = s.cwnd;
        self.sent_bytes = s.udp_tx.bytes;
        self.sent_packets = s.sent_packets;
        self.lost_packets = s.lost_packets;
        if self.established {
            self.rtt_ns = Some(s.rtt.as_nanos() as u64);
        }
    }
}

/// noq keeps a PathId's number to itself but shows it.
fn path_num(id: PathId) -> u32 {
    id.to_string().parse().unwrap_or(u32::MAX)
}

/// One end of a multipath QUIC connection.
pub struct MpQuicEnd {
    ep: Endpoint,
    conn: Option<(ConnectionHandle, Connection)>,
    /// The client's first path's local address, the server's listening one.
    local: SocketAddr,
    /// Every local address used: noq knows a path's local IP, not its port.
    locals: Vec<SocketAddr>,
    /// Datagrams the endpoint itself answered with (refusals, resets).
    responses: VecDeque<MpTransmit>,
    established: bool,
    /// Why the connection ended, if it did.
    pub closed: Option<String>,
    next_timeout: Option<Instant>,
    /// When every path is pinged next ([`PATH_KEEP_ALIVE`]).
    next_ping: Option<Instant>,
    /// Paths this end allows at once (`MpQuicConfig::max_paths`).
    max_paths: u32,
    /// Bytes read from noq ahead of the application at most.
    read_ahead: usize,
    tx: Option<StreamId>,
    written: u64,
    blocked: bool,
    finished: bool,
    /// The peer acknowledged all of this end's stream, its end included.
    tx_acked: bool,
    /// Whether multipath was negotiated, kept when the connection is gone.
    negotiated: Option<bool>,
    rx: Option<StreamId>,
    rx_buf: VecDeque<u8>,
    read: u64,
    rx_fin: bool,
    /// A read byte differed from the stream pattern.
    pub mismatch: Option<String>,
    scratch: Vec<u8>,
    paths: BTreeMap<u32, PathRecord>,
    in_flight: InFlight,
    dropped: u64,
    /// This end's TLS random stream, on the thread during its calls.
    tls_rng: Option<ChaCha20Rng>,
}

impl MpQuicEnd {
    fn new(ep: Endpoint, local: SocketAddr, s: &Seeds, in_flight: InFlight) -> MpQuicEnd {
        MpQuicEnd {
            ep,
            conn: None,
            local,
            locals: vec![local],
            responses: VecDeque::new(),
            established: false,
            closed: None,
            next_timeout: None,
            next_ping: None,
            max_paths: 1,
            read_ahead: READ_AHEAD,
            tx: None,
            written: 0,
            blocked: false,
            finished: false,
            tx_acked: false,
            negotiated: None,
            rx: None,
            rx_buf: VecDeque::new(),
            read: 0,
            rx_fin: false,
            mismatch: None,
            scratch: Vec::new(),
            paths: BTreeMap::new(),
            in_flight,
            dropped: 0,
            tls_rng: Some(ChaCha20Rng::from_seed(s.tls)),
        }
    }

    /// The client, sending its first flight at `now_ns`.
    pub fn client(local: SocketAddr, remote: SocketAddr, seed: u64, now_ns: u64, cfg: &MpQuicConfig) -> Result<MpQuicEnd, String> {
        let s = Seeds::new(seed);
        let in_flight = InFlight::default();
        let config = client_config(cfg, &s, in_flight.clone())?;
        let mut q = MpQuicEnd::new(Endpoint::new(endpoint_config(&s), None, true), local, &s, in_flight);
        q.max_paths = cfg.max_paths;
        q.read_ahead = cfg.rcv_buf.map_or(READ_AHEAD, |b| b as usize);
        q.paths.insert(0, PathRecord::new(Some(local), remote));
        q.seeded(|q| -> Result<(), String> {
            let conn = q.ep.connect(at(now_ns), config, remote, "mplab").map_err(|e| e.to_string())?;
            q.conn = Some(conn);
            q.drive();
            Ok(())
        })?;
        Ok(q)
    }

    /// The server on `local`, answering the first client that comes (on
    /// whichever of its addresses).
    pub fn server(local: SocketAddr, seed: u64, cfg: &MpQuicConfig) -> Result<MpQuicEnd, String> {
        let s = Seeds::new(seed);
        let in_flight = InFlight::default();
        let config = server_config(cfg, &s, in_flight.clone())?;
        let ep = Endpoint::new(endpoint_config(&s), Some(Arc::new(config)), true);
        let mut q = MpQuicEnd::new(ep, local, &s, in_flight);
        q.max_paths = cfg.max_paths;
        q.read_ahead = cfg.rcv_buf.map_or(READ_AHEAD, |b| b as usize);
        Ok(q)
    }

    /// Runs `f` with this end's random stream as the TLS randomness of the
    /// thread.
    fn seeded<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let Some(rng) = self.tls_rng.take() else { return f(self) };
        let outer = quic_common::install_tls_rng(Some(rng));
        let r = f(self);
        self.tls_rng = quic_common::install_tls_rng(outer);
        r
    }

    fn note_local(&mut self, local: SocketAddr) {
        if !self.locals.contains(&local) {
            self.locals.push(local);
        }
    }

    /// The local address (with its port) of noq's local IP; none is the
    /// client's first path, which noq opens without one.
    fn local_of(locals: &[SocketAddr], first: SocketAddr, ip: Option<IpAddr>) -> SocketAddr {
        match ip {
            None => first,
            Some(ip) => locals.iter().find(|a| a.ip() == ip).copied().unwrap_or(SocketAddr::new(ip, first.port())),
        }
    }

    fn transmit(&self, t: &Transmit, buf: &[u8]) -> MpTransmit {
        let local = Self::local_of(&self.locals, self.local, t.src_ip);
        MpTransmit { local: Some(local), remote: t.destination, data: buf[..t.size.min(buf.len())].to_vec() }
    }

    /// A UDP datagram arrived at `local` from `remote`.
    pub fn on_datagram(&mut self, now_ns: u64, local: SocketAddr, remote: SocketAddr, data: &[u8]) {
        self.seeded(|q| q.datagram(now_ns, local, remote, data))
    }

    fn datagram(&mut self, now_ns: u64, local: SocketAddr, remote: SocketAddr, data: &[u8]) {
        self.note_local(local);
        let now = at(now_ns);
        let mut buf = Vec::new();
        let network_path = FourTuple::new(remote, Some(local.ip()));
        // A datagram counts as dropped unless the connection took a frame from it.
        let mut taken = false;
        match self.ep.handle(now, network_path, None, data.into(), &mut buf) {
            Some(DatagramEvent::NewConnection(incoming)) => {
                if self.conn.is_some() {
                    // One connection per flow: another is refused.
                    let t = self.ep.refuse(incoming, &mut buf);
                    self.responses.push_back(self.transmit(&t, &buf));
                } else {
                    match self.ep.accept(incoming, now, &mut buf, None) {
                        Ok(c) => {
                            self.conn = Some(c);
                            taken = true;
                        }
                        Err(e) => {
                            if let Some(t) = e.response {
                                self.responses.push_back(self.transmit(&t, &buf));
                            }
                        }
                    }
                }
            }
            Some(DatagramEvent::ConnectionEvent(h, ev)) => {
                if let Some((_, c)) = self.conn.as_mut().filter(|(ch, _)| *ch == h) {
                    let before = c.stats().frame_rx;
                    c.handle_event(ev);
                    taken = c.stats().frame_rx != before;
                }
            }
            Some(DatagramEvent::Response(t)) => self.responses.push_back(self.transmit(&t, &buf)),
            None => {}
        }
        if !taken {
            self.dropped += 1;
        }
        self.ping_paths(now);
        self.drive();
    }

    /// The next datagram to send.
    pub fn poll_transmit(&mut self, now_ns: u64) -> Option<MpTransmit> {
        if let Some(r) = self.responses.pop_front() {
            return Some(r);
        }
        self.seeded(|q| {
            q.close_when_done(at(now_ns));
            let (_, c) = q.conn.as_mut()?;
            let mut buf = Vec::new();
            let t = c.poll_transmit(at(now_ns), NonZeroUsize::MIN, &mut buf);
            q.next_timeout = c.poll_timeout();
            match t {
                Some(t) => Some(q.transmit(&t, &buf)),
                None => {
                    // Path counters settle at the end of a burst.
                    q.refresh_paths();
                    None
                }
            }
        })
    }

    pub fn poll_timeout(&self) -> Option<u64> {
        match (self.next_timeout, self.next_ping) {
            (Some(a), Some(b)) => Some(ns(a.min(b))),
            (a, b) => a.or(b).map(ns),
        }
    }

    pub fn on_timeout(&mut self, now_ns: u64) {
        self.seeded(|q| {
            if let Some((_, c)) = q.conn.as_mut() {
                if c.poll_timeout().is_some_and(|t| t <= at(now_ns)) {
                    c.handle_timeout(at(now_ns));
                }
            }
            q.ping_paths(at(now_ns));
            q.drive();
        })
    }

    /// The client closes the connection (CONNECTION_CLOSE, application
    /// code 0) once both byte streams are over: its own acknowledged to
    /// the end, the peer's read to the end. An application does so; a
    /// connection left open would keep pinging and reopening its paths
    /// until the run ends.
    fn close_when_done(&mut self, now: Instant) {
        let Some((_, c)) = self.conn.as_mut() else { return };
        if c.side().is_client() && self.finished && self.tx_acked && self.rx_fin && self.rx_buf.is_empty() && !c.is_closed() {
            c.close(now, VarInt::from_u32(0), bytes::Bytes::from_static(b"done"));
            self.next_ping = None;
        }
    }

    /// Pings every path that is not abandoned, once per [`PATH_KEEP_ALIVE`].
    /// noq restarts a path's keep-alive and idle timers only on what it
    /// receives on that path, and puts every path's acknowledgements in
    /// whichever packet goes out first (path 0's, as a rule): a path that
    /// carries data one way would hear nothing back and be abandoned as
    /// idle. A PING from each end keeps each working path heard.
    fn ping_paths(&mut self, now: Instant) {
        let Some((_, c)) = self.conn.as_mut() else { return };
        if !self.established || !c.is_multipath_negotiated() || c.is_closed() {
            // No keep-alive, and no deadline left behind: a ping time in
            // the past would have the timer fire again at once, for ever.
            self.next_ping = None;
            return;
        }
        let abandoned = self.paths.values().filter(|p| p.abandoned).count() as u32;
        if let Some(n) = std::num::NonZeroU32::new(path_id_budget(self.max_paths, abandoned)) {
            let _ = c.set_max_concurrent_paths(now, n);
        }
        let due = *self.next_ping.get_or_insert(now + PATH_KEEP_ALIVE);
        if now < due {
            return;
        }
        for id in c.paths() {
            let _ = c.ping_path(id);
        }
        self.next_ping = Some(now + PATH_KEEP_ALIVE);
    }

    pub fn is_established(&self) -> bool {
        self.established
    }

    /// Whether both ends negotiated multipath; None before the handshake completes.
    pub fn multipath(&self) -> Option<bool> {
        match self.conn.as_ref().filter(|_| self.established) {
            Some((_, c)) => Some(c.is_multipath_negotiated()),
            None => self.negotiated,
        }
    }

    /// Client: opens (and validates) a new path from `local` to `remote`;
    /// `backup` = PathStatus::Backup. Returns the path id. noq tells paths
    /// apart by local IP, not port: one path per local IP and remote.
    pub fn open_path(&mut self, now_ns: u64, local: SocketAddr, remote: SocketAddr, backup: bool) -> Result<u32, String> {
        self.seeded(|q| {
            let established = q.established;
            let (_, c) = q.conn.as_mut().ok_or("no connection")?;
            if c.side().is_server() {
                return Err("only the client opens paths".to_string());
            }
            if !established {
                return Err("the handshake has not completed".to_string());
            }
            // noq 1.4.0 announces a new path's status only when it changes
            // after opening: open it available, then make it a backup.
            let id = c.open_path(FourTuple::new(remote, Some(local.ip())), PathStatus::Available, at(now_ns)).map_err(|e| match e {
                PathError::MultipathNotNegotiated => "multipath not negotiated (the peer did not offer it)".to_string(),
                PathError::MaxPathIdReached => "path limit reached (the peer's or this end's max_paths)".to_string(),
                PathError::RemoteCidsExhausted => "the peer has issued no connection ID for another path yet".to_string(),
                e => e.to_string(),
            })?;
            if backup {
                c.set_path_status(id, PathStatus::Backup).map_err(|e| e.to_string())?;
            }
            q.note_local(local);
            let rec = q.paths.entry(path_num(id)).or_insert_with(|| PathRecord::new(Some(local), remote));
            rec.backup = backup;
            q.drive();
            Ok(path_num(id))
        })
    }

    /// Abandons path `id` (PATH_ABANDON).
    pub fn close_path(&mut self, now_ns: u64, id: u32) -> Result<(), String> {
        self.seeded(|q| {
            let (_, c) = q.conn.as_mut().ok_or("no connection")?;
            c.close_path(at(now_ns), PathId::from(id), VarInt::from_u32(0)).map_err(|e| match e {
                ClosePathError::LastOpenPath => "the last open path is closed with the connection".to_string(),
                ClosePathError::ClosedPath => format!("no open path {id}"),
                e => e.to_string(),
            })?;
            q.drive();
            Ok(())
        })
    }

    pub fn set_backup(&mut self, id: u32, backup: bool) -> Result<(), String> {
        self.seeded(|q| {
            let (_, c) = q.conn.as_mut().ok_or("no connection")?;
            let status = if backup { PathStatus::Backup } else { PathStatus::Available };
            c.set_path_status(PathId::from(id), status).map_err(|e| match e {
                SetPathStatusError::ClosedPath => format!("no open path {id}"),
                e => e.to_string(),
            })?;
            q.drive();
            Ok(())
        })
    }

    /// Every path the connection has or had (abandoned ones as last seen),
    /// in id order; counters as of the last input or the end of the last
    /// burst of `poll_transmit`.
    pub fn paths(&self) -> Vec<MpPath> {
        let state = |r: &PathRecord| match (r.abandoned, r.established, r.backup) {
            (true, _, _) => MpPathState::Abandoned,
            (false, false, _) => MpPathState::Validating,
            (false, true, true) => MpPathState::Backup,
            (false, true, false) => MpPathState::Available,
        };
        let path = |(&id, r): (&u32, &PathRecord)| MpPath {
            id,
            local: r.local,
            remote: r.remote,
            state: state(r),
            backup: r.backup,
            rtt_ns: r.rtt_ns,
            cwnd: r.cwnd,
            in_flight: r.in_flight,
            sent_bytes: r.sent_bytes,
            sent_packets: r.sent_packets,
            lost_packets: r.lost_packets,
        };
        self.paths.iter().map(path).collect()
    }

    /// Datagrams the connection took nothing from: unparseable, failing
    /// authentication, for no connection, duplicates, refused.
    pub fn dropped_datagrams(&self) -> u64 {
        self.dropped
    }

    /// After any input: the connection's events, the peer's stream, the
    /// paths, the next timer.
    fn drive(&mut self) {
        let Some((ch, c)) = self.conn.as_mut() else { return };
        while let Some(ev) = c.poll_endpoint_events() {
            if let Some(back) = self.ep.handle_event(*ch, ev) {
                c.handle_event(back);
            }
        }
        while let Some(ev) = c.poll() {
            match ev {
                Event::Connected => {
                    self.established = true;
                    let remote = c.network_path(PathId::ZERO).map(|p| p.remote()).unwrap_or(self.local);
                    self.paths.entry(0).or_insert_with(|| PathRecord::new(None, remote)).established = true;
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) if self.rx.is_none() => {
                    self.rx = c.streams().accept(Dir::Uni);
                }
                Event::Stream(StreamEvent::Writable { .. }) => self.blocked = false,
                Event::Stream(StreamEvent::Finished { id }) if Some(id) == self.tx => self.tx_acked = true,
                Event::ConnectionLost { reason } => self.closed = Some(reason.to_string()),
                Event::Path(ev) => on_path_event(&mut self.paths, c, ev),
                _ => {}
            }
        }
        // A write noq refused is tried again after every input: noq does not
        // announce the room its send window (`snd_buf`) regains as
        // acknowledgements come in (no Writable event then), which left a
        // sender with a small send buffer stalled.
        self.blocked = false;
        self.pull_stream();
        // Before the timer: taking the peer's path status may queue a frame.
        self.refresh_paths();
        self.next_timeout = self.conn.as_ref().and_then(|(_, c)| c.poll_timeout());
        if self.conn.as_ref().is_some_and(|(_, c)| c.is_drained()) {
            self.forget_connection();
        }
    }

    /// A drained connection (closed and its closing period over) is
    /// dropped, its paths' last counters kept as closed rows: a long run
    /// of many connections would otherwise hold every one of them.
    fn forget_connection(&mut self) {
        self.negotiated = self.multipath();
        for r in self.paths.values_mut() {
            r.abandoned = true;
            r.in_flight = 0;
        }
        self.conn = None;
        self.next_timeout = None;
        self.next_ping = None;
    }

    /// Reads the peer's stream from noq up to the read-ahead.
    fn pull_stream(&mut self) {
        let (Some((_, c)), Some(id)) = (self.conn.as_mut(), self.rx) else { return };
        if self.rx_fin || self.rx_buf.len() >= self.read_ahead {
            return;
        }
        let mut rs = c.recv_stream(id);
        let read = rs.read(true);
        if let Ok(mut chunks) = read {
            while self.rx_buf.len() < self.read_ahead {
                match chunks.next(self.read_ahead - self.rx_buf.len()) {
                    Ok(Some(chunk)) => self.rx_buf.extend(chunk.bytes.iter()),
                    Ok(None) => {
                        self.rx_fin = true;
                        break;
                    }
                    Err(_) => break,
                }
            }
            let _ = chunks.finalize();
        }
    }

    /// Copies noq's view of every path it still has into the records.
    fn refresh_paths(&mut self) {
        let Some((_, c)) = self.conn.as_mut() else { return };
        for id in c.paths() {
            let Ok(np) = c.network_path(id) else { continue };
            let local = Self::local_of(&self.locals, self.local, np.local_ip());
            let rec = self.paths.entry(path_num(id)).or_insert_with(|| PathRecord::new(Some(local), np.remote()));
            rec.local = Some(local);
            rec.remote = np.remote();
            if let Some(want) = rec.peer_status.filter(|&w| c.path_status(id) != Ok(w)) {
                let _ = c.set_path_status(id, want);
            }
            // A closed connection has no status left: keep the last one.
            if let Ok(st) = c.path_status(id) {
                rec.backup = st == PathStatus::Backup;
            }
            rec.in_flight = self.in_flight.of(c.congestion_state(id));
            if let Some(s) = c.path_stats(id) {
                rec.stats(&s);
            }
        }
    }

    /// This end's stream, opened on first use.
    fn tx_stream(&mut self) -> Option<StreamId> {
        if self.tx.is_none() {
            let (_, c) = self.conn.as_mut()?;
            self.tx = c.streams().open(Dir::Uni);
        }
        self.tx
    }

    // The stream as real bytes (a tunnel's frames), beside the pattern
    // the applications write and check.

    /// Writes `data` into this end's stream; returns how many bytes noq
    /// took (its send window may take part).
    pub fn write_bytes(&mut self, data: &[u8]) -> usize {
        if self.send_space() == 0 {
            return 0;
        }
        self.seeded(|q| {
            let Some(id) = q.tx_stream() else { return 0 };
            let Some((_, c)) = q.conn.as_mut() else { return 0 };
            match c.send_stream(id).write(data) {
                Ok(k) => {
                    q.written += k as u64;
                    q.blocked = k < data.len();
                    k
                }
                Err(_) => {
                    q.blocked = true;
                    0
                }
            }
        })
    }

    /// Moves up to `max` bytes of the peer's stream, as they came, to
    /// `out`; returns how many.
    pub fn read_bytes(&mut self, max: usize, out: &mut Vec<u8>) -> usize {
        let n = max.min(self.rx_buf.len());
        out.extend(self.rx_buf.drain(..n));
        self.read += n as u64;
        if n > 0 {
            self.seeded(|q| q.pull_stream());
        }
        n
    }

    // Unreliable datagrams beside the stream (RFC 9221 DATAGRAM frames),
    // for a tunnel's UDP.

    /// Queues `data` as one DATAGRAM frame, sent ahead of stream data on
    /// whichever path noq sends next. When noq's datagram send buffer is
    /// full the oldest unsent datagrams make room: a real-time packet that
    /// waited that long is as good as lost. Err: no connection yet, the
    /// peer offers no datagrams, or `data` is larger than one packet
    /// carries ([`Self::max_datagram`]).
    pub fn send_datagram(&mut self, data: &[u8]) -> Result<(), String> {
        let Some((_, c)) = self.conn.as_mut() else { return Err("no connection".into()) };
        c.datagrams().send(bytes::Bytes::copy_from_slice(data), true).map_err(|e| e.to_string())
    }

    /// The largest datagram the peer and the current path MTU allow.
    pub fn max_datagram(&mut self) -> Option<usize> {
        self.conn.as_mut().and_then(|(_, c)| c.datagrams().max_size())
    }

    /// The next datagram that arrived, in arrival order.
    pub fn recv_datagram(&mut self) -> Option<Vec<u8>> {
        let (_, c) = self.conn.as_mut()?;
        c.datagrams().recv().map(|b| b.to_vec())
    }

    // The byte stream, as `apps::StreamSocket` wants it.

    pub fn send_space(&self) -> u64 {
        if self.blocked || self.finished || !self.established {
            0
        } else {
            SEND_CHUNK
        }
    }

    pub fn send(&mut self, n: u64) -> u64 {
        if self.send_space() == 0 {
            return 0;
        }
        self.seeded(|q| {
            let Some(id) = q.tx_stream() else { return 0 };
            let n = n.min(SEND_CHUNK) as usize;
            q.scratch.resize(n, 0);
            fill_pattern(q.written, &mut q.scratch);
            let Some((_, c)) = q.conn.as_mut() else { return 0 };
            match c.send_stream(id).write(&q.scratch) {
                Ok(k) => {
                    q.written += k as u64;
                    q.blocked = k < n;
                    k as u64
                }
                Err(_) => {
                    q.blocked = true;
                    0
                }
            }
        })
    }

    pub fn readable(&self) -> u64 {
        self.rx_buf.len() as u64
    }

    pub fn recv(&mut self, max: u64) -> Range<u64> {
        let r = quic_common::recv_pattern(&mut self.rx_buf, &mut self.read, &mut self.mismatch, max);
        if !r.is_empty() {
            // Room again: take more from noq, which opens its flow control window.
            self.seeded(|q| q.pull_stream());
        }
        r
    }

    pub fn close(&mut self) {
        if self.finished {
            return;
        }
        self.seeded(|q| {
            if let Some(id) = q.tx_stream() {
                if let Some((_, c)) = q.conn.as_mut() {
                    q.finished = c.send_stream(id).finish().is_ok();
                }
            }
        })
    }

    pub fn peer_closed(&self) -> bool {
        self.rx_fin && self.rx_buf.is_empty()
    }
}

/// A path event into the records. The server takes the client's status for
/// a path as its own (in `refresh_paths`, once the path exists): noq leaves
/// that to the application.
fn on_path_event(paths: &mut BTreeMap<u32, PathRecord>, c: &mut Connection, ev: PathEvent) {
    match ev {
        PathEvent::Established { id, .. } => record(paths, c, id).established = true,
        PathEvent::Abandoned { id, .. } => record(paths, c, id).abandoned = true,
        PathEvent::Discarded { id, path_stats, .. } => {
            let r = record(paths, c, id);
            r.abandoned = true;
            r.stats(&path_stats);
            r.in_flight = 0;
        }
        PathEvent::RemoteStatus { id, status, .. } if c.side().is_server() => {
            record(paths, c, id).peer_status = Some(status);
        }
        _ => {}
    }
}

fn record<'a>(paths: &'a mut BTreeMap<u32, PathRecord>, c: &Connection, id: PathId) -> &'a mut PathRecord {
    let remote = c.network_path(id).map(|p| p.remote()).unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
    paths.entry(path_num(id)).or_insert_with(|| PathRecord::new(None, remote))
}

impl crate::apps::StreamSocket for MpQuicEnd {
    fn send_space(&self) -> u64 {
        MpQuicEnd::send_space(self)
    }
    fn send(&mut self, n: u64) -> u64 {
        MpQuicEnd::send(self, n)
    }
    fn readable(&self) -> u64 {
        MpQuicEnd::readable(self)
    }
    fn recv(&mut self, max: u64) -> Range<u64> {
        MpQuicEnd::recv(self, max)
    }
    fn close(&mut self) {
        MpQuicEnd::close(self)
    }
    fn peer_closed(&self) -> bool {
        MpQuicEnd::peer_closed(self)
    }
}

#[cfg(test)]
mod tests;
