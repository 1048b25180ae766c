//! `transport = "mpquic"`: a Multipath QUIC (RFC 10069) connection end
//! (crates/backend `mpquic`, noq's state machine) as a transport endpoint.
//! Its paths are opened as MPTCP opens subflows: the scenario's path
//! manager (`[transport.mptcp]` path_manager, endpoints, limits) is asked
//! when the connection is established and when an address comes back,
//! and each of its `Open` actions becomes a QUIC path (`backup` a path in
//! status Backup). A path noq abandons (its link went silent) is opened
//! again after the flow's rejoin back-off, as mplab's MPTCP rejoins a
//! subflow.

use core::ops::Range;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use mplab_proto::mptcp::{LocalAddr, PathManager, PmAction, PmView, RemoteAddr};
use mplab_proto::Instant;
use mplab_scenario::network::{Flow, Network, Rejoin};

use super::endpoint::{Endpoint, PathStats, Progress};
use super::{Engine, CHECKED};
use crate::apps::StreamSocket;
use crate::config::mpquic_config;
use crate::mpquic::MpQuicConfig;
use crate::quic_artefacts;
use crate::mpquic::{MpPath, MpPathState, MpQuicEnd};
use crate::packet::Packet;
use crate::results::SubflowState;

/// Back-off before a dead path is opened again, when the flow's `rejoin`
/// leaves it to the profile: mplab's MPTCP subflow rejoin (1 s doubling
/// to 30 s).
const REOPEN_FIRST_NS: u64 = 1_000_000_000;
const REOPEN_MAX_NS: u64 = 30_000_000_000;

/// A path the path manager asked for: opened again when noq abandons it.
struct Wanted {
    local: SocketAddr,
    remote: SocketAddr,
    backup: bool,
    /// noq's id for the current attempt.
    id: Option<u32>,
    /// When to try again after an abandon, and the wait after that one.
    retry_at: Option<u64>,
    wait_ns: u64,
}

pub struct MpQuicEndpoint {
    q: MpQuicEnd,
    client: bool,
    /// The port every path of this end uses, on each of its addresses.
    port: u16,
    primary: Ipv4Addr,
    /// The peer address the connection was opened to (client).
    remote: SocketAddr,
    pm: Box<dyn PathManager>,
    locals: Vec<LocalAddr>,
    out_of_service: Vec<IpAddr>,
    limits: mplab_proto::mptcp::Limits,
    asked: bool,
    wanted: Vec<Wanted>,
    /// (first, longest) re-open wait; None: never.
    reopen: Option<(u64, u64)>,
    reported: bool,
    /// The latest time input came in (for the host's address events,
    /// which carry none).
    now: u64,
}

impl MpQuicEndpoint {
    fn new(
        q: MpQuicEnd,
        net: &Network,
        f: &Flow,
        client: bool,
        local: Ipv4Addr,
        port: u16,
        remote: SocketAddr,
    ) -> MpQuicEndpoint {
        let node = if client { f.from } else { f.to };
        let m = crate::config::mptcp_config(net, f, node, local).expect(CHECKED);
        let reopen = match f.mptcp.as_ref().map(|m| m.rejoin) {
            Some(Rejoin::Never) => None,
            Some(Rejoin::After { first_ns, max_ns }) => Some((first_ns, max_ns)),
            _ => Some((REOPEN_FIRST_NS, REOPEN_MAX_NS)),
        };
        MpQuicEndpoint {
            q,
            client,
            port,
            primary: local,
            remote,
            pm: m.path_manager.build(),
            locals: m.locals,
            out_of_service: Vec::new(),
            limits: m.limits,
            asked: false,
            wanted: Vec::new(),
            reopen,
            reported: false,
            now: 0,
        }
    }

