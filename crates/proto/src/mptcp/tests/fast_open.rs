//! TCP Fast Open with MPTCP (RFC 8684 Appendix B).

use super::*;

/// One address each side, TCP Fast Open on the client and/or the server
/// (and DSS checksums if asked).
fn fast_open_net<'a>(client_fo: bool, server_fo: bool, checksum: bool) -> Net<'a> {
    let mut n = Net::new(&[ip(1, 1)], &[ip(9, 1)], "default", 10, 100);
    let mut c = cfg(&[ip(1, 1)], "default");
    c.tcp.fast_open = client_fo;
    c.checksum = checksum;
    n.client = Connection::connect(c, SocketAddr::new(ip(1, 1), 40000), SocketAddr::new(ip(9, 1), 5001), 1, Instant(0));
    n.server_cfg.tcp.fast_open = server_fo;
    n
}

/// Every segment a run put on the wire: (to the server, header, data).
type Wire = std::rc::Rc<std::cell::RefCell<Vec<(bool, TcpHeader, Range<u64>)>>>;

fn record<'a>(n: &mut Net<'a>, drop: impl Fn(bool, &TcpHeader, usize) -> bool + 'a) -> Wire {
    let log: Wire = Default::default();
    let l = log.clone();
    n.drop = Box::new(move |s| {
        let mut l = l.borrow_mut();
        let k = l.iter().filter(|x| x.0 == s.to_server).count();
        l.push((s.to_server, s.t.header, s.t.data.clone()));
        drop(s.to_server, &s.t.header, k)
    });
    log
}

/// The mappings of the client's data segments after its SYN: the first
/// mapped byte is stream offset `syn` (the SYN's bytes come first), DSN
/// IDSN+1 at relative subflow sequence number 1, i.e. TCP sequence
/// ISN + 1 + `syn` (RFC 8684 B.3 Figure 19; Linux's `ssn_offset`); each
/// later mapping follows from there. Returns how many were checked.
fn check_client_mappings(n: &Net, wire: &Wire, syn: u64) -> usize {
    let iss = n.client.subflows()[0].tcp.iss();
    let idsn = n.client.local.idsn;
    let mut checked = 0;
    for (to_server, h, data) in wire.borrow().iter().filter(|x| x.0 && !x.1.syn() && !x.2.is_empty()) {
        assert!(*to_server);
        let rel = u64::from(h.seq.wrapping_sub(iss.wrapping_add(1)));
        assert_eq!(rel, data.start, "the subflow's stream is the data stream here");
        for o in h.options.mptcp() {
            match o {
                MptcpOption::MpCapable(MpCapable { data_len: Some(_), .. }) => {
                    assert_eq!(data.start, syn, "the implicit mapping: DSN IDSN+1, SSN 1");
                    checked += 1;
                }
                MptcpOption::Dss(Dss { mapping: Some(m), .. }) => {
                    assert_eq!(u64::from(m.ssn), rel - syn + 1, "relative SSN of {data:?}");
                    assert_eq!(m.dsn, idsn.wrapping_add(1).wrapping_add(data.start - syn), "DSN of {data:?}");
                    checked += 1;
                }
                _ => {}
            }
        }
    }
    checked
}

