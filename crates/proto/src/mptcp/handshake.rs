//! Keys and handshakes: MP_CAPABLE on the initial subflow (with TCP Fast
//! Open's SYN data), MP_JOIN on the others (RFC 8684 3.1, 3.2), and
//! opening and registering subflows.

use core::ops::Range;
use std::net::{IpAddr, SocketAddr};

use mplab_wire::crypto::{self, KeyMaterial};
use mplab_wire::mptcp::{capable_flags, tcprst_reason};
use mplab_wire::{MpJoin, MptcpOption, TcpHeader};

use super::{port_key, splitmix, Connection, Fallback, Handshake, JoinRefused, Origin, RemoteAddr, Subflow};
use crate::tcp;
use crate::time::Instant;

impl Connection {
    pub(super) fn local_id_of(&self, ip: IpAddr) -> u8 {
        self.cfg.locals.iter().find(|l| l.addr == ip).map_or(0, |l| l.id)
    }

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
        if self.reset || self.closing || self.fb.reason.is_some() || self.remote.is_none() {
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

    /// Whether `h` may still take part in subflow `i`'s MPTCP handshake.
    /// Only a repeated MP_JOIN third ACK concerns an established subflow
    /// of a connection whose keys are known (see `handshake_input`); every
    /// other data segment skips the handshake checks.
    pub(super) fn handshake_may_apply(&self, i: usize, h: &TcpHeader) -> bool {
        let s = &self.subflows[i];
        s.handshake != Handshake::Established
            || self.remote.is_none()
            || h.syn()
            || (!self.client && s.is_join() && h.options.mptcp().any(|o| matches!(o, MptcpOption::MpJoin(_))))
    }

    /// MP_CAPABLE / MP_JOIN processing before the TCP engine sees the segment.
    pub(super) fn handshake_input(&mut self, now: Instant, i: usize, h: &TcpHeader) {
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
                            self.fb.allowed = false;
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
                    let prohibited = ok && !self.may_add_subflows();
                    let s = &mut self.subflows[i];
                    if prohibited {
                        self.stats.joins_refused += 1;
                        s.reset_reason = Some(tcprst_reason::ADMIN_PROHIBITED);
                        s.tcp.abort();
                    } else if ok {
                        s.handshake = Handshake::Established;
                        // The fourth ACK goes once TCP is ESTABLISHED, below.
                        self.fb.allowed = false;
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
    pub(super) fn take_syn_data(&mut self, now: Instant, i: usize, h: &TcpHeader, payload_len: u32) -> Option<Range<u64>> {
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
    pub(super) fn subflow_synced(&mut self, now: Instant, i: usize) {
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

    /// Whether a subflow may be opened or a join accepted now: with
    /// `joins_only_while_established` (Linux) only while neither DATA_FIN
    /// is on its way (the msk in TCP_ESTABLISHED, `mptcp_is_fully_established`).
    pub(super) fn may_add_subflows(&self) -> bool {
        !self.cfg.joins_only_while_established || !(self.fin_queued || self.fin_received)
    }

    pub(super) fn open_subflow(&mut self, local_ip: IpAddr, remote: RemoteAddr, backup: bool) {
        let Some(rk) = self.remote else { return };
        let _ = rk;
        debug_assert!(self.may_add_subflows(), "the path manager and the rejoins open no subflow while the connection closes");
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

    pub(super) fn push_subflow(&mut self, sf: Subflow) {
        self.addrs.push((sf.local, sf.remote));
        self.ports.push(port_key(sf.local, sf.remote));
        self.subflows.push(sf);
        self.changed_all();
    }

    /// After subflow `i`'s TCP took a segment: its handshake completing on
    /// our side, and a join responder's fourth ACK.
    pub(super) fn after_subflow_tcp_input(&mut self, now: Instant, i: usize, was_synced: bool) {
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
    }
}
