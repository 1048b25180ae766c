//! A test-only kind: drops every `n`th TCP segment passing it on a link
//! or through a router. It exists to show (and test) that a kind is one
//! file over a packet view plus one line in `mod.rs`.

use mplab_proto::Instant;

use super::element::{Hook, Middlebox};
use super::segment::Segment;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropEveryNth {
    pub n: u64,
    seen: u64,
    pub dropped: u64,
}

impl DropEveryNth {
    pub fn new(n: u64) -> Self {
        DropEveryNth { n: n.max(1), seen: 0, dropped: 0 }
    }
}

impl<P: Segment> Middlebox<P> for DropEveryNth {
    fn kind(&self) -> &'static str {
        "fixture-drop-every-nth"
    }

    fn process(&mut self, _now: Instant, at: Hook, p: P, out: &mut Vec<P>) {
        if matches!(at, Hook::Link | Hook::Forward) {
            self.seen += 1;
            if self.seen % self.n == 0 {
                self.dropped += 1;
                return;
            }
        }
        out.push(p);
    }

    fn note(&self, at: &str) -> Option<String> {
        Some(format!("fixture at {at}: {} of {} segments dropped", self.dropped, self.seen))
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use mplab_wire::{MptcpOption, TcpHeader};

    use super::super::strip::StripMptcp;
    use super::*;

    /// The least packet a kind over [`Segment`] needs.
    #[derive(Debug, Clone)]
    struct Seg {
        tcp: TcpHeader,
    }

    impl Segment for Seg {
        fn src(&self) -> Ipv4Addr {
            Ipv4Addr::new(10, 0, 0, 1)
        }
        fn dst(&self) -> Ipv4Addr {
            Ipv4Addr::new(10, 0, 0, 2)
        }
        fn tcp(&self) -> &TcpHeader {
            &self.tcp
        }
        fn payload_len(&self) -> u32 {
            100
        }
        fn strip_mptcp(&mut self) {
            self.tcp.options.clear_mptcp();
        }
    }

    /// A place with two boxes, run the way a backend runs a chain: what one
    /// pushes goes through the next.
    #[test]
    fn a_chain_of_kinds_runs_over_any_segment_view() {
        let mut chain: Vec<Box<dyn Middlebox<Seg>>> = vec![Box::new(StripMptcp { syn_only: false }), Box::new(DropEveryNth::new(3))];
        let mut delivered = Vec::new();
        for seq in 0..9u32 {
            let mut tcp = TcpHeader { seq, ..Default::default() };
            tcp.options.push_mptcp(MptcpOption::MpPrio { backup: true, addr_id: None }).unwrap();
            let mut here = vec![Seg { tcp }];
            for mb in chain.iter_mut() {
                let mut next = Vec::new();
                for p in here {
                    mb.process(Instant(0), Hook::Link, p, &mut next);
                }
                here = next;
            }
            delivered.extend(here);
        }
        assert_eq!(delivered.iter().map(|p| p.tcp.seq).collect::<Vec<_>>(), [0, 1, 3, 4, 6, 7]);
        assert!(delivered.iter().all(|p| !p.tcp.options.has_mptcp()));
        assert_eq!(chain[1].kind(), "fixture-drop-every-nth");
        assert_eq!(chain[1].note("l0").as_deref(), Some("fixture at l0: 3 of 9 segments dropped"));
        // At a router's interfaces it lets everything by.
        let mut out = Vec::new();
        let mut d = DropEveryNth::new(1);
        Middlebox::<Seg>::process(&mut d, Instant(0), Hook::Ingress { iface: 0 }, Seg { tcp: TcpHeader::default() }, &mut out);
        assert_eq!(out.len(), 1);
    }
}
