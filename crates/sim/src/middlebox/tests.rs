//! The kinds' unit tests, over the simulator's packet.

mod strip {
    use crate::middlebox::{Hook, Middlebox};
    use crate::packet::Packet;
    use mplab_proto::Instant;
    use mplab_backend::middlebox::strip::StripMptcp;
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

mod split {
    use crate::middlebox::{Hook, Middlebox};
    use crate::packet::Packet;
    use mplab_proto::Instant;
    use mplab_backend::middlebox::split::Split;
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

mod rewrite {
    use crate::middlebox::{Hook, Middlebox};
    use crate::packet::Packet;
    use mplab_proto::Instant;
    use mplab_backend::middlebox::rewrite::Rewrite;
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

mod nat {
    use crate::packet::Packet;
    use mplab_backend::middlebox::nat::Nat;
    use mplab_wire::TcpHeader;

    #[test]
    fn translates_out_and_back() {
        let mut n = Nat::at(1, [192, 0, 2, 1].into());
        let h = TcpHeader { src_port: 40000, dst_port: 80, ..Default::default() };
        let mut p = Packet::new([10, 0, 0, 2].into(), [198, 51, 100, 7].into(), h, 0, 0);
        n.outbound(&mut p);
        assert_eq!((p.src, p.tcp.src_port), ([192, 0, 2, 1].into(), 20000));
        let h = TcpHeader { src_port: 80, dst_port: 20000, ..Default::default() };
        let mut r = Packet::new([198, 51, 100, 7].into(), [192, 0, 2, 1].into(), h, 0, 0);
        assert!(n.inbound(&mut r));
        assert_eq!((r.dst, r.tcp.dst_port), ([10, 0, 0, 2].into(), 40000));
        let h = TcpHeader { src_port: 81, dst_port: 20000, ..Default::default() };
        let mut stray = Packet::new([198, 51, 100, 7].into(), [192, 0, 2, 1].into(), h, 0, 0);
        assert!(!n.inbound(&mut stray), "only the peer the mapping was made for");
    }
}

mod coalesce {
    use crate::middlebox::Middlebox;
    use crate::packet::Packet;
    use mplab_proto::Instant;
    use mplab_backend::middlebox::coalesce::Coalescer;
    use mplab_wire::{MptcpOption, TcpHeader};

    fn data(seq: u32, len: u32, tag: u64) -> Packet {
        let h = TcpHeader { seq, ack: seq / 2, window: 100, flags: mplab_wire::tcp::flags::ACK, ..Default::default() };
        Packet::new([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), h, len, tag)
    }

    #[test]
    fn coalescer_merges_in_sequence_segments_and_keeps_the_first_header() {
        let mut c = Coalescer::new(4000, 1000);
        let mut out = vec![];
        let mut a = data(1000, 1000, 0);
        a.tcp.options.push_mptcp(MptcpOption::MpPrio { backup: true, addr_id: None }).unwrap();
        c.offer(0, a, &mut out);
        assert_eq!(c.next_deadline(), Some(Instant(1000)), "held: a flush timer");
        // Contiguous in sequence, scattered in stream offsets (an MPTCP
        // subflow): one tail run.
        c.offer(10, data(2000, 1000, 50_000), &mut out);
        c.offer(20, data(3000, 1000, 51_000), &mut out);
        assert!(out.is_empty());
        // Too big for `size`: the held one leaves, the new one is held.
        c.offer(30, data(4000, 1500, 52_000), &mut out);
        assert_eq!(c.next_deadline(), Some(Instant(1030)));
        assert_eq!(out.len(), 1);
        let m = &out[0];
        assert_eq!((m.tcp.seq, m.payload_len, m.tag, m.tail), (1000, 3000, 0, Some((1000, 50_000))));
        assert_eq!(m.tcp.ack, 1500, "latest ACK");
        assert!(m.tcp.options.has_mptcp(), "first segment's options");
        let mut buf = vec![0; 3000];
        m.fill_payload(&mut buf);
        let mut want = vec![0; 2000];
        crate::apps::fill_pattern(50_000, &mut want);
        assert_eq!(&buf[1000..], &want[..]);
        assert_eq!(c.merged, 2);
        // The first segment's deadline has passed with it: nothing is due
        // before the one now held.
        let mut due = vec![];
        c.on_timer(Instant(1000), &mut due);
        assert!(due.is_empty());
        c.on_timer(Instant(1030), &mut due);
        assert!(due.len() == 1 && due[0].tcp.seq == 4000);
        assert_eq!(c.next_deadline(), None);
    }

    #[test]
    fn coalescer_never_reorders_a_flow() {
        let mut c = Coalescer::new(60_000, 1000);
        let mut out = vec![];
        c.offer(0, data(1000, 1000, 0), &mut out);
        // A pure ACK of the same flow pushes the held segment out first.
        c.offer(5, data(2000, 0, 0), &mut out);
        assert_eq!(out.iter().map(|p| p.payload_len).collect::<Vec<_>>(), vec![1000, 0]);
        // A retransmission (not the next in sequence) too.
        out.clear();
        c.offer(10, data(5000, 1000, 4000), &mut out);
        c.offer(11, data(3000, 1000, 2000), &mut out);
        assert_eq!(out.iter().map(|p| p.tcp.seq).collect::<Vec<_>>(), vec![5000]);
        // A second jump in stream offsets cannot be represented: no merge.
        let mut c = Coalescer::new(60_000, 1000);
        out.clear();
        c.offer(0, data(1000, 100, 0), &mut out);
        c.offer(0, data(1100, 100, 500), &mut out);
        c.offer(0, data(1200, 100, 900), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(c.merged, 1);
    }

}