#[test]
fn fast_open_syn_carries_the_first_bytes() {
    // By hand: the SYN's bytes are readable at the server before its
    // handshake completes, and its SYN-ACK acknowledges them.
    let mut n = fast_open_net(true, true, false);
    assert_eq!(n.client.send(24), 24);
    let syn = n.client.poll_transmit(Instant(0), &Pattern).expect("the SYN");
    assert!(syn.header.syn() && syn.header.options.mptcp().any(|o| matches!(o, MptcpOption::MpCapable(_))));
    assert_eq!(syn.data, 0..24);
    let (local, remote) = (syn.remote, syn.local);
    let mut s = Connection::accept(n.server_cfg.clone(), local, remote, &syn.header, 2, Instant(0)).unwrap();
    assert_eq!(s.handle_segment(Instant(0), local, remote, &syn.header, 24, None), Some(0..24));
    assert!(!s.is_established());
    assert_eq!(s.recv(u64::MAX), 0..24);
    let synack = s.poll_transmit(Instant(0), &Pattern).expect("the SYN-ACK");
    assert_eq!(synack.header.ack, n.client.subflows()[0].tcp.iss().wrapping_add(1 + 24));
    assert!(synack.data.is_empty());

    // Whole transfers, with and without DSS checksums.
    for checksum in [false, true] {
        let mut n = fast_open_net(true, true, checksum);
        n.to_send = 300_000;
        let wire = record(&mut n, |_, _, _| false);
        n.run(10_000);
        assert_eq!(n.received, 300_000, "checksum {checksum}");
        assert_eq!(n.misplaced, 0);
        assert_eq!(n.client.fallback(), None);
        assert_eq!(n.server().checksums(), checksum);
        let iss = n.client.subflows()[0].tcp.iss();
        let w = wire.borrow();
        let (first_c, first_s) = (w.iter().find(|x| x.0).unwrap(), w.iter().find(|x| !x.0).unwrap());
        assert!(first_c.1.syn() && first_c.2 == (0..1420), "{:?}", first_c.2);
        assert!(first_s.1.syn() && first_s.2.is_empty());
        assert_eq!(first_s.1.ack, iss.wrapping_add(1 + 1420));
        drop(w);
        assert!(check_client_mappings(&n, &wire, 1420) > 100);
        // The server's DATA_ACK covers the mapped bytes and the DATA_FIN.
        let idsn = n.client.local.idsn;
        let last_ack = wire.borrow().iter().filter(|x| !x.0).filter_map(|x| x.1.options.mptcp().find_map(|o| if let MptcpOption::Dss(Dss { data_ack: Some(a), .. }) = o { Some(a.value) } else { None })).next_back();
        assert_eq!(last_ack, Some(idsn.wrapping_add(1 + 300_000 - 1420 + 1)));
        assert_eq!(n.server().subflows()[0].syn_rx, 1420);
        assert_eq!(n.client.subflows()[0].syn_tx, 1420);
    }
}

#[test]
fn fast_open_bytes_a_server_leaves_go_again() {
    let mut n = fast_open_net(true, false, false);
    n.to_send = 300_000;
    let wire = record(&mut n, |_, _, _| false);
    n.run(10_000);
    assert_eq!(n.received, 300_000);
    assert_eq!(n.misplaced, 0);
    assert_eq!(n.client.fallback(), None);
    let iss = n.client.subflows()[0].tcp.iss();
    {
        let w = wire.borrow();
        assert_eq!(w.iter().find(|x| x.0).unwrap().2, 0..1420, "the SYN carried them");
        assert_eq!(w.iter().find(|x| !x.0).unwrap().1.ack, iss.wrapping_add(1), "only the SYN acknowledged");
        // They go again as the first data: subflow offset 0, DSN IDSN+1.
        let again = w.iter().find(|x| x.0 && !x.1.syn() && !x.2.is_empty()).unwrap();
        assert_eq!((again.1.seq, again.2.start), (iss.wrapping_add(1), 0));
    }
    assert!(check_client_mappings(&n, &wire, 0) > 100);
    assert_eq!((n.client.subflows()[0].syn_tx, n.server().subflows()[0].syn_rx), (0, 0));
}

/// A lost data SYN: the SYN sent again is bare, and the bytes follow the
/// handshake mapped at IDSN+1. A lost SYN-ACK: the server took the bytes
/// and its SYN-ACK sent again acknowledges them, in answer to a bare SYN.
#[test]
fn fast_open_retransmitted_syn_is_bare() {
    for lost_synack in [false, true] {
        let mut n = fast_open_net(true, true, false);
        n.to_send = 100_000;
        let wire = record(&mut n, move |to_server, h, k| h.syn() && k == 0 && to_server != lost_synack);
        n.run(10_000);
        assert_eq!(n.received, 100_000, "lost_synack {lost_synack}");
        assert_eq!(n.misplaced, 0);
        let syns: Vec<Range<u64>> = wire.borrow().iter().filter(|x| x.0 && x.1.syn()).map(|x| x.2.clone()).collect();
        assert_eq!(syns, vec![0..1420, 0..0]);
        let taken = if lost_synack { 1420 } else { 0 };
        assert_eq!((n.client.subflows()[0].syn_tx, n.server().subflows()[0].syn_rx), (taken, taken));
        assert!(check_client_mappings(&n, &wire, taken) > 10);
    }
}

