//! Middleboxes on the path: what seed 000's Cisco ASA did to option 30, and
//! what TSO-like boxes do to segment boundaries. They act on packets as a
//! link direction sends them or as a router forwards them.
//!
//! The stateless ones ([`Action`]) rewrite one packet at a time; a
//! [`Coalescer`] keeps state (the segment it holds per flow) and a flush
//! timer the world schedules.

use mplab_scenario::network::{Direction, MiddleboxAction, Network, Placement, ResegmentMode, StripOn};

use crate::packet::{Packet, IPV4_HEADER};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Remove every MPTCP option (kind 30), on SYNs only or on all segments.
    StripMptcp { syn_only: bool },
    /// Cut segments with more payload than `size` into several (options
    /// copied to each, as TSO does).
    Split { size: u32 },
    /// Change the first payload byte of data segments holding a stream
    /// offset that is a multiple of `every` (the TCP checksum is fixed up,
    /// so only MPTCP's DSS checksum can notice).
    Rewrite { every: u64 },
}

/// The middleboxes of a network, indexed for the per-packet path.
#[derive(Debug, Default)]
pub struct Middleboxes {
    /// Per link direction (`2 * link + dir`).
    pub on_link: Vec<Vec<Action>>,
    /// Per node (applied to packets it forwards).
    pub on_node: Vec<Vec<Action>>,
    /// Coalescing boxes, and where each sits; they act after the
    /// stateless actions of their place.
    pub coalescers: Vec<(Place, Coalescer)>,
    /// Index into `coalescers` per link direction / per node.
    pub coalesce_link: Vec<Option<u32>>,
    pub coalesce_node: Vec<Option<u32>>,
}

/// Where a stateful middlebox sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A link direction, `2 * link + dir`.
    Link(usize),
    Node(usize),
}

impl Middleboxes {
    pub fn new(net: &Network) -> Self {
        let mut m = Middleboxes {
            on_link: vec![Vec::new(); 2 * net.links.len()],
            on_node: vec![Vec::new(); net.nodes.len()],
            coalescers: Vec::new(),
            coalesce_link: vec![None; 2 * net.links.len()],
            coalesce_node: vec![None; net.nodes.len()],
        };
        for mb in &net.middleboxes {
            let a = match mb.action {
                MiddleboxAction::StripMptcp { on } => Action::StripMptcp { syn_only: on == StripOn::Syn },
                MiddleboxAction::Resegment { mode: ResegmentMode::Split, size, .. } => Action::Split { size: size.unwrap_or(536).max(1).min(u32::MAX as u64) as u32 },
                MiddleboxAction::Resegment { mode: ResegmentMode::Coalesce, size, hold_ns } => {
                    let size = size.unwrap_or(DEFAULT_COALESCE_SIZE).clamp(1, u64::from(u16::MAX)) as u32;
                    let hold = hold_ns.unwrap_or(DEFAULT_COALESCE_HOLD_NS);
                    let places: Vec<Place> = match &mb.placement {
                        Placement::Link { link, direction, .. } => match direction {
                            Direction::Ab => vec![Place::Link(2 * link)],
                            Direction::Ba => vec![Place::Link(2 * link + 1)],
                            Direction::Both => vec![Place::Link(2 * link), Place::Link(2 * link + 1)],
                        },
                        Placement::Node { node, .. } => vec![Place::Node(*node)],
                    };
                    for pl in places {
                        let slot = match pl {
                            Place::Link(i) => &mut m.coalesce_link[i],
                            Place::Node(n) => &mut m.coalesce_node[n],
                        };
                        // One coalescer per place: a second one would find
                        // nothing left to merge.
                        if slot.is_none() {
                            *slot = Some(m.coalescers.len() as u32);
                            m.coalescers.push((pl, Coalescer::new(size, hold)));
                        }
                    }
                    continue;
                }
                MiddleboxAction::Rewrite { every } => Action::Rewrite { every: every.max(1) },
                // NAT is the world's (`crate::nat`).
                MiddleboxAction::Nat { .. } => continue,
            };
            match &mb.placement {
                Placement::Link { link, direction, .. } => {
                    let dirs: &[usize] = match direction {
                        Direction::Ab => &[0],
                        Direction::Ba => &[1],
                        Direction::Both => &[0, 1],
                    };
                    for d in dirs {
                        m.on_link[2 * link + d].push(a);
                    }
                }
                Placement::Node { node, .. } => m.on_node[*node].push(a),
            }
        }
        m
    }
}

