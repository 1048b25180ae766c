//! What is MPTCP's own in a transport endpoint (see
//! [`super::stream::StreamEndpoint`]): one endpoint, many 4-tuples
//! (its subflows). Payload bytes are never stored: when DSS checksums are
//! on, the bytes of a segment are regenerated from its data-level offset
//! (the stream pattern), with the damage a middlebox did applied, so a
//! checksum catches a modified payload.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use mplab_proto::mptcp::{Connection, Event};
use mplab_proto::Instant;

use crate::apps::Pattern;
use super::endpoint::{PathStats, Progress};
use crate::packet::Packet;

fn v4(a: SocketAddr) -> Ipv4Addr {
    match a.ip() {
        IpAddr::V4(v) => v,
        IpAddr::V6(_) => Ipv4Addr::UNSPECIFIED,
    }
}

/// The segment's (local, remote) addresses as the receiving host sees them.
pub(crate) fn addrs(pkt: &Packet) -> (SocketAddr, SocketAddr) {
    (SocketAddr::new(pkt.dst.into(), pkt.tcp.dst_port), SocketAddr::new(pkt.src.into(), pkt.tcp.src_port))
}

/// The data-level bytes some segment's payload was placed at, as far as
/// the connection has them in order: the simulator stores no payload, so
/// this is how it sees the connection count bytes as received that no
/// payload was handed over for (the application would read whatever the
/// buffer held there; on real packets, zeros).
#[derive(Debug, Default)]
pub(crate) struct PlacedBytes {
    /// Every byte below is placed.
    upto: u64,
    /// Placed ranges above `upto` (start -> end), disjoint or not.
    ahead: std::collections::BTreeMap<u64, u64>,
    reported: bool,
}

impl PlacedBytes {
    fn place(&mut self, r: &core::ops::Range<u64>) {
        // In order, nothing ahead: the common case, once per segment.
        if r.start <= self.upto && self.ahead.is_empty() {
            self.upto = self.upto.max(r.end);
            return;
        }
        if r.end > self.upto {
            let e = self.ahead.entry(r.start.max(self.upto)).or_insert(r.end);
            *e = (*e).max(r.end);
        }
        while let Some((&start, &end)) = self.ahead.first_key_value() {
            if start > self.upto {
                break;
            }
            self.upto = self.upto.max(end);
            self.ahead.pop_first();
        }
    }

    /// Whether the connection holds in order a byte nothing placed (once).
    fn unplaced(&mut self, in_order: u64) -> bool {
        let first = in_order > self.upto && !self.reported;
        self.reported |= first;
        first
    }
}

