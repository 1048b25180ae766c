//! Data integrity: DSS checksums, MP_FASTCLOSE, redundant copies, every scheduler, change tracking.

use super::*;

#[test]
fn dss_checksums_verify_and_catch_a_modified_payload() {
    let mut locals = cfg(&[ip(1, 1)], "default");
    locals.checksum = true;
    let mut n = Net::new(&[ip(1, 1)], &[ip(9, 1)], "default", 5, 100);
    n.client = Connection::connect(locals, SocketAddr::new(ip(1, 1), 40000), SocketAddr::new(ip(9, 1), 5001), 1, Instant(0));
    n.to_send = 300_000;
    n.run(10_000);
    assert_eq!(n.received, 300_000);
    assert!(n.server().checksums());
    assert_eq!(n.server().stats().checksum_failures, 0);

    // Now a box rewrites one byte of one data segment.
    let mut locals = cfg(&[ip(1, 1)], "default");
    locals.checksum = true;
    let mut n = Net::new(&[ip(1, 1)], &[ip(9, 1)], "default", 5, 100);
    n.client = Connection::connect(locals, SocketAddr::new(ip(1, 1), 40000), SocketAddr::new(ip(9, 1), 5001), 1, Instant(0));
    n.to_send = 300_000;
    let mut hit = false;
    n.corrupt = Box::new(move |t| {
        if !hit && t.data.start > 100_000 {
            hit = true;
            return true;
        }
        false
    });
    n.to_send = 8_000_000; // more than the send buffer: the sender must follow
    n.run(30_000);
    assert_eq!(n.server().stats().checksum_failures, 1);
    assert_eq!(n.server().fallback(), Some(Fallback::Checksum));
    assert_eq!(n.client.fallback(), Some(Fallback::Checksum), "MP_FAIL told the sender");
    assert_eq!(n.received, 8_000_000, "the byte stream goes on as TCP");
}

/// With checksums negotiated, a mapping that comes without one (an
/// on-path attacker's, here one moving a joined subflow's genuine bytes
/// 5000 bytes further in the data stream) places nothing: the subflow is
/// reset, its data goes again on the other, and every byte arrives where
/// the sender put it. Before, the bytes were placed where the forged
/// mapping said.
#[test]
fn a_mapping_without_its_checksum_places_nothing() {
    let client_locals = [ip(1, 1), ip(2, 1)];
    let mut c = cfg(&client_locals, "fullmesh");
    c.checksum = true;
    let mut n = Net::new(&client_locals, &[ip(9, 1)], "fullmesh", 10, 10);
    n.client = Connection::connect(c, SocketAddr::new(client_locals[0], 40000), SocketAddr::new(ip(9, 1), 5001), 1, Instant(0));
    n.to_send = 2_000_000;
    let mut moved = false;
    n.mangle = Box::new(move |h, from_client| {
        if moved || !from_client || h.src_port == 40000 {
            return;
        }
        let Some(MptcpOption::Dss(mut d)) = h.options.mptcp().find(|o| matches!(o, MptcpOption::Dss(_))).copied() else { return };
        let Some(m) = d.mapping.as_mut().filter(|m| m.data_len > 0 && m.ssn > 100_000) else { return };
        m.dsn = m.dsn.wrapping_add(5000);
        m.checksum = None;
        moved = true;
        h.options.clear_mptcp();
        h.options.push_mptcp(MptcpOption::Dss(d)).unwrap();
    });
    n.run(60_000);
    assert!(n.server().checksums());
    assert_eq!(n.server().stats().checksum_failures, 1, "the mapping without its checksum was refused");
    assert_eq!(n.misplaced, 0, "no byte placed where the forged mapping said");
    assert_eq!(n.received, 2_000_000, "every byte, from the other subflow");
}