    /// The paths alive or being validated, as (local, remote).
    fn live(&self) -> Vec<(SocketAddr, SocketAddr)> {
        let mut v: Vec<(SocketAddr, SocketAddr)> =
            vec![(SocketAddr::new(self.primary.into(), self.port), self.remote)];
        for p in self
            .q
            .paths()
            .iter()
            .filter(|p| p.state != MpPathState::Abandoned && p.id != 0)
        {
            v.push((
                p.local
                    .unwrap_or_else(|| SocketAddr::new(self.primary.into(), self.port)),
                p.remote,
            ));
        }
        v
    }

    /// Runs the path manager's actions: each `Open` a new path.
    fn act(&mut self, now: u64, actions: Vec<PmAction>) {
        for a in actions {
            match a {
                PmAction::Open {
                    local,
                    remote,
                    backup,
                } => {
                    let l = SocketAddr::new(local, self.port);
                    let r = if remote.addr.port() == 0 {
                        SocketAddr::new(remote.addr.ip(), self.remote.port())
                    } else {
                        remote.addr
                    };
                    let id = self.q.open_path(now, l, r, backup).ok();
                    self.wanted.push(Wanted {
                        local: l,
                        remote: r,
                        backup,
                        id,
                        retry_at: None,
                        wait_ns: self.reopen.map_or(0, |(f, _)| f),
                    });
                }
                PmAction::Prio { local, backup } => {
                    let ids: Vec<u32> = self
                        .q
                        .paths()
                        .iter()
                        .filter(|p| p.local.map(|a| a.ip()) == Some(local))
                        .map(|p| p.id)
                        .collect();
                    for id in ids {
                        let _ = self.q.set_backup(id, backup);
                    }
                }
                // RFC 10069 has no address announcement (ADD_ADDR's
                // counterpart): the client opens paths to the address it
                // connected to.
                PmAction::Announce { .. } => {}
            }
        }
    }

    fn ask(&mut self, now: u64, f: impl FnOnce(&mut dyn PathManager, &PmView, &mut Vec<PmAction>)) {
        let locals: Vec<LocalAddr> = self
            .locals
            .iter()
            .filter(|l| !self.out_of_service.contains(&l.addr))
            .copied()
            .collect();
        let remotes = [RemoteAddr {
            id: 0,
            addr: self.remote,
        }];
        let subflows = self.live();
        let view = PmView {
            client: self.client,
            locals: &locals,
            remotes: &remotes,
            subflows: &subflows,
            limits: self.limits,
            id_order: false,
            closing: false,
        };
        let mut out = Vec::new();
        f(self.pm.as_mut(), &view, &mut out);
        self.act(now, out);
    }

    /// After any input: the path manager's first turn once established,
    /// and dead paths opened again when their wait is over.
    fn after(&mut self, now: u64) -> Progress {
        self.now = now;
        if self.client && !self.asked && self.q.is_established() && self.q.multipath() == Some(true)
        {
            self.asked = true;
            // The first path is opened again like the others when noq
            // abandons it (its link went silent): without it, a connection
            // whose first access link failed stayed on the others for good.
            self.wanted.push(Wanted {
                local: SocketAddr::new(self.primary.into(), self.port),
                remote: self.remote,
                backup: false,
                id: Some(0),
                retry_at: None,
                wait_ns: self.reopen.map_or(0, |(f, _)| f),
            });
            self.ask(now, |pm, v, out| pm.on_established(v, out));
        }
        let paths = self.q.paths();
        for w in &mut self.wanted {
            // A wait runs only while the path is abandoned and its address
            // in service: a deadline left over from before would be a timer
            // in the past that fires at once, again and again.
            if self.out_of_service.contains(&w.local.ip()) {
                w.retry_at = None;
                continue;
            }
            let Some(id) = w.id else {
                // Refused for now (right after the handshake the peer may
                // not have issued a connection ID for another path yet):
                // asked again at every input.
                w.id = self.q.open_path(now, w.local, w.remote, w.backup).ok();
                continue;
            };
            let Some((_, max)) = self.reopen else {
                continue;
            };
            if !paths
                .iter()
                .any(|p: &MpPath| p.id == id && p.state == MpPathState::Abandoned)
            {
                w.retry_at = None;
                continue;
            }
            match w.retry_at {
                None => w.retry_at = Some(now + w.wait_ns),
                Some(t) if t <= now => {
                    // Still refused: the next input asks again.
                    w.id = self.q.open_path(now, w.local, w.remote, w.backup).ok();
                    w.retry_at = None;
                    w.wait_ns = (w.wait_ns * 2).min(max);
                }
                Some(_) => {}
            }
        }
        let corrupted = self.q.mismatch.is_some() && !self.reported;
        self.reported |= corrupted;
        Progress {
            corrupted,
            ..Default::default()
        }
    }
}

