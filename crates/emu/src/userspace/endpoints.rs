//! Flow ends on an mplab host of the userspace backend whose transport is
//! not carried in TCP (SCTP and CMT-SCTP today): each is the backend's
//! transport endpoint ([`mplab_backend::transport`]), created by the same
//! engine the simulator uses, on real packets through the host's TUN, with
//! the flow's application (the backends' state machine) on the run's
//! clock. Its peer is usrsctp on a kernel host or another mplab host.
//!
//! TCP and MPTCP ends take the host loop's own path ([`super::host`]): the
//! same `StreamConn` as the simulator's endpoint, fed the segments' real
//! payload bytes rather than model packets.

use std::net::Ipv4Addr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mplab_backend::apps::App as BackendApp;
use mplab_backend::packet::Packet;
use mplab_backend::transport::{engine, Endpoint, Engine};
use mplab_proto::Instant;
use mplab_scenario::network::{Flow, Network};
use mplab_scenario::plugins::transports::Carrier;
use mplab_wire::TcpHeader;

use super::host::counters::{HostCounters, Role};
use super::tun::Tun;
use crate::apps::{Clock, FlowState};

/// The IP protocol of the carriers whose ends run here, as the TUN's
/// routing rules take them ([`super::tun`]): SCTP's.
const SCTP: u8 = 132;

/// Whether flow `f`'s ends on an mplab host run here rather than on the
/// host loop's TCP path.
pub fn takes(f: &Flow) -> bool {
    f.transport.carrier() == Carrier::Sctp
}

struct End {
    flow: Flow,
    role: Role,
    st: Arc<FlowState>,
    engine: &'static dyn Engine,
    ep: Option<Box<dyn Endpoint>>,
    app: BackendApp,
    /// `app.on_connected` ran.
    started: bool,
    /// Seeds the endpoint's random choices (tags, TSNs, cookie secret).
    seed: u64,
}

/// Every such end on one host, and the network its engines configure
/// endpoints from.
#[derive(Default)]
pub struct EndpointEnds {
    net: Option<Network>,
    ends: Vec<End>,
    /// The model packet an arriving IP packet becomes, and the one an
    /// endpoint writes its next packet into.
    pkt: Option<Packet>,
    out: Vec<u8>,
}

