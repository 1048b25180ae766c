//! The connection's state after each input or timeout: establishment,
//! stale and closed subflows (their data reinjected), the path manager's
//! start, reset, closing, and the shared receive window.

use core::ops::Range;
use core::time::Duration;

use super::{sndbuf, Alone, Connection, Event, Handshake, Origin, PmView};
use crate::tcp;
use crate::time::Instant;

impl Connection {
    /// Bookkeeping after any input: establishment, stale subflows, closed
    /// subflows, path manager.
    pub(super) fn after_input(&mut self, now: Instant) {
        let rtt = self.autotune_rtt();
        if let Some(a) = &mut self.autotune {
            a.on_read(now, self.read_off, rtt, self.cfg.rcv_buf);
        }
        self.update_subflows(now);
        self.arm_data_rto(now);
        self.arm_idle_probe(now);
    }

    /// The round trip receive-buffer autotuning measures over: the slowest
    /// subflow's receiver-side estimate, so the window covers data still on
    /// its way over the longest path. As Linux's `mptcp_rcv_space_adjust`,
    /// a subflow without a receiver sample (one that carried no data yet,
    /// however long its handshake took) does not count, and with none the
    /// window does not grow.
    pub(super) fn autotune_rtt(&self) -> Option<Duration> {
        self.subflows.iter().filter(|s| s.usable()).filter_map(|s| s.tcp.rcv_rtt()).max()
    }

    /// Queues everything subflow `idx` sent and has not had acknowledged
    /// for reinjection on the others.
    pub(super) fn reinject_sent_on(&mut self, idx: usize) {
        let ranges: Vec<Range<u64>> = self.subflows[idx].tx.iter().map(|m| m.data..m.data + m.len).collect();
        for r in ranges {
            self.push_reinject(r);
        }
    }

    pub(super) fn update_subflows(&mut self, now: Instant) {
        let mut newly_established = false;
        let mut k = 0;
        while let Some(idx) = self.changed_at(k) {
            k += 1;
            let s = &mut self.subflows[idx];
            if !s.announced_up && s.handshake == Handshake::Established && s.tcp.is_established() {
                s.announced_up = true;
                self.events.push_back(Event::SubflowEstablished { index: idx });
                if s.origin == Origin::Initial && !self.established {
                    newly_established = true;
                }
                if !self.rejoins.is_empty() {
                    self.rejoin_established(now, idx);
                }
                self.timers.alone = Alone::No;
            }
            let s = &mut self.subflows[idx];
            if self.cfg.snd_autotune && s.tcp.is_established() {
                // The buffer an established subflow starts from
                // (`tcp_init_buffer_space`): its initial window's worth.
                s.sndbuf = sndbuf::subflow_sndbuf(s.sndbuf, 0, self.cfg.snd_buf);
            }
            // Stale after `stale_after` timeouts in a row: its data goes
            // elsewhere. (Linux's rule runs with the connection-level
            // timer, `count_stale_periods`; anything received ends it.)
            let stale = if self.cfg.stale_by_periods {
                s.stale && s.tcp.segments_received() == s.stale_rx
            } else {
                s.tcp.backoff() >= self.cfg.stale_after
            };
            if self.cfg.stale_by_periods && s.stale && !stale {
                s.stale_count = 0;
            }
            if stale && !s.stale {
                s.stale = true;
                self.reinject_sent_on(idx);
            } else if !stale && self.subflows[idx].stale {
                self.subflows[idx].stale = false;
            }
            // The peer closed this subflow alone (a FIN without a DATA_FIN)
            // while the connection goes on: it carries nothing more either
            // way, so it is closed now and its data goes elsewhere, as in
            // Linux's `__mptcp_close_subflow`. Left half-open it would hold
            // its unacknowledged data until the connection ends.
            let s = &mut self.subflows[idx];
            if self.fb.reason.is_none() && self.rcv_fin.is_none() && !self.fin_received && s.tcp.state() == tcp::State::CloseWait {
                s.tcp.close();
                self.reinject_sent_on(idx);
            }
            let s = &mut self.subflows[idx];
            if s.is_closed() && !s.announced_down {
                s.announced_down = true;
                self.events.push_back(Event::SubflowClosed { index: idx });
                self.reinject_sent_on(idx);
                self.plan_rejoin(now, idx);
            }
        }
        let _ = newly_established;
        if self.fb.reason.is_none() && !self.established && self.remote.is_some() && self.subflows.first().is_some_and(|s| s.usable()) {
            self.established = true;
            self.events.push_back(Event::Established);
        }
        // More subflows only once the peer has shown it holds our keys (the
        // first subflow is fully established), and not while closing, nor
        // once that first subflow is gone: a connection whose only subflow
        // was reset before any join is over, as a TCP connection would be
        // (it once went on opening joins while its application had been
        // told of the reset, and stalled with the send buffer full).
        if self.established && !self.pm_started && !self.closing && !self.reset && self.subflows.first().is_some_and(|s| s.handshake == Handshake::Established && !s.is_closed()) {
            self.pm_started = true;
            let mut out = Vec::new();
            let tuples: Vec<_> = self.subflows.iter().map(|s| (s.local, s.remote)).collect();
            let remotes = self.join_remotes();
            let locals = self.live_locals();
        let v = PmView { client: self.client, locals: &locals, remotes: &remotes, subflows: &tuples, limits: self.cfg.limits, id_order: self.cfg.pm_id_order, closing: !self.may_add_subflows() };
            self.pm.on_established(&v, &mut out);
            self.apply(out);
        }
        if !self.reset && !self.subflows.is_empty() && self.subflows.iter().all(|s| s.is_closed()) && !self.all_done() && !self.may_wait_for_a_subflow(now) {
            self.reset = true;
            self.events.push_back(Event::Reset);
        }
        if self.all_done() && !self.closing {
            // Both DATA_FINs are acknowledged: the subflows end with FINs.
            self.closing = true;
            self.changed_all();
            for s in &mut self.subflows {
                if s.tcp.is_established() {
                    s.tcp.close();
                } else {
                    s.tcp.abort(); // a join still opening is not needed any more
                }
            }
        }
        let cap = self.rcv_window();
        if self.win_cap.is_some_and(|old| cap > old) {
            // A larger cap opens every subflow's window: those that last
            // advertised a small one may owe the peer a window update.
            for j in 0..self.changes.may_owe_update.len() {
                if self.changes.may_owe_update[j] {
                    self.changed(j);
                }
            }
        }
        self.win_cap = Some(cap);
        // (Path-manager actions above may have added subflows: then all.)
        let mut k = 0;
        while let Some(idx) = self.changed_at(k) {
            k += 1;
            self.subflows[idx].prune_tx();
        }
    }

    pub(super) fn push_reinject(&mut self, r: Range<u64>) {
        let r = r.start.max(self.data_una)..r.end;
        if r.is_empty() {
            return;
        }
        self.stats.reinjected_bytes += r.end - r.start;
        self.reinject.push_back(r);
    }

    pub(super) fn all_done(&self) -> bool {
        self.fin_received && self.fin_queued && self.data_una > self.app_end
    }
}
