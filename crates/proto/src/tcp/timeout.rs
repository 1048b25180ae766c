//! What each timer does when it fires: the delayed ACK, the zero-window
//! probe, RACK's reordering timer, the tail loss probe and the
//! retransmission timeout (the SYN's included).

use crate::time::Instant;

use super::timers::expire;
use super::{AckDue, Connection, Recovery, State};

impl Connection {
    /// The earliest time [`handle_timeout`](Self::handle_timeout) must run.
    /// Inlined: MPTCP asks it of every subflow at each of its own polls.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.state == State::Closed {
            return None;
        }
        let delack = match self.ack_due {
            AckDue::At(t) => Some(t),
            _ => None,
        };
        [self.timers.next_deadline(), delack].into_iter().flatten().min()
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if let AckDue::At(t) = self.ack_due {
            if t <= now {
                self.ack_due = AckDue::Now;
            }
        }
        if expire(&mut self.timers.persist, now) {
            self.probe_due = true;
        }
        if expire(&mut self.timers.rack, now) {
            self.detect_loss(now);
            if let Recovery::Fast { .. } = self.recovery {
                self.reduce_rate(0);
            }
        }
        // The probe goes only while nothing is in recovery and the tail is
        // still unacknowledged; an expired timer is disarmed either way.
        if expire(&mut self.timers.tlp, now)
            && self.recovery == Recovery::Open
            && !self.board.is_empty()
            && matches!(self.state, State::Established | State::CloseWait | State::FinWait1 | State::Closing | State::LastAck)
        {
            self.tlp_done = true;
            self.tlp_due = true;
            self.stats.tail_loss_probes += 1;
            // The probe restarts the retransmission timer.
            self.timers.rto = Some(self.timer_after_rto(now, self.backoff));
        }
        if expire(&mut self.timers.rto, now) {
            self.timers.tlp = None;
            self.on_rto(now);
        }
    }

    fn on_rto(&mut self, now: Instant) {
        match self.state {
            State::SynSent | State::SynReceived => {
                self.syn_tries += 1;
                if self.syn_tries > self.cfg.syn_retries {
                    self.state = State::Closed;
                    self.reset = true;
                    return;
                }
                self.backoff += 1;
                self.syn_due = true;
                self.syn_retransmitted = true;
            }
            State::Closed | State::TimeWait => {}
            _ => {
                if self.board.is_empty() {
                    return;
                }
                self.stats.rto_count += 1;
                let in_flight = self.in_flight();
                if self.backoff == 0 {
                    self.cc_state.acked_last_interval = self.cc_state.acked_since_loss;
                    self.cc_state.acked_since_loss = 0;
                    self.cc.on_rto(&mut self.cc_state, now, in_flight);
                } else {
                    // A repeated timeout: the window is already one
                    // segment; ssthresh keeps what the first one set (as
                    // Linux's tcp_enter_loss does).
                    self.cc_state.cwnd = self.cc_state.mss;
                }
                self.board.mark_all_lost();
                self.recovery = Recovery::Loss { recover: self.snd_nxt };
                self.dupacks = 0;
                self.dup_credit = 0;
                self.backoff += 1;
                // Give up after `user_timeout` without progress (Linux's
                // tcp_retries2 = 15 comes to about 15 minutes).
                let since = *self.stalled_since.get_or_insert(now);
                if now - since > self.cfg.user_timeout {
                    self.state = State::Closed;
                    self.reset = true;
                    return;
                }
                self.timers.rto = Some(self.timer_after_rto(now, self.backoff));
            }
        }
    }
}
