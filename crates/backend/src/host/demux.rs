//! Which connection an arriving TCP segment is for: the 4-tuple table of
//! the connections (and subflows) a host has, the listen table of its
//! ports that accept connections, and the MPTCP token table an MP_JOIN
//! SYN names its connection by (RFC 8684 3.2; a per-host table, as in
//! Linux). One decision per segment, [`arrival`]: a known connection,
//! a new one on a listener, a join by token, a reset, or nothing.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

use mplab_wire::{MpJoin, MptcpOption, TcpHeader};

/// What the host does with an arriving TCP segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival<H> {
    /// A segment of a connection the 4-tuple table knows.
    Connection(H),
    /// A SYN with MP_JOIN: the connection its token names (None: no
    /// connection has that token, and the join is refused). The caller
    /// asks the connection, then reports with [`join_decided`].
    Join { token: u32, conn: Option<H> },
    /// A SYN for no known 4-tuple: a new connection if a listener on its
    /// port takes it, else a reset.
    Open,
    /// Nobody wants it: answered with a RST ([`super::reset`]).
    Reset,
    /// A stray RST: dropped (a reset is never answered).
    Drop,
}

/// Where an MP_JOIN SYN on a 4-tuple the table already knows goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnownTupleJoin {
    /// To the connection of that 4-tuple, like any of its segments.
    Connection,
    /// To the connection its token names, which answers or refuses it
    /// again (the subflow of that 4-tuple may have died meanwhile).
    Token,
}

/// A host's three tables, wherever they are kept: [`HostStack`] owns
/// them; the simulator keeps every host's in maps of the whole world,
/// keyed by node as well.
pub trait Tables {
    /// A connection's address pair as the host sees it.
    type Tuple;
    /// Names a connection (an index, a flow and end).
    type Conn: Copy;
    /// What listens on a port.
    type Listener;
    fn connection(&self, tuple: &Self::Tuple) -> Option<Self::Conn>;
    fn by_token(&self, token: u32) -> Option<Self::Conn>;
    fn listener(&self, port: u16) -> Option<&Self::Listener>;
    /// The 4-tuple now belongs to `conn`.
    fn bind(&mut self, tuple: Self::Tuple, conn: Self::Conn);
    /// Joins naming `token` go to `conn`.
    fn register_token(&mut self, token: u32, conn: Self::Conn);
}

/// The token of an MP_JOIN SYN, if `h` carries one.
pub fn join_token(h: &TcpHeader) -> Option<u32> {
    h.options.mptcp().find_map(|o| match o {
        MptcpOption::MpJoin(MpJoin::Syn { token, .. }) => Some(*token),
        _ => None,
    })
}

/// The one decision for a TCP segment arriving on `tuple`.
#[inline]
pub fn arrival<T: Tables>(t: &T, tuple: &T::Tuple, h: &TcpHeader, known_join: KnownTupleJoin) -> Arrival<T::Conn> {
    let opening = h.syn() && !h.ack_flag() && !h.rst();
    let known = t.connection(tuple);
    if let Some(c) = known {
        if !opening || known_join == KnownTupleJoin::Connection {
            return Arrival::Connection(c);
        }
    }
    if !opening {
        return if h.rst() { Arrival::Drop } else { Arrival::Reset };
    }
    match (join_token(h), known) {
        (Some(token), _) => Arrival::Join { token, conn: t.by_token(token) },
        // A retransmitted SYN of a connection the host already has.
        (None, Some(c)) => Arrival::Connection(c),
        (None, None) => Arrival::Open,
    }
}

/// The connection asked by [`Arrival::Join`] took the subflow (`Some`)
/// or refused it: an accepted join's 4-tuple now belongs to it. Returns
/// `accepted`.
pub fn join_decided<T: Tables>(t: &mut T, tuple: T::Tuple, accepted: Option<T::Conn>) -> Option<T::Conn> {
    if let Some(c) = accepted {
        t.bind(tuple, c);
    }
    accepted
}

/// The tables of one host, owned. `H` names a connection; `L` is what
/// listens on a port.
#[derive(Debug, Clone)]
pub struct HostStack<K, H, L, S = std::collections::hash_map::RandomState> {
    pub demux: HashMap<K, H, S>,
    pub tokens: HashMap<u32, H, S>,
    pub listeners: HashMap<u16, L, S>,
}

impl<K, H, L, S: Default> Default for HostStack<K, H, L, S> {
    fn default() -> Self {
        HostStack { demux: HashMap::default(), tokens: HashMap::default(), listeners: HashMap::default() }
    }
}

impl<K: Hash + Eq, H: Copy, L, S: BuildHasher + Default> HostStack<K, H, L, S> {
    pub fn new() -> Self {
        Self::default()
    }

    /// The one decision for a segment on `tuple` (see [`arrival`]).
    pub fn arrival(&self, tuple: &K, h: &TcpHeader, known_join: KnownTupleJoin) -> Arrival<H> {
        arrival(self, tuple, h, known_join)
    }

    /// See [`join_decided`].
    pub fn join_decided(&mut self, tuple: K, accepted: Option<H>) -> Option<H> {
        join_decided(self, tuple, accepted)
    }

    /// `tuple` belongs to `conn` unless it belongs to a connection already.
    pub fn bind_if_new(&mut self, tuple: K, conn: H) {
        self.demux.entry(tuple).or_insert(conn);
    }
}

impl<K: Hash + Eq, H: Copy, L, S: BuildHasher> Tables for HostStack<K, H, L, S> {
    type Tuple = K;
    type Conn = H;
    type Listener = L;
    fn connection(&self, tuple: &K) -> Option<H> {
        self.demux.get(tuple).copied()
    }
    fn by_token(&self, token: u32) -> Option<H> {
        self.tokens.get(&token).copied()
    }
    fn listener(&self, port: u16) -> Option<&L> {
        self.listeners.get(&port)
    }
    fn bind(&mut self, tuple: K, conn: H) {
        self.demux.insert(tuple, conn);
    }
    fn register_token(&mut self, token: u32, conn: H) {
        self.tokens.insert(token, conn);
    }
}

#[cfg(test)]
mod tests;
