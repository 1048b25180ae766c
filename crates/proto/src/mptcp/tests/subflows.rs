//! Handshakes, joins, and subflows that die, are reset or are closed.

use super::*;

#[test]
fn mp_capable_handshake_exchanges_keys() {
    let mut n = Net::new(&[ip(1, 1)], &[ip(9, 1)], "default", 10, 100);
    n.run(200);
    let s = n.server();
    assert!(n.client.is_established() && s.is_established());
    assert_eq!(n.client.fallback(), None);
    assert_eq!(n.client.remote.unwrap().key, s.local_key());
    assert_eq!(s.remote.unwrap().key, n.client.local_key());
    assert_eq!(n.client.subflows().len(), 1);
}

#[test]
fn fullmesh_uses_both_paths_and_delivers_every_byte() {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
    n.to_send = 5_000_000;
    n.run(30_000);
    assert_eq!(n.received, 5_000_000);
    assert_eq!(n.misplaced, 0);
    let per = bytes_on(&n.client);
    assert_eq!(per.len(), 2);
    assert!(per.iter().all(|&b| b > 1_500_000), "both subflows carry data: {per:?}");
    // Two 10 Mbit/s paths: well above what one could do.
    for st in n.client.subflow_stats() {
        eprintln!("{} -> {} acked {} rtt {:?} cwnd {} rto {}", st.local, st.remote, st.tcp.bytes_acked, st.tcp.srtt, st.tcp.cwnd, st.tcp.rto_count);
    }
    eprintln!("{}", n.client.debug_line());
    assert!(n.now.as_secs_f64() < 3.2, "took {:.2} s", n.now.as_secs_f64());
}

#[test]
fn data_fin_closes_both_ends() {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 5, 100);
    n.to_send = 200_000;
    n.run(20_000);
    eprintln!("client {}\nserver {}", n.client.debug_line(), n.server().debug_line());
    assert_eq!(n.received, 200_000);
    assert!(n.server().peer_closed());
    assert!(n.client.subflows().iter().all(|s| s.tcp.is_finished()), "{:?}", n.client.subflow_stats());
    assert!(n.server().subflows().iter().all(|s| s.tcp.is_finished()), "{:?}", n.server().subflow_stats());
    assert!(!n.client.was_reset() && !n.server().was_reset());
}

#[test]
fn ndiffports_opens_subflows_on_one_address_pair() {
    let mut n = Net::new(&[ip(1, 1)], &[ip(9, 1)], "ndiffports:3", 5, 100);
    n.to_send = 1_000_000;
    n.run(20_000);
    assert_eq!(n.received, 1_000_000);
    let sf = n.client.subflows();
    assert_eq!(sf.len(), 3);
    let ports: std::collections::HashSet<u16> = sf.iter().map(|s| s.local.port()).collect();
    assert_eq!(ports.len(), 3);
}

#[test]
fn add_addr_from_the_server_leads_to_joins_two_by_two() {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1), ip(9, 2)], "fullmesh", 5, 100);
    n.to_send = 2_000_000;
    n.run(20_000);
    assert_eq!(n.received, 2_000_000);
    assert_eq!(n.client.subflows().len(), 4, "{:?}", n.client.subflow_stats());
    assert!(n.server().stats().add_addr_sent >= 1);
    assert!(n.client.stats().add_addr_received >= 1);
}

#[test]
fn a_join_with_a_bad_hmac_is_refused_and_data_is_unaffected() {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 5, 100);
    n.to_send = 1_000_000;
    // An attacker on path 2 rewrites the join SYN/ACK's HMAC.
    n.mangle = Box::new(|h, from_client| {
        if !from_client && h.syn() {
            let opts: Vec<MptcpOption> = h.options.mptcp().copied().collect();
            h.options.clear_mptcp();
            for o in opts {
                let o = match o {
                    MptcpOption::MpJoin(MpJoin::SynAck { backup, addr_id, hmac, nonce }) => MptcpOption::MpJoin(MpJoin::SynAck { backup, addr_id, hmac: hmac ^ 1, nonce }),
                    o => o,
                };
                let _ = h.options.push_mptcp(o);
            }
        }
    });
    n.run(20_000);
    assert_eq!(n.received, 1_000_000);
    assert!(n.client.stats().joins_refused >= 1);
    let joined: Vec<_> = n.client.subflows().iter().filter(|s| s.is_join()).collect();
    assert!(joined.iter().all(|s| s.handshake != Handshake::Established));
}

