//! The part of a segment's MPTCP option a balancer needs: the keys of
//! MP_CAPABLE and the token of an MP_JOIN SYN. Read from parsed options
//! (the simulator) or straight from the option bytes of a packet (the
//! kernel backend's forwarder), without allocating and without trusting
//! any length.

use mplab_wire::mptcp::{MpJoin, MptcpOption};
use mplab_wire::tcp::TcpOptions;

const KIND_MPTCP: u8 = 30;
const SUBTYPE_CAPABLE: u8 = 0;
const SUBTYPE_JOIN: u8 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MptcpSeen {
    /// No MPTCP option.
    #[default]
    None,
    /// MP_CAPABLE (RFC 8684 3.1): the sender's key from the SYN/ACK on,
    /// the receiver's too in the third ACK and the first data segment.
    Capable { sender_key: Option<u64>, receiver_key: Option<u64> },
    /// An MP_JOIN SYN: the token of the connection it joins.
    JoinSyn { token: u32 },
    /// Another MPTCP option (DSS, ADD_ADDR, a join's later stages...).
    Other,
    /// Option 30 with a length that does not fit its subtype or the header.
    Malformed,
}

impl MptcpSeen {
    pub fn from_options(o: &TcpOptions) -> MptcpSeen {
        let mut seen = MptcpSeen::None;
        for opt in o.mptcp() {
            match *opt {
                MptcpOption::MpCapable(ref c) => return MptcpSeen::Capable { sender_key: c.sender_key, receiver_key: c.receiver_key },
                MptcpOption::MpJoin(MpJoin::Syn { token, .. }) => return MptcpSeen::JoinSyn { token },
                _ => seen = MptcpSeen::Other,
            }
        }
        seen
    }

    /// From the options area of a TCP header (the bytes after the fixed 20).
    pub fn from_option_bytes(b: &[u8]) -> MptcpSeen {
        let mut seen = MptcpSeen::None;
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                0 => break,
                1 => i += 1,
                kind => {
                    let Some(&len) = b.get(i + 1) else { return MptcpSeen::Malformed };
                    let len = usize::from(len);
                    if len < 2 || i + len > b.len() {
                        return if kind == KIND_MPTCP { MptcpSeen::Malformed } else { seen };
                    }
                    if kind == KIND_MPTCP {
                        let o = &b[i..i + len];
                        match parse_one(o) {
                            MptcpSeen::Other => seen = MptcpSeen::Other,
                            s => return s,
                        }
                    }
                    i += len;
                }
            }
        }
        seen
    }
}

fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// One option 30, kind and length included (`o.len() >= 2`).
fn parse_one(o: &[u8]) -> MptcpSeen {
    let Some(&st) = o.get(2) else { return MptcpSeen::Malformed };
    match st >> 4 {
        SUBTYPE_CAPABLE => match o.len() {
            // v1 SYN carries no key; v0's SYN (12) carries the sender's.
            4 => MptcpSeen::Capable { sender_key: None, receiver_key: None },
            12 => MptcpSeen::Capable { sender_key: Some(be64(&o[4..])), receiver_key: None },
            20 | 22 | 24 => MptcpSeen::Capable { sender_key: Some(be64(&o[4..])), receiver_key: Some(be64(&o[12..])) },
            _ => MptcpSeen::Malformed,
        },
        SUBTYPE_JOIN => match o.len() {
            12 => MptcpSeen::JoinSyn { token: u32::from_be_bytes([o[4], o[5], o[6], o[7]]) },
            16 | 24 => MptcpSeen::Other,
            _ => MptcpSeen::Malformed,
        },
        _ => MptcpSeen::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mplab_wire::mptcp::{capable_flags, MpCapable};
    use proptest::prelude::*;

    fn encoded(o: MptcpOption) -> (TcpOptions, Vec<u8>) {
        let mut t = TcpOptions::default();
        t.push_mptcp(o).unwrap();
        let mut buf = vec![0u8; 40];
        let n = t.encode(&mut buf).unwrap();
        buf.truncate(n);
        (t, buf)
    }

    #[test]
    fn bytes_and_parsed_options_agree() {
        let cap = |s, r| MptcpOption::MpCapable(MpCapable { version: 1, flags: capable_flags::H, sender_key: s, receiver_key: r, data_len: None, checksum: None });
        for o in [
            cap(None, None),
            cap(Some(0x0102_0304_0506_0708), None),
            cap(Some(1), Some(0xdead_beef_0000_0001)),
            MptcpOption::MpJoin(MpJoin::Syn { backup: false, addr_id: 2, token: 0xabcd_0123, nonce: 7 }),
            MptcpOption::MpJoin(MpJoin::SynAck { backup: false, addr_id: 2, hmac: 1, nonce: 7 }),
        ] {
            let (t, b) = encoded(o);
            assert_eq!(MptcpSeen::from_options(&t), MptcpSeen::from_option_bytes(&b), "{o:?}");
            assert_ne!(MptcpSeen::from_option_bytes(&b), MptcpSeen::None);
        }
        assert_eq!(MptcpSeen::from_option_bytes(&[30, 12, 0x10, 0, 0xab, 0xcd, 1, 35, 0, 0, 0, 7]), MptcpSeen::JoinSyn { token: 0xabcd_0123 });
    }

    #[test]
    fn bad_lengths_are_malformed_not_a_panic() {
        assert_eq!(MptcpSeen::from_option_bytes(&[30, 40, 0]), MptcpSeen::Malformed);
        assert_eq!(MptcpSeen::from_option_bytes(&[30]), MptcpSeen::Malformed);
        assert_eq!(MptcpSeen::from_option_bytes(&[30, 2]), MptcpSeen::Malformed);
        assert_eq!(MptcpSeen::from_option_bytes(&[30, 7, 0x00, 0x81, 0, 0, 0]), MptcpSeen::Malformed);
        assert_eq!(MptcpSeen::from_option_bytes(&[1, 1, 2, 4, 5, 180]), MptcpSeen::None);
    }

    proptest! {
        #[test]
        fn any_bytes_parse_without_panic(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = MptcpSeen::from_option_bytes(&b);
        }
    }
}
