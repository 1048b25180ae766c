//! What travels on simulated links: typed IPv4 + TCP headers from
//! crates/wire and a payload *length*. Payload bytes are never stored; the
//! `tag` (the sender's stream offset of the first payload byte) lets a
//! receiver check placement and lets the pcap writer regenerate the bytes.

use core::net::Ipv4Addr;

use mplab_wire::TcpHeader;
use rustc_hash::FxHashMap;

use crate::apps::fill_pattern;
use crate::rng::SimRng;

/// IPv4 header without options.
pub const IPV4_HEADER: u32 = 20;

/// In declaration order (`repr(C)`): the scalars first, then the TCP header
/// with its options last, so a receiver's reads of an ordinary segment
/// fall in the packet's first three cache lines.
#[repr(C)]
#[derive(Debug, Clone)]
pub struct Packet {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
    pub payload_len: u32,
    /// Stream offset of the first payload byte at the sender (data-level
    /// offset for MPTCP), from which the payload pattern derives.
    pub tag: u64,
    /// Bytes on the wire (IP header + TCP header + options + payload),
    /// computed once at creation so links never re-encode options.
    pub size: u32,
    /// Dense index of `dst` among the network's addresses, set by the
    /// world when the packet enters the network, so routers look routes up
    /// in a vector rather than hashing addresses on every hop.
    pub dst_idx: u32,
    /// A middlebox rewrote payload bytes (receivers regenerate the bytes
    /// from `tag` and then apply the damage).
    pub corrupted: bool,
    /// A coalescing middlebox joined two segments whose stream offsets do
    /// not follow each other (an MPTCP subflow carries scattered data
    /// sequence ranges): the payload from byte `.0` on is the pattern at
    /// stream offset `.1`.
    pub tail: Option<(u32, u64)>,
    /// The egress interface a middlebox at the current node chose (a load
    /// balancer's backend, as a fwmark routing rule would): routing takes
    /// it instead of looking the destination up, once.
    pub via: Option<u16>,
    /// An SCTP packet (common header and chunks, checksum included) in
    /// place of a TCP segment: `tcp` then holds only its ports, so ECMP
    /// and demultiplexing treat both protocols alike, and `payload_len` is
    /// zero. SCTP packets carry their bytes because the association
    /// carries real user data.
    pub sctp: Option<Box<[u8]>>,
    /// A UDP datagram's payload in place of a TCP segment, the same way
    /// (`tcp` holds only its ports). Datagrams carry their bytes: the
    /// applications' headers (sequence number, send time) are in them.
    pub udp: Option<Box<[u8]>>,
    pub tcp: TcpHeader,
}

/// The UDP header (RFC 768).
pub const UDP_HEADER: u32 = 8;

/// Bytes on the wire of a segment: IP header, TCP header with options,
/// payload. Options that do not encode (more than 40 bytes) would be a
/// stack bug; they count at the maximum header size rather than panic.
fn wire_size(tcp: &TcpHeader, payload_len: u32) -> u32 {
    IPV4_HEADER + tcp.wire_len().unwrap_or(60) as u32 + payload_len
}

/// `dst_idx` of an address that belongs to no interface.
pub const NO_ADDR: u32 = u32::MAX;

