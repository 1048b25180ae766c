//! IP + TCP packets: parsing captured frames (Ethernet, Linux cooked SLL and
//! SLL2, raw IP) into typed headers, and serialising typed headers to bytes
//! with correct checksums. IP and the fixed TCP header go through etherparse;
//! the options go through our own codec ([`TcpOptions`]).

use core::net::IpAddr;

use etherparse::{EtherType, IpNumber, LaxNetSlice, LaxSlicedPacket};

use crate::error::WireError;
use crate::tcp::{flags, TcpOptions};

/// A TCP header, typed; the payload travels separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(C)] // the fixed header before the options: see `TcpOptions`
pub struct TcpHeader {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    /// Flag octet; see [`crate::tcp::flags`].
    pub flags: u8,
    pub window: u16,
    pub urgent: u16,
    pub options: TcpOptions,
}

impl TcpHeader {
    pub fn syn(&self) -> bool {
        self.flags & flags::SYN != 0
    }
    pub fn ack_flag(&self) -> bool {
        self.flags & flags::ACK != 0
    }
    pub fn fin(&self) -> bool {
        self.flags & flags::FIN != 0
    }
    pub fn rst(&self) -> bool {
        self.flags & flags::RST != 0
    }

    /// The reset a host answers this segment with when no connection
    /// wants it (RFC 9293 3.10.7.1): none for a RST; `<SEQ=SEG.ACK><CTL=RST>`
    /// if it carried an ACK, else `<SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>`
    /// (SYN and FIN count in SEG.LEN). `payload_len` is the segment's data.
    pub fn reset_reply(&self, payload_len: u32) -> Option<TcpHeader> {
        if self.rst() {
            return None;
        }
        let mut r = TcpHeader { src_port: self.dst_port, dst_port: self.src_port, ..Default::default() };
        if self.ack_flag() {
            r.seq = self.ack;
            r.flags = flags::RST;
        } else {
            r.ack = self.seq.wrapping_add(payload_len).wrapping_add(u32::from(self.syn())).wrapping_add(u32::from(self.fin()));
            r.flags = flags::RST | flags::ACK;
        }
        Some(r)
    }

    /// Header length on the wire: 20 bytes plus padded options.
    pub fn wire_len(&self) -> Result<usize, WireError> {
        Ok(20 + self.options.wire_len()?)
    }

    /// Writes the header into `buf` with a zero checksum; returns its length.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let len = self.wire_len()?;
        if buf.len() < len {
            return Err(WireError::BufferTooSmall { need: len, have: buf.len() });
        }
        buf[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        buf[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        buf[4..8].copy_from_slice(&self.seq.to_be_bytes());
        buf[8..12].copy_from_slice(&self.ack.to_be_bytes());
        buf[12] = ((len / 4) as u8) << 4;
        buf[13] = self.flags;
        buf[14..16].copy_from_slice(&self.window.to_be_bytes());
        buf[16..18].copy_from_slice(&[0, 0]);
        buf[18..20].copy_from_slice(&self.urgent.to_be_bytes());
        self.options.encode(&mut buf[20..len])?;
        Ok(len)
    }

    /// Parses a TCP header from the start of `buf` (the IP payload);
    /// returns the header and its length. Options are parsed strictly.
    pub fn decode(buf: &[u8]) -> Result<(TcpHeader, usize), WireError> {
        Self::decode_with(buf, TcpOptions::parse)
    }

    /// As [`decode`](Self::decode) but malformed MPTCP options are skipped.
    pub fn decode_lenient(buf: &[u8]) -> Result<(TcpHeader, usize), WireError> {
        Self::decode_with(buf, TcpOptions::parse_lenient)
    }

    fn decode_with(
        buf: &[u8],
        parse: fn(&[u8]) -> Result<TcpOptions, WireError>,
    ) -> Result<(TcpHeader, usize), WireError> {
        if buf.len() < 20 {
            return Err(WireError::Truncated { need: 20, have: buf.len() });
        }
        let hlen = ((buf[12] >> 4) as usize) * 4;
        if hlen < 20 {
            return Err(WireError::Packet("TCP data offset below 5"));
        }
        if buf.len() < hlen {
            return Err(WireError::Truncated { need: hlen, have: buf.len() });
        }
        let h = TcpHeader {
            src_port: u16::from_be_bytes([buf[0], buf[1]]),
            dst_port: u16::from_be_bytes([buf[2], buf[3]]),
            seq: u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]),
            ack: u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]),
            flags: buf[13],
            window: u16::from_be_bytes([buf[14], buf[15]]),
            urgent: u16::from_be_bytes([buf[18], buf[19]]),
            options: parse(&buf[20..hlen])?,
        };
        Ok((h, hlen))
    }
}

