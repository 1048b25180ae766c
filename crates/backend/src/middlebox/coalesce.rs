//! Coalescing: a box that merges consecutive segments of a flow (see
//! [`Coalescer`]).

use mplab_proto::Instant;
use mplab_wire::tcp::flags::{FIN, PSH, RST, SYN, URG};

use super::element::{Hook, Middlebox};
use super::segment::ModelPacket;

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
pub struct Coalescer<P> {
    size: u32,
    hold_ns: u64,
    held: Vec<Option<Held<P>>>,
    /// Segments merged into another (for the results' notes).
    pub merged: u64,
}

#[derive(Debug)]
struct Held<P> {
    pkt: P,
    deadline: u64,
}

impl<P: ModelPacket> Coalescer<P> {
    pub fn new(size: u32, hold_ns: u64) -> Self {
        Coalescer { size, hold_ns: hold_ns.max(1), held: Vec::new(), merged: 0 }
    }

    fn slot_of(&self, p: &P) -> Option<usize> {
        let k = p.flow_key();
        self.held.iter().position(|h| h.as_ref().is_some_and(|h| h.pkt.flow_key() == k))
    }

    /// A segment arrives at `now`: what leaves the box now goes to `out`,
    /// in order.
    pub fn offer(&mut self, now: u64, p: P, out: &mut Vec<P>) {
        let holdable = p.payload_len() > 0 && p.tcp().flags & (SYN | FIN | RST | URG) == 0;
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
    fn expire(&mut self, now: u64, out: &mut Vec<P>) {
        for h in self.held.iter_mut() {
            if h.as_ref().is_some_and(|h| h.deadline <= now) {
                out.extend(h.take().map(|h| h.pkt));
            }
        }
    }
}

impl<P: ModelPacket> Middlebox<P> for Coalescer<P> {
    fn kind(&self) -> &'static str {
        "resegment/coalesce"
    }

    fn process(&mut self, now: Instant, at: Hook, p: P, out: &mut Vec<P>) {
        if matches!(at, Hook::Link | Hook::Forward) {
            self.offer(now.0, p, out);
        } else {
            out.push(p);
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.held.iter().flatten().map(|h| Instant(h.deadline)).min()
    }

    fn on_timer(&mut self, now: Instant, out: &mut Vec<P>) {
        self.expire(now.0, out);
    }

    fn note(&self, at: &str) -> Option<String> {
        Some(format!("coalescing middlebox at {at}: {} segments merged into others", self.merged))
    }
}

/// Appends `p` to `h` if it continues `h`'s sequence and the result fits.
fn merge<P: ModelPacket>(h: &mut P, p: &P, size: u32) -> bool {
    if p.tcp().seq != h.tcp().seq.wrapping_add(h.payload_len()) || h.payload_len() + p.payload_len() > size || h.tcp().flags & PSH != 0 {
        return false;
    }
    // The payload's stream offsets: contiguous runs extend, a jump starts
    // the (single) tail run.
    let end = match h.tail() {
        Some((at, tag2)) => tag2 + u64::from(h.payload_len() - at),
        None => h.tag() + u64::from(h.payload_len()),
    };
    if p.tag() != end {
        if h.tail().is_some() {
            return false;
        }
        h.set_tail(Some((h.payload_len(), p.tag())));
    }
    h.set_payload_len(h.payload_len() + p.payload_len());
    let t = h.tcp_mut();
    t.ack = p.tcp().ack;
    t.window = p.tcp().window;
    t.flags |= p.tcp().flags & PSH;
    let c = h.corrupted() | p.corrupted();
    h.set_corrupted(c);
    h.resize();
    true
}
