//! A crates/proto SCTP association as a transport endpoint. Unlike the TCP
//! endpoints, which move only lengths and stream offsets, the association
//! carries real bytes: the sender writes the stream pattern, packets travel
//! encoded (CRC32c included), and the reader checks every byte it reads
//! against the pattern at its offset.

use core::ops::Range;
use std::net::{IpAddr, Ipv4Addr};

use mplab_proto::sctp::{Association, PathState, SctpConfig};
use mplab_proto::Instant;
use mplab_wire::sctp::Packet as SctpPacket;

use crate::apps::{fill_pattern, pattern_mismatch, StreamSocket};
use super::endpoint::{Endpoint, PathStats, Progress};
use crate::packet::Packet;
use crate::config::{sctp_addrs, sctp_config, sctp_mtu};
use mplab_scenario::network::{Flow, Network};

use super::{Engine, CHECKED};
use crate::results::SubflowState;

pub struct SctpEndpoint {
    assoc: Association,
    /// The latest time the world gave us: the stream socket calls (send,
    /// recv, close) carry no time of their own and come right after one.
    now: Instant,
    /// Stream offsets written and read so far.
    written: u64,
    read: u64,
    /// The first read byte that differed from the pattern; reported once
    /// with the next input.
    mismatch: Option<String>,
    reported: bool,
    scratch: Vec<u8>,
}

fn v4(a: IpAddr) -> Ipv4Addr {
    match a {
        IpAddr::V4(v) => v,
        IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
    }
}

impl SctpEndpoint {
    /// The client: an INIT from `local[0]` to `remote`; the peer's other
    /// addresses come in its INIT ACK.
    pub fn connect(cfg: SctpConfig, local: Vec<Ipv4Addr>, sport: u16, remote: Ipv4Addr, dport: u16, seed: u64, now: Instant) -> Self {
        let local = local.into_iter().map(IpAddr::V4).collect();
        Self::new(Association::connect(cfg, local, sport, vec![IpAddr::V4(remote)], dport, seed, now), now)
    }

    /// The server on `port`, answering the INIT that is about to arrive.
    pub fn listen(cfg: SctpConfig, local: Vec<Ipv4Addr>, port: u16, seed: u64, now: Instant) -> Self {
        let mut secret = [0u8; 32];
        let mut x = seed;
        for c in secret.chunks_mut(8) {
            x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(0x6a09_e667_f3bc_c909);
            c.copy_from_slice(&x.to_be_bytes());
        }
        let local = local.into_iter().map(IpAddr::V4).collect();
        Self::new(Association::listen(cfg, local, port, secret, seed ^ 0x5c7b), now)
    }

    fn new(assoc: Association, now: Instant) -> Self {
        SctpEndpoint { assoc, now, written: 0, read: 0, mismatch: None, reported: false, scratch: Vec::new() }
    }

    pub fn association(&self) -> &Association {
        &self.assoc
    }

    fn progress(&mut self) -> Progress {
        let corrupted = self.mismatch.is_some() && !self.reported;
        self.reported |= corrupted;
        Progress { corrupted, ..Default::default() }
    }
}

impl StreamSocket for SctpEndpoint {
    fn send_space(&self) -> u64 {
        self.assoc.send_space()
    }
    fn send(&mut self, n: u64) -> u64 {
        let n = n.min(self.assoc.send_space()) as usize;
        self.scratch.resize(n, 0);
        fill_pattern(self.written, &mut self.scratch);
        let taken = self.assoc.send(self.now, &self.scratch) as u64;
        self.written += taken;
        taken
    }
    fn readable(&self) -> u64 {
        self.assoc.readable()
    }
    fn recv(&mut self, max: u64) -> Range<u64> {
        let n = max.min(self.assoc.readable()) as usize;
        self.scratch.resize(n, 0);
        let got = self.assoc.recv(self.now, &mut self.scratch);
        if self.mismatch.is_none() {
            self.mismatch = pattern_mismatch(self.read, &self.scratch[..got]);
        }
        let r = self.read..self.read + got as u64;
        self.read = r.end;
        r
    }
    fn close(&mut self) {
        self.assoc.shutdown(self.now);
    }
    fn peer_closed(&self) -> bool {
        self.assoc.peer_finished() && self.assoc.readable() == 0
    }
}

