//! Datagrams carried in a byte stream: the framing of a hybrid-access
//! tunnel that puts IP datagrams (VoIP, QUIC, games) into one MPTCP
//! connection between a home gateway and a network gateway, as OpenVPN
//! over TCP does: each datagram is preceded by its length, a 16-bit
//! big-endian count of the bytes that follow.
//!
//! A stream is reliable and ordered, so the length fields alone keep the
//! two ends in step: a frame that is too long for the tunnel's MTU, or
//! whose datagram is not a well-formed IPv4 packet, is skipped whole and
//! reported, and the frames after it decode as usual. A zero-length frame
//! carries nothing (a keepalive).
//!
//! [`encode_frame`] checks a datagram at the tunnel's ingress;
//! [`FrameDecoder`] takes the stream in pieces of any size at the egress
//! and holds at most one frame's bytes.

use thiserror::Error;

/// The length prefix in front of every datagram.
pub const FRAME_HEADER: usize = 2;

/// The smallest IPv4 header (no options).
const IPV4_MIN_HEADER: usize = 20;

/// Why a datagram was not carried, or a frame not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum TunnelError {
    /// Longer than the tunnel's MTU (at the ingress: not sent; at the
    /// egress: skipped).
    #[error("datagram of {len} bytes exceeds the tunnel MTU of {mtu} bytes")]
    Oversize { len: usize, mtu: usize },
    /// Not an IPv4 packet whose header and Total Length match its bytes.
    #[error("malformed datagram ({len} bytes): {why}")]
    Malformed { len: usize, why: &'static str },
}

/// Checks that `d` is one whole IPv4 packet: version 4, a header length of
/// at least 20 bytes that fits, and a Total Length equal to its size.
pub fn check_ipv4(d: &[u8]) -> Result<(), TunnelError> {
    let bad = |why| Err(TunnelError::Malformed { len: d.len(), why });
    if d.len() < IPV4_MIN_HEADER {
        return bad("shorter than an IPv4 header");
    }
    if d[0] >> 4 != 4 {
        return bad("not IP version 4");
    }
    let ihl = usize::from(d[0] & 0x0f) * 4;
    if ihl < IPV4_MIN_HEADER || ihl > d.len() {
        return bad("bad IPv4 header length");
    }
    if usize::from(u16::from_be_bytes([d[2], d[3]])) != d.len() {
        return bad("IPv4 total length differs from the datagram's size");
    }
    Ok(())
}

/// Appends `datagram`'s frame to `out`. The datagram must be a well-formed
/// IPv4 packet of at most `mtu` bytes (`mtu` itself at most 65,535, what
/// the length field holds); otherwise nothing is appended.
pub fn encode_frame(datagram: &[u8], mtu: usize, out: &mut Vec<u8>) -> Result<(), TunnelError> {
    let mtu = mtu.min(usize::from(u16::MAX));
    if datagram.len() > mtu {
        return Err(TunnelError::Oversize { len: datagram.len(), mtu });
    }
    check_ipv4(datagram)?;
    out.extend_from_slice(&(datagram.len() as u16).to_be_bytes());
    out.extend_from_slice(datagram);
    Ok(())
}

/// Appends a keepalive (a frame of length zero) to `out`.
pub fn encode_keepalive(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0, 0]);
}

/// What the egress counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecoderStats {
    pub datagrams: u64,
    pub keepalives: u64,
    pub oversize: u64,
    pub malformed: u64,
    /// Stream bytes of the frames decoded or skipped, headers included.
    pub bytes: u64,
}

/// Where the decoder stands in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading a length field (`have` of its two bytes so far).
    Header { have: usize, first: u8 },
    /// Reading a datagram of `len` bytes into the buffer.
    Body { len: usize },
    /// Discarding `left` more bytes of an oversize frame.
    Skip { left: usize },
}

/// Incremental decoder of a frame stream: [`FrameDecoder::push`] bytes as
/// they are read, then take datagrams (or the reason one was dropped) with
/// [`FrameDecoder::next_frame`] until it returns `None`.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    mtu: usize,
    state: State,
    /// The datagram being read; at most `mtu` bytes.
    buf: Vec<u8>,
    /// Bytes pushed but not yet looked at.
    pending: std::collections::VecDeque<u8>,
    stats: DecoderStats,
}

impl FrameDecoder {
    pub fn new(mtu: usize) -> FrameDecoder {
        FrameDecoder { mtu: mtu.min(usize::from(u16::MAX)), state: State::Header { have: 0, first: 0 }, buf: Vec::new(), pending: Default::default(), stats: DecoderStats::default() }
    }

