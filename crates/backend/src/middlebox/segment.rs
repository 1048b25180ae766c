//! What a middlebox reads and changes of a packet. Each backend's packet
//! type provides it: the simulator's modelled packet (typed headers, the
//! payload as stream offsets) and the link emulator's Ethernet frames.
//! A kind asks for the least it needs, so the kinds that need only
//! [`Segment`] run on both.

use std::net::Ipv4Addr;

use mplab_wire::TcpHeader;

/// A TCP segment as every backend can show it.
pub trait Segment {
    fn src(&self) -> Ipv4Addr;
    fn dst(&self) -> Ipv4Addr;
    fn tcp(&self) -> &TcpHeader;
    fn payload_len(&self) -> u32;
    /// It carries an MPTCP option (TCP option 30).
    fn has_mptcp(&self) -> bool {
        self.tcp().options.has_mptcp()
    }
    /// Removes every MPTCP option (TCP option 30). How is the packet
    /// type's business: the simulator's packet drops the options and
    /// shrinks; a frame on a real link keeps its length (the option bytes
    /// become NOPs, as iptables' TCPOPTSTRIP does) and its checksum is
    /// fixed.
    fn strip_mptcp(&mut self);
}

/// A packet whose every header field a box may change, whose payload is
/// known by its stream offsets (`tag`: the sender's offset of the first
/// byte; `tail`: where a second run starts), and which copies cheaply:
/// what the kinds that split, merge, rewrite or forge need. The simulator's
/// packet is one.
pub trait ModelPacket: Segment + Clone {
    /// A fresh segment (a forged one): not corrupted, no tail.
    fn new_segment(src: Ipv4Addr, dst: Ipv4Addr, tcp: TcpHeader, payload_len: u32, tag: u64) -> Self;
    fn set_src(&mut self, a: Ipv4Addr);
    fn set_dst(&mut self, a: Ipv4Addr);
    /// The TCP header to change; call [`ModelPacket::resize`] after
    /// changing its options.
    fn tcp_mut(&mut self) -> &mut TcpHeader;
    fn set_payload_len(&mut self, n: u32);
    fn tag(&self) -> u64;
    fn set_tag(&mut self, tag: u64);
    /// A merged packet's second run of stream offsets: from payload byte
    /// `.0` on, the bytes at stream offset `.1`.
    fn tail(&self) -> Option<(u32, u64)>;
    fn set_tail(&mut self, tail: Option<(u32, u64)>);
    /// Payload bytes were changed on the way (the receiver finds out).
    fn corrupted(&self) -> bool;
    fn set_corrupted(&mut self, c: bool);
    /// The egress interface a box at the current node chose (a fwmark
    /// routing rule): routing takes it instead of the destination's route.
    fn set_egress(&mut self, iface: u16);
    /// Recomputes the bytes on the wire after a box changed the options
    /// or the payload length.
    fn resize(&mut self);
    /// The four-tuple, for per-flow state.
    fn flow_key(&self) -> (u32, u32, u16, u16) {
        (u32::from(self.src()), u32::from(self.dst()), self.tcp().src_port, self.tcp().dst_port)
    }
}
