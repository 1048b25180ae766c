use super::*;

const VIP: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 100);

fn key(src: [u8; 4], sport: u16) -> FlowKey {
    FlowKey { src: Ipv4Addr::from(src), dst: VIP, sport, dport: 80 }
}

fn syn(k: FlowKey) -> Segment {
    Segment { key: k, syn: true, ack: false, mptcp: MptcpSeen::Capable { sender_key: None, receiver_key: None } }
}

fn synack(k: FlowKey, server_key: u64) -> Segment {
    Segment { key: k, syn: true, ack: true, mptcp: MptcpSeen::Capable { sender_key: Some(server_key), receiver_key: None } }
}

fn third_ack(k: FlowKey, client_key: u64, server_key: u64) -> Segment {
    Segment { key: k, syn: false, ack: true, mptcp: MptcpSeen::Capable { sender_key: Some(client_key), receiver_key: Some(server_key) } }
}

fn join(k: FlowKey, server_key: u64) -> Segment {
    Segment { key: k, syn: true, ack: false, mptcp: MptcpSeen::JoinSyn { token: crypto::token(server_key) } }
}

fn data(k: FlowKey) -> Segment {
    Segment { key: k, syn: false, ack: true, mptcp: MptcpSeen::Other }
}

fn lb(mode: Mode, backends: usize) -> Balancer {
    Balancer::new(BalancerConfig::new(mode, backends))
}

fn to(v: Verdict) -> usize {
    match v {
        Verdict::Backend(b) => b,
        Verdict::Drop => panic!("dropped"),
    }
}

/// A client port whose second subflow (from the client's second address)
/// the 5-tuple hash sends to another backend than the first.
fn split_ports(b: &Balancer) -> (FlowKey, FlowKey) {
    for p in 1000..2000 {
        let (k1, k2) = (key([10, 0, 1, 2], p), key([10, 0, 2, 2], p + 1));
        if b.by_hash(&syn(k1)) != b.by_hash(&syn(k2)) {
            return (k1, k2);
        }
    }
    unreachable!("2 backends: half of the pairs split")
}

#[test]
fn iphash_sends_a_second_address_wherever_its_hash_says() {
    let mut b = lb(Mode::IpHash, 2);
    // Every port of one address pair goes to one backend.
    let first = to(b.forward(0, &syn(key([10, 0, 1, 2], 1000))));
    for p in 1001..1100 {
        assert_eq!(to(b.forward(0, &syn(key([10, 0, 1, 2], p)))), first);
    }
    // Over many client address pairs, the second address lands on the
    // other backend about half the time: seed 003's broken joins.
    let split = (0..200u8)
        .filter(|&i| {
            let a = to(b.forward(0, &syn(key([10, 1, i, 1], 5000))));
            let j = to(b.forward(0, &join(key([10, 2, i, 1], 5001), 42)));
            a != j
        })
        .count();
    assert!((60..140).contains(&split), "{split} of 200 joins on another backend");
    assert_eq!(b.stats().joins, 200);
}

#[test]
fn token_mode_sends_joins_to_the_connections_backend() {
    let mut b = lb(Mode::Token, 2);
    let (k1, k2) = split_ports(&b);
    let server = to(b.forward(0, &syn(k1)));
    b.observe_reply(1, server, &synack(k1, 0x5eed));
    assert_eq!(to(b.forward(2, &third_ack(k1, 0xc11e, 0x5eed))), server);
    assert_eq!(to(b.forward(3, &join(k2, 0x5eed))), server, "by token, against the hash");
    assert_eq!(to(b.forward(4, &data(k2))), server, "the join's later segments follow it");
    let s = b.stats();
    assert_eq!((s.joins, s.joins_by_token, s.joins_unknown_token, s.tokens_learned, s.token_collisions), (1, 1, 0, 1, 0));
    assert_eq!(s.connections_to.iter().sum::<u64>(), 1, "a join is not a connection");
}

#[test]
fn token_mode_learns_from_the_third_ack_under_direct_server_return() {
    let mut b = lb(Mode::Token, 2);
    let (k1, k2) = split_ports(&b);
    let server = to(b.forward(0, &syn(k1)));
    // No SYN/ACK seen: the key comes with the client's third ACK.
    b.forward(2, &third_ack(k1, 0xc11e, 0x5eed));
    assert_eq!(to(b.forward(3, &join(k2, 0x5eed))), server);
    assert_eq!(b.stats().joins_by_token, 1);
}

#[test]
fn an_unknown_token_is_counted_and_hashed() {
    let mut b = lb(Mode::Token, 3);
    let k = key([10, 0, 2, 2], 7);
    let v = b.forward(0, &join(k, 999));
    assert_eq!(v, Verdict::Backend(b.by_hash(&join(k, 999)).unwrap()));
    assert_eq!(b.stats().joins_unknown_token, 1);
}

#[test]
fn a_token_collision_keeps_the_first_owner_and_is_counted() {
    let mut b = lb(Mode::Token, 2);
    b.learn(0, 77, 0);
    b.learn(1, 77, 1);
    b.learn(2, 77, 0);
    let s = b.stats();
    assert_eq!((s.tokens_learned, s.token_collisions), (1, 1));
    assert_eq!(b.tokens.peek(&77), Some(0));
}

