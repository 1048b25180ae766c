//! Segment splitting: a box that cuts segments with more payload than
//! `size` into several, copying the options to each (as TSO does).

use mplab_proto::Instant;
use mplab_wire::tcp::flags::FIN;

use super::element::{Hook, Middlebox};
use super::segment::ModelPacket;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    pub size: u32,
}

impl<P: ModelPacket> Middlebox<P> for Split {
    fn kind(&self) -> &'static str {
        "resegment/split"
    }

    fn process(&mut self, _now: Instant, at: Hook, mut p: P, out: &mut Vec<P>) {
        if !matches!(at, Hook::Link | Hook::Forward) || p.payload_len() <= self.size {
            out.push(p);
            return;
        }
        let (total, size) = (p.payload_len(), self.size);
        let fin = p.tcp().fin();
        let mut rest = Vec::new();
        let mut off = size;
        while off < total {
            let n = size.min(total - off);
            let mut q = p.clone();
            q.tcp_mut().seq = p.tcp().seq.wrapping_add(off);
            q.set_tag(p.tag() + off as u64);
            q.set_payload_len(n);
            if off + n < total {
                q.tcp_mut().flags &= !FIN;
            }
            q.resize();
            rest.push(q);
            off += n;
        }
        if fin {
            p.tcp_mut().flags &= !FIN;
        }
        p.set_payload_len(size);
        p.resize();
        out.push(p);
        out.append(&mut rest);
    }
}
