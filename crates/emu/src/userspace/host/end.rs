//! One flow end on an mplab host: its configuration, its connection
//! (opened as the client, or accepted by the host as the server), its
//! application and receive ring, and what the prober sees of it.

use std::net::{IpAddr, SocketAddr};
use std::ops::Range;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mplab_backend::apps::{App as BackendApp, StreamSocket};
use mplab_proto::mptcp::MptcpConfig;
use mplab_proto::tcp::TcpConfig;
use mplab_proto::Instant;
use mplab_scenario::network::{Flow, Network, Transport};

use super::counters::{HostCounters, Role};
use super::rx_ring::RxRing;
use crate::apps::{Clock, FlowState};
use crate::probes::TcpInfo;
use crate::userspace::bridge::{Bridge, Exchange};
use crate::userspace::conn::Conn;

/// One flow end on this host.
pub(super) struct End {
    pub(super) flow: Flow,
    pub(super) role: Role,
    pub(super) st: Arc<FlowState>,
    pub(super) cfg: MptcpConfig,
    /// Some: a plain TCP flow (`transport = "tcp"`), run on proto's TCP.
    pub(super) tcp_cfg: Option<TcpConfig>,
    pub(super) conn: Option<Conn>,
    pub(super) rx: RxRing,
    /// The application (the simulator's state machine, on run time).
    pub(super) app: BackendApp,
    /// `app.on_connected` ran.
    pub(super) started: bool,
    /// Aborted by a control command: the application stops.
    pub(super) aborted: bool,
    /// The flow's cwnd and srtt are probed: its subflows are published for
    /// the prober every 20 ms, the others' at a quarter of the probe
    /// interval (thousands of connections would otherwise spend the loop
    /// formatting addresses).
    pub(super) detailed: bool,
    pub(super) published_ns: u64,
    /// A gateway program's connection: bytes from and to its socket
    /// instead of the application ([`super::bridge`]).
    pub(super) bridge: Option<Bridge>,
    /// A converter's carriers: this end only stands for the flow; each
    /// carrier dialled or accepted becomes an end of its own.
    pub(super) exchange: Option<Arc<Exchange>>,
}

/// Flow `f`'s end in role `role` on `node`, before its connection.
pub(super) fn new_end(net: &Network, node: usize, f: &Flow, role: Role, st: &Arc<FlowState>, clk: &Clock) -> End {
    let first = if role == Role::Client { f.src } else { f.dst };
    let sends = crate::kconf::end_sends(&f.app, role == Role::Client);
    let fc = if sends { f.clone() } else { mplab_backend::config::receiver_view(f) };
    // userspace::run refused the scenario before the run if a sending
    // end's configuration does not translate.
    const CHECKED: &str = "configuration checked by config::unsupported";
    let cfg = mplab_backend::config::mptcp_config(net, &fc, node, first).expect(CHECKED);
    let tcp_cfg = (f.transport == Transport::TCP).then(|| mplab_backend::config::flow_tcp_end_config(net, &fc, node).expect(CHECKED));
    // Sending stops at the flow's stop or the end of the run.
    let stop = Instant(f.stop_ns.min(clk.end_ns));
    let app = BackendApp::new(mplab_backend::apps::Kind::of(&f.app), role == Role::Client, Some(stop));
    let detailed = net.probes.flows.contains(&f.id);
    End { flow: f.clone(), role, st: st.clone(), cfg, tcp_cfg, conn: None, rx: RxRing::new(), app, started: false, aborted: false, detailed, published_ns: 0, bridge: None, exchange: None }
}