/// Both ends with Fast Open; the client wrote 24 bytes, and its SYN
/// reached a server that took them: the net, the SYN, the server.
fn server_took_a_24_byte_syn() -> (Net<'static>, Transmit, Connection) {
    let mut n = fast_open_net(true, true, false);
    n.client.send(24);
    let syn = n.client.poll_transmit(Instant(0), &Pattern).unwrap();
    let (local, remote) = (syn.remote, syn.local);
    let mut s = Connection::accept(n.server_cfg.clone(), local, remote, &syn.header, 2, Instant(0)).unwrap();
    s.handle_segment(Instant(0), local, remote, &syn.header, 24, None);
    (n, syn, s)
}

/// A server that took a SYN's bytes answers once the third ACK brings the
/// client's key, with DATA_ACKs: not before, as Linux (a Linux client
/// falls back to TCP on a first segment with neither DATA_ACK nor
/// MP_CAPABLE, which RFC 8684 Appendix B.3 would have it send).
#[test]
fn fast_open_server_answers_after_the_third_ack() {
    let (mut n, syn, mut s) = server_took_a_24_byte_syn();
    let (local, remote) = (syn.remote, syn.local);
    assert_eq!(s.recv(24), 0..24);
    assert_eq!(s.send(30_000), 30_000);
    let out: Vec<Transmit> = std::iter::from_fn(|| s.poll_transmit(Instant(0), &Pattern)).collect();
    assert_eq!(out.len(), 1, "the SYN-ACK alone");
    assert!(out[0].header.syn() && out[0].data.is_empty());
    n.client.handle_segment(Instant(0), syn.local, syn.remote, &out[0].header, 0, None);
    let ack = n.client.poll_transmit(Instant(0), &Pattern).unwrap();
    assert!(ack.header.options.mptcp().any(|o| matches!(o, MptcpOption::MpCapable(MpCapable { receiver_key: Some(_), .. }))));
    s.handle_segment(Instant(0), local, remote, &ack.header, 0, None);
    assert!(s.is_established());
    let data: Vec<Transmit> = std::iter::from_fn(|| s.poll_transmit(Instant(0), &Pattern)).collect();
    assert!(!data.is_empty());
    let client_idsn = n.client.local.idsn;
    for t in &data {
        let d = t.header.options.mptcp().find_map(|o| if let MptcpOption::Dss(d) = o { Some(*d) } else { None }).expect("a DSS");
        // The client's 24 SYN bytes are not in the data sequence space.
        assert_eq!(d.data_ack.map(|a| a.value), Some(client_idsn.wrapping_add(1)));
        let placed = n.client.handle_segment(Instant(0), syn.local, syn.remote, &t.header, (t.data.end - t.data.start) as u32, None);
        assert_eq!(placed, Some(t.data.clone()));
    }
    assert_eq!(n.client.subflows()[0].handshake, Handshake::Established);
}

/// A box strips MPTCP's options: the Fast Open SYN's bytes are the plain
/// TCP stream's first (taken or sent again), and the rest follows them.
#[test]
fn fast_open_bytes_survive_a_fallback_to_tcp() {
    for server_fo in [true, false] {
        let mut n = fast_open_net(true, server_fo, false);
        n.to_send = 300_000;
        n.mangle = Box::new(|h, _| h.options.clear_mptcp());
        n.run(20_000);
        assert_eq!(n.received, 300_000, "server_fo {server_fo}");
        assert_eq!(n.misplaced, 0);
        assert_eq!(n.client.fallback(), Some(Fallback::NoMpCapable));
        assert_eq!(n.server().subflows()[0].tcp.syn_data_received(), if server_fo { 1420 } else { 0 });
    }
}

/// A server refusing what a SYN brought (a converter's malformed request)
/// before it has the client's key: a plain RST ends the subflow.
#[test]
fn fast_open_server_aborts_before_the_third_ack_with_a_reset() {
    let (_, _, mut s) = server_took_a_24_byte_syn();
    assert!(s.poll_transmit(Instant(0), &Pattern).is_some_and(|t| t.header.syn()));
    s.abort();
    let rst = s.poll_transmit(Instant(0), &Pattern).expect("a RST");
    assert!(rst.header.rst() && !rst.header.options.has_mptcp());
    assert!(s.was_reset() && s.poll_transmit(Instant(0), &Pattern).is_none());
}