impl Packet {
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr, tcp: TcpHeader, payload_len: u32, tag: u64) -> Packet {
        Packet { src, dst, ttl: 64, size: wire_size(&tcp, payload_len), tcp, payload_len, tag, dst_idx: NO_ADDR, corrupted: false, tail: None, via: None, sctp: None, udp: None }
    }

    /// Makes `self` an SCTP packet in place (see [`Packet::sctp`]).
    pub fn set_sctp(&mut self, src: Ipv4Addr, dst: Ipv4Addr, src_port: u16, dst_port: u16, bytes: Box<[u8]>) {
        self.set(src, dst, &TcpHeader { src_port, dst_port, ..TcpHeader::default() }, 0, 0);
        self.size = IPV4_HEADER + bytes.len() as u32;
        self.sctp = Some(bytes);
    }

    /// Makes `self` a UDP datagram in place (see [`Packet::udp`]).
    pub fn set_udp(&mut self, src: Ipv4Addr, dst: Ipv4Addr, src_port: u16, dst_port: u16, payload: Box<[u8]>) {
        self.set(src, dst, &TcpHeader { src_port, dst_port, ..TcpHeader::default() }, 0, 0);
        self.size = IPV4_HEADER + UDP_HEADER + payload.len() as u32;
        self.udp = Some(payload);
    }

    /// A UDP datagram rather than a TCP segment.
    #[inline]
    pub fn is_udp(&self) -> bool {
        self.udp.is_some()
    }

    /// A TCP segment (neither SCTP nor UDP): what the middleboxes parse.
    #[inline]
    pub fn is_tcp(&self) -> bool {
        self.sctp.is_none() && self.udp.is_none()
    }

    /// An SCTP packet rather than a TCP segment.
    #[inline]
    pub fn is_sctp(&self) -> bool {
        self.sctp.is_some()
    }

    /// Makes `self` what [`Packet::new`] would return, in place (a reused
    /// pool slot): the header is copied once, straight into the slot.
    pub fn set(&mut self, src: Ipv4Addr, dst: Ipv4Addr, tcp: &TcpHeader, payload_len: u32, tag: u64) {
        self.size = wire_size(tcp, payload_len);
        self.src = src;
        self.dst = dst;
        self.ttl = 64;
        self.tcp = *tcp;
        self.payload_len = payload_len;
        self.tag = tag;
        self.dst_idx = NO_ADDR;
        self.corrupted = false;
        self.via = None;
        self.tail = None;
        self.sctp = None;
        self.udp = None;
    }

    /// Writes the payload bytes into `buf` (`payload_len` long): the
    /// stream pattern from `tag`, and from `tail` for a coalesced packet.
    pub fn fill_payload(&self, buf: &mut [u8]) {
        match self.tail {
            Some((at, tag2)) if (at as usize) < buf.len() => {
                let (a, b) = buf.split_at_mut(at as usize);
                fill_pattern(self.tag, a);
                fill_pattern(tag2, b);
            }
            _ => fill_pattern(self.tag, buf),
        }
    }

    /// 5-tuple hash input for ECMP.
    pub fn flow_key(&self) -> (u32, u32, u16, u16) {
        (u32::from(self.src), u32::from(self.dst), self.tcp.src_port, self.tcp.dst_port)
    }
}

/// Deterministic 5-tuple hash (splitmix64 finaliser over the tuple),
/// computed once per packet; each router mixes in its own salt with
/// [`ecmp_pick`], so the same flow always takes the same ECMP member and
/// different routers make independent choices like Linux's hash seed does.
pub fn flow_hash(key: (u32, u32, u16, u16)) -> u64 {
    let mut x = (key.0 as u64) << 32 | key.1 as u64;
    x ^= ((key.2 as u64) << 16 | key.3 as u64 | 6 << 40).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    mix(x)
}

/// The ECMP member (of `n`) a router with `salt` picks for a flow hash.
#[inline]
pub fn ecmp_pick(hash: u64, salt: u64, n: usize) -> usize {
    (mix(hash ^ salt) % n as u64) as usize
}

/// Stream ids of the nodes' ECMP draws (`ecmp = "random"`): this base +
/// node id, away from every other element's range.
pub const ECMP_STREAM_BASE: u64 = 0xec_0000_0000;

/// How a node chooses among its equal-cost next hops. Either way one flow
/// (5-tuple) keeps one next hop per node, so TCP sees no reordering.
#[derive(Debug, Clone)]
pub enum Ecmp {
    /// Salted 5-tuple hash ([`ecmp_pick`]): stateless, like Linux's
    /// multipath hash policy 1.
    Hash { salt: u64 },
    /// A uniformly random member the first time the node sees a flow,
    /// drawn from the node's own stream (boxed: only new flows touch it)
    /// and remembered by flow hash.
    Random { rng: Box<SimRng>, flows: FxHashMap<u64, u16> },
}

impl Ecmp {
    pub fn random(rng: SimRng) -> Ecmp {
        Ecmp::Random { rng: Box::new(rng), flows: FxHashMap::default() }
    }

