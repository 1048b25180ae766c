//! The three-way handshake: SYN and SYN-ACK with option negotiation (MSS,
//! window scale, SACK, timestamps), their retransmission, and TCP Fast
//! Open's data on the SYN (RFC 7413, without cookies).

use core::ops::Range;
use core::time::Duration;
use std::net::SocketAddr;

use mplab_wire::tcp::flags;
use mplab_wire::{TcpHeader, TcpOptions, Timestamps};

use crate::cc::CcState;
use crate::time::Instant;

use super::{now_ms, seq, AcceptError, AckDue, Connection, State, TcpConfig, Transmit};

/// How far SYN and SYN-ACK retransmissions back off (TCP_RTO_MAX).
const HANDSHAKE_MAX_BACKOFF: Duration = Duration::from_secs(120);

/// Option bytes a Fast Open SYN keeps free (MAX_TCP_OPTION_SPACE): the
/// SYN's payload is our segment size less the most options a SYN can
/// carry, as Linux's tcp_send_syn_data. The peer's MSS is not known yet,
/// and a box adding options to the SYN must not push it past the path's
/// MTU: 1420 bytes at an MSS of 1460.
const SYN_OPTION_SPACE: u64 = 40;

impl Connection {
    /// Opens a connection: the first `poll_transmit` yields the SYN.
    pub fn connect(cfg: TcpConfig, local: SocketAddr, remote: SocketAddr, iss: u32, _now: Instant) -> Connection {
        Connection::new(cfg, local, remote, iss, State::SynSent)
    }

    /// Answers a SYN that reached a listener: the first `poll_transmit`
    /// yields the SYN-ACK.
    pub fn accept(cfg: TcpConfig, local: SocketAddr, remote: SocketAddr, syn: &TcpHeader, iss: u32, _now: Instant) -> Result<Connection, AcceptError> {
        if !syn.syn() || syn.ack_flag() || syn.rst() {
            return Err(AcceptError::NotASyn);
        }
        let mut c = Connection::new(cfg, local, remote, iss, State::SynReceived);
        c.irs = syn.seq;
        c.negotiate(&syn.options);
        if let Some(ts) = syn.options.timestamps {
            c.ts_recent = ts.tsval;
        }
        c.peer_wnd = syn.window as u64;
        c.max_peer_wnd = c.peer_wnd;
        Ok(c)
    }

    /// Applies the options of the peer's SYN (or SYN-ACK) to ours.
    fn negotiate(&mut self, o: &TcpOptions) {
        *self.peer_syn = *o;
        self.sack_ok = self.cfg.sack && o.sack_permitted;
        self.ts_ok = self.cfg.timestamps && o.timestamps.is_some();
        match (self.cfg.wscale, o.wscale) {
            (true, Some(s)) => self.snd_wscale = s.min(14),
            _ => {
                self.snd_wscale = 0;
                self.rcv_wscale = 0;
            }
        }
        let peer_mss = o.mss.unwrap_or(536) as u64;
        // Options padded together: timestamps (10) and what the layer
        // above reserves, rounded up to 32-bit words.
        let opt_space = ((if self.ts_ok { 10 } else { 0 }) + self.cfg.option_reserve as u64).div_ceil(4) * 4;
        self.mss = (self.cfg.mss as u64).min(peer_mss).saturating_sub(opt_space).max(64);
        self.cc_state = CcState::new(self.mss);
    }

    /// Fast Open: how many stream bytes the next SYN may carry (a client
    /// with `fast_open` whose first SYN has not gone out), else 0.
    pub fn syn_data_room(&self) -> u64 {
        if !self.cfg.fast_open || self.state != State::SynSent || self.syn_sent_at.is_some() {
            return 0;
        }
        (self.cfg.mss as u64).saturating_sub(SYN_OPTION_SPACE)
    }

    /// Fast Open, server: takes the bytes of the peer's SYN, once, before
    /// the SYN-ACK that acknowledges them goes out. A SYN arriving after
    /// a SYN-ACK acknowledged only the SYN (its bytes ignored) gives none:
    /// the client sends them again after the handshake.
    pub(super) fn take_syn_data(&mut self, h: &TcpHeader, payload_len: u32) -> Option<Range<u64>> {
        if !self.cfg.fast_open || payload_len == 0 || h.seq != self.irs || self.syn_sent_at.is_some() || self.syn_rx > 0 {
            return None;
        }
        let n = u64::from(payload_len).min(self.rcv_window());
        if n == 0 {
            return None;
        }
        let ins = self.rcv.insert(0..n);
        self.stats.bytes_received += ins.advanced;
        self.syn_rx = n;
        Some(0..n)
    }

