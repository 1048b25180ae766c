//! One MPTCP subflow: a TCP connection of crates/proto plus what MPTCP keeps
//! per subflow — address ids, backup flags, the join handshake, and the
//! mappings between this subflow's byte stream and the connection's data
//! sequence space (both directions).

use std::collections::VecDeque;
use std::net::SocketAddr;

use crate::tcp;
use crate::time::Instant;

/// Where the MPTCP handshake of this subflow stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// SYN / SYN-ACK exchange in progress.
    Opening,
    /// We must (re)send the third ACK carrying MP_CAPABLE keys / MP_JOIN
    /// HMAC until the peer shows it got it.
    ThirdAck,
    /// Done: data may flow.
    Established,
}

/// How this subflow came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The first subflow (MP_CAPABLE).
    Initial,
    /// An additional subflow (MP_JOIN) with the two nonces.
    Join { local_nonce: u32, remote_nonce: u32 },
}

/// A stretch of this subflow's send stream and where it sits in the
/// connection's data stream (offsets from the first data byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxMap {
    pub sub: u64,
    pub data: u64,
    pub len: u64,
}

/// A mapping received in a DSS option: subflow offset, absolute 64-bit
/// DSN, length (the DATA_FIN excluded), and whether it was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxMap {
    pub sub: u64,
    pub dsn: u64,
    pub len: u64,
}

#[derive(Debug)]
pub struct Subflow {
    pub tcp: tcp::Connection,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub local_id: u8,
    pub remote_id: u8,
    /// We asked the peer to use it only as a backup (MP_JOIN B flag, MP_PRIO).
    pub backup: bool,
    /// The peer asked us to use it only as a backup.
    pub peer_backup: bool,
    pub origin: Origin,
    pub handshake: Handshake,
    /// When the third ACK was last sent (join initiator retransmits it).
    pub third_ack_at: Option<Instant>,
    pub tx: VecDeque<TxMap>,
    /// The end of the highest subflow bytes sent so far, and the data
    /// offset that end maps to: where a peer that reads the subflow's
    /// stream as the data stream after a fallback stands (`tx` forgets
    /// mappings once they are acknowledged).
    pub sent_high: (u64, u64),
    pub rx: VecDeque<RxMap>,
    /// RTOs keep firing: its data was reinjected elsewhere.
    pub stale: bool,
    /// A DSS option arrived on it (the peer speaks MPTCP here).
    pub saw_dss: bool,
    /// In-window pure ACKs without any MPTCP option received in a row
    /// (see `OPTIONLESS_ACKS_TO_FALL_BACK`).
    pub optionless_acks: u8,
    /// The initiator's keys went out at least once (MP_CAPABLE third ACK).
    pub keys_sent: bool,
    /// An MP_PRIO to send on the next segment.
    pub prio_pending: bool,
    /// A reason to send with the RST that ends it (MP_TCPRST).
    pub reset_reason: Option<u8>,
    /// Reported to the application as established / closed.
    pub announced_up: bool,
    pub announced_down: bool,
    /// When penalisation last halved its window.
    pub penalized_at: Option<Instant>,
    /// Its send buffer under send-buffer autotuning (`sndbuf.rs`).
    pub sndbuf: u64,
    /// Connection-level retransmission periods it spent with data
    /// outstanding and nothing received, and what it had received when
    /// the count started (the `linux` profile's staleness).
    pub stale_count: u32,
    pub stale_rx: u64,
    /// Segments received when the idle probe last looked (`rejoin.rs`).
    pub probe_rx: u64,
    /// Fast Open (initial subflow): bytes of our SYN the peer acknowledged,
    /// and bytes of the peer's SYN we took. They come before the data
    /// sequence space, and the relative subflow sequence numbers of DSS
    /// mappings count from after them (Linux: `ssn_offset += skb->len`
    /// in mptcp_fastopen_subflow_synack_set_params; RFC 8684 Appendix B.3,
    /// Figure 19 with erratum 6609: the first mapped byte after a 20-byte
    /// SYN is at TCP sequence 21 with `ssn=1`).
    pub syn_tx: u64,
    pub syn_rx: u64,
}

