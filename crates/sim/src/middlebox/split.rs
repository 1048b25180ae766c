//! Segment splitting: a box that cuts segments with more payload than
//! `size` into several, copying the options to each (as TSO does).

use mplab_proto::Instant;

use super::{resize, Hook, Middlebox};
use crate::packet::Packet;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    pub size: u32,
}

impl Middlebox for Split {
    fn kind(&self) -> &'static str {
        "resegment/split"
    }

    fn process(&mut self, _now: Instant, at: Hook, mut p: Packet, out: &mut Vec<Packet>) {
        if !matches!(at, Hook::Link | Hook::Forward) || p.payload_len <= self.size {
            out.push(p);
            return;
        }
        let (total, size) = (p.payload_len, self.size);
        let fin = p.tcp.fin();
        let mut rest = Vec::new();
        let mut off = size;
        while off < total {
            let n = size.min(total - off);
            let mut q = p.clone();
            q.tcp.seq = p.tcp.seq.wrapping_add(off);
            q.tag = p.tag + off as u64;
            q.payload_len = n;
            if off + n < total {
                q.tcp.flags &= !mplab_wire::tcp::flags::FIN;
            }
            resize(&mut q);
            rest.push(q);
            off += n;
        }
        if fin {
            p.tcp.flags &= !mplab_wire::tcp::flags::FIN;
        }
        p.payload_len = size;
        resize(&mut p);
        out.push(p);
        out.append(&mut rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mplab_wire::{MptcpOption, TcpHeader};

    #[test]
    fn keeps_sequence_tags_and_fin_on_the_last() {
        let mut h = TcpHeader { seq: 1000, flags: mplab_wire::tcp::flags::ACK | mplab_wire::tcp::flags::FIN, ..Default::default() };
        h.options.push_mptcp(MptcpOption::MpPrio { backup: true, addr_id: None }).unwrap();
        let p = Packet::new([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), h, 1000, 5000);
        let mut out = vec![];
        Split { size: 400 }.process(Instant(0), Hook::Link, p, &mut out);
        let got: Vec<_> = out.iter().map(|q| (q.tcp.seq, q.tag, q.payload_len, q.tcp.fin())).collect();
        assert_eq!(got, [(1000, 5000, 400, false), (1400, 5400, 400, false), (1800, 5800, 200, true)]);
        assert!(out.iter().all(|q| q.tcp.options.has_mptcp()), "options copied like TSO");
    }
}