#[test]
fn a_join_for_an_unknown_token_is_refused() {
    let mut n = Net::new(&[ip(1, 1)], &[ip(9, 1)], "default", 5, 100);
    n.run(100);
    let s = n.server.as_mut().unwrap();
    let mut o = TcpOptions::new();
    o.push_mptcp(MptcpOption::MpJoin(MpJoin::Syn { backup: false, addr_id: 3, token: s.local_token() ^ 1, nonce: 7 })).unwrap();
    let syn = TcpHeader { src_port: 999, dst_port: 5001, seq: 1, ack: 0, flags: mplab_wire::tcp::flags::SYN, window: 1000, urgent: 0, options: o };
    let r = s.accept_join(Instant(0), SocketAddr::new(ip(9, 1), 5001), SocketAddr::new(ip(7, 7), 999), &syn);
    assert_eq!(r, Err(JoinRefused::UnknownToken));
    assert_eq!(s.subflows().len(), 1);
}

#[test]
fn stripped_mp_capable_falls_back_to_tcp_and_completes() {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 5, 100);
    n.to_send = 1_000_000;
    n.mangle = Box::new(|h, _| h.options.clear_mptcp());
    n.run(20_000);
    assert_eq!(n.received, 1_000_000);
    assert_eq!(n.client.fallback(), Some(Fallback::NoMpCapable));
    assert_eq!(n.server().fallback(), Some(Fallback::NoMpCapable));
    assert_eq!(n.client.subflows().len(), 1);
}

/// A box strips every MPTCP option from a download once the handshake
/// is done (the attack matrix's strip-mid-connection, struck at the
/// server's first segment after it): the client, seeing data without a
/// mapping on its only subflow, falls back; the server never saw a DSS
/// from it, but the client's ACKs of mapped data come without a DATA_ACK,
/// so it falls back too, and the stream goes on in place. (The server
/// once stayed with MPTCP and sent its data again at the data level on
/// that subflow, which the client took as new bytes.)
#[test]
fn a_download_whose_options_vanish_after_the_handshake_falls_back_at_both_ends() {
    let mut n = Net::new(&[ip(1, 1)], &[ip(9, 1)], "default", 10, 10);
    n.down = 2_000_000;
    let mut client_segments = 0;
    n.mangle = Box::new(move |h, from_client| {
        if h.syn() {
            return;
        }
        if from_client {
            client_segments += 1;
            if client_segments == 1 {
                return; // the third ACK, with the keys
            }
        }
        h.options.clear_mptcp();
    });
    n.run(60_000);
    assert_eq!(n.down_received, 2_000_000, "every byte");
    assert_eq!(n.down_misplaced, 0);
    assert_eq!(n.client.fallback(), Some(Fallback::NoMapping));
    assert_eq!(n.server().fallback(), Some(Fallback::NoMapping));
}

/// The same with a join of the client's still opening (its SYN gets no
/// answer: the second path is dead): the client falls back all the same
/// and gives the join up, as Linux does until a join completes, instead of
/// resetting the one subflow that carries the data.
#[test]
fn a_join_still_opening_does_not_keep_the_only_subflow_from_falling_back() {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
    n.down = 2_000_000;
    n.drop = Box::new(|x| (if x.to_server { x.t.local.ip() } else { x.t.remote.ip() }) == ip(2, 1));
    // The first segment each way after the handshake keeps its options
    // (the client learns the server holds its keys and opens the join).
    let mut seen = [0, 0];
    n.mangle = Box::new(move |h, from_client| {
        if h.syn() {
            return;
        }
        seen[usize::from(from_client)] += 1;
        if seen[usize::from(from_client)] > 1 {
            h.options.clear_mptcp();
        }
    });
    n.run(60_000);
    assert_eq!(n.down_received, 2_000_000, "every byte");
    assert_eq!(n.down_misplaced, 0);
    assert_eq!(n.client.fallback(), Some(Fallback::NoMapping));
    assert!(n.client.subflows().len() >= 2, "the join was opened");
}

