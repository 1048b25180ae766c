use super::*;
use mplab_wire::tcp::flags;
use mplab_wire::{MpJoin, MptcpOption, TcpHeader};

fn seg(f: u8) -> TcpHeader {
    TcpHeader { src_port: 1000, dst_port: 80, seq: 5, ack: 9, flags: f, ..Default::default() }
}

fn join(token: u32) -> TcpHeader {
    let mut h = seg(flags::SYN);
    h.options.push_mptcp(MptcpOption::MpJoin(MpJoin::Syn { backup: false, addr_id: 1, token, nonce: 7 })).unwrap();
    h
}

#[test]
fn known_tuples_new_connections_joins_and_resets() {
    let mut t: HostStack<u8, usize, ()> = HostStack::new();
    t.listeners.insert(80, ());
    t.bind(1, 10);
    t.register_token(0xabc, 10);
    let c = KnownTupleJoin::Connection;
    assert_eq!(t.arrival(&1, &seg(flags::ACK), c), Arrival::Connection(10));
    assert_eq!(t.arrival(&2, &seg(flags::ACK), c), Arrival::Reset);
    assert_eq!(t.arrival(&2, &seg(flags::RST), c), Arrival::Drop);
    assert_eq!(t.arrival(&2, &seg(flags::SYN), c), Arrival::Open);
    assert_eq!(t.arrival(&1, &seg(flags::SYN), KnownTupleJoin::Token), Arrival::Connection(10));
    assert_eq!(t.arrival(&2, &join(0xabc), c), Arrival::Join { token: 0xabc, conn: Some(10) });
    assert_eq!(t.arrival(&2, &join(0xdef), c), Arrival::Join { token: 0xdef, conn: None });
    // A join on a known 4-tuple: to the connection, or to the token again.
    assert_eq!(t.arrival(&1, &join(0xdef), c), Arrival::Connection(10));
    assert_eq!(t.arrival(&1, &join(0xdef), KnownTupleJoin::Token), Arrival::Join { token: 0xdef, conn: None });
    assert_eq!(t.join_decided(3, Some(10)), Some(10));
    assert_eq!(t.arrival(&3, &seg(flags::ACK), c), Arrival::Connection(10));
}

#[test]
fn resets_follow_rfc_9293() {
    let r = crate::host::reset_for(&seg(flags::SYN), 0).unwrap();
    assert_eq!((r.src_port, r.dst_port, r.seq, r.ack, r.flags), (80, 1000, 0, 6, flags::RST | flags::ACK));
    let r = crate::host::reset_for(&seg(flags::ACK), 100).unwrap();
    assert_eq!((r.seq, r.flags), (9, flags::RST));
    assert!(crate::host::reset_for(&seg(flags::RST), 0).is_none());
}