    /// The next hop among `hops` (at least one) for the flow with hash
    /// `flow_hash`; `iface` names a member's egress interface (what a
    /// random-mode node remembers). Allocates only when a random-mode node
    /// meets a new flow (the table grows), never per packet.
    #[inline]
    pub fn pick<T: Copy>(&mut self, flow_hash: u64, hops: &[T], iface: impl Fn(&T) -> u16) -> T {
        match self {
            Ecmp::Hash { salt } => hops[ecmp_pick(flow_hash, *salt, hops.len())],
            Ecmp::Random { rng, flows } => {
                // The remembered choice, unless it is no member here (a
                // 64-bit hash collision with a flow going elsewhere).
                if let Some(h) = flows.get(&flow_hash).and_then(|&i| hops.iter().find(|h| iface(h) == i)) {
                    return *h;
                }
                let h = hops[rng.below(hops.len() as u64) as usize];
                flows.insert(flow_hash, iface(&h));
                h
            }
        }
    }
}

#[inline]
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reused pool slot set in place equals a fresh packet, whatever the
    /// slot held (a coalesced, corrupted, routed packet).
    #[test]
    fn set_in_place_equals_new() {
        let mut h = TcpHeader { src_port: 1, dst_port: 2, seq: 3, ack: 4, flags: 0x10, window: 5, urgent: 0, options: Default::default() };
        h.options.timestamps = Some(mplab_wire::tcp::Timestamps { tsval: 9, tsecr: 8 });
        let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let mut slot = Packet::new(b, a, TcpHeader::default(), 7, 99);
        slot.ttl = 3;
        slot.dst_idx = 5;
        slot.corrupted = true;
        slot.tail = Some((1, 2));
        slot.set(a, b, &h, 1400, 12345);
        let fresh = Packet::new(a, b, h, 1400, 12345);
        assert_eq!(format!("{slot:?}"), format!("{fresh:?}"));
        assert!(slot.tcp == fresh.tcp && slot.size == fresh.size && slot.tail.is_none() && !slot.corrupted);
    }

    fn hashes(n: u32) -> impl Iterator<Item = u64> {
        (0..n).map(|i| flow_hash((0x0a00_0001 + i, 0x0a00_0402, 49152 + (i % 7) as u16, 5001)))
    }

    #[test]
    fn hash_mode_is_the_salted_hash() {
        let hops = [3u16, 5, 9];
        let mut e = Ecmp::Hash { salt: 77 };
        for h in hashes(100) {
            assert_eq!(e.pick(h, &hops, |&x| x), hops[ecmp_pick(h, 77, 3)]);
        }
    }

    #[test]
    fn random_mode_sticks_per_flow_spreads_uniformly_and_repeats() {
        let hops = [0u16, 1, 2, 3];
        let mut e = Ecmp::random(SimRng::new(1, ECMP_STREAM_BASE));
        let first: Vec<u16> = hashes(40_000).map(|h| e.pick(h, &hops, |&x| x)).collect();
        // A flow keeps its next hop ...
        let again: Vec<u16> = hashes(40_000).map(|h| e.pick(h, &hops, |&x| x)).collect();
        assert_eq!(first, again);
        // ... and new flows spread evenly (expected 10000 each, sd 87).
        for k in hops {
            let c = first.iter().filter(|&&x| x == k).count() as i64;
            assert!((c - 10_000).abs() < 450, "hop {k}: {c}");
        }
        // Same stream, same choices; another stream, others.
        let mut f = Ecmp::random(SimRng::new(1, ECMP_STREAM_BASE));
        assert_eq!(first, hashes(40_000).map(|h| f.pick(h, &hops, |&x| x)).collect::<Vec<_>>());
        let mut g = Ecmp::random(SimRng::new(1, ECMP_STREAM_BASE + 1));
        assert_ne!(first, hashes(40_000).map(|h| g.pick(h, &hops, |&x| x)).collect::<Vec<_>>());
        // A remembered hop that is not a member of this route is re-drawn.
        let h = hashes(1).next().unwrap();
        assert!([7u16, 8].contains(&e.pick(h, &[7u16, 8], |&x| x)));
    }
}