#[test]
fn a_dead_path_is_left_and_its_data_reinjected() {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
    n.to_send = 4_000_000;
    // Path 2 dies at 1 s: whatever has not arrived by then is lost.
    let lost = std::rc::Rc::new(std::cell::Cell::new(0u64));
    let l2 = lost.clone();
    n.drop = Box::new(move |s| {
        let c = if s.to_server { s.t.local.ip() } else { s.t.remote.ip() };
        let d = c == ip(2, 1) && s.now >= Instant(1000 * MS);
        if d {
            l2.set(l2.get() + s.t.data.end - s.t.data.start);
        }
        d
    });
    n.run(60_000);
    eprintln!("lost data bytes {}", lost.get());
    eprintln!("{} {}\n{}\n{:?}", n.received, n.now.as_secs_f64(), n.client.debug_line(), n.client.stats());
    for st in n.client.subflow_stats() {
        eprintln!("{} -> {} acked {} rtt {:?} cwnd {} rto {}", st.local, st.remote, st.tcp.bytes_acked, st.tcp.srtt, st.tcp.cwnd, st.tcp.rto_count);
    }
    assert_eq!(n.received, 4_000_000);
    assert_eq!(n.misplaced, 0);
    assert!(n.client.stats().reinjected_bytes > 0);
}

/// A connection that has had a second subflow is no longer one TCP stream
/// shifted by a constant, so it does not fall back (RFC 8684 3.7; Linux's
/// allow_infinite_fallback): when a box strips the options on its last
/// path, that subflow is reset rather than its bytes placed as if they
/// continued the data stream.
#[test]
fn after_a_join_stripped_options_reset_the_subflow_instead_of_falling_back() {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
    n.to_send = 3_000_000;
    let strip = std::rc::Rc::new(std::cell::Cell::new(false));
    let s2 = strip.clone();
    n.mangle = Box::new(move |h, _| {
        if s2.get() {
            h.options.clear_mptcp();
        }
    });
    n.run(500);
    let s = n.server.as_mut().expect("server");
    let j = s.subflows.iter().position(|x| x.is_join() && x.remote.ip() == ip(2, 1)).expect("a joined subflow");
    s.subflows[j].reset_reason = Some(tcprst_reason::MPTCP_SPECIFIC);
    s.subflows[j].tcp.abort();
    s.changed(j);
    n.run(1000);
    assert!(n.received > 0 && n.received < 3_000_000);
    strip.set(true);
    n.run(60_000);
    assert_eq!(n.misplaced, 0);
    assert_eq!(n.client.fallback(), None);
    assert_eq!(n.server().fallback(), None);
    assert!(n.received < 3_000_000, "the data cannot go on once the last subflow is reset");
    assert!(n.client.subflows().iter().all(|s| s.is_closed()) || n.server().subflows().iter().all(|s| s.is_closed()));
}

/// A 3 MB upload over two client addresses, 0.5 s in, and the index of
/// the server's subflow joined from the second address (established).
fn half_a_second_into_a_transfer_over_a_join() -> (Net<'static>, usize) {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
    n.to_send = 3_000_000;
    n.run(500);
    let s = n.server();
    let j = s.subflows.iter().position(|x| x.is_join() && x.remote.ip() == ip(2, 1)).expect("a joined subflow");
    assert!(s.subflows[j].tcp.is_established());
    (n, j)
}

/// The receiver resets a joined subflow mid-transfer (RST with MP_TCPRST,
/// as Linux does on a mapping it refuses): the sender closes that subflow,
/// reports it closed, and the data goes on over the other one.
#[test]
fn a_subflow_reset_by_the_peer_is_closed_and_its_data_reinjected() {
    let (mut n, j) = half_a_second_into_a_transfer_over_a_join();
    let s = n.server.as_mut().expect("server");
    s.subflows[j].reset_reason = Some(tcprst_reason::MPTCP_SPECIFIC);
    s.subflows[j].tcp.abort();
    s.changed(j);
    let rsts = std::rc::Rc::new(std::cell::Cell::new(0u32));
    let r2 = rsts.clone();
    n.drop = Box::new(move |x| {
        if !x.to_server && x.t.header.rst() && x.t.header.options.mptcp().any(|o| matches!(o, MptcpOption::MpTcpRst { .. })) {
            r2.set(r2.get() + 1);
        }
        false
    });
    n.run(60_000);
    assert_eq!(rsts.get(), 1, "one RST with MP_TCPRST");
    assert_eq!(n.received, 3_000_000);
    assert_eq!(n.misplaced, 0);
    let st = n.client.subflow_stats();
    let dead = st.iter().find(|x| x.local.ip() == ip(2, 1)).expect("the reset subflow is still listed");
    assert!(dead.closed, "{st:?}");
}

