//! Setting up an association (RFC 9260 5): INIT and INIT ACK with the
//! state cookie, COOKIE ECHO and COOKIE ACK, the peer's addresses and the
//! destinations built from them.

use core::net::IpAddr;
use core::time::Duration;

use mplab_wire::sctp::chunk::{ctype, Chunk, InitChunk};
use mplab_wire::sctp::cookie::{CookieContents, CookieError};
use mplab_wire::sctp::param::{ErrorCause, InitParam};
use mplab_wire::sctp::Packet;

use crate::sctp::config::SctpConfig;
use crate::sctp::path::Destination;
use crate::sctp::recv::Receiver;
use crate::sctp::rto::Rto;
use crate::sctp::send::SendQueue;
use crate::sctp::tsn;
use crate::time::Instant;
use super::{Association, CloseReason, State, Transmit};

/// Leading bits two addresses share (0 across families).
fn common_prefix(a: IpAddr, b: IpAddr) -> u32 {
    match (a, b) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u32::from(a) ^ u32::from(b)).leading_zeros(),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a) ^ u128::from(b)).leading_zeros(),
        _ => 0,
    }
}

impl Association {
    /// Active open: sends an INIT from `local_addrs[0]` to `remote_addrs[0]`.
    /// `seed` makes tags and TSNs (and so everything else) deterministic.
    pub fn connect(
        cfg: SctpConfig,
        local_addrs: Vec<IpAddr>,
        local_port: u16,
        remote_addrs: Vec<IpAddr>,
        remote_port: u16,
        seed: u64,
        now: Instant,
    ) -> Association {
        let mut a = Self::base(cfg, local_addrs, local_port, remote_port, seed);
        a.state = State::CookieWait;
        let (Some(&src), Some(&dst)) = (a.local_addrs.first(), remote_addrs.first()) else {
            a.close(CloseReason::Failed);
            return a;
        };
        let init = a.init_chunk(None);
        let t = Transmit { src, dst, packet: Packet::new(local_port, remote_port, 0, vec![Chunk::Init(init)]) };
        a.send_with_t1(t, now, a.cfg.rto_initial);
        a
    }

    /// Passive open: answers INITs on `local_port` with a sealed cookie and
    /// becomes established on a valid COOKIE ECHO. `secret` keys the cookie MAC.
    pub fn listen(cfg: SctpConfig, local_addrs: Vec<IpAddr>, local_port: u16, secret: [u8; 32], seed: u64) -> Association {
        let mut a = Self::base(cfg, local_addrs, local_port, 0, seed);
        a.secret = secret;
        a.state = State::Listen;
        a
    }

    pub(super) fn init_chunk(&self, preservative_ms: Option<u32>) -> InitChunk {
        let mut params: Vec<InitParam> = self
            .local_addrs
            .iter()
            .map(|a| match a {
                IpAddr::V4(v) => InitParam::Ipv4(*v),
                IpAddr::V6(v) => InitParam::Ipv6(*v),
            })
            .collect();
        params.push(InitParam::SupportedAddressTypes(vec![5, 6]));
        if self.cfg.nr_sack {
            params.push(InitParam::SupportedExtensions(vec![ctype::NR_SACK]));
        }
        if let Some(ms) = preservative_ms {
            params.push(InitParam::CookiePreservative(ms));
        }
        InitChunk {
            initiate_tag: self.my_tag,
            a_rwnd: self.cfg.recv_buffer.min(u32::MAX as u64) as u32,
            outbound_streams: self.cfg.streams,
            inbound_streams: self.cfg.streams,
            initial_tsn: self.my_initial_tsn,
            params,
        }
    }

    /// Peer addresses from INIT / INIT ACK: the source first, then the listed ones.
    fn peer_addresses(src: IpAddr, params: &[InitParam]) -> Vec<IpAddr> {
        let mut v = vec![src];
        for p in params {
            let a = match p {
                InitParam::Ipv4(a) => IpAddr::V4(*a),
                InitParam::Ipv6(a) => IpAddr::V6(*a),
                _ => continue,
            };
            if !v.contains(&a) {
                v.push(a);
            }
        }
        v
    }

    fn offers_nr_sack(params: &[InitParam]) -> bool {
        params.iter().any(|p| matches!(p, InitParam::SupportedExtensions(e) if e.contains(&ctype::NR_SACK)))
    }

    /// Unrecognised parameters by their action bits (RFC 9260 3.2.1): the
    /// ones to report, whole TLVs.
    fn unknown_params(params: &[InitParam]) -> Vec<u8> {
        let mut report = Vec::new();
        for p in params {
            if let InitParam::Unknown { .. } = p {
                let a = p.action();
                if a.reports() {
                    let _ = p.encode(&mut report);
                }
                if a.stops() {
                    break;
                }
            }
        }
        report
    }

