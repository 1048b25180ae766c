//! An Ethernet frame of the link emulator as the middlebox kinds see it
//! ([`mplab_backend::middlebox::Segment`]): the kinds that only edit a
//! segment (option stripping) run on the frames of a link, the same boxes
//! the simulator runs. Edits happen in place and keep the frame's length:
//! stripped options become NOPs, as iptables' TCPOPTSTRIP or a Cisco ASA
//! do, and the TCP checksum is fixed.

use std::net::Ipv4Addr;

use mplab_backend::middlebox::strip::StripMptcp;
use mplab_backend::middlebox::{Hook, Middlebox, Segment};
use mplab_proto::Instant;
use mplab_wire::packet::tcp_checksum;
use mplab_wire::tcp::TcpOptions;
use mplab_wire::TcpHeader;

const ETH_HLEN: usize = 14;
const TCP_OPT_MPTCP: u8 = 30;

/// A well-formed first fragment of an IPv4 TCP segment in an Ethernet
/// frame, its header parsed, its bytes borrowed for in-place edits.
pub struct Frame<'a> {
    bytes: &'a mut [u8],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    tcp: TcpHeader,
    /// Where the TCP header starts, its length, and the segment's length
    /// by the IP header (Ethernet padding excluded).
    tcp_at: usize,
    tcp_hlen: usize,
    seg_len: usize,
    /// A box changed the bytes.
    pub changed: bool,
}

impl<'a> Frame<'a> {
    /// The frame's segment; None for anything that is not a well-formed
    /// first fragment of an IPv4 TCP segment (left alone by every box).
    pub fn parse(frame: &'a mut [u8]) -> Option<Frame<'a>> {
        if frame.len() < ETH_HLEN + 20 || frame[12..14] != [0x08, 0x00] {
            return None;
        }
        let ip = &frame[ETH_HLEN..];
        if ip[0] >> 4 != 4 {
            return None;
        }
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
        if ip[9] != 6 || ihl < 20 || frag != 0 || total > ip.len() || total < ihl + 20 {
            return None;
        }
        let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
        let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
        let t = ETH_HLEN + ihl;
        let doff = usize::from(frame[t + 12] >> 4) * 4;
        if doff < 20 || t + doff > ETH_HLEN + total {
            return None;
        }
        let b = &frame[t..];
        // Options wire cannot read leave the header without options: the
        // boxes look at option 30 in the bytes themselves.
        let tcp = TcpHeader {
            src_port: u16::from_be_bytes([b[0], b[1]]),
            dst_port: u16::from_be_bytes([b[2], b[3]]),
            seq: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            ack: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
            flags: b[13],
            window: u16::from_be_bytes([b[14], b[15]]),
            urgent: u16::from_be_bytes([b[18], b[19]]),
            options: TcpOptions::parse_lenient(&b[20..doff]).unwrap_or_default(),
        };
        Some(Frame { bytes: frame, src, dst, tcp, tcp_at: t, tcp_hlen: doff, seg_len: total - ihl, changed: false })
    }

    /// Every option of kind `kind` in the header, as byte ranges; the walk
    /// stops at the end-of-list option or at a malformed length.
    fn options_of(&self, kind: u8) -> Vec<std::ops::Range<usize>> {
        let mut found = Vec::new();
        let (mut i, end) = (self.tcp_at + 20, self.tcp_at + self.tcp_hlen);
        let f = &self.bytes;
        while i < end {
            match f[i] {
                0 => break,
                1 => i += 1,
                k => {
                    if i + 1 >= end {
                        break;
                    }
                    let len = usize::from(f[i + 1]);
                    if len < 2 || i + len > end {
                        break;
                    }
                    if k == kind {
                        found.push(i..i + len);
                    }
                    i += len;
                }
            }
        }
        found
    }

    /// Rewrites the TCP checksum after an in-place edit.
    fn fix_checksum(&mut self) {
        let (t, n) = (self.tcp_at, self.seg_len);
        self.bytes[t + 16..t + 18].fill(0);
        let c = tcp_checksum(self.src.into(), self.dst.into(), &self.bytes[t..t + n]).expect("both IPv4");
        self.bytes[t + 16..t + 18].copy_from_slice(&c.to_be_bytes());
    }
}

impl Segment for Frame<'_> {
    fn src(&self) -> Ipv4Addr {
        self.src
    }
    fn dst(&self) -> Ipv4Addr {
        self.dst
    }
    fn tcp(&self) -> &TcpHeader {
        &self.tcp
    }
    fn payload_len(&self) -> u32 {
        (self.seg_len - self.tcp_hlen) as u32
    }
    /// By the bytes: an option 30 wire cannot parse is stripped too.
    fn has_mptcp(&self) -> bool {
        !self.options_of(TCP_OPT_MPTCP).is_empty()
    }
    /// The option bytes become NOPs: the frame keeps its length.
    fn strip_mptcp(&mut self) {
        let found = self.options_of(TCP_OPT_MPTCP);
        for r in &found {
            self.bytes[r.clone()].fill(1);
        }
        if !found.is_empty() {
            self.tcp.options.clear_mptcp();
            self.fix_checksum();
            self.changed = true;
        }
    }
}