#[test]
fn fastclose_with_the_wrong_key_is_ignored() {
    let mut n = Net::new(&[ip(1, 1)], &[ip(9, 1)], "default", 5, 100);
    n.to_send = 10_000_000;
    n.run(300);
    let s = n.server.as_mut().unwrap();
    let sf = &s.subflows()[0];
    let (local, remote) = (sf.local, sf.remote);
    let mut o = TcpOptions::new();
    o.push_mptcp(MptcpOption::MpFastclose { receiver_key: s.local_key() ^ 1 }).unwrap();
    let rst = TcpHeader { src_port: remote.port(), dst_port: local.port(), seq: 0, ack: 0, flags: mplab_wire::tcp::flags::RST, window: 0, urgent: 0, options: o };
    s.handle_segment(Instant(300 * MS), local, remote, &rst, 0, None);
    assert!(!s.was_reset());
    n.client.abort();
    n.run(2000);
    assert!(n.server().was_reset(), "the real key closes it");
}


#[test]
fn redundant_copies_are_reassembled_once_and_data_acked() {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
    n.client.set_scheduler(scheduler::by_name("redundant").unwrap());
    n.to_send = 2_000_000;
    n.run(30_000);
    assert_eq!(n.received, 2_000_000, "every byte once, in order");
    assert_eq!(n.misplaced, 0);
    let per = bytes_on(&n.client);
    assert_eq!(per.len(), 2);
    // Both subflows carried (almost) the whole stream: the second joined a
    // few RTTs late and starts with the data not yet DATA_ACKed then.
    assert!(per.iter().all(|&b| b >= 1_800_000), "{per:?}");
    assert!(n.client.all_done() && n.server().all_done());
}

#[test]
fn every_named_scheduler_delivers_every_byte() {
    for name in ["minrtt", "linux", "roundrobin", "kbest:2", "primary", "primary-standby", "blest", "ecf"] {
        let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
        n.client.set_scheduler(scheduler::by_name(name).unwrap());
        n.to_send = 1_000_000;
        n.run(30_000);
        assert_eq!((n.received, n.misplaced), (1_000_000, 0), "{name}");
    }
}

/// After a segment only the subflows that changed are looked at again
/// (scheduler view, polling, timers, window notes); the segments must be
/// exactly those full sweeps give, in the same order, through losses and
/// retransmissions on four subflows.
#[test]
fn change_tracking_matches_full_sweeps() {
    change_tracking_matches_full_sweeps_with(6 << 20);
}

/// The same with a receive buffer small enough that the shared window
/// cap binds: reading data opens every subflow's window, and a subflow
/// nothing happened to may owe a window update.
#[test]
fn change_tracking_matches_full_sweeps_with_a_small_receive_buffer() {
    change_tracking_matches_full_sweeps_with(40_000);
}

fn change_tracking_matches_full_sweeps_with(rcv_buf: u64) {
    let run = |full: bool| {
        let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1), ip(9, 2)], "fullmesh", 3, 50);
        n.full_passes = full;
        // The first server address is the slow one: faster subflows have
        // higher indices, so picks come out of index order.
        n.skew = Some((ip(9, 1), 4 * MS));
        // A small send buffer: data arrives while several subflows have
        // room, so one pass picks several of them.
        n.client.cfg.snd_buf = 150_000;
        n.server_cfg.rcv_buf = rcv_buf;
        let mut k = 0u32;
        n.drop = Box::new(move |s: &Seen| {
            k += 1;
            s.to_server && s.t.data.end > s.t.data.start && k.is_multiple_of(211)
        });
        n.to_send = 3_000_000;
        n.run(20_000);
        assert_eq!(n.received, 3_000_000);
        assert!(n.client.subflows().len() >= 4);
        n.log
    };
    let (inc, full) = (run(false), run(true));
    assert!(inc.len() > 2000, "{} segments", inc.len());
    if let Some(i) = inc.iter().zip(&full).position(|(a, b)| a != b) {
        panic!("segment {i} differs:\n incremental {}\n full        {}", inc[i], full[i]);
    }
    assert_eq!(inc.len(), full.len());
}

/// The DATA_FIN takes a data sequence number but holds no byte: once it is
/// DATA_ACKed the send buffer is empty, not one byte short of empty.
#[test]
fn nothing_is_queued_once_the_data_fin_is_data_acked() {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
    n.to_send = 200_000;
    n.run(30_000);
    assert_eq!(n.received, 200_000);
    assert!(n.client.all_done(), "the DATA_FIN was DATA_ACKed");
    assert!(n.client.acked_offset() > 200_000, "data_una is past the DATA_FIN");
    assert_eq!(n.client.send_queued(), 0);
}