    /// Hands the decoder the next bytes of the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        self.pending.extend(bytes);
    }

    /// Bytes pushed that no whole frame has taken yet, the partial frame
    /// included: what the egress holds. With `stats().bytes`, every byte
    /// pushed.
    pub fn buffered(&self) -> usize {
        let header = match self.state {
            State::Header { have, .. } => have,
            _ => 0,
        };
        self.pending.len() + header + self.buf.len()
    }

    pub fn stats(&self) -> DecoderStats {
        self.stats
    }

    /// The next whole datagram, the reason a frame was dropped, or `None`
    /// when more bytes are needed. Keepalives are counted, not returned.
    pub fn next_frame(&mut self) -> Option<Result<Vec<u8>, TunnelError>> {
        loop {
            match self.state {
                State::Header { have, first } => {
                    let b = self.pending.pop_front()?;
                    if have == 0 {
                        self.state = State::Header { have: 1, first: b };
                        continue;
                    }
                    let len = usize::from(u16::from_be_bytes([first, b]));
                    self.stats.bytes += FRAME_HEADER as u64;
                    self.state = State::Header { have: 0, first: 0 };
                    if len == 0 {
                        self.stats.keepalives += 1;
                    } else if len > self.mtu {
                        self.stats.oversize += 1;
                        self.state = State::Skip { left: len };
                        return Some(Err(TunnelError::Oversize { len, mtu: self.mtu }));
                    } else {
                        self.buf.clear();
                        self.buf.reserve(len);
                        self.state = State::Body { len };
                    }
                }
                State::Skip { left } => {
                    let n = left.min(self.pending.len());
                    self.pending.drain(..n);
                    self.stats.bytes += n as u64;
                    if n < left {
                        self.state = State::Skip { left: left - n };
                        return None;
                    }
                    self.state = State::Header { have: 0, first: 0 };
                }
                State::Body { len } => {
                    let n = (len - self.buf.len()).min(self.pending.len());
                    self.buf.extend(self.pending.drain(..n));
                    if self.buf.len() < len {
                        return None;
                    }
                    self.stats.bytes += len as u64;
                    self.state = State::Header { have: 0, first: 0 };
                    let d = std::mem::take(&mut self.buf);
                    return Some(match check_ipv4(&d) {
                        Ok(()) => {
                            self.stats.datagrams += 1;
                            Ok(d)
                        }
                        Err(e) => {
                            self.stats.malformed += 1;
                            Err(e)
                        }
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal IPv4 packet of `len` bytes (header + zero payload).
    pub(crate) fn ipv4(len: usize, tag: u8) -> Vec<u8> {
        let mut d = vec![tag; len];
        d[0] = 0x45;
        d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        d
    }

    #[test]
    fn frames_round_trip_through_one_byte_pieces() {
        let mut s = Vec::new();
        let ds = [ipv4(20, 1), ipv4(200, 2), ipv4(1400, 3)];
        for d in &ds {
            encode_frame(d, 1400, &mut s).unwrap();
        }
        encode_keepalive(&mut s);
        let mut dec = FrameDecoder::new(1400);
        let mut got = Vec::new();
        for b in &s {
            dec.push(std::slice::from_ref(b));
            while let Some(f) = dec.next_frame() {
                got.push(f.unwrap());
            }
        }
        assert_eq!(got, ds);
        let st = dec.stats();
        assert_eq!((st.datagrams, st.keepalives, st.bytes), (3, 1, s.len() as u64));
        assert_eq!(dec.buffered(), 0);
    }

    #[test]
    fn the_ingress_refuses_what_the_tunnel_cannot_carry() {
        let mut out = Vec::new();
        assert_eq!(encode_frame(&ipv4(1401, 0), 1400, &mut out), Err(TunnelError::Oversize { len: 1401, mtu: 1400 }));
        assert!(matches!(encode_frame(&[0x60; 40], 1400, &mut out), Err(TunnelError::Malformed { why: "not IP version 4", .. })));
        let mut short_total = ipv4(100, 0);
        short_total[3] = 99;
        assert!(matches!(encode_frame(&short_total, 1400, &mut out), Err(TunnelError::Malformed { .. })));
        assert!(matches!(encode_frame(&[0x45; 10], 1400, &mut out), Err(TunnelError::Malformed { .. })));
        assert!(out.is_empty(), "nothing is written for a refused datagram");
    }

    #[test]
    fn a_bad_frame_is_skipped_and_the_stream_stays_in_step() {
        // A peer with a larger MTU, and a frame that is not IPv4.
        let mut s = Vec::new();
        encode_frame(&ipv4(100, 1), 1400, &mut s).unwrap();
        encode_frame(&ipv4(1400, 2), 1400, &mut s).unwrap();
        s.extend_from_slice(&30u16.to_be_bytes());
        s.extend_from_slice(&[0xff; 30]);
        encode_frame(&ipv4(60, 3), 1400, &mut s).unwrap();
        let mut dec = FrameDecoder::new(1000);
        dec.push(&s);
        let got: Vec<_> = std::iter::from_fn(|| dec.next_frame()).collect();
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].as_deref(), Ok(&ipv4(100, 1)[..]));
        assert_eq!(got[1], Err(TunnelError::Oversize { len: 1400, mtu: 1000 }));
        assert!(matches!(got[2], Err(TunnelError::Malformed { len: 30, .. })));
        assert_eq!(got[3].as_deref(), Ok(&ipv4(60, 3)[..]));
        let st = dec.stats();
        assert_eq!((st.datagrams, st.oversize, st.malformed), (2, 1, 1));
    }

    #[test]
    fn an_oversize_frame_split_across_pushes_is_skipped_whole() {
        let mut s = Vec::new();
        encode_frame(&ipv4(1500, 9), 1500, &mut s).unwrap();
        encode_frame(&ipv4(40, 4), 1500, &mut s).unwrap();
        let mut dec = FrameDecoder::new(576);
        let mut got = Vec::new();
        for c in s.chunks(7) {
            dec.push(c);
            while let Some(f) = dec.next_frame() {
                got.push(f);
            }
            assert!(dec.buffered() <= 576 + 7 + 2, "the decoder holds at most one frame");
        }
        assert_eq!(got, vec![Err(TunnelError::Oversize { len: 1500, mtu: 576 }), Ok(ipv4(40, 4))]);
    }
}