/// The receiver closes a joined subflow alone (a FIN with no DATA_FIN, as
/// Linux does when the address under it is withdrawn and its REMOVE_ADDR is
/// lost): the sender closes its side at once instead of sending on it
/// half-open until the connection ends, and the data goes on elsewhere.
#[test]
fn a_subflow_the_peer_closed_alone_is_closed_at_once() {
    let (mut n, j) = half_a_second_into_a_transfer_over_a_join();
    let s = n.server.as_mut().expect("server");
    s.subflows[j].tcp.close();
    s.changed(j);
    // A few round trips (20 ms each) later, well before the transfer ends.
    n.run(700);
    assert!(n.to_send > 0 || n.received < 3_000_000, "the transfer is still going");
    let c = n.client.subflows().iter().find(|x| x.local.ip() == ip(2, 1)).expect("the client's joined subflow");
    assert_ne!(c.tcp.state(), crate::tcp::State::CloseWait, "the client's side is closed, not left half-open");
    assert!(!c.usable());
    n.run(60_000);
    assert_eq!(n.received, 3_000_000);
    assert_eq!(n.misplaced, 0);
    let st = n.client.subflow_stats();
    assert!(st.iter().find(|x| x.local.ip() == ip(2, 1)).expect("still listed").closed, "{st:?}");
}

/// The client's first address has a `backup` endpoint (Wi-Fi + LTE with
/// the default route over LTE): once the connection is fully established
/// the initial subflow becomes a backup, the peer learns it by MP_PRIO, and
/// the other endpoint's subflow carries the data (Linux 6.18 does the same).
#[test]
fn an_initial_subflow_on_a_backup_endpoint_becomes_a_backup() {
    let (lte, wifi) = (ip(1, 1), ip(2, 1));
    let mut n = Net::new(&[lte, wifi], &[ip(9, 1)], "default", 10, 10);
    let mut c = cfg(&[lte, wifi], "default");
    c.locals[0].backup = true;
    c.locals[0].subflow = true;
    c.locals[1].subflow = true;
    n.client = Connection::connect(c, SocketAddr::new(lte, 40000), SocketAddr::new(ip(9, 1), 5001), 1, Instant(0));
    n.to_send = 3_000_000;
    n.run(30_000);
    assert_eq!(n.received, 3_000_000);
    assert_eq!(n.misplaced, 0);
    let sf = n.client.subflows();
    assert_eq!(sf.len(), 2, "the Wi-Fi endpoint's subflow joined");
    assert!(sf[0].backup && !sf[1].backup);
    let server = n.server.as_ref().unwrap();
    assert!(server.subflows()[0].peer_backup, "the server got MP_PRIO");
    let per = bytes_on(&n.client);
    // Only the handshake's first data goes over LTE before MP_PRIO.
    assert!(per[0] < 200_000 && per[1] > 2_700_000, "{per:?}");
}

/// An on-path RST resets the joined subflow mid-transfer. mplab's profile
/// opens it again from the same address after its 1 s backoff, and the
/// new subflow carries data; Linux's never re-creates it.
fn reset_the_join_mid_transfer(profile: Profile) -> (Net<'static>, u64) {
    let locals = [ip(1, 1), ip(2, 1)];
    let mut n = Net::new(&locals, &[ip(9, 1)], "fullmesh", 10, 10);
    n.client = Connection::connect(cfg(&locals, "fullmesh").with_profile(profile), SocketAddr::new(locals[0], 40000), SocketAddr::new(ip(9, 1), 5001), 1, Instant(0));
    n.server_cfg = n.server_cfg.clone().with_profile(profile);
    n.to_send = 6_000_000;
    let mut seen = 0;
    n.mangle = Box::new(move |h, from_client| {
        // The 300th segment from the server on the joined subflow becomes
        // a RST at the exact sequence number: what an on-path box sends.
        if !from_client && h.dst_port != 40000 && !h.syn() {
            seen += 1;
            if seen == 300 {
                h.flags = mplab_wire::tcp::flags::RST;
                h.options.clear_mptcp();
            }
        }
    });
    n.run(60_000);
    let from_second: u64 = n.client.subflows().iter().zip(bytes_on(&n.client)).filter(|(s, _)| s.local.ip() == ip(2, 1) && s.local.port() != 0).map(|(_, b)| b).sum();
    (n, from_second)
}

