//! Option stripping: what seed 000's Cisco ASA did to TCP option 30 (MPTCP),
//! on SYNs only or on every segment.

use mplab_proto::Instant;

use super::{resize, Hook, Middlebox};
use crate::packet::Packet;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StripMptcp {
    pub syn_only: bool,
}

impl Middlebox for StripMptcp {
    fn kind(&self) -> &'static str {
        "strip_mptcp"
    }

    fn process(&mut self, _now: Instant, at: Hook, mut p: Packet, out: &mut Vec<Packet>) {
        if matches!(at, Hook::Link | Hook::Forward) && (!self.syn_only || p.tcp.syn()) && p.tcp.options.has_mptcp() {
            p.tcp.options.clear_mptcp();
            resize(&mut p);
        }
        out.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mplab_wire::{MptcpOption, TcpHeader};

    fn pkt(flags: u8) -> Packet {
        let mut h = TcpHeader { seq: 1000, flags, ..Default::default() };
        h.options.push_mptcp(MptcpOption::MpPrio { backup: true, addr_id: None }).unwrap();
        Packet::new([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), h, 100, 0)
    }

    fn through(b: StripMptcp, at: Hook, p: Packet) -> Packet {
        let mut out = vec![];
        let mut b = b;
        b.process(Instant(0), at, p, &mut out);
        assert_eq!(out.len(), 1);
        out.pop().unwrap()
    }

    #[test]
    fn removes_option_30_and_shrinks_the_packet() {
        use mplab_wire::tcp::flags::{ACK, SYN};
        let p = pkt(ACK);
        let before = p.size;
        assert!(through(StripMptcp { syn_only: true }, Hook::Link, p.clone()).tcp.options.has_mptcp(), "not a SYN");
        let q = through(StripMptcp { syn_only: false }, Hook::Link, p.clone());
        assert!(!q.tcp.options.has_mptcp() && q.size < before);
        assert!(!through(StripMptcp { syn_only: true }, Hook::Forward, pkt(SYN)).tcp.options.has_mptcp());
        // At a node it acts on what the node forwards, not at its interfaces.
        assert!(through(StripMptcp { syn_only: false }, Hook::Ingress { iface: 0 }, p).tcp.options.has_mptcp());
    }
}