impl EndpointEnds {
    pub fn new(net: &Network, node: usize, ends: &[(usize, Role)], states: &[Arc<FlowState>], clk: &Clock) -> EndpointEnds {
        let mut me = EndpointEnds::default();
        for &(fi, role) in ends.iter().filter(|(fi, _)| takes(&net.flows[*fi])) {
            let f = &net.flows[fi];
            // userspace::unsupported refused a transport without an engine.
            let Some(engine) = engine(f.transport) else { continue };
            let stop = Instant(f.stop_ns.min(clk.end_ns));
            let app = BackendApp::new(mplab_backend::apps::Kind::of(&f.app), role == Role::Client, Some(stop));
            let seed = crate::sys::realtime_ns() ^ ((fi as u64) << 40) ^ node as u64;
            me.ends.push(End { flow: f.clone(), role, st: states[fi].clone(), engine, ep: None, app, started: false, seed });
        }
        if !me.ends.is_empty() {
            me.net = Some(net.clone());
            me.pkt = Some(Packet::new(Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, TcpHeader::default(), 0, 0));
        }
        me
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// One received IPv4 packet: true when it was of a carrier these ends
    /// take (handed to its end, or dropped as malformed or for no end).
    pub fn input(&mut self, now: Instant, ip: &[u8], c: &mut HostCounters) -> bool {
        if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != SCTP {
            return false;
        }
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        // The common header holds the ports: at least 12 bytes.
        if ihl < 20 || total < ihl + 12 || total > ip.len() {
            c.bad_checksum += 1;
            return true;
        }
        let (Some(net), Some(pkt)) = (self.net.as_ref(), self.pkt.as_mut()) else { return true };
        let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
        let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
        let body = &ip[ihl..total];
        let (sport, dport) = (u16::from_be_bytes([body[0], body[1]]), u16::from_be_bytes([body[2], body[3]]));
        // A bad CRC32c or malformed chunks are the endpoint's to discard
        // (RFC 9260 6.8), as on the simulator.
        pkt.set_sctp(src, dst, sport, dport, body.into());
        let mine = |e: &End| if e.role == Role::Server { e.flow.dport == dport } else { e.flow.sport == dport && e.ep.is_some() };
        let Some(e) = self.ends.iter_mut().find(|e| mine(e)) else {
            c.unplaced_segments += 1;
            return true;
        };
        if e.ep.is_none() {
            // A server end is made by the first packet that reaches it.
            e.ep = e.engine.accept(net, &e.flow, dst, src, pkt, e.seed, now);
        }
        if let Some(ep) = e.ep.as_mut() {
            ep.on_packet(now, pkt);
        }
        true
    }

    /// Timers, applications and output of every end.
    pub fn poll(&mut self, now: Instant, t_ns: u64, clk: &Clock, tun: &Tun, c: &mut HostCounters) {
        let (Some(net), Some(pkt)) = (self.net.as_ref(), self.pkt.as_mut()) else { return };
        for e in &mut self.ends {
            if e.role == Role::Client && e.ep.is_none() && t_ns >= e.flow.start_ns && t_ns < e.flow.stop_ns {
                e.ep = e.engine.connect(net, &e.flow, e.seed, now);
            }
            let Some(ep) = e.ep.as_mut() else { continue };
            if ep.poll_timeout().is_some_and(|t| t <= now) {
                ep.on_timeout(now);
            }
            drive_app(e, t_ns, clk);
            let Some(ep) = e.ep.as_mut() else { continue };
            while ep.poll_transmit_into(now, pkt) {
                let Some(bytes) = pkt.sctp.as_deref() else { continue };
                if mplab_wire::packet::build_ipv4(pkt.src, pkt.dst, 64, 0, SCTP, bytes, &mut self.out).is_ok() && tun.send(&self.out).unwrap_or(false) {
                    c.tx_packets += 1;
                } else {
                    c.tx_dropped += 1;
                }
            }
        }
    }

    /// Time until the earliest endpoint timer, application timer or
    /// client start (ns).
    pub fn wait_ns(&self, now: Instant, t_ns: u64) -> u64 {
        let mut next = u64::MAX;
        for e in &self.ends {
            match &e.ep {
                Some(ep) => {
                    if let Some(t) = ep.poll_timeout() {
                        next = next.min(t.0.saturating_sub(now.0));
                    }
                    if let Some(t) = e.app.poll_timer().filter(|_| e.started) {
                        next = next.min(t.0.saturating_sub(t_ns));
                    }
                }
                None if e.role == Role::Client && t_ns < e.flow.start_ns => next = next.min(e.flow.start_ns - t_ns),
                None => {}
            }
        }
        next
    }
}

/// One step of an end's application once its endpoint is established,
/// and what the run reports of it.
fn drive_app(e: &mut End, t_ns: u64, clk: &Clock) {
    let Some(ep) = e.ep.as_mut() else { return };
    if !ep.is_established() {
        return;
    }
    e.st.connected.store(true, Ordering::Relaxed);
    let before = crate::apps::progress(&e.app);
    let at = Instant(t_ns);
    if e.started {
        e.app.pump(at, ep.as_mut());
    } else {
        e.app.on_connected(at, ep.as_mut());
        e.started = true;
    }
    if let Some(m) = ep.read_mismatch() {
        if let Ok(mut g) = e.st.mismatch.lock() {
            g.get_or_insert_with(|| m.to_string());
        }
    }
    crate::apps::report(&e.app, before, &e.st, t_ns, clk, e.flow.start_ns);
}