    pub(super) fn answer_init(&mut self, now: Instant, src: IpAddr, dst: IpAddr, peer_port: u16, init: &InitChunk) {
        if init.initiate_tag == 0 || init.inbound_streams == 0 || init.outbound_streams == 0 {
            return;
        }
        let local_tag = self.rng.nonzero_u32();
        let local_tsn = self.rng.next_u64() as u32;
        let preservative = init.params.iter().find_map(|p| match p {
            InitParam::CookiePreservative(ms) => Some(*ms),
            _ => None,
        });
        let lifetime = self.cfg.cookie_lifetime + Duration::from_millis(preservative.unwrap_or(0).min(3_600_000) as u64);
        let c = CookieContents {
            local_tag,
            peer_tag: init.initiate_tag,
            local_initial_tsn: local_tsn,
            peer_initial_tsn: init.initial_tsn,
            peer_a_rwnd: init.a_rwnd,
            peer_outbound_streams: init.outbound_streams,
            peer_inbound_streams: init.inbound_streams,
            local_port: self.local_port,
            peer_port,
            nr_sack: self.cfg.nr_sack && Self::offers_nr_sack(&init.params),
            created_ns: now.as_nanos(),
            lifetime_ns: lifetime.as_nanos().min(u64::MAX as u128) as u64,
            peer_addrs: Self::peer_addresses(src, &init.params),
        };
        let mut ack = self.init_chunk(None);
        ack.initiate_tag = local_tag;
        ack.initial_tsn = local_tsn;
        ack.params.push(InitParam::StateCookie(c.seal(&self.secret)));
        let unknown = Self::unknown_params(&init.params);
        if !unknown.is_empty() {
            ack.params.push(InitParam::UnrecognizedParameter(unknown));
        }
        let p = Packet::new(self.local_port, peer_port, init.initiate_tag, vec![Chunk::InitAck(ack)]);
        self.ctrl.push_back(Transmit { src: dst, dst: src, packet: p });
    }

