//! Segment input: finding the subflow, the checks before its TCP sees a
//! segment, the MPTCP options it carries, and DSS reception (mappings,
//! DATA_ACK, DATA_FIN, the data-level reassembly).

use core::ops::{ControlFlow, Range};
use std::net::SocketAddr;

use mplab_wire::crypto;
use mplab_wire::{Dss, MpCapable, MptcpOption, TcpHeader};

use super::{port_key, sndbuf, subflow, Connection, Handshake, Origin};
use crate::tcp;
use crate::time::Instant;

/// How the input of a segment goes on after `screen_segment`.
enum Screened {
    /// As MPTCP; `was_synced`: the subflow's TCP was ESTABLISHED before.
    Multipath { was_synced: bool },
    /// As plain TCP: the connection fell back (before or because of it).
    PlainTcp,
    /// Nothing more: the data-level place of its payload, if any.
    Done(Option<Range<u64>>),
}

impl Connection {
    /// Processes a segment that arrived on the subflow `local` <- `remote`.
    /// `payload` is needed only when [`needs_payload`](Self::needs_payload).
    /// Returns the data-level offsets the payload was placed at, if any.
    pub fn handle_segment(&mut self, now: Instant, local: SocketAddr, remote: SocketAddr, h: &TcpHeader, payload_len: u32, payload: Option<&[u8]>) -> Option<Range<u64>> {
        let i = self.subflow_of(local, remote)?;
        self.changed(i);
        let was_synced = match self.screen_segment(now, i, h, payload_len) {
            Screened::Multipath { was_synced } => was_synced,
            Screened::PlainTcp => return self.input_as_plain_tcp(now, i, h, payload_len),
            Screened::Done(placed) => return placed,
        };
        // A server that lost the third ACK (and the first data, which
        // carry the keys) cannot place data yet: it takes none of it (the
        // segment still counts as an ACK), and the client sends it again
        // once the keys are through. Taken now, the bytes would become
        // readable later without their payload ever having been handed over.
        let payload_len = if !self.client && self.remote.is_none() { 0 } else { payload_len };
        // Bytes below this were received before: a copy of them without a
        // mapping (a retransmission through a box, a forged duplicate) says
        // nothing about the path and changes nothing.
        let rcv_before = self.subflows[i].tcp.rcv_nxt();
        let sub_range = self.sub_tcp(i).handle_segment(now, h, payload_len);
        let new_part = sub_range.as_ref().map(|r| r.start.max(rcv_before)..r.end).filter(|r| !r.is_empty());
        self.after_subflow_tcp_input(now, i, was_synced);
        let wnd = h.ack_flag().then(|| self.subflows[i].tcp.peer_window());
        let ControlFlow::Continue(dss) = self.take_options(i, h) else { return None };
        if let (Some(w), None) = (wnd, dss.and_then(|d| d.data_ack)) {
            // No DATA_ACK (a handshake segment): relative to what is
            // acknowledged already.
            self.advance_wnd_end(self.data_una, w);
        }
        let placed = match dss {
            Some(d) => match self.input_dss(now, i, &d, wnd, &sub_range, new_part.as_ref(), payload) {
                ControlFlow::Continue(placed) => placed,
                ControlFlow::Break(ret) => return ret,
            },
            None => {
                if new_part.as_ref().is_some_and(|r| !self.subflows[i].rx_covers(r.start)) && self.remote.is_some() {
                    // Data no mapping covers: options stripped on the path.
                    self.on_missing_mapping(i);
                    if self.fb.reason.is_some() {
                        return self.finish_input_after_fallback(now, i, sub_range);
                    }
                }
                None
            }
        };
        // Data covered by a mapping an earlier segment carried (or by the
        // MP_CAPABLE data_len mapping) is placed by that mapping.
        let placed = placed.or_else(|| self.placed_by_earlier_mapping(i, sub_range.as_ref()));
        self.drain_subflow(now, i);
        self.grow_sndbuf_on_input(i);
        self.after_input(now);
        placed
    }

