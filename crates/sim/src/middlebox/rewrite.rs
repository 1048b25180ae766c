//! Payload rewriting: a box that changes the first payload byte of data
//! segments holding a stream offset that is a multiple of `every`, and fixes
//! the TCP checksum up, so only MPTCP's DSS checksum can notice.

use mplab_proto::Instant;

use super::{Hook, Middlebox};
use crate::packet::Packet;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rewrite {
    pub every: u64,
}

impl Rewrite {
    /// Whether `p`'s payload covers a multiple of `every` (offset 0, the
    /// start of the stream, excepted). A coalesced packet's tail run counts.
    fn hits(&self, p: &Packet) -> bool {
        let runs = match p.tail {
            Some((at, tag2)) => [(p.tag, at), (tag2, p.payload_len - at)],
            None => [(p.tag, p.payload_len), (0, 0)],
        };
        runs.into_iter().any(|(start, len)| {
            let (lo, end) = (start.max(1), start + u64::from(len));
            lo < end && (end - 1) / self.every > (lo - 1) / self.every
        })
    }
}

impl Middlebox for Rewrite {
    fn kind(&self) -> &'static str {
        "rewrite"
    }

    fn process(&mut self, _now: Instant, at: Hook, mut p: Packet, out: &mut Vec<Packet>) {
        if matches!(at, Hook::Link | Hook::Forward) && self.hits(&p) {
            p.corrupted = true;
        }
        out.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mplab_wire::TcpHeader;

    fn data(len: u32, tag: u64) -> Packet {
        Packet::new([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), TcpHeader { seq: 1, ..Default::default() }, len, tag)
    }

    fn hit(p: Packet) -> bool {
        let mut out = vec![];
        Rewrite { every: 1000 }.process(Instant(0), Hook::Link, p, &mut out);
        out[0].corrupted
    }

    #[test]
    fn marks_the_segments_holding_a_multiple_of_every() {
        assert!(!hit(data(1000, 0)), "offset 0 is the start of the stream, not a multiple");
        assert!(hit(data(1001, 0)) && hit(data(2, 999)) && hit(data(1, 1000)));
        assert!(!hit(data(998, 1001)) && !hit(data(999, 1)));
        // A coalesced packet's tail run counts too.
        let mut p = data(200, 100);
        p.tail = Some((100, 950));
        assert!(hit(p));
    }
}