/// Largest coalesced payload unless the scenario says: what fits an
/// IPv4 packet (LRO/GRO build up to 64 KiB).
const DEFAULT_COALESCE_SIZE: u64 = 65_535 - 60 - 20;
/// How long a held segment waits for its successor (LRO flush timers are
/// of this order).
const DEFAULT_COALESCE_HOLD_NS: u64 = 1_000_000;

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

/// A timer the world must arm: flush `slot` at `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flush {
    pub slot: u32,
    pub at: u64,
}

impl Coalescer {
    pub fn new(size: u32, hold_ns: u64) -> Self {
        Coalescer { size, hold_ns: hold_ns.max(1), held: Vec::new(), merged: 0 }
    }

    fn slot_of(&self, p: &Packet) -> Option<usize> {
        let k = p.flow_key();
        self.held.iter().position(|h| h.as_ref().is_some_and(|h| h.pkt.flow_key() == k))
    }

    /// A segment arrives at `now`. What leaves the box now goes to `out`
    /// (in order); a returned [`Flush`] is a timer to arm.
    pub fn offer(&mut self, now: u64, p: Packet, out: &mut Vec<Packet>) -> Option<Flush> {
        use mplab_wire::tcp::flags::{FIN, RST, SYN, URG};
        let holdable = p.payload_len > 0 && p.tcp.flags & (SYN | FIN | RST | URG) == 0;
        let slot = self.slot_of(&p);
        if let Some(i) = slot {
            let h = self.held[i].as_mut().map(|h| &mut h.pkt);
            if let Some(h) = h.filter(|_| holdable) {
                if merge(h, &p, self.size) {
                    self.merged += 1;
                    return None;
                }
            }
            // Not mergeable: what is held leaves first.
            if let Some(h) = self.held[i].take() {
                out.push(h.pkt);
            }
        }
        if !holdable {
            out.push(p);
            return None;
        }
        let i = slot.or_else(|| self.held.iter().position(Option::is_none)).unwrap_or_else(|| {
            self.held.push(None);
            self.held.len() - 1
        });
        let at = now + self.hold_ns;
        self.held[i] = Some(Held { pkt: p, deadline: at });
        Some(Flush { slot: i as u32, at })
    }

