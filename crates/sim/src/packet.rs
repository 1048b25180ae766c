//! What travels on simulated links: typed IPv4 + TCP headers from
//! crates/wire and a payload *length*. Payload bytes are never stored; the
//! `tag` (the sender's stream offset of the first payload byte) lets a
//! receiver check placement and lets the pcap writer regenerate the bytes.

use core::net::Ipv4Addr;

use mplab_wire::TcpHeader;

/// IPv4 header without options.
pub const IPV4_HEADER: u32 = 20;

#[derive(Debug, Clone)]
pub struct Packet {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
    pub tcp: TcpHeader,
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
}

/// `dst_idx` of an address that belongs to no interface.
pub const NO_ADDR: u32 = u32::MAX;

impl Packet {
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr, tcp: TcpHeader, payload_len: u32, tag: u64) -> Packet {
        // Options that do not encode (more than 40 bytes) would be a stack
        // bug; count them at the maximum header size rather than panic.
        let thl = tcp.wire_len().unwrap_or(60) as u32;
        Packet { src, dst, ttl: 64, tcp, payload_len, tag, size: IPV4_HEADER + thl + payload_len, dst_idx: NO_ADDR }
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

#[inline]
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