#[test]
fn instances_without_shared_state_agree_on_connections_but_not_on_joins() {
    // ECMP sends the initial subflow through instance A and the join
    // through instance B.
    for mode in [Mode::FiveTuple, Mode::Token, Mode::Stateless] {
        let (mut a, mut bb) = (lb(mode, 4), lb(mode, 4));
        let k1 = key([10, 0, 1, 2], 40000);
        let server = to(a.forward(0, &syn(k1)));
        a.observe_reply(1, server, &synack(k1, 0x5eed));
        // The same connection's segments through B (no state there) go
        // to the same backend: Maglev is the same table on every instance.
        assert_eq!(to(bb.forward(2, &data(k1))), server, "{mode:?}");
        assert_eq!(bb.stats().conn_misses, 1);
        // A join through B: B never saw the token.
        bb.forward(3, &join(key([10, 0, 2, 2], 40001), 0x5eed));
        let s = bb.stats();
        assert_eq!(s.joins_by_token, 0, "{mode:?}");
        assert_eq!(s.joins_unknown_token, u64::from(mode == Mode::Token), "{mode:?}");
    }
}

#[test]
fn a_backend_taken_out_gets_nothing_and_its_connections_move() {
    let mut b = lb(Mode::FiveTuple, 3);
    let keys: Vec<FlowKey> = (0..300).map(|p| key([10, 0, 1, 2], 2000 + p)).collect();
    let before: Vec<usize> = keys.iter().map(|k| to(b.forward(0, &syn(*k)))).collect();
    b.set_up(1, false);
    let after: Vec<usize> = keys.iter().map(|k| to(b.forward(1, &data(*k)))).collect();
    assert!(after.iter().all(|&x| x != 1));
    for (x, y) in before.iter().zip(&after) {
        if *x != 1 {
            assert_eq!(x, y, "a connection on a live backend stays");
        }
    }
    assert_eq!(b.stats().rerouted, before.iter().filter(|&&x| x == 1).count() as u64);
    b.set_up(0, false);
    b.set_up(2, false);
    assert_eq!(b.forward(2, &syn(key([1, 2, 3, 4], 5))), Verdict::Drop);
    assert_eq!(b.stats().dropped, 1);
}

#[test]
fn a_syn_flood_fills_the_tables_only_to_their_bounds() {
    let mut cfg = BalancerConfig::new(Mode::Token, 2);
    cfg.conn_capacity = 1000;
    cfg.token_capacity = 100;
    let mut b = Balancer::new(cfg);
    let mut rng = 0x1234_5678u64;
    for i in 0..20_000u32 {
        rng = mix(rng, u64::from(i));
        let k = FlowKey { src: Ipv4Addr::from(rng as u32), dst: VIP, sport: (rng >> 32) as u16, dport: 80 };
        let seg = if i % 2 == 0 { join(k, rng) } else { third_ack(k, rng, rng >> 7) };
        b.forward(u64::from(i), &seg);
    }
    let s = b.stats();
    assert!(s.conn_table.size <= 1000 && s.conn_table.peak <= 1000, "{s:?}");
    assert!(s.token_table.size <= 100, "{s:?}");
    assert!(s.conn_table.evicted > 15_000, "{s:?}");
    assert_eq!(s.joins_unknown_token + s.joins_by_token, 10_000);
}

#[test]
fn idle_connections_expire() {
    let mut cfg = BalancerConfig::new(Mode::FiveTuple, 2);
    cfg.idle_ns = 1_000;
    let mut b = Balancer::new(cfg);
    for p in 0..10 {
        b.forward(0, &syn(key([10, 0, 1, 2], p)));
    }
    b.housekeeping(5_000);
    let s = b.stats();
    assert_eq!((s.conn_table.size, s.conn_table.expired), (0, 10));
}

#[test]
fn a_malformed_option_is_counted_and_its_segment_follows_its_connection() {
    for mode in [Mode::IpHash, Mode::FiveTuple, Mode::Token, Mode::Stateless] {
        let mut b = lb(mode, 4);
        let k = key([10, 0, 1, 2], 4242);
        let first = to(b.forward(0, &syn(k)));
        // A segment of the same connection whose MPTCP option does not
        // parse: forwarded where the connection is, never learned from.
        let bad = Segment { key: k, syn: false, ack: true, mptcp: MptcpSeen::Malformed };
        assert_eq!(to(b.forward(1, &bad)), first, "{mode:?}");
        // A bare SYN with a malformed option opens nothing special either.
        let k2 = key([10, 0, 3, 3], 9);
        let v = b.forward(2, &Segment { key: k2, syn: true, ack: false, mptcp: MptcpSeen::Malformed });
        assert_eq!(v, Verdict::Backend(b.by_hash(&syn(k2)).unwrap()), "{mode:?}");
        let s = b.stats();
        assert_eq!(s.malformed_options, 2, "{mode:?}");
        assert_eq!((s.tokens_learned, s.joins), (0, 0), "{mode:?}");
    }
}