    /// The checks a segment passes before its subflow's TCP takes it:
    /// the subflow's window, MP_FASTCLOSE on a RST, signs of the peer's
    /// fallback, a Fast Open SYN's data, the MPTCP handshake, and payload
    /// without a mapping.
    fn screen_segment(&mut self, now: Instant, i: usize, h: &TcpHeader, payload_len: u32) -> Screened {
        if self.fb.reason.is_some() {
            return Screened::PlainTcp;
        }
        if !self.subflows[i].tcp.acceptable(h, payload_len) {
            // Outside the subflow's window: an ACK back, nothing else. Its
            // MPTCP options are not believed (RFC 7430; Linux reads them
            // only after tcp_sequence()): no fallback for a missing DSS, no
            // MP_FAIL, MP_FASTCLOSE, address or priority change from a
            // sender who does not know where the subflow stands.
            self.subflows[i].tcp.on_unacceptable(now, h, payload_len);
            self.stats.unacceptable_segments += 1;
            return Screened::Done(None);
        }
        if h.rst() {
            if let Some(k) = h.options.mptcp().find_map(|o| if let MptcpOption::MpFastclose { receiver_key } = o { Some(*receiver_key) } else { None }) {
                if crypto::mac_eq(&k.to_be_bytes(), &self.local.key.to_be_bytes()) {
                    self.on_fastclose();
                    return Screened::Done(None);
                }
            }
        }
        self.check_peer_fallback(i, h, payload_len);
        if self.fb.reason.is_some() {
            return Screened::PlainTcp;
        }
        if !self.client && h.syn() && !h.ack_flag() && payload_len > 0 && self.subflows[i].origin == Origin::Initial && self.subflows[i].handshake == Handshake::Opening {
            let placed = self.take_syn_data(now, i, h, payload_len);
            self.after_input(now);
            return Screened::Done(placed);
        }
        let was_synced = self.subflows[i].tcp.is_established();
        if self.handshake_may_apply(i, h) {
            self.handshake_input(now, i, h);
        }
        if self.fb.reason.is_some() {
            return Screened::PlainTcp;
        }
        self.refresh_coupling(i);
        // Payload that no mapping places (none in this segment, none
        // received before covers it; RFC 8684 3.3.1) is not taken in: the
        // driver gets no place for it, so taken in it would later be read
        // without its bytes. The subflow is reset, or the connection falls
        // back if it is the only one, and the sender sends it again.
        // (A server still without the keys takes no payload: see
        // `handle_segment`.)
        if payload_len > 0 && self.remote.is_some() && self.subflows[i].tcp.is_established() && !self.payload_mapped(i, h, payload_len) {
            self.stats.unmapped_data += 1;
            self.on_missing_mapping(i);
            return if self.fb.reason.is_some() { Screened::PlainTcp } else { Screened::Done(None) };
        }
        Screened::Multipath { was_synced }
    }