impl Subflow {
    pub fn new(tcp: tcp::Connection, local: SocketAddr, remote: SocketAddr, origin: Origin) -> Self {
        Subflow {
            tcp,
            local,
            remote,
            local_id: 0,
            remote_id: 0,
            backup: false,
            peer_backup: false,
            origin,
            handshake: Handshake::Opening,
            third_ack_at: None,
            tx: VecDeque::new(),
            sent_high: (0, 0),
            rx: VecDeque::new(),
            stale: false,
            saw_dss: false,
            optionless_acks: 0,
            keys_sent: false,
            prio_pending: false,
            reset_reason: None,
            announced_up: false,
            announced_down: false,
            penalized_at: None,
            sndbuf: super::sndbuf::WMEM_DEFAULT,
            stale_count: 0,
            stale_rx: 0,
            probe_rx: 0,
            syn_tx: 0,
            syn_rx: 0,
        }
    }

    pub fn is_join(&self) -> bool {
        matches!(self.origin, Origin::Join { .. })
    }

    /// Alive and past the MPTCP handshake: may carry data. The initiator's
    /// first subflow may send right after its third ACK (which it repeats
    /// on its data); a joined subflow waits for the peer's fourth ACK.
    pub fn usable(&self) -> bool {
        let shaken = match self.handshake {
            Handshake::Established => true,
            Handshake::ThirdAck => self.origin == Origin::Initial,
            Handshake::Opening => false,
        };
        shaken && self.tcp.is_established() && !self.tcp.is_closed() && !self.stale
    }

    pub fn is_closed(&self) -> bool {
        self.tcp.is_closed()
    }

    /// Resets the subflow with MP_TCPRST `reason`, throwing away what it
    /// holds unread (Linux's subflow reset purges the receive queue): a
    /// mapping arriving later on the closed subflow would otherwise place
    /// bytes that failed their check, or that no mapping placed, in the
    /// data stream without their payload ever being handed over.
    pub fn reset(&mut self, reason: u8) {
        self.reset_reason = Some(reason);
        self.tcp.abort();
        let unread = self.tcp.readable();
        let _ = self.tcp.recv(unread);
    }

    /// The data-level placement of send-stream offset `sub`, and how many
    /// bytes from there stay in the same mapping.
    pub fn tx_lookup(&self, sub: u64) -> Option<(u64, u64)> {
        // New data goes out under the newest mapping: check it first.
        if let Some(m) = self.tx.back().filter(|m| m.sub <= sub && sub < m.sub + m.len) {
            return Some((m.data + (sub - m.sub), m.sub + m.len - sub));
        }
        let i = self.tx.partition_point(|m| m.sub + m.len <= sub);
        let m = self.tx.get(i)?;
        (m.sub <= sub).then(|| (m.data + (sub - m.sub), m.sub + m.len - sub))
    }

    /// Forgets send mappings of stream offsets from `sub` on (bytes taken
    /// back unsent).
    pub fn truncate_tx(&mut self, sub: u64) {
        while let Some(m) = self.tx.back_mut() {
            if m.sub >= sub {
                self.tx.pop_back();
            } else {
                m.len = m.len.min(sub - m.sub);
                break;
            }
        }
    }

    /// Forgets send mappings the subflow has delivered.
    pub fn prune_tx(&mut self) {
        let una = self.tcp.snd_una();
        while self.tx.front().is_some_and(|m| m.sub + m.len <= una) {
            self.tx.pop_front();
        }
    }

    /// Records a received mapping (kept sorted; duplicates ignored).
    pub fn add_rx(&mut self, m: RxMap) {
        if m.len == 0 {
            return;
        }
        // Mappings mostly arrive in order: append without a binary search
        // (its probes over hundreds of mappings miss the cache).
        if self.rx.back().is_none_or(|x| x.sub < m.sub) {
            self.rx.push_back(m);
            return;
        }
        let i = self.rx.partition_point(|x| x.sub < m.sub);
        if let Some(x) = self.rx.get(i).filter(|x| x.sub == m.sub).copied() {
            // A mapping for bytes already mapped, and agreeing with it (one
            // that disagrees is refused before, `rx_disagrees`): a longer
            // one adds the bytes after the first.
            if m.len > x.len {
                self.add_rx(RxMap { sub: m.sub + x.len, dsn: m.dsn.wrapping_add(x.len), len: m.len - x.len });
            }
            return;
        }
        self.rx.insert(i, m);
    }