/// Link-layer framing of a capture (pcap LINKTYPE values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Datalink {
    Ethernet,
    /// Linux cooked capture v1 (LINKTYPE_LINUX_SLL, 113).
    LinuxSll,
    /// Linux cooked capture v2 (LINKTYPE_LINUX_SLL2, 276).
    LinuxSll2,
    /// Raw IPv4 or IPv6 (LINKTYPE_RAW 101, IPV4 228, IPV6 229).
    RawIp,
}

impl Datalink {
    pub fn from_linktype(lt: u32) -> Option<Datalink> {
        match lt {
            1 => Some(Datalink::Ethernet),
            113 => Some(Datalink::LinuxSll),
            276 => Some(Datalink::LinuxSll2),
            101 | 228 | 229 | 12 | 14 => Some(Datalink::RawIp),
            _ => None,
        }
    }
    pub fn linktype(self) -> u32 {
        match self {
            Datalink::Ethernet => 1,
            Datalink::LinuxSll => 113,
            Datalink::LinuxSll2 => 276,
            Datalink::RawIp => 101,
        }
    }
}

/// A TCP segment inside an IP packet, borrowed from the frame bytes.
#[derive(Debug, Clone, Copy)]
pub struct TcpPacket<'a> {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub ttl: u8,
    pub tcp: TcpHeader,
    /// Bytes after the TCP header that the capture holds (may be shorter than
    /// `payload_len` if the capture was truncated by a snap length).
    pub payload: &'a [u8],
    /// Payload length according to the IP header.
    pub payload_len: usize,
}

/// Why a frame did not yield a TCP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotTcp {
    /// Valid frame but not IP/TCP (ARP, UDP, ICMP, a fragment, ...).
    Other,
    /// Malformed frame or TCP header.
    Malformed(WireError),
}