    /// The MPTCP options of an acceptable segment on subflow `i`: its DSS
    /// (returned), the MP_CAPABLE data_len mapping, address signalling and
    /// MP_PRIO. An MP_FASTCLOSE with our key ends the connection (`Break`).
    fn take_options(&mut self, i: usize, h: &TcpHeader) -> ControlFlow<(), Option<Dss>> {
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
                    return ControlFlow::Break(());
                }
                _ => {}
            }
        }
        ControlFlow::Continue(dss)
    }

    /// A segment's DSS on subflow `i`: DATA_ACK, window and mapping; the
    /// payload's data-level place if the mapping gives it (`Continue`), or
    /// what `handle_segment` returns at once (`Break`).
    #[allow(clippy::too_many_arguments)]
    fn input_dss(&mut self, now: Instant, i: usize, d: &Dss, wnd: Option<u64>, sub_range: &Option<Range<u64>>, new_part: Option<&Range<u64>>, payload: Option<&[u8]>) -> ControlFlow<Option<Range<u64>>, Option<Range<u64>>> {
        self.subflows[i].saw_dss = true;
        // Only a DATA_ACK shows the peer has our key (RFC 8684 B.3 lets
        // a Fast Open server map data before the third ACK, without one).
        if self.subflows[i].handshake == Handshake::ThirdAck && d.data_ack.is_some() {
            self.subflows[i].handshake = Handshake::Established;
        }
        let failures = self.stats.checksum_failures;
        let valid = self.on_dss(now, i, d, sub_range.clone(), payload);
        if let (Some(w), Some(a)) = (wnd, d.data_ack) {
            self.advance_wnd_end(self.data_ack_offset(a.value, a.wide), w);
        }
        if !valid {
            // The subflow was reset with what it held unread, or the
            // connection fell back on it.
            if self.fb.reason.is_some() {
                return ControlFlow::Break(self.finish_input_after_fallback(now, i, sub_range.clone()));
            }
            self.after_input(now);
            return ControlFlow::Break(None);
        }
        if self.stats.checksum_failures > failures && self.fb.reason.is_none() {
            // Bytes whose checksum failed are not placed: the driver
            // must not hold them (the first copy of a byte wins, so
            // they would stand for the good copy sent again).
            self.drain_subflow(now, i);
            self.after_input(now);
            return ControlFlow::Break(None);
        }
        if self.fb.reason.is_none() {
            if let Some(r) = new_part.filter(|_| self.remote.is_some()) {
                // A sender never puts bytes of two mappings in one
                // segment, so payload its own mapping leaves out, that
                // no earlier mapping covers, never gets one: a box
                // merged segments and dropped a DSS (RFC 8684 3.7).
                if self.subflows[i].rx_covers_any(r) && (!self.subflows[i].rx_covers(r.start) || !self.subflows[i].rx_covers(r.end - 1)) {
                    self.stats.unmapped_data += 1;
                    self.on_missing_mapping(i);
                    if self.fb.reason.is_some() {
                        return ControlFlow::Break(self.finish_input_after_fallback(now, i, sub_range.clone()));
                    }
                }
            }
        }
        ControlFlow::Continue(self.placed_by_mapping(i, d, sub_range.as_ref()))
    }

    /// The data-level place of the payload (subflow bytes `sub_range`) as
    /// far as the segment's own mapping reaches from its first byte.
    fn placed_by_mapping(&self, i: usize, d: &Dss, sub_range: Option<&Range<u64>>) -> Option<Range<u64>> {
        if let (Some(m), Some(r)) = (d.mapping, sub_range) {
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
                        return Some(off..off + (end - r.start));
                    }
                }
            }
        }
        None
    }

    /// The data-level place of subflow bytes `sub_range` by the mapping an
    /// earlier segment carried (or the MP_CAPABLE data_len mapping).
    fn placed_by_earlier_mapping(&self, i: usize, sub_range: Option<&Range<u64>>) -> Option<Range<u64>> {
        let (r, rk) = (sub_range.filter(|r| !r.is_empty())?, self.remote?);
        let dsn = self.subflows[i].rx_dsn_of(r.start)?;
        let off = dsn.wrapping_sub(rk.idsn.wrapping_add(1)).wrapping_add(self.remote_base);
        Some(off..off + (r.end - r.start))
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
    pub(super) fn grow_sndbuf_on_input(&mut self, i: usize) {
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
    pub(super) fn subflow_of(&self, local: SocketAddr, remote: SocketAddr) -> Option<usize> {
        let key = port_key(local, remote);
        self.ports.iter().enumerate().filter(|&(_, &k)| k == key).map(|(i, _)| i).find(|&i| self.addrs[i] == (local, remote))
    }

    /// Subflow `i`'s TCP, told the current receive window cap first.
    pub(super) fn sub_tcp(&mut self, i: usize) -> &mut tcp::Connection {
        let t = &mut self.subflows[i].tcp;
        t.set_window_cap(self.win_cap);
        t
    }

    /// Gives subflow `i`'s congestion control the state of its siblings,
    /// if it is a coupled one (LIA, OLIA, BALIA).
    pub(super) fn refresh_coupling(&mut self, i: usize) {
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

    /// Whether the first payload byte of `h` on subflow `i` has a mapping:
    /// the segment's own DSS (or MP_CAPABLE data_len) mapping, or one an
    /// earlier segment carried.
    pub(super) fn payload_mapped(&self, i: usize, h: &TcpHeader, payload_len: u32) -> bool {
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

    /// SSN (relative, on the wire) -> subflow receive offset. Relative
    /// subflow sequence number 1 is the subflow's first byte after its
    /// SYN's (see `Subflow::syn_rx`).
    pub(super) fn sub_off_of_ssn(&self, i: usize, ssn: u32) -> u64 {
        let s = &self.subflows[i];
        tcp::seq::unwrap(ssn, 1u32.wrapping_sub(s.syn_rx as u32), s.tcp.rcv_nxt()).unwrap_or(0)
    }

    /// The DSN of our stream offset `off`.
    pub(super) fn local_dsn(&self, off: u64) -> u64 {
        self.local.idsn.wrapping_add(1).wrapping_add(off.wrapping_sub(self.local_base))
    }

    pub(super) fn expand_dsn(&self, v: u64, wide: bool) -> u64 {
        if wide {
            return v;
        }
        let reference = self.remote.map_or(0, |k| k.idsn.wrapping_add(1).wrapping_add(self.rcv.nxt().wrapping_sub(self.remote_base)));
        crypto::expand_seq32(reference, v as u32)
    }

    pub(super) fn expand_data_ack(&self, v: u64, wide: bool) -> u64 {
        if wide {
            return v;
        }
        crypto::expand_seq32(self.local_dsn(self.data_una), v as u32)
    }

    /// Our data offset a DATA_ACK names.
    pub(super) fn data_ack_offset(&self, value: u64, wide: bool) -> u64 {
        let ack = self.expand_data_ack(value, wide);
        ack.wrapping_sub(self.local.idsn.wrapping_add(1)).wrapping_add(self.local_base)
    }

    /// The peer's window from an ACK whose DATA_ACK is at offset `ack`:
    /// the right edge (DATA_ACK + window) only moves forward, whichever
    /// subflow and however late the ACK came (RFC 8684 3.3.4; Linux's
    /// `ack_update_msk` keeps the largest `wnd_end`). A DATA_ACK beyond
    /// what was sent is not believed.
    pub(super) fn advance_wnd_end(&mut self, ack: u64, wnd: u64) {
        let max = self.app_end + u64::from(self.fin_queued);
        if ack <= max {
            self.wnd_end = self.wnd_end.max(ack.saturating_add(wnd));
        }
    }

    /// The peer's window beyond what it acknowledged.
    pub(super) fn peer_wnd(&self) -> u64 {
        self.wnd_end.saturating_sub(self.data_una)
    }

    /// A segment's DSS: its DATA_ACK, then its mapping. False when the
    /// mapping is invalid: it disagrees with one received before on where
    /// a subflow byte goes (`on_invalid_mapping`).
    pub(super) fn on_dss(&mut self, now: Instant, i: usize, d: &Dss, sub_range: Option<Range<u64>>, payload: Option<&[u8]>) -> bool {
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
        let Some(m) = d.mapping else { return true };
        if m.is_infinite() {
            self.on_infinite_mapping(i);
            return true;
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
            return true; // DATA_FIN alone
        }
        let sub = self.sub_off_of_ssn(i, m.ssn);
        let map = subflow::RxMap { sub, dsn, len };
        if self.subflows[i].rx_disagrees(&map) {
            // Checked before the checksum, as Linux does.
            self.stats.invalid_mappings += 1;
            self.on_invalid_mapping(i);
            return false;
        }
        if self.checksum && m.checksum.is_none() {
            // RFC 8684 3.3: with checksums negotiated a mapping without one
            // is not behaving as negotiated; Linux treats it as an invalid
            // mapping, as a failed checksum (`validate_data_csum`,
            // net/mptcp/subflow.c). Its bytes are never placed: MP_FAIL and
            // fallback on the only subflow, else the subflow is reset.
            self.stats.checksum_failures += 1;
            self.on_checksum_failure(i, dsn);
            return true;
        }
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
                    return true;
                }
            }
        }
        let _ = now;
        self.subflows[i].add_rx(map);
        true
    }

    /// Moves in-order subflow data into the connection's reassembly.
    pub(super) fn drain_subflow(&mut self, now: Instant, i: usize) {
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
            // RFC 8684 3.3.5: data beyond the receive window is dropped.
            // No window this end offered reached past the next byte
            // expected plus the whole receive buffer (the window is what
            // the buffer has free, and its right edge never moved back),
            // so that bound drops nothing a peer may send.
            if off.saturating_add(len) > self.rcv.nxt().saturating_add(self.cfg.rcv_buf) {
                self.stats.data_outside_window += len;
                continue;
            }
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

    pub(super) fn check_data_fin(&mut self) {
        if !self.fin_received && self.rcv_fin == Some(self.rcv.nxt()) {
        self.changed_all();
            self.fin_received = true;
            // Acknowledge it promptly.
            if let Some(s) = self.subflows.iter_mut().find(|s| s.usable()) {
                s.tcp.ack_now();
            }
        }
    }

    /// The connection's receive window: one receive buffer for all
    /// subflows, each advertising its free space (given to a subflow when
    /// it is next used, see `sub_tcp`).
    pub(super) fn rcv_window(&self) -> u64 {
        let buf = self.autotune.as_ref().map_or(self.cfg.rcv_buf, |a| a.window());
        let ooo = if self.cfg.window_counts_ooo { self.rcv.ooo_bytes() } else { 0 };
        buf.saturating_sub(self.rcv.nxt() - self.read_off + ooo)
    }
}
