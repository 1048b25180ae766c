//! Address and connection signalling: ADD_ADDR (and its echo),
//! REMOVE_ADDR, MP_PRIO, MP_FASTCLOSE and MP_TCPRST, and the path
//! manager's actions.

use core::time::Duration;
use std::net::SocketAddr;

use mplab_wire::crypto::{self, KeyMaterial};
use mplab_wire::{AddAddr, AddrIdList, MptcpOption, TcpHeader, TcpOptions};

use super::{Announce, Connection, Event, LocalAddr, PmAction, PmView, RemoteAddr, Transmit};
use crate::time::Instant;

/// Times an ADD_ADDR goes out without its echo before it is given up.
const ANNOUNCE_TRIES: u32 = 8;

impl Connection {
    /// Our addresses the path manager may use (not withdrawn).
    pub(super) fn live_locals(&self) -> Vec<LocalAddr> {
        self.cfg.locals.iter().filter(|l| !self.withdrawn.contains(&l.id)).copied().collect()
    }

    pub(super) fn on_add_addr(&mut self, a: AddAddr) {
        self.changed_all();
        if a.echo {
            self.signals.announces.retain(|x| x.id != a.addr_id);
            return;
        }
        let Some(rk) = self.remote else { return };
        // The HMAC proves the sender holds the keys (RFC 8684 3.4.1).
        let ok = a.hmac.is_some_and(|got| crypto::mac_eq(&got.to_be_bytes(), &crypto::add_addr_hmac(rk.key, self.local.key, a.addr_id, a.addr, a.port).to_be_bytes()));
        if !ok {
            return;
        }
        self.stats.add_addr_received += 1;
        self.signals.echoes.push_back((a.addr_id, a.addr, a.port));
        if let Some(s) = self.subflows.iter_mut().find(|s| s.usable()) {
            s.tcp.ack_now();
        }
        let port = a.port.unwrap_or_else(|| self.remotes.first().map_or(0, |r| r.addr.port()));
        let r = RemoteAddr { id: a.addr_id, addr: SocketAddr::new(a.addr, port) };
        if self.remotes.iter().any(|x| x.addr == r.addr) || self.add_addr_accepted >= self.cfg.limits.add_addr_accepted {
            return;
        }
        self.add_addr_accepted += 1;
        self.remotes.push(r);
        self.events.push_back(Event::AddressAnnounced(r));
        let mut out = Vec::new();
        let tuples: Vec<_> = self.subflows.iter().filter(|s| !s.is_closed()).map(|s| (s.local, s.remote)).collect();
        let remotes = self.join_remotes();
        let locals = self.live_locals();
        let v = PmView { client: self.client, locals: &locals, remotes: &remotes, subflows: &tuples, limits: self.cfg.limits, id_order: self.cfg.pm_id_order, closing: !self.may_add_subflows() };
        self.pm.on_add_addr(&v, r, &mut out);
        self.apply(out);
    }

    /// The peer addresses joins may go to: all but the initial one when the
    /// peer set the C flag.
    pub(super) fn join_remotes(&self) -> Vec<RemoteAddr> {
        self.remotes.iter().filter(|r| !(self.peer_denies_initial && r.id == 0)).copied().collect()
    }

    pub(super) fn on_remove_addr(&mut self, ids: &[u8]) {
        self.changed_all();
        // Id 0 is the address the connection started from: its subflow
        // ends too (Linux's rm_addr walks every subflow by remote id),
        // or, on a path that died with the address, it would linger on
        // its RTO backoff and hold the slot a new subflow needs.
        for s in self.subflows.iter_mut().filter(|s| ids.contains(&s.remote_id)) {
            s.tcp.abort();
        }
        // A removed address no longer counts against the ADD_ADDR limit
        // (as Linux's `add_addr_accepted`): announced again, it is taken.
        let before = self.remotes.len();
        self.remotes.retain(|r| r.id == 0 || !ids.contains(&r.id));
        self.add_addr_accepted = self.add_addr_accepted.saturating_sub((before - self.remotes.len()) as u32);
    }

    pub(super) fn on_fastclose(&mut self) {
        self.changed_all();
        self.reset = true;
        for s in &mut self.subflows {
            s.tcp.abort();
        }
        self.events.push_back(Event::Reset);
    }

    pub(super) fn apply(&mut self, actions: Vec<PmAction>) {
        for a in actions {
            match a {
                PmAction::Open { local, remote, backup } => self.open_subflow(local, remote, backup),
                PmAction::Announce { id, addr } => {
                    self.signals.announces.push(Announce { id, addr, next_at: Instant::ZERO, tries: 0 });
                }
                PmAction::Prio { local, backup } => {
                    let from: Vec<usize> = self.subflows.iter().enumerate().filter(|(_, s)| s.local.ip() == local && s.backup != backup).map(|(i, _)| i).collect();
                    for i in from {
                        self.set_backup(i, backup);
                    }
                }
            }
        }
    }