impl Endpoint for SctpEndpoint {
    fn on_packet(&mut self, now: Instant, pkt: &Packet) -> Progress {
        self.now = now;
        // A packet that does not decode (bad checksum, bad lengths) is
        // discarded, as RFC 9260 6.8 and 8.5 say.
        if let Some(p) = pkt.sctp.as_deref().and_then(|b| SctpPacket::decode(b).ok()) {
            self.assoc.on_packet(now, IpAddr::V4(pkt.src), IpAddr::V4(pkt.dst), &p);
        }
        self.progress()
    }

    fn poll_transmit_into(&mut self, now: Instant, out: &mut Packet) -> bool {
        self.now = now;
        while let Some(t) = self.assoc.poll_transmit(now) {
            // Our own packets always encode; one that did not would be a
            // stack bug, and is skipped rather than sent malformed.
            let Ok(bytes) = t.packet.encode() else { continue };
            let h = &t.packet.header;
            out.set_sctp(v4(t.src), v4(t.dst), h.src_port, h.dst_port, bytes.into_boxed_slice());
            return true;
        }
        false
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.assoc.poll_timeout()
    }

    fn on_timeout(&mut self, now: Instant) -> Progress {
        self.now = now;
        self.assoc.on_timeout(now);
        self.progress()
    }

    fn is_established(&self) -> bool {
        self.assoc.is_established()
    }

    fn paths(&self) -> Vec<PathStats> {
        self.assoc
            .path_stats()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (local, remote) = self.assoc.destination(i).unwrap_or((IpAddr::V4(Ipv4Addr::UNSPECIFIED), IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
                PathStats {
                    local: local.to_string(),
                    remote: remote.to_string(),
                    backup: false,
                    cwnd: s.cwnd,
                    in_flight: s.flight,
                    srtt_ns: s.srtt.map(|d| d.as_nanos() as u64),
                    bytes_sent: s.bytes_sent,
                    bytes_acked: s.bytes_acked,
                    retransmitted_segments: s.retransmissions,
                retransmitted_bytes: None,
                    rto_count: s.timeouts,
                    state: match self.assoc.path_state(i) {
                        Some(PathState::Active) => SubflowState::Established,
                        Some(PathState::PotentiallyFailed) => SubflowState::Stale,
                        _ => SubflowState::Closed,
                    },
                    hystart: Default::default(),
                }
            })
            .collect()
    }

    fn read_mismatch(&self) -> Option<&str> {
        self.mismatch.as_deref()
    }

    fn reorder_probe(&self, now: Instant) -> Option<(u64, u64)> {
        let (bytes, wait) = self.assoc.reorder_probe(now);
        Some((bytes, wait.as_nanos() as u64))
    }
}

/// `transport = "sctp"` and `"cmt-sctp"`: proto's association, the flow's
/// settings choosing CMT or not.
pub(super) struct Sctp;

/// The flow's association settings, with the host's MTU.
fn flow_config(net: &Network, f: &Flow, node: usize) -> SctpConfig {
    let mut cfg = sctp_config(f.sctp.as_ref().expect(CHECKED));
    cfg.mtu = sctp_mtu(net, node);
    cfg
}

impl Engine for Sctp {
    fn connect(&self, net: &Network, f: &Flow, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        Some(Box::new(SctpEndpoint::connect(flow_config(net, f, f.from), sctp_addrs(net, f.from, f.src), f.sport, f.dst, f.dport, seed, now)))
    }

    /// The association answers the INIT itself, once it is handed over.
    fn accept(&self, net: &Network, f: &Flow, local: Ipv4Addr, _remote: Ipv4Addr, _init: &Packet, seed: u64, now: Instant) -> Option<Box<dyn Endpoint>> {
        Some(Box::new(SctpEndpoint::listen(flow_config(net, f, f.to), sctp_addrs(net, f.to, local), f.dport, seed, now)))
    }
}
