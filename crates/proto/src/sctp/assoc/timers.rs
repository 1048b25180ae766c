//! Timers (RFC 9260 6.3, 8): T1-init/cookie and T2-shutdown
//! retransmission, T3-rtx per destination, heartbeats and their acks,
//! path and association error counts, and the delayed SACK.

use mplab_wire::sctp::chunk::Chunk;

use crate::sctp::cc::{self, PathView};
use crate::sctp::path::PathState;
use crate::sctp::send::OutState;
use crate::time::Instant;
use super::{Association, CloseReason, State, Transmit, HB_INFO_LEN};

impl Association {
    pub(super) fn establish_timers(&mut self, now: Instant) {
        let hb = self.cfg.hb_interval;
        for d in &mut self.dests {
            d.hb_at = Some(now + hb + d.rto.rto());
            d.last_send = now;
        }
    }

    pub(super) fn on_heartbeat_ack(&mut self, now: Instant, info: &[u8]) {
        if info.len() != HB_INFO_LEN {
            return;
        }
        let i = u16::from_be_bytes([info[0], info[1]]) as usize;
        let nonce = u64::from_be_bytes(info[2..10].try_into().unwrap_or([0; 8]));
        let hb = self.cfg.hb_interval;
        let Some(d) = self.dests.get_mut(i) else { return };
        let Some((n, sent)) = d.hb_outstanding else { return };
        if n != nonce {
            return;
        }
        d.hb_outstanding = None;
        d.rto.on_sample(now.saturating_since(sent));
        d.error_count = 0;
        d.state = PathState::Active;
        d.hb_at = Some(now + hb + d.rto.rto());
        self.assoc_errors = 0;
    }

    /// The earliest deadline of any timer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.state == State::Closed {
            return None;
        }
        let mut t = self.t1.as_ref().map(|x| x.1);
        let mut take = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        for d in &self.dests {
            take(d.t3);
            take(d.hb_at);
        }
        take(self.rcv.as_ref().and_then(|r| r.sack_timer));
        t
    }

    pub fn on_timeout(&mut self, now: Instant) {
        self.reset_burst();
        if let Some((t, at, n, to)) = self.t1.take() {
            if at <= now {
                if n + 1 > self.cfg.max_init_retrans {
                    self.close(CloseReason::Failed);
                    return;
                }
                let to2 = (to * 2).min(self.cfg.rto_max);
                self.ctrl.push_back(t.clone());
                self.t1 = Some((t, now + to2, n + 1, to2));
            } else {
                self.t1 = Some((t, at, n, to));
            }
        }
        if let Some(r) = &mut self.rcv {
            if r.sack_timer.is_some_and(|t| t <= now) {
                r.sack_timer = None;
                r.sack_now = true;
            }
        }
        for i in 0..self.dests.len() {
            if self.dests[i].t3.is_some_and(|t| t <= now) {
                self.t3_expired(now, i);
            }
            if self.state == State::Closed {
                return;
            }
            if self.dests[i].hb_at.is_some_and(|t| t <= now) {
                self.heartbeat_due(now, i);
            }
        }
    }

    /// A destination missed a T3-rtx or a heartbeat (RFC 9260 8.1, 8.2).
    fn path_error(&mut self, now: Instant, i: usize) {
        let d = &mut self.dests[i];
        d.error_count += 1;
        d.rto.backoff();
        let was = d.state;
        if d.error_count > self.cfg.path_max_retrans {
            d.state = PathState::Inactive;
        } else if self.cfg.pf_threshold.is_some_and(|pf| d.error_count > pf) {
            d.state = PathState::PotentiallyFailed;
        }
        // RFC 7829: a destination entering PF is probed by a heartbeat at
        // once (then every RTO), so that it comes back as soon as it answers.
        if d.state != PathState::Active && was == PathState::Active && d.hb_outstanding.is_none() {
            d.hb_at = Some(now);
        }
        self.assoc_errors += 1;
        if self.assoc_errors > self.cfg.assoc_max_retrans {
            self.close(CloseReason::Failed);
        }
    }

    fn t3_expired(&mut self, now: Instant, i: usize) {
        self.dests[i].t3 = None;
        self.dests[i].stats.timeouts += 1;
        // E1: every chunk in flight here is marked for retransmission.
        for c in self.snd.sent.iter_mut() {
            if c.dest == i && c.state == OutState::Outstanding {
                c.state = OutState::Marked { fast: false };
                self.snd.marked += 1;
                if c.in_flight {
                    c.in_flight = false;
                    self.dests[i].flight = self.dests[i].flight.saturating_sub(c.len);
                }
            }
        }
        let agg = self.aggregate();
        let mtu = self.cfg.max_payload() as u64;
        let d = &mut self.dests[i];
        let me = PathView { cwnd: d.cwnd, ssthresh: d.ssthresh, srtt: d.rto.srtt().map(|r| r.as_secs_f64()) };
        d.ssthresh = cc::ssthresh_after_loss(self.cfg.cmt, &agg, &me, mtu);
        d.cwnd = mtu;
        d.partial_bytes_acked = 0;
        d.rtt_probe = None;
        d.recover = None;
        if !self.cfg.cmt.is_cmt() {
            self.recover = None;
        }
        self.path_error(now, i);
    }

    fn heartbeat_due(&mut self, now: Instant, i: usize) {
        if self.dests[i].hb_outstanding.take().is_some() {
            self.path_error(now, i);
            if self.state == State::Closed {
                return;
            }
        }
        let hb = self.cfg.hb_interval;
        let d = &mut self.dests[i];
        let idle = now.saturating_since(d.last_send) >= hb;
        if d.state != PathState::Active || idle {
            d.hb_pending = true;
            d.hb_at = Some(now + d.rto.rto());
        } else {
            d.hb_at = Some(d.last_send + hb + d.rto.rto());
        }
    }

    /// A HEARTBEAT to destination `i`; its info carries the destination's
    /// index, a nonce and the time sent, checked when the ack returns.
    pub(super) fn heartbeat(&mut self, now: Instant, i: usize) -> Transmit {
        let nonce = self.rng.next_u64();
        let d = &mut self.dests[i];
        d.hb_pending = false;
        d.hb_outstanding = Some((nonce, now));
        d.stats.heartbeats_sent += 1;
        let mut info = Vec::with_capacity(HB_INFO_LEN);
        info.extend_from_slice(&(i as u16).to_be_bytes());
        info.extend_from_slice(&nonce.to_be_bytes());
        info.extend_from_slice(&now.as_nanos().to_be_bytes());
        let (src, dst) = (d.local, d.remote);
        self.wrap(src, dst, vec![Chunk::Heartbeat { info }])
    }
}