/// A carrier of a converter end (`tmpl`), made at run time on a new
/// socket pair: the loop keeps one side, the program gets the other.
pub(super) fn carrier_end(tmpl: &End, c: &mut HostCounters) -> Option<(End, OwnedFd)> {
    let (mine, theirs) = crate::userspace::bridge::pair().ok()?;
    let e = End {
        flow: tmpl.flow.clone(),
        role: tmpl.role,
        st: tmpl.st.clone(),
        cfg: tmpl.cfg.clone(),
        tcp_cfg: tmpl.tcp_cfg.clone(),
        conn: None,
        rx: RxRing::new(),
        app: BackendApp::new(mplab_backend::apps::Kind::of(&tmpl.flow.app), tmpl.role == Role::Client, None),
        started: false,
        aborted: false,
        detailed: false,
        published_ns: 0,
        bridge: Some(Bridge::new(mine)),
        exchange: None,
    };
    c.carriers += 1;
    Some((e, theirs))
}

/// A flow end's connection as its application sees it: what it reads is
/// checked against the pattern and hashed on the way.
pub(super) struct Sock<'a> {
    conn: &'a mut Conn,
    rx: &'a mut RxRing,
    st: &'a FlowState,
}

impl StreamSocket for Sock<'_> {
    fn send_space(&self) -> u64 {
        self.conn.send_space()
    }
    fn send(&mut self, n: u64) -> u64 {
        self.conn.send(n)
    }
    fn readable(&self) -> u64 {
        self.conn.readable()
    }
    fn recv(&mut self, max: u64) -> Range<u64> {
        let r = self.conn.recv(max);
        if let Some(m) = self.rx.take(r.clone()) {
            if let Ok(mut v) = self.st.mismatch.lock() {
                v.get_or_insert(m);
            }
        }
        r
    }
    fn close(&mut self) {
        self.conn.close();
    }
    fn peer_closed(&self) -> bool {
        self.conn.peer_closed() && self.conn.readable() == 0
    }
}

/// One step of the flow end's application: the client connects at the
/// flow's start; once connected, the application runs on the run's clock.
pub(super) fn drive_app(end: &mut End, t_ns: u64, clk: &Clock, now: Instant, seed: u64) {
    if end.aborted || end.exchange.is_some() {
        return;
    }
    let f = &end.flow;
    if end.role == Role::Client && end.conn.is_none() {
        if t_ns < f.start_ns || t_ns >= f.stop_ns {
            return;
        }
        connect(end, now, seed);
    }
    let Some(conn) = end.conn.as_mut() else { return };
    if !conn.is_established() && !conn.fell_back() {
        return;
    }
    if end.role == Role::Client {
        end.st.connected.store(true, Ordering::Relaxed);
        if conn.fell_back() {
            end.st.fell_back.store(true, Ordering::Relaxed);
        }
    }
    if let Some(b) = end.bridge.as_mut() {
        let rx = &mut end.rx;
        b.pump(conn, |conn, n, out| rx.take_into(conn.recv(n), out));
        return;
    }
    let before = crate::apps::progress(&end.app);
    let at = Instant(t_ns);
    let mut sock = Sock { conn, rx: &mut end.rx, st: &end.st };
    if end.started {
        end.app.pump(at, &mut sock);
    } else {
        end.app.on_connected(at, &mut sock);
        end.started = true;
    }
    // What the run reports counts up to its end, like the kernel's apps.
    crate::apps::report(&end.app, before, &end.st, t_ns, clk, end.flow.start_ns);
}

/// Opens the connection of client end `end`.
pub(super) fn connect(end: &mut End, now: Instant, seed: u64) {
    let f = &end.flow;
    let local = SocketAddr::new(IpAddr::V4(f.src), f.sport);
    let remote = SocketAddr::new(IpAddr::V4(f.dst), f.dport);
    end.conn = Some(match &end.tcp_cfg {
        Some(t) => Conn::tcp_connect(t.clone(), local, remote, (seed ^ (seed >> 32)) as u32, now),
        None => Conn::mptcp_connect(end.cfg.clone(), local, remote, seed, now),
    });
}

