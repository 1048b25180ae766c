//! Output: the transmit pass (schedule, then poll the subflows that
//! changed) and the MPTCP options each outgoing segment gets: MP_CAPABLE,
//! MP_JOIN, DSS mappings with DATA_ACK and DATA_FIN, DSS checksums.

use core::ops::Range;

use mplab_wire::crypto;
use mplab_wire::mptcp::capable_flags;
use mplab_wire::{DataAck, Dss, DssMapping, MpCapable, MpJoin, MptcpOption, TcpHeader};

use super::{Connection, Handshake, Origin, PayloadSource, Segment, Transmit};
use crate::tcp;
use crate::time::Instant;

impl Connection {
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
        let full = self.changes.dirty_all || self.fb.reason.is_some() || self.changes.noted.len() != n;
        let mut changed = std::mem::take(&mut self.changes.dirty);
        changed.append(&mut self.changes.touched);
        changed.sort_unstable();
        changed.dedup();
        if full {
            self.changes.noted.clear();
            self.changes.noted.resize(n, false);
            self.changes.timeouts.resize(n, None);
            self.changes.may_owe_update.resize(n, false);
        } else {
            for &i in &changed {
                self.changes.noted[i] = false;
            }
        }
        self.changes.dirty_all = false;
        self.schedule(now, full, &changed);
        self.queue_control(now);
        // Poll what changed or was just given something, in index order
        // (as a sweep of all would send them); the others have nothing.
        let mut polled = changed;
        if full {
            polled.clear();
            polled.extend(0..n);
        } else {
            polled.extend_from_slice(&self.changes.touched);
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
            self.changes.timeouts[i] = self.subflow_timeout(i);
            self.changes.may_owe_update[i] = self.subflows[i].tcp.may_owe_window_update();
        }
        self.changes.timeouts_valid = true;
        polled.clear();
        self.changes.dirty = polled; // keep the allocation
        first
    }

    /// Adds the MPTCP options subflow `i`'s segment carries, within 40
    /// bytes, in place; returns the data-level offsets of its payload.
    pub(super) fn decorate(&mut self, now: Instant, i: usize, t: &mut tcp::Transmit, src: &dyn PayloadSource) -> Range<u64> {
        let data = self.decorate_inner(now, i, &mut t.header, t.payload.clone(), src);
        fit_options(&mut t.header);
        data
    }

    /// Adds the MPTCP options to subflow `i`'s segment `h` carrying
    /// subflow-stream bytes `sub`; returns their data-level offsets.
    pub(super) fn decorate_inner(&mut self, now: Instant, i: usize, h: &mut TcpHeader, sub: Range<u64>, src: &dyn PayloadSource) -> Range<u64> {
        let mut data = 0..0;
        if self.fb.reason.is_some() {
            return self.decorate_fallen_back(i, h, sub);
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
        let fin_due = self.fin_queued && self.sched_nxt >= self.app_end && self.data_una <= self.app_end && self.timers.fin_resend.is_none_or(|t| t <= now);
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
            self.timers.fin_resend = Some(now + rto);
        }
        let _ = h.options.push_mptcp(MptcpOption::Dss(dss));
        if payload_len == 0 {
            self.add_signalling(now, i, h, rk);
        }
        data
    }

    pub(super) fn checksum_of(&mut self, data_off: u64, ssn: u32, len: u16, src: &dyn PayloadSource) -> u16 {
        let dsn = self.local_dsn(data_off);
        self.scratch.resize(len as usize, 0);
        src.fill(data_off, &mut self.scratch);
        crypto::dss_checksum(dsn, ssn, len, &self.scratch)
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