#[test]
fn a_reset_subflow_is_opened_again_after_its_backoff() {
    let (n, _) = reset_the_join_mid_transfer(Profile::Mplab);
    assert_eq!(n.received, 6_000_000, "every byte");
    assert_eq!(n.client.stats().subflows_recreated, 1, "one re-creation, and it held");
    let second: Vec<&Subflow> = n.client.subflows().iter().filter(|s| s.local.ip() == ip(2, 1)).collect();
    assert_eq!(second.len(), 2, "the reset subflow and the one opened again");
    let again = n.client.subflow_stats().into_iter().zip(n.client.subflows()).filter(|(_, s)| s.local.ip() == ip(2, 1)).map(|(st, _)| st.tcp.bytes_acked).last().unwrap();
    assert!(again > 500_000, "the new subflow carried data: {again} bytes");

    let (n, _) = reset_the_join_mid_transfer(Profile::Linux);
    assert_eq!(n.received, 6_000_000);
    assert_eq!(n.client.stats().subflows_recreated, 0, "Linux never re-creates a subflow");
    assert_eq!(n.client.subflows().iter().filter(|s| s.local.ip() == ip(2, 1)).count(), 1);
}

/// The receiver resets every subflow mid-transfer at once (as it does on
/// DSS checksum failures when a box rewrites the payload on the only path
/// the subflows share). With mplab's profile neither end tears the
/// connection down: it waits without subflows (break before make), the
/// client opens them again after the backoff and every byte arrives in
/// place. With Linux's profile nothing comes back and the transfer stops.
fn reset_every_subflow_mid_transfer(profile: Profile) -> Net<'static> {
    let locals = [ip(1, 1), ip(2, 1)];
    let mut n = Net::new(&locals, &[ip(9, 1)], "fullmesh", 10, 10);
    n.client = Connection::connect(cfg(&locals, "fullmesh").with_profile(profile), SocketAddr::new(locals[0], 40000), SocketAddr::new(ip(9, 1), 5001), 1, Instant(0));
    n.server_cfg = n.server_cfg.clone().with_profile(profile);
    n.to_send = 3_000_000;
    n.run(500);
    let s = n.server.as_mut().expect("server");
    assert_eq!(s.subflows.iter().filter(|x| x.tcp.is_established()).count(), 2, "both subflows carry data");
    for j in 0..s.subflows.len() {
        s.subflows[j].reset_reason = Some(tcprst_reason::MIDDLEBOX_INTERFERENCE);
        s.subflows[j].tcp.abort();
        s.changed(j);
    }
    n.run(60_000);
    n
}

#[test]
fn a_connection_whose_every_subflow_was_reset_waits_and_they_come_back() {
    let n = reset_every_subflow_mid_transfer(Profile::Mplab);
    assert_eq!(n.received, 3_000_000, "every byte");
    assert_eq!(n.misplaced, 0);
    assert!(!n.client.was_reset() && !n.server.as_ref().unwrap().was_reset());
    assert_eq!(n.client.stats().subflows_recreated, 2, "both subflows opened again, and they held");
    assert!(n.client.subflows().iter().filter(|s| !s.is_closed()).count() >= 1);

    let n = reset_every_subflow_mid_transfer(Profile::Linux);
    assert!(n.received < 3_000_000, "Linux's profile does not come back: {} bytes", n.received);
    assert_eq!(n.client.stats().subflows_recreated, 0);
    assert!(n.client.was_reset(), "the client's connection ends with its last subflow");
}