/// Runs a link's option-stripping box on one frame (every segment, or
/// SYNs only when `syn_only`); returns whether the frame changed.
pub fn strip_mptcp(frame: &mut [u8], syn_only: bool) -> bool {
    let Some(f) = Frame::parse(frame) else { return false };
    let mut out = Vec::with_capacity(1);
    StripMptcp { syn_only }.process(Instant(0), Hook::Link, f, &mut out);
    out.pop().is_some_and(|f| f.changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The TCP segment of an Ethernet/IPv4 frame, with its addresses.
    fn segment(frame: &[u8]) -> (std::net::IpAddr, std::net::IpAddr, &[u8]) {
        let ip = &frame[ETH_HLEN..];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let addr = |o: usize| std::net::IpAddr::from([ip[o], ip[o + 1], ip[o + 2], ip[o + 3]]);
        (addr(12), addr(16), &ip[ihl..total])
    }

    fn checksum_ok(frame: &[u8]) -> bool {
        let (src, dst, seg) = segment(frame);
        mplab_wire::packet::tcp_checksum_ok(src, dst, seg)
    }

    /// An Ethernet/IPv4/TCP SYN with MSS, MP_CAPABLE (12 bytes) and a
    /// 3-byte payload, valid checksum.
    fn syn(flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12] = 8;
        let opts: Vec<u8> = vec![2, 4, 5, 0xb4, 30, 12, 0x01, 0x81, 1, 2, 3, 4, 5, 6, 7, 8];
        let tcp_len = 20 + opts.len();
        let total = 20 + tcp_len + 3;
        let mut ip = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1];
        let mut tcp = vec![0xc0, 0x00, 0x13, 0x89, 0, 0, 0, 1, 0, 0, 0, 0, ((tcp_len / 4) << 4) as u8, flags, 0xff, 0xff, 0, 0, 0, 0];
        tcp.extend_from_slice(&opts);
        tcp.extend_from_slice(b"abc");
        f.append(&mut ip);
        f.append(&mut tcp);
        f.extend_from_slice(&[0, 0]); // Ethernet padding must be ignored
        let (src, dst, seg) = segment(&f);
        let ck = mplab_wire::packet::tcp_checksum(src, dst, seg).expect("an IPv4 segment");
        f[34 + 16..34 + 18].copy_from_slice(&ck.to_be_bytes());
        assert!(checksum_ok(&f));
        f
    }

    #[test]
    fn strips_option_30_and_fixes_checksum() {
        let mut f = syn(0x02);
        assert!(strip_mptcp(&mut f, false));
        assert_eq!(&f[54..58], &[2, 4, 5, 0xb4], "MSS kept");
        assert!(f[58..70].iter().all(|&b| b == 1), "MP_CAPABLE became NOPs");
        assert!(checksum_ok(&f));
        assert_eq!(&f[70..73], b"abc");
        // Idempotent: nothing left to strip.
        assert!(!strip_mptcp(&mut f, false));
    }

    #[test]
    fn syn_only_leaves_other_segments() {
        let mut f = syn(0x10);
        let before = f.clone();
        assert!(!strip_mptcp(&mut f, true));
        assert_eq!(f, before);
        assert!(strip_mptcp(&mut f, false));
        let mut s = syn(0x12);
        assert!(strip_mptcp(&mut s, true), "SYN/ACK is a SYN");
    }

    #[test]
    fn ignores_non_tcp_and_garbage() {
        let mut arp = vec![0u8; 60];
        arp[12] = 8;
        arp[13] = 6;
        assert!(!strip_mptcp(&mut arp, false));
        let mut f = syn(0x02);
        f[23] = 17; // UDP
        assert!(!strip_mptcp(&mut f, false));
        let mut g = syn(0x02);
        g[59] = 40; // option length runs past the header
        assert!(!strip_mptcp(&mut g, false));
        for n in 0..g.len() {
            let mut cut = syn(0x02)[..n].to_vec();
            let _ = strip_mptcp(&mut cut, false);
        }
    }
}
