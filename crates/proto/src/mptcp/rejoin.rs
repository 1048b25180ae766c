//! Subflows that come back: a subflow that was reset (an on-path RST, a
//! middlebox, a failed checksum) or timed out is opened again from the
//! same local address to the same peer address after a backoff, while
//! both addresses are in service and the limits allow. Linux 6.18 never
//! re-creates a subflow (its path manager acts only on events: the
//! connection established, an address announced or added), so after one
//! reset the connection runs on fewer paths until it ends; users of the
//! kernel ask for this (multipath-tcp/mptcp_net-next #497, #440, #235).
//!
//! A subflow the peer reset without telling us (an on-path RST that
//! reached only the sender of a download) stays established here and
//! silent: the receiving client looks every `first` period for subflows
//! that heard nothing while data arrived on others, and sends a pure ACK
//! on each; the peer answers a subflow it closed with a RST, and the
//! subflow goes down and is opened again.
//!
//! The backoff starts at [`RejoinBackoff::first`] and doubles on every
//! attempt that does not hold, up to [`RejoinBackoff::max`]; an attempt
//! that stays established for at least its backoff resets it. A join the
//! peer refuses (a RST to the MP_JOIN SYN) is an attempt that did not
//! hold: the effort on a peer that never accepts is one SYN per `max`.

use core::time::Duration;
use std::net::{IpAddr, SocketAddr};

use super::{Alone, Connection, RemoteAddr};
use crate::time::Instant;

/// When re-creation runs: the first wait and the longest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RejoinBackoff {
    pub first: Duration,
    pub max: Duration,
}

impl Default for RejoinBackoff {
    fn default() -> Self {
        RejoinBackoff { first: Duration::from_secs(1), max: Duration::from_secs(30) }
    }
}

/// One (local address, peer address) pair whose subflow went down.
#[derive(Debug, Clone)]
pub(super) struct Rejoin {
    local: IpAddr,
    remote: RemoteAddr,
    backup: bool,
    /// When the next attempt goes (None while an attempt is open).
    due: Option<Instant>,
    backoff: Duration,
    /// The subflow of the open attempt, and when it was fully established.
    sub: Option<usize>,
    up_at: Option<Instant>,
}

impl Connection {
    /// Subflow `idx` has just closed: if it was reset or timed out while
    /// the connection goes on, plan its re-creation (or the next attempt).
    pub(super) fn plan_rejoin(&mut self, now: Instant, idx: usize) {
        let Some(b) = self.cfg.rejoin else { return };
        let s = &self.subflows[idx];
        // Reset by the peer or a box, timed out, or reset by us for what a
        // middlebox did to it (MP_TCPRST); a subflow closed cleanly, or
        // one we no longer needed, stays closed.
        let failed = s.tcp.was_reset() || s.reset_reason.is_some();
        if !self.client || self.closing || self.reset || self.fb.reason.is_some() || !failed {
            return;
        }
        let (local, remote_addr, backup) = (s.local.ip(), s.remote, s.backup);
        let Some(remote) = self.remotes.iter().find(|r| r.addr == remote_addr).copied().or_else(|| (s.remote_id == 0).then_some(RemoteAddr { id: 0, addr: remote_addr })) else { return };
        match self.rejoins.iter_mut().find(|r| r.local == local && r.remote.addr == remote.addr) {
            Some(r) => {
                let held = r.up_at.is_some_and(|u| now.saturating_since(u) >= r.backoff);
                r.backoff = if held { b.first } else { (r.backoff * 2).min(b.max) };
                r.due = Some(now + r.backoff);
                r.sub = None;
                r.up_at = None;
            }
            None => self.rejoins.push(Rejoin { local, remote, backup, due: Some(now + b.first), backoff: b.first, sub: None, up_at: None }),
        }
    }

    /// Every subflow is closed while the connection runs: with re-creation
    /// it goes on without one for `rejoin.max` (break before make), as
    /// long as this end (a client) plans to open one again or the peer (a
    /// server) may; after that, or without re-creation, it is reset. A
    /// subflow fully established again ends the wait.
    pub(super) fn may_wait_for_a_subflow(&mut self, now: Instant) -> bool {
        let Some(b) = self.cfg.rejoin else { return false };
        if !self.established || self.closing || self.fb.reason.is_some() {
            return false;
        }
        if self.client && !self.rejoins.iter().any(|r| r.due.is_some() || r.sub.is_some()) {
            return false;
        }
        match self.timers.alone {
            Alone::No => {
                self.timers.alone = Alone::Until(now + b.max);
                true
            }
            Alone::Until(t) if now < t => true,
            _ => {
                self.timers.alone = Alone::Over;
                false
            }
        }
    }