/// Nothing comes back (the server reset every subflow and then became
/// unreachable): the client's attempts go unanswered, and once the last
/// one has given up, later than `rejoin.max` after the connection lost
/// its subflows, the client resets the connection instead of trying for
/// ever; the server, which never sees a join, resets it too after its own
/// wait.
#[test]
fn a_connection_without_subflows_gives_up_after_the_backoff_cap() {
    let locals = [ip(1, 1), ip(2, 1)];
    let mut n = Net::new(&locals, &[ip(9, 1)], "fullmesh", 10, 10);
    let mut c = cfg(&locals, "fullmesh");
    c.rejoin = Some(RejoinBackoff { first: Duration::from_secs(1), max: Duration::from_secs(4) });
    n.client = Connection::connect(c, SocketAddr::new(locals[0], 40000), SocketAddr::new(ip(9, 1), 5001), 1, Instant(0));
    n.to_send = 3_000_000;
    n.run(500);
    let s = n.server.as_mut().expect("server");
    for j in 0..s.subflows.len() {
        s.subflows[j].reset_reason = Some(tcprst_reason::MIDDLEBOX_INTERFERENCE);
        s.subflows[j].tcp.abort();
        s.changed(j);
    }
    // The RSTs go out; from then on nothing reaches the server.
    n.run(520);
    assert!(n.client.subflows().iter().all(|s| s.is_closed()), "the client saw both RSTs");
    assert!(n.client.waits_for_a_subflow() && n.server().waits_for_a_subflow());
    n.drop = Box::new(|x| x.to_server);
    n.run(600_000);
    assert!(n.client.was_reset(), "the client gave up");
    assert!(n.server().was_reset(), "so did the server");
    let attempts = n.client.stats().subflows_recreated;
    assert!((2..=4).contains(&attempts), "{attempts} attempts");
}

/// A peer that refuses every join: the attempts back off from 1 s,
/// doubling to the cap, so the effort stays one SYN per cap.
#[test]
fn refused_rejoins_back_off_to_the_cap() {
    let locals = [ip(1, 1), ip(2, 1)];
    let mut n = Net::new(&locals, &[ip(9, 1)], "fullmesh", 10, 10);
    let mut c = cfg(&locals, "fullmesh");
    c.rejoin = Some(RejoinBackoff { first: Duration::from_secs(1), max: Duration::from_secs(4) });
    n.client = Connection::connect(c, SocketAddr::new(locals[0], 40000), SocketAddr::new(ip(9, 1), 5001), 1, Instant(0));
    n.to_send = 100_000_000;
    n.keep_open = true;
    let mut seen = 0;
    let mut refusing = false;
    n.mangle = Box::new(move |h, from_client| {
        if from_client || h.dst_port == 40000 {
            return;
        }
        // The first join is reset mid-transfer; every later one is
        // refused at its SYN/ACK.
        if h.syn() && refusing {
            h.flags = mplab_wire::tcp::flags::RST | mplab_wire::tcp::flags::ACK;
            h.options.clear_mptcp();
            return;
        }
        seen += 1;
        if seen == 300 {
            refusing = true;
            h.flags = mplab_wire::tcp::flags::RST;
            h.options.clear_mptcp();
        }
    });
    n.run(40_000);
    // Backoffs 1, 2, 4, 4, 4 ... s after the reset (at about 1 s): by
    // 40 s at most 1 + 1 + (40 - 1 - 1 - 2 - 4) / 4 + 1 attempts.
    let attempts = n.client.stats().subflows_recreated;
    assert!((8..=11).contains(&attempts), "{attempts} attempts in 40 s");
}

/// The test fixture path manager (path_manager/fixture_first_only.rs, one
/// file plus its line in the `path_managers!` list), chosen by name as a
/// scenario names a manager: two addresses on each end, and the connection
/// keeps its first subflow only where fullmesh opens four.
#[test]
fn a_path_manager_added_by_one_file_is_chosen_by_its_name() {
    let run = |pm: &str| {
        let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1), ip(8, 1)], pm, 5, 100);
        n.to_send = 500_000;
        n.run(20_000);
        assert_eq!((n.received, n.misplaced), (500_000, 0), "{pm}");
        n.client.subflow_stats().len()
    };
    assert_eq!(run("fixture-first-only"), 1);
    assert_eq!(run("fullmesh"), 4);
}
