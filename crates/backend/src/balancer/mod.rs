//! A layer-4 load balancer in front of backends that share a virtual
//! address (VIP), with the designs seed 003 and today's operators weigh
//! (see [`Mode`]). Sans-IO like the stack: a segment's addresses, ports,
//! flags and MPTCP option in, the backend it goes to out. The simulator
//! runs it as a middlebox that picks the next hop; the kernel backend runs
//! it behind NFQUEUE with one fwmark per backend.
//!
//! What it keeps is bounded ([`table::BoundedTable`]): connections and
//! tokens expire when idle and the oldest unused go first when a table is
//! full; every such event, every join and its fate is counted
//! ([`BalancerStats`]).

pub mod maglev;
pub mod mptcp_option;
pub mod table;

use std::net::Ipv4Addr;

use mplab_wire::crypto;
use serde::{Deserialize, Serialize};

pub use mptcp_option::MptcpSeen;
use maglev::Maglev;
use table::{BoundedTable, TableCounters};

/// splitmix64's finaliser over a running value and one more word: the one
/// hash of the balancer (the same on every instance, seeded by the
/// scenario).
pub(crate) fn mix(h: u64, v: u64) -> u64 {
    let mut z = h ^ v.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub use mplab_scenario::network::BalancerMode as Mode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BalancerConfig {
    pub mode: Mode,
    pub backends: usize,
    /// Connection-table entries at most.
    pub conn_capacity: usize,
    /// Token-table entries at most (token mode).
    pub token_capacity: usize,
    /// An entry not used for this long expires.
    pub idle_ns: u64,
    /// The hash seed: instances with the same seed agree.
    pub seed: u64,
}

impl BalancerConfig {
    /// Defaults of the size production balancers use per core (Katran's
    /// LRU is of this order), expiring after 5 minutes idle.
    pub fn new(mode: Mode, backends: usize) -> Self {
        BalancerConfig { mode, backends, conn_capacity: 1 << 20, token_capacity: 1 << 20, idle_ns: 300_000_000_000, seed: 0x6d70_6c61_62 }
    }
}

/// A TCP segment as the balancer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub sport: u16,
    pub dport: u16,
}

impl FlowKey {
    fn hash(&self, seed: u64) -> u64 {
        let a = (u64::from(u32::from(self.src)) << 32) | u64::from(u32::from(self.dst));
        let p = (u64::from(self.sport) << 16) | u64::from(self.dport);
        mix(mix(seed, a), p)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub key: FlowKey,
    pub syn: bool,
    pub ack: bool,
    pub mptcp: MptcpSeen,
}

/// Where a segment goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Backend(usize),
    /// No backend is up.
    Drop,
}

/// What a balancer counted (the run's results).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalancerStats {
    /// Segments towards the VIP, and per backend.
    pub packets: u64,
    pub packets_to: Vec<u64>,
    /// Connection SYNs (not joins) per backend.
    pub connections_to: Vec<u64>,
    /// MP_JOIN SYNs seen; of them sent by token to the backend that owns
    /// the connection; with a token the table does not hold (sent by hash).
    pub joins: u64,
    pub joins_by_token: u64,
    pub joins_unknown_token: u64,
    /// Tokens learned, and learned again for another backend (two
    /// connections on two backends drew the same token: the first keeps
    /// it, joins of the second go to the first's backend and are reset).
    pub tokens_learned: u64,
    pub token_collisions: u64,
    /// Segments of a connection the table did not hold (evicted, expired,
    /// or its SYN went through another instance): sent by hash.
    pub conn_misses: u64,
    /// Connections whose backend went down: sent by hash to a live one.
    pub rerouted: u64,
    /// MPTCP options that do not parse (sent by the 5-tuple like others).
    pub malformed_options: u64,
    /// Dropped: no backend up.
    pub dropped: u64,
    pub conn_table: TableCountersOut,
    pub token_table: TableCountersOut,
}

/// [`TableCounters`] plus the size at the end, for the results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableCountersOut {
    pub size: u64,
    pub peak: u64,
    pub inserted: u64,
    pub expired: u64,
    pub evicted: u64,
}

impl TableCountersOut {
    fn from(c: TableCounters, size: usize) -> Self {
        TableCountersOut { size: size as u64, peak: c.peak, inserted: c.inserted, expired: c.expired, evicted: c.evicted }
    }
}

#[derive(Debug, Clone)]
pub struct Balancer {
    cfg: BalancerConfig,
    up: Vec<bool>,
    live: Vec<usize>,
    maglev: Maglev,
    conns: BoundedTable<FlowKey, u16>,
    tokens: BoundedTable<u32, u16>,
    stats: BalancerStats,
}

impl Balancer {
    pub fn new(cfg: BalancerConfig) -> Balancer {
        let up = vec![true; cfg.backends];
        let maglev = Maglev::new(&up, cfg.seed, maglev::TABLE_SIZE);
        let stats = BalancerStats { packets_to: vec![0; cfg.backends], connections_to: vec![0; cfg.backends], ..Default::default() };
        Balancer {
            live: (0..cfg.backends).collect(),
            up,
            maglev,
            conns: BoundedTable::new(cfg.conn_capacity, cfg.idle_ns),
            tokens: BoundedTable::new(cfg.token_capacity, cfg.idle_ns),
            stats,
            cfg,
        }
    }