impl StreamSocket for MpQuicEndpoint {
    fn send_space(&self) -> u64 {
        self.q.send_space()
    }
    fn send(&mut self, n: u64) -> u64 {
        self.q.send(n)
    }
    fn readable(&self) -> u64 {
        self.q.readable()
    }
    fn recv(&mut self, max: u64) -> Range<u64> {
        self.q.recv(max)
    }
    fn close(&mut self) {
        self.q.close()
    }
    fn peer_closed(&self) -> bool {
        self.q.peer_closed()
    }
}

impl Endpoint for MpQuicEndpoint {
    fn read_mismatch(&self) -> Option<&str> {
        self.q.mismatch.as_deref()
    }

    fn write_bytes(&mut self, data: &[u8]) -> usize {
        self.q.write_bytes(data)
    }

    fn read_bytes(&mut self, max: usize, out: &mut Vec<u8>) -> usize {
        self.q.read_bytes(max, out)
    }

    fn send_datagram(&mut self, data: &[u8]) -> bool {
        self.q.send_datagram(data).is_ok()
    }

    fn max_datagram(&mut self) -> Option<usize> {
        self.q.max_datagram()
    }

    fn recv_datagram(&mut self) -> Option<Vec<u8>> {
        self.q.recv_datagram()
    }

    fn on_packet(&mut self, now: Instant, pkt: &Packet) -> Progress {
        if let Some(b) = pkt.udp.as_deref() {
            let (local, remote) = (
                SocketAddr::new(pkt.dst.into(), pkt.tcp.dst_port),
                SocketAddr::new(pkt.src.into(), pkt.tcp.src_port),
            );
            if !self.client && !self.q.is_established() {
                self.remote = remote;
            }
            self.q.on_datagram(now.0, local, remote, b);
        }
        self.after(now.0)
    }

    fn poll_transmit_into(&mut self, now: Instant, out: &mut Packet) -> bool {
        let Some(t) = self.q.poll_transmit(now.0) else {
            return false;
        };
        let (IpAddr::V4(dst), src) = (
            t.remote.ip(),
            t.local.map_or(IpAddr::V4(self.primary), |l| l.ip()),
        ) else {
            return false;
        };
        let IpAddr::V4(src) = src else { return false };
        out.set_udp(
            src,
            dst,
            self.port,
            t.remote.port(),
            t.data.into_boxed_slice(),
        );
        true
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let retry = self.wanted.iter().filter_map(|w| w.retry_at).min();
        match (self.q.poll_timeout(), retry) {
            (Some(a), Some(b)) => Some(Instant(a.min(b))),
            (a, b) => a.or(b).map(Instant),
        }
    }

    fn on_timeout(&mut self, now: Instant) -> Progress {
        self.q.on_timeout(now.0);
        self.after(now.0)
    }

    fn is_established(&self) -> bool {
        self.q.is_established()
    }

    /// An end that does not offer multipath: single-path QUIC, reported
    /// as the flow's `fallback` (MPTCP's word for the same outcome).
    fn fell_back(&self) -> bool {
        self.q.multipath() == Some(false)
    }

    /// A new path's first datagram goes from (or to) an address pair the
    /// host has not seen: replies on it come back to this end.
    fn binds_new_tuples(&self) -> bool {
        true
    }