/// A segment for connection `conn`; `scratch` holds regenerated payloads.
pub(crate) fn on_packet(conn: &mut Connection, scratch: &mut Vec<u8>, placed_bytes: &mut PlacedBytes, now: Instant, pkt: &Packet) -> Progress {
    let (local, remote) = addrs(pkt);
    let payload = if conn.needs_payload() && pkt.payload_len > 0 {
        scratch.resize(pkt.payload_len as usize, 0);
        pkt.fill_payload(scratch);
        if pkt.corrupted {
            scratch[0] ^= 0xff;
        }
        Some(&scratch[..])
    } else {
        None
    };
    let failures = conn.stats().checksum_failures;
    let held = conn.received_bytes();
    let placed = conn.handle_segment(now, local, remote, &pkt.tcp, pkt.payload_len, payload);
    // The simulator regenerates payload from the stream offset a segment
    // claims (`tag`): a segment placed elsewhere carries bytes that are not
    // the stream's there. They reach the application only if the segment
    // brought bytes the connection did not hold: the first copy of a data
    // sequence number wins (RFC 8684 3.3), so a forged mapping over data
    // already received changes nothing.
    //
    // A segment whose first bytes the subflow already held (a copy an
    // on-path attacker's segment beat to it) places only its tail, and one
    // cut at the window only its head: either way the placed range keeps
    // one end of the segment's own. Anything else is a misplacement.
    let brought_new = conn.received_bytes() > held;
    let misplaced = match &placed {
        Some(r) if !r.is_empty() && pkt.payload_len > 0 => brought_new && r.start != pkt.tag && r.end != pkt.tag + u64::from(pkt.payload_len),
        _ => false,
    };
    // Rewritten bytes reach the application unless the DSS checksum
    // caught them and the subflow was reset (its data is then sent
    // again on another). On the only subflow a failed checksum makes
    // the connection fall back and keep the bytes, as Linux does.
    let discarded = conn.stats().checksum_failures > failures && conn.fallback().is_none();
    // Bytes the connection already held stay as they were (the first
    // copy wins): only a segment that brought new bytes can change any.
    let corrupted = pkt.corrupted && placed.as_ref().is_some_and(|r| !r.is_empty()) && !discarded && brought_new;
    if let Some(r) = placed.as_ref().filter(|r| !r.is_empty() && pkt.payload_len > 0) {
        placed_bytes.place(&(r.start..r.end.min(r.start + u64::from(pkt.payload_len))));
    }
    let misplaced = misplaced || placed_bytes.unplaced(conn.received_bytes() - conn.ooo_bytes());
    while let Some(e) = conn.poll_event() {
        let _: Event = e;
    }
    Progress { misplaced, corrupted, ..Default::default() }
}

pub(crate) fn poll_transmit_into(conn: &mut Connection, now: Instant, out: &mut Packet) -> bool {
    // The segment goes from where the connection built it straight
    // into the pool slot: one copy of the header.
    conn.poll_transmit_with(now, &Pattern, |t| {
        let len = (t.data.end - t.data.start) as u32;
        out.set(v4(t.local), v4(t.remote), t.header, len, t.data.start);
    })
    .is_some()
}

pub(crate) fn paths(conn: &Connection) -> Vec<PathStats> {
    use crate::results::SubflowState as S;
    conn.subflow_stats()
        .iter()
        .map(|s| {
            let mut p = PathStats::from_tcp(s.local, s.remote, s.backup, &s.tcp);
            p.state = if s.closed || s.finished {
                S::Closed
            } else if s.stale {
                S::Stale
            } else if s.established {
                S::Established
            } else {
                S::Connecting
            };
            p
        })
        .collect()
}

pub(crate) fn reorder_probe(conn: &Connection, now: Instant) -> (u64, u64) {
    let hol = conn.hol_delay(now).map_or(0, |d| d.as_nanos() as u64);
    (conn.ooo_bytes(), hol)
}

pub(crate) fn set_addr_backup(conn: &mut Connection, addr: Ipv4Addr, backup: bool) {
    if let Some(id) = conn.local_addr_id(IpAddr::V4(addr)) {
        conn.set_local_backup(id, backup);
    }
}

pub(crate) fn set_addr_in_service(conn: &mut Connection, addr: Ipv4Addr, in_service: bool) {
    let Some(id) = conn.local_addr_id(IpAddr::V4(addr)) else { return };
    if in_service {
        conn.add_local(id);
    } else {
        conn.remove_local(id);
    }
}


#[cfg(test)]
mod tests {
    use super::PlacedBytes;

    /// Bytes placed out of order count once the gap before them is placed;
    /// an in-order point beyond what was placed is reported, once.
    #[test]
    fn an_in_order_byte_nothing_placed_is_reported_once() {
        let mut p = PlacedBytes::default();
        p.place(&(0..1000));
        p.place(&(2000..3000));
        assert!(!p.unplaced(1000));
        p.place(&(500..2000));
        assert!(!p.unplaced(3000), "the gap was filled");
        p.place(&(3000..3500));
        assert!(p.unplaced(4500), "3500..4500 counted in order, never placed");
        assert!(!p.unplaced(4500), "reported once");
    }
}