    pub fn mode(&self) -> Mode {
        self.cfg.mode
    }

    /// Takes backend `i` in or out of service (a health check's verdict).
    pub fn set_up(&mut self, i: usize, up: bool) {
        if i >= self.up.len() || self.up[i] == up {
            return;
        }
        self.up[i] = up;
        self.live = (0..self.up.len()).filter(|&b| self.up[b]).collect();
        self.maglev = Maglev::new(&self.up, self.cfg.seed, maglev::TABLE_SIZE);
    }

    fn by_hash(&self, seg: &Segment) -> Option<usize> {
        match self.cfg.mode {
            Mode::IpHash => {
                if self.live.is_empty() {
                    return None;
                }
                let h = mix(self.cfg.seed, (u64::from(u32::from(seg.key.src)) << 32) | u64::from(u32::from(seg.key.dst)));
                Some(self.live[(h % self.live.len() as u64) as usize])
            }
            _ => self.maglev.lookup(seg.key.hash(self.cfg.seed)),
        }
    }

    /// A segment from a client to the VIP: the backend it goes to.
    pub fn forward(&mut self, now: u64, seg: &Segment) -> Verdict {
        self.stats.packets += 1;
        let opening = seg.syn && !seg.ack;
        if seg.mptcp == MptcpSeen::Malformed {
            self.stats.malformed_options += 1;
        }
        let join_token = match seg.mptcp {
            MptcpSeen::JoinSyn { token } if opening => Some(token),
            _ => None,
        };
        if join_token.is_some() {
            self.stats.joins += 1;
        }
        // iphash keeps no state: each SYN it sees counts (retransmitted
        // ones too).
        let (backend, new_entry) = if self.cfg.mode == Mode::IpHash { (self.by_hash(seg), opening) } else { self.stateful(now, seg, opening, join_token) };
        let Some(b) = backend else {
            self.stats.dropped += 1;
            return Verdict::Drop;
        };
        self.stats.packets_to[b] += 1;
        if new_entry && join_token.is_none() {
            self.stats.connections_to[b] += 1;
        }
        if self.cfg.mode == Mode::Token {
            if let MptcpSeen::Capable { receiver_key: Some(k), .. } = seg.mptcp {
                // The client's third ACK or first data: both keys.
                self.learn(now, crypto::token(k), b);
            }
        }
        Verdict::Backend(b)
    }

    /// The backend from the connection table, else chosen and recorded;
    /// and whether a SYN made a new entry (not a retransmission).
    fn stateful(&mut self, now: u64, seg: &Segment, opening: bool, join_token: Option<u32>) -> (Option<usize>, bool) {
        if let Some(b) = self.conns.get(now, &seg.key) {
            let b = usize::from(b);
            if self.up[b] {
                return (Some(b), false);
            }
            self.stats.rerouted += 1;
        } else if !opening {
            self.stats.conn_misses += 1;
        }
        let chosen = match join_token {
            Some(token) if self.cfg.mode == Mode::Token => match self.tokens.get(now, &token) {
                Some(b) if self.up[usize::from(b)] => {
                    self.stats.joins_by_token += 1;
                    Some(usize::from(b))
                }
                _ => {
                    self.stats.joins_unknown_token += 1;
                    self.by_hash(seg)
                }
            },
            _ => self.by_hash(seg),
        };
        let Some(chosen) = chosen else { return (None, false) };
        self.conns.insert(now, seg.key, chosen as u16);
        (Some(chosen), opening)
    }

    /// A segment from backend `backend` back to a client, when replies
    /// pass the balancer: the token mode learns the server's key from the
    /// MP_CAPABLE SYN/ACK.
    pub fn observe_reply(&mut self, now: u64, backend: usize, seg: &Segment) {
        if self.cfg.mode != Mode::Token || backend >= self.up.len() {
            return;
        }
        if let MptcpSeen::Capable { sender_key: Some(k), receiver_key: None } = seg.mptcp {
            if seg.syn && seg.ack {
                self.learn(now, crypto::token(k), backend);
            }
        }
    }

    fn learn(&mut self, now: u64, token: u32, backend: usize) {
        match self.tokens.get(now, &token) {
            Some(b) if usize::from(b) == backend => {}
            Some(_) => self.stats.token_collisions += 1,
            None => {
                self.tokens.insert(now, token, backend as u16);
                self.stats.tokens_learned += 1;
            }
        }
    }

    /// Expires idle entries (a bounded amount of work; call now and then).
    pub fn housekeeping(&mut self, now: u64) {
        self.conns.expire(now, 64);
        self.tokens.expire(now, 64);
    }

    pub fn stats(&self) -> BalancerStats {
        let mut s = self.stats.clone();
        s.conn_table = TableCountersOut::from(self.conns.counters, self.conns.len());
        s.token_table = TableCountersOut::from(self.tokens.counters, self.tokens.len());
        s
    }
}

#[cfg(test)]
mod tests;