    /// The timer of `slot` fired at `now`: the segment held there leaves
    /// if its time has come (a later segment may have taken the slot).
    pub fn expire(&mut self, slot: u32, now: u64) -> Option<Packet> {
        let h = self.held.get_mut(slot as usize)?;
        if h.as_ref().is_some_and(|h| h.deadline <= now) {
            return h.take().map(|h| h.pkt);
        }
        None
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

fn resize(p: &mut Packet) {
    let thl = p.tcp.wire_len().unwrap_or(60) as u32;
    p.size = IPV4_HEADER + thl + p.payload_len;
}

/// Applies `actions` to `p`; extra packets a split creates go to `extra`.
pub fn apply(actions: &[Action], p: &mut Packet, extra: &mut Vec<Packet>) {
    for a in actions {
        match *a {
            Action::StripMptcp { syn_only } => {
                if (!syn_only || p.tcp.syn()) && p.tcp.options.has_mptcp() {
                    p.tcp.options.clear_mptcp();
                    resize(p);
                }
            }
            Action::Rewrite { every } => {
                // The stream offsets the payload covers: a multiple of
                // `every` among them (offset 0 excepted: the start of the
                // stream) marks the segment. A coalesced packet's tail run
                // is checked too.
                let runs = match p.tail {
                    Some((at, tag2)) => [(p.tag, at), (tag2, p.payload_len - at)],
                    None => [(p.tag, p.payload_len), (0, 0)],
                };
                let hits = |(start, len): (u64, u32)| {
                    let (lo, end) = (start.max(1), start + u64::from(len));
                    lo < end && (end - 1) / every > (lo - 1) / every
                };
                if runs.into_iter().any(hits) {
                    p.corrupted = true;
                }
            }
            Action::Split { size } => {
                if p.payload_len <= size {
                    continue;
                }
                let fin = p.tcp.fin();
                let total = p.payload_len;
                let mut off = size;
                while off < total {
                    let n = size.min(total - off);
                    let mut q = p.clone();
                    q.tcp.seq = p.tcp.seq.wrapping_add(off);
                    q.tag = p.tag + off as u64;
                    q.payload_len = n;
                    if off + n < total {
                        q.tcp.flags &= !mplab_wire::tcp::flags::FIN;
                    }
                    resize(&mut q);
                    extra.push(q);
                    off += n;
                }
                if fin {
                    p.tcp.flags &= !mplab_wire::tcp::flags::FIN;
                }
                p.payload_len = size;
                resize(p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mplab_wire::{MptcpOption, TcpHeader};

    fn pkt(len: u32) -> Packet {
        let mut h = TcpHeader { seq: 1000, flags: mplab_wire::tcp::flags::ACK | mplab_wire::tcp::flags::FIN, ..Default::default() };
        h.options.push_mptcp(MptcpOption::MpPrio { backup: true, addr_id: None }).unwrap();
        Packet::new([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), h, len, 5000)
    }

    #[test]
    fn strip_removes_option_30_and_shrinks_the_packet() {
        let mut p = pkt(100);
        let before = p.size;
        let mut extra = vec![];
        apply(&[Action::StripMptcp { syn_only: true }], &mut p, &mut extra);
        assert!(p.tcp.options.has_mptcp(), "not a SYN");
        apply(&[Action::StripMptcp { syn_only: false }], &mut p, &mut extra);
        assert!(!p.tcp.options.has_mptcp());
        assert!(p.size < before);
    }

    #[test]
    fn split_keeps_sequence_tags_and_fin_on_the_last() {
        let mut p = pkt(1000);
        let mut extra = vec![];
        apply(&[Action::Split { size: 400 }], &mut p, &mut extra);
        assert_eq!(p.payload_len, 400);
        assert!(!p.tcp.fin());
        assert_eq!(extra.len(), 2);
        assert_eq!((extra[0].tcp.seq, extra[0].tag, extra[0].payload_len), (1400, 5400, 400));
        assert_eq!((extra[1].tcp.seq, extra[1].tag, extra[1].payload_len), (1800, 5800, 200));
        assert!(extra[1].tcp.fin() && !extra[0].tcp.fin());
        assert!(extra.iter().all(|q| q.tcp.options.has_mptcp()), "options copied like TSO");
    }

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
        let f = c.offer(0, a, &mut out).expect("held: a flush timer");
        assert_eq!(f, Flush { slot: 0, at: 1000 });
        // Contiguous in sequence, scattered in stream offsets (an MPTCP
        // subflow): one tail run.
        assert_eq!(c.offer(10, data(2000, 1000, 50_000), &mut out), None);
        assert_eq!(c.offer(20, data(3000, 1000, 51_000), &mut out), None);
        assert!(out.is_empty());
        // Too big for `size`: the held one leaves, the new one is held.
        assert!(c.offer(30, data(4000, 1500, 52_000), &mut out).is_some());
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
        // The timer of a slot taken over later does not flush early.
        assert!(c.expire(0, 1000).is_none());
        assert!(c.expire(0, 1030).is_some_and(|p| p.tcp.seq == 4000));
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

    #[test]
    fn rewrite_marks_the_segments_holding_a_multiple_of_every() {
        let hit = |tag: u64, len: u32| {
            let mut p = data(1, len, tag);
            apply(&[Action::Rewrite { every: 1000 }], &mut p, &mut vec![]);
            p.corrupted
        };
        assert!(!hit(0, 1000), "offset 0 is the start of the stream, not a multiple");
        assert!(hit(0, 1001) && hit(999, 2) && hit(1000, 1));
        assert!(!hit(1001, 998) && !hit(1, 999));
        // A coalesced packet's tail run counts too.
        let mut p = data(1, 200, 100);
        p.tail = Some((100, 950));
        apply(&[Action::Rewrite { every: 1000 }], &mut p, &mut vec![]);
        assert!(p.corrupted);
    }
}