    /// Our address `local` changed its backup flag: its re-creations carry
    /// the new one.
    pub(super) fn set_rejoin_backup(&mut self, local: IpAddr, backup: bool) {
        for r in self.rejoins.iter_mut().filter(|r| r.local == local) {
            r.backup = backup;
        }
    }

    /// Subflow `idx` is fully established: if it is a re-creation, note
    /// when (an attempt that holds resets the backoff).
    pub(super) fn rejoin_established(&mut self, now: Instant, idx: usize) {
        if let Some(r) = self.rejoins.iter_mut().find(|r| r.sub == Some(idx)) {
            r.up_at = Some(now);
        }
    }

    /// The next re-creation attempt, or the next idle-subflow probe.
    pub(super) fn rejoin_deadline(&self) -> Option<Instant> {
        self.rejoins.iter().filter_map(|r| r.due).chain(self.idle_probe.map(|p| p.0)).min()
    }

    /// Arms the idle-subflow probe while a client with re-creation has
    /// several subflows and the connection runs.
    pub(super) fn arm_idle_probe(&mut self, now: Instant) {
        let Some(b) = self.cfg.rejoin else { return };
        let runs = self.client && self.established && !self.closing && !self.reset && self.fb.reason.is_none() && self.subflows.len() > 1;
        if !runs {
            self.idle_probe = None;
        } else if self.idle_probe.is_none() {
            self.idle_probe = Some((now + b.first, self.rcv.nxt()));
        }
    }

    /// The probe's deadline came: a pure ACK on every established subflow
    /// that received nothing since the last look while the connection
    /// received data.
    fn probe_idle_subflows(&mut self, now: Instant) {
        let Some((at, rcvd)) = self.idle_probe else { return };
        if at > now {
            return;
        }
        let data_came = self.rcv.nxt() > rcvd;
        for s in self.subflows.iter_mut().filter(|s| !s.is_closed() && s.tcp.is_established()) {
            let heard = s.tcp.segments_received();
            if data_came && heard == s.probe_rx {
                s.tcp.ack_now();
                self.stats.idle_probes += 1;
            }
            s.probe_rx = heard;
        }
        self.changed_all();
        self.idle_probe = None;
    }

    /// Attempts due by `now`: opened if both addresses are in service,
    /// no subflow already joins them and the limits leave room; dropped
    /// once an address is gone; else tried again after the backoff.
    pub(super) fn run_rejoins(&mut self, now: Instant) {
        self.probe_idle_subflows(now);
        if self.closing || self.reset || self.fb.reason.is_some() || !self.may_add_subflows() {
            self.rejoins.clear();
            return;
        }
        let locals = self.live_locals();
        let remotes = self.join_remotes();
        let open: Vec<(SocketAddr, SocketAddr)> = self.subflows.iter().filter(|s| !s.is_closed()).map(|s| (s.local, s.remote)).collect();
        let mut extra = open.len().saturating_sub(1) as u32;
        let limit = self.cfg.limits.subflows;
        let mut opens = Vec::new();
        self.rejoins.retain_mut(|r| {
            if r.due.is_none_or(|d| d > now) {
                return true;
            }
            if !locals.iter().any(|l| l.addr == r.local) || !remotes.iter().any(|x| x.addr == r.remote.addr) {
                return false;
            }
            if open.iter().any(|(l, x)| l.ip() == r.local && *x == r.remote.addr) {
                // Something else (the path manager) joined them already.
                return false;
            }
            if extra >= limit {
                r.due = Some(now + r.backoff);
                return true;
            }
            extra += 1;
            r.due = None;
            opens.push((r.local, r.remote, r.backup));
            true
        });
        for (local, remote, backup) in opens {
            self.open_subflow(local, remote, backup);
            let idx = self.subflows.len() - 1;
            self.stats.subflows_recreated += 1;
            if let Some(r) = self.rejoins.iter_mut().find(|r| r.local == local && r.remote.addr == remote.addr) {
                r.sub = Some(idx);
            }
        }
    }
}
