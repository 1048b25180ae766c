//! The application's side of the connection: writing into the send
//! buffer, reading what arrived in order, closing, aborting, and the
//! calls that change subflows or addresses (MP_PRIO, REMOVE_ADDR).

use core::ops::Range;
use std::net::IpAddr;

use super::{sndbuf, Connection, PmView, Scheduler};

impl Connection {
    pub fn send_space(&self) -> u64 {
        if self.fin_queued || self.reset {
            return 0;
        }
        let held = self.app_end - self.data_una;
        let free = self.snd_buf().saturating_sub(held);
        if self.cfg.write_wakeup_third && self.writer_waits && free < held / 2 {
            return 0;
        }
        free
    }

    /// The most data written and not yet DATA_ACKed the connection holds.
    /// Stream offset below which every byte was DATA_ACKed: nothing asks a
    /// payload source for those bytes again.
    pub fn acked_offset(&self) -> u64 {
        self.data_una
    }

    /// Bytes the application wrote that the peer has not DATA_ACKed: what
    /// the send buffer holds (Linux: `write_seq - snd_una`, SIOCOUTQ).
    pub fn send_queued(&self) -> u64 {
        // Once the DATA_FIN is DATA_ACKed, data_una is one past app_end:
        // the DATA_FIN takes a sequence number but holds no byte.
        self.app_end.saturating_sub(self.data_una)
    }

    /// The connection's send buffer: `snd_buf`, or under send-buffer
    /// autotuning `tcp_wmem[0]` plus the subflows' buffers (`sndbuf.rs`).
    pub fn snd_buf(&self) -> u64 {
        if !self.cfg.snd_autotune {
            return self.cfg.snd_buf;
        }
        sndbuf::connection_sndbuf(self.subflows.iter().filter(|s| !s.is_closed()).map(|s| s.sndbuf))
    }

    pub fn send(&mut self, n: u64) -> u64 {
        // The subflows' cached timeouts stay valid: writing (or reading)
        // at the data level changes no subflow until the next pass.
        let space = self.send_space();
        if space > 0 {
            self.writer_waits = false;
        }
        let n = n.min(space);
        self.app_end += n;
        if n > 0 && n == space {
            // The buffer is full: a writer with more sleeps until there is
            // room (a third of the buffer, with `write_wakeup_third`).
            self.writer_waits = true;
        }
        n
    }

    pub fn readable(&self) -> u64 {
        self.rcv.nxt() - self.read_off
    }

    pub fn recv(&mut self, max: u64) -> Range<u64> {
        let n = max.min(self.readable());
        let r = self.read_off..self.read_off + n;
        self.read_off += n;
        r
    }

    /// The peer sent DATA_FIN and everything before it was read.
    pub fn peer_closed(&self) -> bool {
        self.fin_received && self.read_off == self.rcv.nxt()
    }

    /// DATA_FIN after the queued data.
    pub fn close(&mut self) {
        self.changed_all();
        self.fin_queued = true;
    }

    /// MP_FASTCLOSE: abort at once, on every subflow.
    pub fn abort(&mut self) {
        self.changed_all();
        self.fastclose_pending = true;
    }

    /// Replaces the packet scheduler (a user's own [`Scheduler`]; the
    /// built-in ones are chosen by name in [`MptcpConfig::scheduler`]).
    pub fn set_scheduler(&mut self, s: Box<dyn Scheduler>) {
        self.changed_all();
        self.scheduler = s;
    }

    /// The packet scheduler's name.
    pub fn scheduler_name(&self) -> &'static str {
        self.scheduler.name()
    }

    /// Asks the peer to use subflow `index` only as a backup (MP_PRIO).
    pub fn set_backup(&mut self, index: usize, backup: bool) {
        self.changed_all();
        if let Some(s) = self.subflows.get_mut(index) {
            s.backup = backup;
            s.prio_pending = true;
            s.tcp.ack_now();
        }
    }

    /// Withdraws one of our addresses: REMOVE_ADDR, its subflows end, and
    /// no subflow uses it again until [`add_local`](Self::add_local).
    pub fn remove_local(&mut self, id: u8) {
        self.changed_all();
        // A connection that is over has no one to tell.
        if !self.signals.remove_pending.contains(&id) && !self.closing {
            self.signals.remove_pending.push(id);
        }
        if !self.withdrawn.contains(&id) {
            self.withdrawn.push(id);
        }
        self.signals.announces.retain(|a| a.id != id);
        for s in self.subflows.iter_mut().filter(|s| s.local_id == id) {
            s.tcp.abort();
        }
    }

    /// Puts a withdrawn address of ours (one of `locals`) back in service:
    /// the path manager announces it or opens subflows from it, as it would
    /// have at establishment (Linux: `ip mptcp endpoint add` again).
    pub fn add_local(&mut self, id: u8) {
        self.changed_all();
        self.withdrawn.retain(|&x| x != id);
        // A REMOVE_ADDR not sent yet would now only confuse the peer.
        self.signals.remove_pending.retain(|&x| x != id);
        let Some(l) = self.cfg.locals.iter().find(|l| l.id == id).copied() else { return };
        if !self.pm_started || self.closing || self.reset || self.fb.reason.is_some() {
            return;
        }
        let mut out = Vec::new();
        let tuples: Vec<_> = self.subflows.iter().filter(|s| !s.is_closed()).map(|s| (s.local, s.remote)).collect();
        let remotes = self.join_remotes();
        let locals = self.live_locals();
        let v = PmView { client: self.client, locals: &locals, remotes: &remotes, subflows: &tuples, limits: self.cfg.limits, id_order: self.cfg.pm_id_order, closing: !self.may_add_subflows() };
        self.pm.on_local_added(&v, l, &mut out);
        self.apply(out);
    }

    /// Marks our address `id` backup or not, as `ip mptcp endpoint change
    /// id N backup|nobackup` does: MP_PRIO on each of its open subflows,
    /// and the flag on the subflows opened from it later.
    pub fn set_local_backup(&mut self, id: u8, backup: bool) {
        self.changed_all();
        let Some(l) = self.cfg.locals.iter_mut().find(|l| l.id == id) else { return };
        l.backup = backup;
        let ip = l.addr;
        self.set_rejoin_backup(ip, backup);
        let from: Vec<usize> = self.subflows.iter().enumerate().filter(|(_, s)| s.local_id == id && !s.is_closed() && s.backup != backup).map(|(i, _)| i).collect();
        for i in from {
            self.set_backup(i, backup);
        }
    }

    /// The id of our address `ip`, if it is one of `locals`.
    pub fn local_addr_id(&self, ip: IpAddr) -> Option<u8> {
        self.cfg.locals.iter().find(|l| l.addr == ip).map(|l| l.id)
    }
}