    /// Returns whether the association now exists (the rest of the packet
    /// is then processed).
    pub(super) fn accept_cookie(&mut self, now: Instant, src: IpAddr, dst: IpAddr, peer_port: u16, vtag: u32, cookie: &[u8]) -> bool {
        let c = match CookieContents::open(&self.secret, cookie) {
            Ok(c) => c,
            Err(CookieError::BadMac) | Err(CookieError::Malformed) => {
                self.stats.cookies_bad_mac += 1;
                return false;
            }
        };
        if vtag != c.local_tag || c.local_port != self.local_port || c.peer_port != peer_port {
            self.stats.dropped_bad_tag += 1;
            return false;
        }
        let age = now.as_nanos().saturating_sub(c.created_ns);
        if age > c.lifetime_ns {
            self.stats.cookies_stale += 1;
            let us = ((age - c.lifetime_ns) / 1000).min(u32::MAX as u64) as u32;
            let p = Packet::new(self.local_port, peer_port, c.peer_tag, vec![Chunk::Error { causes: vec![ErrorCause::StaleCookie { staleness_us: us }] }]);
            self.stats.errors_sent += 1;
            self.ctrl.push_back(Transmit { src: dst, dst: src, packet: p });
            return false;
        }
        self.peer_port = peer_port;
        self.my_tag = c.local_tag;
        self.peer_tag = c.peer_tag;
        self.my_initial_tsn = c.local_initial_tsn;
        self.nr_sack = c.nr_sack;
        self.setup(now, c.local_initial_tsn, c.peer_initial_tsn, c.peer_a_rwnd, &c.peer_addrs, src, c.peer_inbound_streams);
        self.state = State::Established;
        self.establish_timers(now);
        self.push_ctrl(dst, src, vec![Chunk::CookieAck]);
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn setup(&mut self, now: Instant, my_tsn: u32, peer_tsn: u32, peer_rwnd: u32, peer_addrs: &[IpAddr], primary_remote: IpAddr, peer_in_streams: u16) {
        let streams = self.cfg.streams.min(peer_in_streams.max(1));
        // Data written before the handshake finished keeps its SSNs.
        let unsent = core::mem::take(&mut self.snd.unsent);
        let buffered = self.snd.buffered;
        let mut ssn = core::mem::take(&mut self.snd.ssn);
        self.snd = SendQueue::new(tsn::start(my_tsn), streams, peer_rwnd as u64);
        ssn.resize(self.snd.ssn.len(), 0);
        self.snd.ssn = ssn;
        self.snd.unsent = unsent;
        self.snd.buffered = buffered;
        self.rcv = Some(Receiver::new(peer_tsn, self.cfg.recv_buffer, now));
        let mtu = self.cfg.max_payload() as u64;
        self.dests = peer_addrs
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                // Pair each peer address with the local address sharing
                // the longest prefix with it (on parallel paths: the one on
                // its subnet), the i-th local one on a tie; same family if
                // possible.
                let same: Vec<IpAddr> = self.local_addrs.iter().copied().filter(|l| l.is_ipv4() == r.is_ipv4()).collect();
                let pool = if same.is_empty() { &self.local_addrs } else { &same };
                let best = pool.iter().map(|&l| common_prefix(l, r)).max().unwrap_or(0);
                let local = if common_prefix(pool[i % pool.len()], r) == best { pool[i % pool.len()] } else { pool.iter().copied().find(|&l| common_prefix(l, r) == best).unwrap_or(pool[0]) };
                let rto = Rto::new(self.cfg.rto_initial, self.cfg.rto_min, self.cfg.rto_max);
                Destination::new(local, r, mtu, peer_rwnd.max(1) as u64, rto, now)
            })
            .collect();
        self.primary = peer_addrs.iter().position(|a| *a == primary_remote).unwrap_or(0);
        // Use the primary's local address for the path the handshake used.
        self.reset_burst();
    }

    pub(super) fn on_init_ack(&mut self, now: Instant, src: IpAddr, dst: IpAddr, ia: &InitChunk) {
        let Some(cookie) = ia.params.iter().find_map(|p| match p {
            InitParam::StateCookie(c) => Some(c.clone()),
            _ => None,
        }) else {
            // Mandatory parameter missing: abort (RFC 9260 5.1).
            self.peer_tag = ia.initiate_tag;
            let p = Packet::new(
                self.local_port,
                self.peer_port,
                ia.initiate_tag,
                vec![Chunk::Abort { t_bit: false, causes: vec![ErrorCause::MissingMandatoryParameter { types: vec![7] }] }],
            );
            self.ctrl.push_back(Transmit { src: dst, dst: src, packet: p });
            self.close(CloseReason::ProtocolViolation("INIT ACK without a state cookie"));
            return;
        };
        if ia.initiate_tag == 0 {
            return;
        }
        self.peer_tag = ia.initiate_tag;
        self.nr_sack = self.cfg.nr_sack && Self::offers_nr_sack(&ia.params);
        let addrs = Self::peer_addresses(src, &ia.params);
        // The primary path is the address the INIT went to (the one the
        // application connected to), even when the INIT ACK came from
        // another of the peer's addresses (usrsctp answers from the address
        // its routing picks).
        let init_dst = self.t1.as_ref().map(|t| t.0.dst).filter(|d| addrs.contains(d)).unwrap_or(src);
        self.setup(now, self.my_initial_tsn, ia.initial_tsn, ia.a_rwnd, &addrs, init_dst, ia.inbound_streams);
        let mut chunks = vec![Chunk::CookieEcho { cookie }];
        let unknown = Self::unknown_params(&ia.params);
        if !unknown.is_empty() {
            chunks.push(Chunk::Error { causes: vec![ErrorCause::UnrecognizedParameters { params: unknown }] });
        }
        let t = Transmit { src: dst, dst: src, packet: Packet::new(self.local_port, self.peer_port, self.peer_tag, chunks) };
        self.state = State::CookieEchoed;
        self.send_with_t1(t, now, self.cfg.rto_initial);
    }

    /// An ERROR chunk: during the handshake a stale cookie makes us start
    /// over, asking for a longer life (RFC 9260 5.2.6); other causes are
    /// only informational.
    pub(super) fn on_error(&mut self, now: Instant, src: IpAddr, dst: IpAddr, causes: &[ErrorCause]) {
        if self.state != State::CookieEchoed {
            return;
        }
        if let Some(ErrorCause::StaleCookie { staleness_us }) = causes.iter().find(|c| matches!(c, ErrorCause::StaleCookie { .. })) {
            let ms = (staleness_us / 1000).saturating_mul(2).max(1000);
            let init = self.init_chunk(Some(ms));
            let t = Transmit { src: dst, dst: src, packet: Packet::new(self.local_port, self.peer_port, 0, vec![Chunk::Init(init)]) };
            self.state = State::CookieWait;
            self.send_with_t1(t, now, self.cfg.rto_initial);
        }
    }
}
