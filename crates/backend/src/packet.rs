//! The model packet: typed IPv4 + TCP headers from crates/wire and a
//! payload *length*. TCP payload bytes are never stored; the `tag` (the
//! sender's stream offset of the first payload byte) lets a receiver check
//! placement and lets a capture regenerate the bytes. SCTP and UDP packets
//! carry their bytes. It is what the simulator moves on its links and what
//! the transport endpoints ([`crate::transport`]) read and write, on every
//! backend that drives them.

use core::net::Ipv4Addr;

use mplab_wire::TcpHeader;

use crate::apps::fill_pattern;
use crate::middlebox::{ModelPacket, Segment};

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
    #[inline]
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr, tcp: TcpHeader, payload_len: u32, tag: u64) -> Packet {
        Packet { src, dst, ttl: 64, size: wire_size(&tcp, payload_len), tcp, payload_len, tag, dst_idx: NO_ADDR, corrupted: false, tail: None, via: None, sctp: None, udp: None }
    }

    /// Makes `self` an SCTP packet in place (see [`Packet::sctp`]).
    #[inline]
    pub fn set_sctp(&mut self, src: Ipv4Addr, dst: Ipv4Addr, src_port: u16, dst_port: u16, bytes: Box<[u8]>) {
        self.set(src, dst, &TcpHeader { src_port, dst_port, ..TcpHeader::default() }, 0, 0);
        self.size = IPV4_HEADER + bytes.len() as u32;
        self.sctp = Some(bytes);
    }

    /// Makes `self` a UDP datagram in place (see [`Packet::udp`]).
    #[inline]
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
    #[inline]
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
    #[inline]
    pub fn flow_key(&self) -> (u32, u32, u16, u16) {
        (u32::from(self.src), u32::from(self.dst), self.tcp.src_port, self.tcp.dst_port)
    }
}

/// Recomputes a packet's wire size after a middlebox changed its options
/// or payload length.
#[inline]
pub fn resize(p: &mut Packet) {
    let thl = p.tcp.wire_len().unwrap_or(60) as u32;
    p.size = IPV4_HEADER + thl + p.payload_len;
}

/// The model packet as the middlebox kinds see it: typed headers to change
/// in place, the payload as stream offsets, the wire size kept up to date.
impl Segment for Packet {
    #[inline]
    fn src(&self) -> Ipv4Addr {
        self.src
    }
    #[inline]
    fn dst(&self) -> Ipv4Addr {
        self.dst
    }
    #[inline]
    fn tcp(&self) -> &TcpHeader {
        &self.tcp
    }
    #[inline]
    fn payload_len(&self) -> u32 {
        self.payload_len
    }
    /// The options go, and the packet shrinks by their bytes.
    fn strip_mptcp(&mut self) {
        self.tcp.options.clear_mptcp();
        resize(self);
    }
}

impl ModelPacket for Packet {
    fn new_segment(src: Ipv4Addr, dst: Ipv4Addr, tcp: TcpHeader, payload_len: u32, tag: u64) -> Self {
        Packet::new(src, dst, tcp, payload_len, tag)
    }
    fn set_src(&mut self, a: Ipv4Addr) {
        self.src = a;
    }
    fn set_dst(&mut self, a: Ipv4Addr) {
        self.dst = a;
    }
    fn tcp_mut(&mut self) -> &mut TcpHeader {
        &mut self.tcp
    }
    fn set_payload_len(&mut self, n: u32) {
        self.payload_len = n;
    }
    fn tag(&self) -> u64 {
        self.tag
    }
    fn set_tag(&mut self, tag: u64) {
        self.tag = tag;
    }
    fn tail(&self) -> Option<(u32, u64)> {
        self.tail
    }
    fn set_tail(&mut self, tail: Option<(u32, u64)>) {
        self.tail = tail;
    }
    fn corrupted(&self) -> bool {
        self.corrupted
    }
    fn set_corrupted(&mut self, c: bool) {
        self.corrupted = c;
    }
    fn set_egress(&mut self, iface: u16) {
        self.via = Some(iface);
    }
    fn resize(&mut self) {
        resize(self);
    }
    fn flow_key(&self) -> (u32, u32, u16, u16) {
        Packet::flow_key(self)
    }
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
}
