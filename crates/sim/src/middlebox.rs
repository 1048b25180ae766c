//! Middleboxes on the path: what seed 000's Cisco ASA did to option 30, and
//! what TSO-like boxes do to segment boundaries. They act on packets as a
//! link direction sends them or as a router forwards them.

use mplab_scenario::network::{Direction, MiddleboxAction, Network, Placement, ResegmentMode, StripOn};

use crate::packet::{Packet, IPV4_HEADER};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Remove every MPTCP option (kind 30), on SYNs only or on all segments.
    StripMptcp { syn_only: bool },
    /// Cut segments with more payload than `size` into several (options
    /// copied to each, as TSO does).
    Split { size: u32 },
}

/// The middleboxes of a network, indexed for the per-packet path.
#[derive(Debug, Default)]
pub struct Middleboxes {
    /// Per link direction (`2 * link + dir`).
    pub on_link: Vec<Vec<Action>>,
    /// Per node (applied to packets it forwards).
    pub on_node: Vec<Vec<Action>>,
}

impl Middleboxes {
    pub fn new(net: &Network) -> Self {
        let mut m = Middleboxes { on_link: vec![Vec::new(); 2 * net.links.len()], on_node: vec![Vec::new(); net.nodes.len()] };
        for mb in &net.middleboxes {
            let a = match mb.action {
                MiddleboxAction::StripMptcp { on } => Action::StripMptcp { syn_only: on == StripOn::Syn },
                MiddleboxAction::Resegment { mode: ResegmentMode::Split, size } => Action::Split { size: size.unwrap_or(536).max(1).min(u32::MAX as u64) as u32 },
                // Refused up front by `transport::unsupported`.
                MiddleboxAction::Resegment { mode: ResegmentMode::Coalesce, .. } | MiddleboxAction::Nat { .. } => continue,
            };
            match &mb.placement {
                Placement::Link { link, direction, .. } => {
                    let dirs: &[usize] = match direction {
                        Direction::Ab => &[0],
                        Direction::Ba => &[1],
                        Direction::Both => &[0, 1],
                    };
                    for d in dirs {
                        m.on_link[2 * link + d].push(a);
                    }
                }
                Placement::Node { node, .. } => m.on_node[*node].push(a),
            }
        }
        m
    }
}

fn resize(p: &mut Packet) {
    let thl = p.tcp.wire_len().unwrap_or(60) as u32;
    p.size = IPV4_HEADER + thl + p.payload_len;
}

/// Applies `actions` to `p`; extra packets a split creates go to `extra`.
pub fn apply(actions: &[Action], p: &mut Packet, extra: &mut Vec<Packet>) {
    for a in actions {
        match *a {
            Action::StripMptcp { syn_only } => {
                if (!syn_only || p.tcp.syn()) && p.tcp.options.has_mptcp() {
                    p.tcp.options.clear_mptcp();
                    resize(p);
                }
            }
            Action::Split { size } => {
                if p.payload_len <= size {
                    continue;
                }
                let fin = p.tcp.fin();
                let total = p.payload_len;
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
                    extra.push(q);
                    off += n;
                }
                if fin {
                    p.tcp.flags &= !mplab_wire::tcp::flags::FIN;
                }
                p.payload_len = size;
                resize(p);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mplab_wire::{MptcpOption, TcpHeader};

    fn pkt(len: u32) -> Packet {
        let mut h = TcpHeader { seq: 1000, flags: mplab_wire::tcp::flags::ACK | mplab_wire::tcp::flags::FIN, ..Default::default() };
        h.options.push_mptcp(MptcpOption::MpPrio { backup: true, addr_id: None }).unwrap();
        Packet::new([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), h, len, 5000)
    }

    #[test]
    fn strip_removes_option_30_and_shrinks_the_packet() {
        let mut p = pkt(100);
        let before = p.size;
        let mut extra = vec![];
        apply(&[Action::StripMptcp { syn_only: true }], &mut p, &mut extra);
        assert!(p.tcp.options.has_mptcp(), "not a SYN");
        apply(&[Action::StripMptcp { syn_only: false }], &mut p, &mut extra);
        assert!(!p.tcp.options.has_mptcp());
        assert!(p.size < before);
    }

    #[test]
    fn split_keeps_sequence_tags_and_fin_on_the_last() {
        let mut p = pkt(1000);
        let mut extra = vec![];
        apply(&[Action::Split { size: 400 }], &mut p, &mut extra);
        assert_eq!(p.payload_len, 400);
        assert!(!p.tcp.fin());
        assert_eq!(extra.len(), 2);
        assert_eq!((extra[0].tcp.seq, extra[0].tag, extra[0].payload_len), (1400, 5400, 400));
        assert_eq!((extra[1].tcp.seq, extra[1].tag, extra[1].payload_len), (1800, 5800, 200));
        assert!(extra[1].tcp.fin() && !extra[0].tcp.fin());
        assert!(extra.iter().all(|q| q.tcp.options.has_mptcp()), "options copied like TSO");
    }
}
