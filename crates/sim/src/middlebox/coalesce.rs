//! Coalescing: a box that merges consecutive segments of a flow (see
//! [`Coalescer`]).

use mplab_proto::Instant;

use super::{resize, Hook, Middlebox};
use crate::packet::Packet;

/// Largest coalesced payload unless the scenario says: what fits an
/// IPv4 packet (LRO/GRO build up to 64 KiB).
pub const DEFAULT_SIZE: u64 = 65_535 - 60 - 20;
/// How long a held segment waits for its successor (LRO flush timers are
/// of this order).
pub const DEFAULT_HOLD_NS: u64 = 1_000_000;

/// A box that merges consecutive segments of a flow into one, the way a
/// naive normaliser or a receive-offload engine that ignores TCP options
/// does: the merged segment keeps the first segment's header and options
/// (so a DSS mapping of the second one is lost) and takes the latest ACK
/// and window. Linux's GRO refuses to merge segments whose options differ,
/// which is why MPTCP survives it; this box does not, and RFC 8684 3.7
/// says what the receiver must do about the unmapped data it creates.
///
/// It holds at most one segment per flow: the next in-sequence data
/// segment is appended while the result fits `size` bytes of payload;
/// anything else of the flow (a pure ACK, a retransmission, SYN/FIN/RST)
/// first flushes what is held, so the box never reorders a flow. A held
/// segment leaves at the latest `hold_ns` after it arrived.
#[derive(Debug)]
pub struct Coalescer {
    size: u32,
    hold_ns: u64,
    held: Vec<Option<Held>>,
    /// Segments merged into another (for the results' notes).
    pub merged: u64,
}

#[derive(Debug)]
struct Held {
    pkt: Packet,
    deadline: u64,
}

impl Coalescer {
    pub fn new(size: u32, hold_ns: u64) -> Self {
        Coalescer { size, hold_ns: hold_ns.max(1), held: Vec::new(), merged: 0 }
    }

    fn slot_of(&self, p: &Packet) -> Option<usize> {
        let k = p.flow_key();
        self.held.iter().position(|h| h.as_ref().is_some_and(|h| h.pkt.flow_key() == k))
    }

    /// A segment arrives at `now`: what leaves the box now goes to `out`,
    /// in order.
    fn offer(&mut self, now: u64, p: Packet, out: &mut Vec<Packet>) {
        use mplab_wire::tcp::flags::{FIN, RST, SYN, URG};
        let holdable = p.payload_len > 0 && p.tcp.flags & (SYN | FIN | RST | URG) == 0;
        let slot = self.slot_of(&p);
        if let Some(i) = slot {
            let h = self.held[i].as_mut().map(|h| &mut h.pkt);
            if let Some(h) = h.filter(|_| holdable) {
                if merge(h, &p, self.size) {
                    self.merged += 1;
                    return;
                }
            }
            // Not mergeable: what is held leaves first.
            if let Some(h) = self.held[i].take() {
                out.push(h.pkt);
            }
        }
        if !holdable {
            out.push(p);
            return;
        }
        let i = slot.or_else(|| self.held.iter().position(Option::is_none)).unwrap_or_else(|| {
            self.held.push(None);
            self.held.len() - 1
        });
        self.held[i] = Some(Held { pkt: p, deadline: now + self.hold_ns });
    }

    /// Releases, in slot order, every held segment whose time has come.
    fn expire(&mut self, now: u64, out: &mut Vec<Packet>) {
        for h in self.held.iter_mut() {
            if h.as_ref().is_some_and(|h| h.deadline <= now) {
                out.extend(h.take().map(|h| h.pkt));
            }
        }
    }
}

impl Middlebox for Coalescer {
    fn kind(&self) -> &'static str {
        "resegment/coalesce"
    }

    fn process(&mut self, now: Instant, at: Hook, p: Packet, out: &mut Vec<Packet>) {
        if matches!(at, Hook::Link | Hook::Forward) {
            self.offer(now.0, p, out);
        } else {
            out.push(p);
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.held.iter().flatten().map(|h| Instant(h.deadline)).min()
    }

    fn on_timer(&mut self, now: Instant, out: &mut Vec<Packet>) {
        self.expire(now.0, out);
    }

    fn note(&self, at: &str) -> Option<String> {
        Some(format!("coalescing middlebox at {at}: {} segments merged into others", self.merged))
    }
}