/// The carriers the converter program asked converter end `tmpl` for:
/// each an end of its own with a new source port, connecting now with
/// the program's first bytes written (in the SYN with Fast Open).
pub(super) fn dial(ends: &mut Vec<End>, tmpl: usize, next_port: &mut u16, now: Instant, seed: u64, c: &mut HostCounters) {
    let Some(ex) = ends[tmpl].exchange.clone() else { return };
    for (k, d) in ex.take_dials().into_iter().enumerate() {
        let Some((mut e, theirs)) = carrier_end(&ends[tmpl], c) else {
            let _ = d.reply.send(None);
            continue;
        };
        e.flow.sport = *next_port;
        *next_port = next_port.checked_add(1).unwrap_or(50_000);
        connect(&mut e, now, seed ^ k as u64);
        let in_syn = fast_open(&e);
        if let (Some(b), Some(conn)) = (e.bridge.as_mut(), e.conn.as_mut()) {
            b.preload(conn, &d.first);
        }
        if d.reply.send(Some((theirs, in_syn))).is_ok() {
            ends.push(e);
        }
    }
}

/// Whether the end's SYN carries what was written before it.
pub(super) fn fast_open(e: &End) -> bool {
    e.tcp_cfg.as_ref().map_or(e.cfg.tcp.fast_open, |t| t.fast_open)
}

/// How long the application of `end` may sleep: until the client's start,
/// or the application's own timer (a rate sender's next chunk, a request
/// due, its stop).
pub(super) fn app_wait_ns(end: &End, t_ns: u64) -> u64 {
    let f = &end.flow;
    if end.role == Role::Client && end.conn.is_none() {
        return if t_ns < f.start_ns { f.start_ns - t_ns } else { u64::MAX };
    }
    // Only a running application has timers (a dead connection's would
    // fire forever).
    if end.bridge.is_some() || end.exchange.is_some() {
        // The program's bytes wake the end through the loop's poll.
        return u64::MAX;
    }
    let live = end.started && !end.aborted && end.conn.as_ref().is_some_and(|c| c.is_established() || c.fell_back());
    match end.app.poll_timer() {
        Some(t) if live => t.0.saturating_sub(t_ns),
        _ => u64::MAX,
    }
}

/// The sender's subflows for the prober (as TCP_INFO would give them).
pub(super) fn publish(end: &End) {
    let sender = if mplab_backend::apps::server_sends(&end.flow.app) { Role::Server } else { Role::Client };
    if end.role != sender {
        return;
    }
    let Some(conn) = end.conn.as_ref() else { return };
    let v: Vec<crate::apps::StackSubflow> = conn
        .subflow_stats()
        .into_iter()
        .filter(|s| s.established || s.tcp.bytes_sent > 0)
        .map(|s| {
            let info = TcpInfo {
                rtt_us: s.tcp.srtt.map_or(0, |d| d.as_micros() as u32),
                snd_cwnd: s.tcp.cwnd.min(u32::MAX as u64) as u32,
                snd_mss: 1,
                unacked: s.tcp.in_flight.min(u32::MAX as u64) as u32,
                total_retrans: s.tcp.segments_retransmitted as u32,
                bytes_acked: s.tcp.bytes_acked,
                bytes_sent: s.tcp.bytes_sent,
                bytes_retrans: Some(s.tcp.bytes_retransmitted),
                total_rto: Some(s.tcp.rto_count.min(u16::MAX as u64) as u16),
            };
            // Linux's TCP_ESTABLISHED / TCP_CLOSE.
            (s.local.to_string(), s.remote.to_string(), info, if s.closed { 7 } else { 1 })
        })
        .collect();
    if let Ok(mut g) = end.st.stack_subflows.lock() {
        *g = Some((v, conn.subflow_stats().iter().filter(|s| s.backup).map(|s| format!("{}|{}", s.local, s.remote)).collect()));
    }
    if let Ok(mut g) = end.st.stack_send_buffer.lock() {
        *g = conn.send_buffer();
    }
}


/// The host's tables (see [`mplab_backend::host`]): 4-tuples and MPTCP
/// tokens to the index of their end, listening ports to the server ends
/// on them.
pub(super) type Demux = mplab_backend::host::HostStack<(SocketAddr, SocketAddr), usize, Vec<usize>>;