    pub(super) fn on_syn_sent(&mut self, now: Instant, h: &TcpHeader) {
        // The SYN-ACK acknowledges the SYN and, with Fast Open, possibly
        // the bytes it carried (all, some or none of them).
        let acked = seq::unwrap(h.ack, self.iss.wrapping_add(1), 0).filter(|&a| a <= self.syn_tx);
        let ack_ok = h.ack_flag() && acked.is_some();
        if h.rst() {
            if ack_ok {
                self.state = State::Closed;
                self.reset = true;
            }
            return;
        }
        if !(h.syn() && ack_ok) {
            return;
        }
        self.irs = h.seq;
        self.negotiate(&h.options);
        if let Some(ts) = h.options.timestamps {
            self.ts_recent = ts.tsval;
        }
        self.peer_wnd = h.window as u64; // never scaled in a SYN
        self.max_peer_wnd = self.max_peer_wnd.max(self.peer_wnd);
        // SYN bytes left unacknowledged go again as ordinary data.
        let acked = acked.unwrap_or(0);
        self.syn_tx_acked = acked;
        self.snd_una = acked;
        self.snd_nxt = acked;
        self.stats.bytes_acked += acked;
        self.handshake_done(now);
        self.state = if self.fin_queued { State::FinWait1 } else { State::Established };
        self.ack_due = AckDue::Now;
    }

    pub(super) fn handshake_done(&mut self, now: Instant) {
        self.synced = true;
        self.syn_due = false;
        if let (Some(t), false) = (self.syn_sent_at, self.syn_retransmitted) {
            self.rtt.sample_at(now - t, self.snd_una, self.snd_nxt);
            self.cc_rtt_sample(now, now - t);
        }
        self.backoff = 0;
        // Data a Fast Open server sent before the handshake completed
        // stays timed.
        self.timers.rto = (!self.board.is_empty()).then(|| self.timer_after_rto(now, 0));
    }

    pub(super) fn syn_segment(&mut self, now: Instant, t: &mut Transmit) {
        self.syn_due = false;
        let room = self.syn_data_room();
        if self.syn_sent_at.is_none() {
            self.syn_sent_at = Some(now);
        }
        let mut o = TcpOptions::new();
        let server = self.state == State::SynReceived;
        o.mss = Some(self.cfg.mss);
        // A SYN-ACK carries an option only if the SYN offered it.
        if self.cfg.wscale && (!server || self.peer_syn.wscale.is_some()) {
            o.wscale = Some(self.rcv_wscale);
        }
        o.sack_permitted = self.cfg.sack && (!server || self.peer_syn.sack_permitted);
        if self.cfg.timestamps && (!server || self.peer_syn.timestamps.is_some()) {
            o.timestamps = Some(Timestamps { tsval: now_ms(now), tsecr: if server { self.ts_recent } else { 0 } });
        }
        let mut fl = flags::SYN;
        let mut ack = 0;
        if server {
            fl |= flags::ACK;
            ack = self.irs.wrapping_add(1).wrapping_add(self.syn_rx as u32);
        }
        // Fast Open: the first SYN carries what was written before it (up
        // to the first record's end); a retransmitted SYN goes bare, as
        // Linux's, and the bytes follow the handshake unless the SYN-ACK
        // acknowledges them (the first SYN may have arrived).
        let mut n = 0;
        if room > 0 {
            n = self.app_end.min(room);
            if let Some(&e) = self.record_ends.front() {
                n = n.min(e);
            }
            self.syn_tx = n;
            self.snd_nxt = n;
            self.stats.bytes_sent += n;
        }
        let header = TcpHeader {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: self.iss,
            ack,
            flags: fl,
            window: self.cfg.rcv_buf.min(65535) as u16,
            urgent: 0,
            options: o,
        };
        self.adv_right = self.cfg.rcv_buf.min(65535);
        // The handshake backs off to TCP's own ceiling (Linux: 1, 2, 4 ...
        // s, about a minute in all over tcp_syn_retries): a ceiling set for
        // an established subflow's data (mplab's 1 s) would make a SYN
        // give up after 7 s on a congested path.
        let clock = self.cfg.timer_clock;
        self.timers.rto = Some(clock.fires(now, clock.backed_off(self.rtt.rto(), self.backoff, HANDSHAKE_MAX_BACKOFF)));
        self.stats.segments_sent += 1;
        *t = Transmit { header, payload: 0..n, retransmission: self.syn_tries > 0 };
    }
}