    /// The ADD_ADDRs still to be sent or sent again: none once the
    /// connection fell back (no option goes out then) and none that was
    /// tried [`ANNOUNCE_TRIES`] times. One left due for ever would ask for
    /// a pure ACK at every transmit and a timer at every instant.
    pub(super) fn announces_pending(&self) -> impl Iterator<Item = &Announce> {
        let live = self.fb.reason.is_none();
        self.signals.announces.iter().filter(move |a| live && a.tries < ANNOUNCE_TRIES)
    }

    /// Pure ACKs that must go out to carry options (DATA_FIN, ADD_ADDR,
    /// echoes, REMOVE_ADDR).
    pub(super) fn queue_control(&mut self, now: Instant) {
        let fin_due = self.fb.reason.is_none() && self.fin_queued && self.sched_nxt >= self.app_end && self.data_una <= self.app_end && self.timers.fin_resend.is_none();
        // After a fallback no option goes out: nothing to carry.
        if self.fb.reason.is_some() {
            return;
        }
        let ann_due = self.announces_pending().any(|a| a.next_at <= now);
        if fin_due || ann_due || !self.signals.echoes.is_empty() || !self.signals.remove_pending.is_empty() {
            // The initiator's first subflow repeats MP_CAPABLE on its pure
            // ACKs until the peer confirms it: those carry no address
            // signal (only a DATA_FIN once the keys went), and asking for
            // one would ask again at every poll, without end.
            let carries = |s: &super::Subflow| s.usable() && (fin_due || !(self.client && s.handshake == super::Handshake::ThirdAck));
            let Some(carrier) = self.subflows.iter().position(carries) else { return };
            self.subflows[carrier].tcp.ack_now();
            self.touch(carrier);
        }
    }

    pub(super) fn emit_fastclose(&mut self, now: Instant) {
        // Without the peer's key (a Fast Open server refusing what its SYN
        // brought) the subflows end with plain RSTs.
        let rk = self.remote;
        if rk.is_none() && !self.subflows.iter().any(|s| s.tcp.syn_data_received() > 0) {
            return;
        }
        self.changed_all();
        let cap = self.win_cap;
        for i in 0..self.subflows.len() {
            let s = &mut self.subflows[i];
            if s.is_closed() {
                continue;
            }
            s.tcp.set_window_cap(cap);
            s.tcp.abort();
            if let Some(mut t) = s.tcp.poll_transmit(now) {
                t.header.options = TcpOptions::new();
                if let Some(rk) = rk {
                    let _ = t.header.options.push_mptcp(MptcpOption::MpFastclose { receiver_key: rk.key });
                }
                self.out.push_back(Transmit { local: s.local, remote: s.remote, header: t.header, data: 0..0 });
            }
        }
        self.reset = true;
    }

    /// ADD_ADDR, echoes, MP_PRIO and REMOVE_ADDR ride on pure ACKs, each
    /// only if it fits (SACK blocks give way); what does not fit waits.
    pub(super) fn add_signalling(&mut self, now: Instant, i: usize, h: &mut TcpHeader, rk: KeyMaterial) {
        if self.subflows[i].prio_pending && try_push(h, MptcpOption::MpPrio { backup: self.subflows[i].backup, addr_id: None }) {
            self.subflows[i].prio_pending = false;
        }
        if let Some(&(id, addr, port)) = self.signals.echoes.front() {
            if try_push(h, MptcpOption::AddAddr(AddAddr { echo: true, addr_id: id, addr, port, hmac: None })) {
                self.signals.echoes.pop_front();
            }
        } else if let Some(a) = self.signals.announces.iter_mut().find(|a| a.next_at <= now && a.tries < ANNOUNCE_TRIES) {
            let hmac = crypto::add_addr_hmac(self.local.key, rk.key, a.id, a.addr, None);
            if try_push(h, MptcpOption::AddAddr(AddAddr { echo: false, addr_id: a.id, addr: a.addr, port: None, hmac: Some(hmac) })) {
                a.tries += 1;
                // Resent until echoed (RFC 8684 3.4.1), backing off.
                a.next_at = now + Duration::from_secs(1) * (1 << a.tries.min(6));
                self.stats.add_addr_sent += 1;
            }
        }
        if !self.signals.remove_pending.is_empty() {
            if let Some(ids) = AddrIdList::from_slice(&self.signals.remove_pending) {
                if try_push(h, MptcpOption::RemoveAddr(ids)) {
                    self.signals.remove_pending.clear();
                }
            }
        }
    }
}

/// Adds `o` if the options still fit in 40 bytes, dropping SACK blocks
/// to make room if needed.
fn try_push(h: &mut TcpHeader, o: MptcpOption) -> bool {
    let mut trial = h.options;
    if trial.push_mptcp(o).is_err() {
        return false;
    }
    let mut sack: Vec<_> = trial.sack().to_vec();
    loop {
        if trial.wire_len().is_ok_and(|l| l <= 40) {
            h.options = trial;
            return true;
        }
        if sack.pop().is_none() {
            return false;
        }
        trial.set_sack(&sack);
    }
}