/// Appends `p` to `h` if it continues `h`'s sequence and the result fits.
fn merge(h: &mut Packet, p: &Packet, size: u32) -> bool {
    if p.tcp.seq != h.tcp.seq.wrapping_add(h.payload_len) || h.payload_len + p.payload_len > size || h.tcp.flags & mplab_wire::tcp::flags::PSH != 0 {
        return false;
    }
    // The payload's stream offsets: contiguous runs extend, a jump starts
    // the (single) tail run.
    let end = match h.tail {
        Some((at, tag2)) => tag2 + u64::from(h.payload_len - at),
        None => h.tag + u64::from(h.payload_len),
    };
    if p.tag != end {
        if h.tail.is_some() {
            return false;
        }
        h.tail = Some((h.payload_len, p.tag));
    }
    h.payload_len += p.payload_len;
    h.tcp.ack = p.tcp.ack;
    h.tcp.window = p.tcp.window;
    h.tcp.flags |= p.tcp.flags & mplab_wire::tcp::flags::PSH;
    h.corrupted |= p.corrupted;
    resize(h);
    true
}


#[cfg(test)]
mod tests {
    use super::*;
    use mplab_wire::{MptcpOption, TcpHeader};

    fn data(seq: u32, len: u32, tag: u64) -> Packet {
        let h = TcpHeader { seq, ack: seq / 2, window: 100, flags: mplab_wire::tcp::flags::ACK, ..Default::default() };
        Packet::new([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), h, len, tag)
    }

    #[test]
    fn coalescer_merges_in_sequence_segments_and_keeps_the_first_header() {
        let mut c = Coalescer::new(4000, 1000);
        let mut out = vec![];
        let mut a = data(1000, 1000, 0);
        a.tcp.options.push_mptcp(MptcpOption::MpPrio { backup: true, addr_id: None }).unwrap();
        c.offer(0, a, &mut out);
        assert_eq!(c.next_deadline(), Some(Instant(1000)), "held: a flush timer");
        // Contiguous in sequence, scattered in stream offsets (an MPTCP
        // subflow): one tail run.
        c.offer(10, data(2000, 1000, 50_000), &mut out);
        c.offer(20, data(3000, 1000, 51_000), &mut out);
        assert!(out.is_empty());
        // Too big for `size`: the held one leaves, the new one is held.
        c.offer(30, data(4000, 1500, 52_000), &mut out);
        assert_eq!(c.next_deadline(), Some(Instant(1030)));
        assert_eq!(out.len(), 1);
        let m = &out[0];
        assert_eq!((m.tcp.seq, m.payload_len, m.tag, m.tail), (1000, 3000, 0, Some((1000, 50_000))));
        assert_eq!(m.tcp.ack, 1500, "latest ACK");
        assert!(m.tcp.options.has_mptcp(), "first segment's options");
        let mut buf = vec![0; 3000];
        m.fill_payload(&mut buf);
        let mut want = vec![0; 2000];
        crate::apps::fill_pattern(50_000, &mut want);
        assert_eq!(&buf[1000..], &want[..]);
        assert_eq!(c.merged, 2);
        // The first segment's deadline has passed with it: nothing is due
        // before the one now held.
        let mut due = vec![];
        c.on_timer(Instant(1000), &mut due);
        assert!(due.is_empty());
        c.on_timer(Instant(1030), &mut due);
        assert!(due.len() == 1 && due[0].tcp.seq == 4000);
        assert_eq!(c.next_deadline(), None);
    }

    #[test]
    fn coalescer_never_reorders_a_flow() {
        let mut c = Coalescer::new(60_000, 1000);
        let mut out = vec![];
        c.offer(0, data(1000, 1000, 0), &mut out);
        // A pure ACK of the same flow pushes the held segment out first.
        c.offer(5, data(2000, 0, 0), &mut out);
        assert_eq!(out.iter().map(|p| p.payload_len).collect::<Vec<_>>(), vec![1000, 0]);
        // A retransmission (not the next in sequence) too.
        out.clear();
        c.offer(10, data(5000, 1000, 4000), &mut out);
        c.offer(11, data(3000, 1000, 2000), &mut out);
        assert_eq!(out.iter().map(|p| p.tcp.seq).collect::<Vec<_>>(), vec![5000]);
        // A second jump in stream offsets cannot be represented: no merge.
        let mut c = Coalescer::new(60_000, 1000);
        out.clear();
        c.offer(0, data(1000, 100, 0), &mut out);
        c.offer(0, data(1100, 100, 500), &mut out);
        c.offer(0, data(1200, 100, 900), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(c.merged, 1);
    }

}