    /// PATH_STATUS_BACKUP / AVAILABLE on every path from `addr`, and on
    /// the paths opened from it later.
    fn set_addr_backup(&mut self, addr: Ipv4Addr, backup: bool) {
        let a = IpAddr::V4(addr);
        for l in self.locals.iter_mut().filter(|l| l.addr == a) {
            l.backup = backup;
        }
        for w in self.wanted.iter_mut().filter(|w| w.local.ip() == a) {
            w.backup = backup;
        }
        self.act(self.now, vec![PmAction::Prio { local: a, backup }]);
    }

    fn set_addr_in_service(&mut self, addr: Ipv4Addr, in_service: bool) {
        let a = IpAddr::V4(addr);
        if in_service {
            self.out_of_service.retain(|x| *x != a);
            if let Some(l) = self.locals.iter().find(|l| l.addr == a).copied() {
                if self.asked {
                    self.ask(self.now, |pm, v, out| pm.on_local_added(v, l, out));
                }
            }
        } else if !self.out_of_service.contains(&a) {
            self.out_of_service.push(a);
            let ids: Vec<u32> = self
                .q
                .paths()
                .iter()
                .filter(|p| p.state != MpPathState::Abandoned && p.local.map(|l| l.ip()) == Some(a))
                .map(|p| p.id)
                .collect();
            for id in ids {
                let _ = self.q.close_path(self.now, id);
            }
        }
    }

    fn paths(&self) -> Vec<PathStats> {
        self.q
            .paths()
            .iter()
            .map(|p| PathStats {
                local: p.local.map_or_else(
                    || format!("{}:{}", self.primary, self.port),
                    |l| l.to_string(),
                ),
                remote: p.remote.to_string(),
                backup: p.backup,
                cwnd: p.cwnd,
                in_flight: p.in_flight,
                srtt_ns: p.rtt_ns,
                bytes_sent: p.sent_bytes,
                // What left the path and was not lost: noq counts no
                // acknowledged bytes per path.
                bytes_acked: p.sent_bytes.saturating_sub(p.in_flight),
                retransmitted_segments: p.lost_packets,
                retransmitted_bytes: None,
                rto_count: 0,
                state: match p.state {
                    MpPathState::Validating => SubflowState::Connecting,
                    MpPathState::Available | MpPathState::Backup => SubflowState::Established,
                    MpPathState::Abandoned => SubflowState::Closed,
                },
                hystart: Default::default(),
            })
            .collect()
    }
}

/// `transport = "mpquic"`: noq's connection ends (crates/backend `mpquic`).
pub(super) struct MpQuic;

impl Engine for MpQuic {
    fn connect(
        &self,
        net: &Network,
        f: &Flow,
        seed: u64,
        now: Instant,
    ) -> Option<Box<dyn Endpoint>> {
        let cfg = MpQuicConfig { keylog: quic_artefacts::keylog(net, true), qlog: quic_artefacts::qlog(net, f, true), ..mpquic_config(net, f).expect(CHECKED) };
        let remote = SocketAddr::new(f.dst.into(), f.dport);
        let q = MpQuicEnd::client(
            SocketAddr::new(f.src.into(), f.sport),
            remote,
            seed,
            now.0,
            &cfg,
        )
        .ok()?;
        Some(Box::new(MpQuicEndpoint::new(
            q, net, f, true, f.src, f.sport, remote,
        )))
    }

    fn accept(
        &self,
        net: &Network,
        f: &Flow,
        local: Ipv4Addr,
        remote: Ipv4Addr,
        first: &Packet,
        seed: u64,
        _now: Instant,
    ) -> Option<Box<dyn Endpoint>> {
        let cfg = MpQuicConfig { keylog: quic_artefacts::keylog(net, false), qlog: quic_artefacts::qlog(net, f, false), ..mpquic_config(net, f).expect(CHECKED) };
        let q = MpQuicEnd::server(
            SocketAddr::new(local.into(), first.tcp.dst_port),
            seed,
            &cfg,
        )
        .ok()?;
        Some(Box::new(MpQuicEndpoint::new(
            q,
            net,
            f,
            false,
            local,
            first.tcp.dst_port,
            SocketAddr::new(remote.into(), first.tcp.src_port),
        )))
    }
}