impl<'a> TcpPacket<'a> {
    /// Parses a captured frame of the given framing. Frames cut short by the
    /// capture's snap length still parse as long as the TCP header is whole
    /// (`payload` is then shorter than `payload_len`).
    pub fn parse_frame(link: Datalink, frame: &'a [u8]) -> Result<TcpPacket<'a>, NotTcp> {
        let trunc = |need: usize| NotTcp::Malformed(WireError::Truncated { need, have: frame.len() });
        let sliced = match link {
            Datalink::Ethernet => LaxSlicedPacket::from_ethernet(frame).map_err(|_| trunc(14))?,
            Datalink::RawIp => match frame.first().map(|b| b >> 4) {
                Some(4) | Some(6) => LaxSlicedPacket::from_ip(frame)
                    .map_err(|_| NotTcp::Malformed(WireError::Packet("IP header")))?,
                _ => return Err(NotTcp::Malformed(WireError::Packet("not an IP version"))),
            },
            // SLL: packet type, ARPHRD, addr len, addr (8), protocol (2): 16 bytes.
            Datalink::LinuxSll => {
                if frame.len() < 16 {
                    return Err(trunc(16));
                }
                let proto = u16::from_be_bytes([frame[14], frame[15]]);
                LaxSlicedPacket::from_ether_type(EtherType(proto), &frame[16..])
            }
            // SLL2: protocol (2), reserved (2), ifindex (4), hatype (2),
            // pkttype (1), addr len (1), addr (8): 20 bytes.
            Datalink::LinuxSll2 => {
                if frame.len() < 20 {
                    return Err(trunc(20));
                }
                let proto = u16::from_be_bytes([frame[0], frame[1]]);
                LaxSlicedPacket::from_ether_type(EtherType(proto), &frame[20..])
            }
        };
        let (src, dst, ttl, proto, payload, incomplete, full_len) = match &sliced.net {
            Some(LaxNetSlice::Ipv4(v4)) => {
                let h = v4.header();
                let p = v4.payload();
                let full = (h.total_len() as usize).saturating_sub(h.ihl() as usize * 4);
                (IpAddr::V4(h.source_addr()), IpAddr::V4(h.destination_addr()), h.ttl(), p.ip_number, p.payload, p.incomplete, full)
            }
            Some(LaxNetSlice::Ipv6(v6)) => {
                let h = v6.header();
                let p = v6.payload();
                let exts = v6.extensions().slice().len();
                let full = (h.payload_length() as usize).saturating_sub(exts);
                (IpAddr::V6(h.source_addr()), IpAddr::V6(h.destination_addr()), h.hop_limit(), p.ip_number, p.payload, p.incomplete, full)
            }
            None => {
                return Err(match sliced.stop_err {
                    Some(_) if matches!(link, Datalink::RawIp) => NotTcp::Malformed(WireError::Packet("IP header")),
                    _ => NotTcp::Other,
                })
            }
        };
        if proto != IpNumber::TCP {
            return Err(NotTcp::Other);
        }
        if sliced.net.as_ref().is_some_and(|n| matches!(n, LaxNetSlice::Ipv4(v) if v.is_payload_fragmented())) {
            return Err(NotTcp::Other);
        }
        let (tcp, hlen) = TcpHeader::decode(payload).map_err(NotTcp::Malformed)?;
        let full_len = if incomplete { full_len } else { payload.len() };
        Ok(TcpPacket { src, dst, ttl, tcp, payload: &payload[hlen..], payload_len: full_len.saturating_sub(hlen) })
    }

    /// Parses a raw IPv4/IPv6 packet.
    pub fn parse_ip(packet: &'a [u8]) -> Result<TcpPacket<'a>, NotTcp> {
        Self::parse_frame(Datalink::RawIp, packet)
    }
}

/// One's-complement sum helper for the TCP checksum.
fn sum16(mut acc: u32, data: &[u8]) -> u32 {
    let mut it = data.chunks_exact(2);
    for c in &mut it {
        acc += u16::from_be_bytes([c[0], c[1]]) as u32;
        acc = (acc & 0xffff) + (acc >> 16);
    }
    if let [b] = it.remainder() {
        acc += (*b as u32) << 8;
    }
    acc
}

fn finish(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// Serialises an IP packet carrying `tcp` and `payload` into `out` (cleared
/// first), with IP and TCP checksums filled in. IPv4 or IPv6 follows the
/// address family; both addresses must be of the same family.
/// An IPv4 packet of any protocol (`proto`, e.g. 132 for SCTP) around an
/// already encoded transport payload, into `out` (cleared first).
pub fn build_ipv4(src: std::net::Ipv4Addr, dst: std::net::Ipv4Addr, ttl: u8, ip_id: u16, proto: u8, payload: &[u8], out: &mut Vec<u8>) -> Result<(), WireError> {
    use etherparse::{IpNumber, Ipv4Header};
    out.clear();
    let mut h = Ipv4Header::new(payload.len() as u16, ttl, IpNumber(proto), src.octets(), dst.octets()).map_err(|_| WireError::Packet("IPv4 payload too long"))?;
    h.identification = ip_id;
    h.dont_fragment = true;
    h.header_checksum = h.calc_header_checksum();
    h.write(out).map_err(|_| WireError::Packet("IPv4 header"))?;
    out.extend_from_slice(payload);
    Ok(())
}

pub fn build_ip_tcp(src: IpAddr, dst: IpAddr, ttl: u8, ip_id: u16, tcp: &TcpHeader, payload: &[u8], out: &mut Vec<u8>) -> Result<(), WireError> {
    use etherparse::{IpNumber, Ipv4Header, Ipv6Header};
    out.clear();
    let thl = tcp.wire_len()?;
    let tcp_len = thl + payload.len();
    let pseudo_sum = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut h = Ipv4Header::new(tcp_len as u16, ttl, IpNumber::TCP, s.octets(), d.octets())
                .map_err(|_| WireError::Packet("IPv4 payload too long"))?;
            h.identification = ip_id;
            h.dont_fragment = true;
            h.header_checksum = h.calc_header_checksum();
            h.write(out).map_err(|_| WireError::Packet("IPv4 header"))?;
            let mut acc = sum16(0, &s.octets());
            acc = sum16(acc, &d.octets());
            acc + 6 + tcp_len as u32
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let h = Ipv6Header {
                traffic_class: 0,
                flow_label: Default::default(),
                payload_length: tcp_len as u16,
                next_header: IpNumber::TCP,
                hop_limit: ttl,
                source: s.octets(),
                destination: d.octets(),
            };
            h.write(out).map_err(|_| WireError::Packet("IPv6 header"))?;
            let mut acc = sum16(0, &s.octets());
            acc = sum16(acc, &d.octets());
            acc + 6 + (tcp_len as u32 & 0xffff) + ((tcp_len as u32) >> 16)
        }
        _ => return Err(WireError::Inconsistent("mixed IPv4/IPv6 addresses")),
    };
    let start = out.len();
    out.resize(start + thl, 0);
    tcp.encode(&mut out[start..])?;
    out.extend_from_slice(payload);
    let ck = finish(sum16(pseudo_sum, &out[start..]));
    out[start + 16..start + 18].copy_from_slice(&ck.to_be_bytes());
    Ok(())
}

/// Verifies the TCP checksum of a raw IPv4/IPv6 packet; `None` when the
/// packet is not complete IP/TCP.
pub fn tcp_checksum_ok(src: IpAddr, dst: IpAddr, tcp_segment: &[u8]) -> bool {
    pseudo_header_sum(src, dst, tcp_segment.len()).is_some_and(|acc| finish(sum16(acc, tcp_segment)) == 0)
}

/// The checksum to store in a raw TCP segment whose checksum field reads
/// zero: what a box that changed the segment's bytes in place writes back.
/// None for mixed IPv4/IPv6 addresses.
pub fn tcp_checksum(src: IpAddr, dst: IpAddr, tcp_segment: &[u8]) -> Option<u16> {
    pseudo_header_sum(src, dst, tcp_segment.len()).map(|acc| finish(sum16(acc, tcp_segment)))
}

/// The one's-complement sum of the TCP pseudo-header (RFC 9293 3.1,
/// RFC 8200 8.1).
fn pseudo_header_sum(src: IpAddr, dst: IpAddr, tcp_len: usize) -> Option<u32> {
    let len = tcp_len as u32;
    let acc = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => sum16(sum16(0, &s.octets()), &d.octets()),
        (IpAddr::V6(s), IpAddr::V6(d)) => sum16(sum16(0, &s.octets()), &d.octets()),
        _ => return None,
    };
    Some(acc + 6 + (len & 0xffff) + (len >> 16))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_replies_follow_rfc9293() {
        let syn = TcpHeader { src_port: 1, dst_port: 2, seq: 100, flags: flags::SYN, ..Default::default() };
        let r = syn.reset_reply(0).unwrap();
        assert_eq!((r.flags, r.seq, r.ack, r.src_port, r.dst_port), (flags::RST | flags::ACK, 0, 101, 2, 1));
        let ack = TcpHeader { src_port: 1, dst_port: 2, seq: 100, ack: 555, flags: flags::ACK, ..Default::default() };
        let r = ack.reset_reply(10).unwrap();
        assert_eq!((r.flags, r.seq), (flags::RST, 555));
        let fin = TcpHeader { seq: u32::MAX, flags: flags::FIN, ..Default::default() };
        assert_eq!(fin.reset_reply(4).unwrap().ack, 4, "FIN counts, sequence numbers wrap");
        assert!(TcpHeader { flags: flags::RST, ..Default::default() }.reset_reply(0).is_none(), "a RST is never answered");
    }
}
