//! The simulator's packet as the middlebox kinds see it: typed headers to
//! change in place, the payload as stream offsets, the wire size kept up
//! to date.

use std::net::Ipv4Addr;

use mplab_backend::middlebox::{ModelPacket, Segment};
use mplab_wire::TcpHeader;

use crate::packet::{Packet, IPV4_HEADER};

/// Recomputes a packet's wire size after a box changed its options or
/// payload length.
pub fn resize(p: &mut Packet) {
    let thl = p.tcp.wire_len().unwrap_or(60) as u32;
    p.size = IPV4_HEADER + thl + p.payload_len;
}

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