    /// Whether mapping `m` puts a subflow byte somewhere else in the data
    /// stream than a mapping received before does (RFC 8684 3.3: each
    /// subflow byte has one place; Linux's `get_mapping_status` takes a
    /// new mapping over the current one only if it is the same). Mappings
    /// are at most 64 KiB long, so only those starting less than that
    /// before `m` can overlap it.
    pub fn rx_disagrees(&self, m: &RxMap) -> bool {
        let end = m.sub + m.len;
        let from = self.rx.partition_point(|x| x.sub + u64::from(u16::MAX) < m.sub);
        self.rx.range(from..).take_while(|x| x.sub < end).any(|x| m.sub < x.sub + x.len && x.dsn.wrapping_sub(x.sub) != m.dsn.wrapping_sub(m.sub))
    }

    /// The received mapping starting last at or before `sub` (`rx` is
    /// sorted by start): the one that covers `sub` unless mappings overlap.
    /// A reorder buffer at 10 Gbit/s holds hundreds of mappings, and
    /// scanning them all for every segment was a tenth of the receiver's
    /// work; the full scans below remain for what this one misses.
    fn rx_last_at_or_before(&self, sub: u64) -> Option<&RxMap> {
        let i = self.rx.partition_point(|m| m.sub <= sub);
        i.checked_sub(1).and_then(|i| self.rx.get(i))
    }

    /// Whether a received mapping covers receive-stream offset `sub`.
    pub fn rx_covers(&self, sub: u64) -> bool {
        let covers = |m: &RxMap| m.sub <= sub && sub < m.sub + m.len;
        self.rx_last_at_or_before(sub).is_some_and(covers) || self.rx.iter().any(covers)
    }

    /// Whether some received mapping overlaps `r`.
    pub fn rx_covers_any(&self, r: &core::ops::Range<u64>) -> bool {
        let overlaps = |m: &RxMap| m.sub < r.end && r.start < m.sub + m.len;
        self.rx_last_at_or_before(r.end.saturating_sub(1)).is_some_and(overlaps) || self.rx.iter().any(overlaps)
    }

    /// The absolute DSN of receive-stream offset `sub`, if a mapping covers
    /// it (overlapping mappings of one stream agree on it).
    pub fn rx_dsn_of(&self, sub: u64) -> Option<u64> {
        let covers = |m: &&RxMap| m.sub <= sub && sub < m.sub + m.len;
        self.rx_last_at_or_before(sub).filter(covers).or_else(|| self.rx.iter().find(covers)).map(|m| m.dsn.wrapping_add(sub - m.sub))
    }

    /// The absolute DSN of receive-stream offset `sub`, with the bytes left
    /// in its mapping; forgets mappings wholly before `sub`.
    pub fn rx_lookup(&mut self, sub: u64) -> Option<(u64, u64)> {
        while self.rx.front().is_some_and(|m| m.sub + m.len <= sub) {
            self.rx.pop_front();
        }
        let m = self.rx.front()?;
        (m.sub <= sub).then(|| (m.dsn.wrapping_add(sub - m.sub), m.sub + m.len - sub))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::TcpConfig;
    use crate::Instant;

    fn subflow() -> Subflow {
        let (a, b) = ("10.0.0.1:1000".parse().unwrap(), "10.0.0.2:2000".parse().unwrap());
        Subflow::new(tcp::Connection::connect(TcpConfig::default(), a, b, 7, Instant::ZERO), a, b, Origin::Initial)
    }

    /// Received mappings stay sorted by subflow offset whatever the arrival
    /// order (the in-order append and the out-of-order insert agree), and a
    /// repeated mapping is recorded once.
    #[test]
    fn received_mappings_stay_sorted_without_duplicates() {
        let mut s = subflow();
        let order = [0u64, 1, 2, 5, 3, 9, 4, 4, 8, 0, 7, 6, 9];
        for &k in &order {
            s.add_rx(RxMap { sub: k * 1000, dsn: 50_000 + k * 1000, len: 1000 });
        }
        s.add_rx(RxMap { sub: 10_000, dsn: 0, len: 0 });
        let subs: Vec<u64> = s.rx.iter().map(|m| m.sub).collect();
        assert_eq!(subs, (0..10).map(|k| k * 1000).collect::<Vec<_>>());
        assert!(s.rx_covers(4500) && !s.rx_covers(10_000));
    }
}
