//! The Linux profile's send buffer and staleness.

use super::*;

/// Under send-buffer autotuning the connection holds tcp_wmem[0] plus its
/// subflows' buffers: 4096 + 16384 before the handshake, then at least
/// two initial windows' worth per subflow, growing with the windows.
#[test]
fn linux_send_buffer_follows_the_subflows_windows() {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
    n.client.cfg.snd_autotune = true;
    assert_eq!(n.client.snd_buf(), sndbuf::WMEM_MIN + sndbuf::WMEM_DEFAULT);
    n.to_send = 3_000_000;
    n.run(100);
    let early = n.client.snd_buf();
    n.run(30_000);
    assert_eq!(n.received, 3_000_000);
    let subflows = n.client.subflows().iter().filter(|s| !s.is_closed()).count() as u64;
    let floor = sndbuf::WMEM_MIN + subflows * 2 * 10 * sndbuf::TRUESIZE_PER_MSS;
    let b = n.client.snd_buf();
    assert!(subflows == 2 && early < b && b > floor && b <= sndbuf::WMEM_MIN + subflows * n.client.cfg.snd_buf, "{subflows} subflows, {early} then {b} bytes");
}

/// Linux grows a subflow's send buffer only on ACKs that arrive while the
/// writer waits for room and the subflow's window is not full
/// (`tcp_check_space`). An application that writes 40 KB every 300 ms
/// never fills the buffer: its subflow's window grows past the initial
/// one, its buffer stays at the initial window's worth. A bulk writer's
/// grows.
#[test]
fn linux_send_buffer_grows_only_while_the_writer_waits() {
    let floor = 2 * 10 * sndbuf::TRUESIZE_PER_MSS;
    for bulk in [false, true] {
        let mut n = Net::new(&[ip(1, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
        n.client.cfg.snd_autotune = true;
        n.client.cfg.write_wakeup_third = true;
        n.keep_open = true;
        let mut widest = 0;
        let total = if bulk { 3_000_000 } else { 15 * 40_000 };
        if bulk {
            n.to_send = total;
        }
        for ms in (300..=4_500).step_by(300) {
            if !bulk {
                n.to_send += 40_000;
            }
            n.run(ms);
            n.now = n.now.max(Instant(ms * MS));
            let s = &n.client.subflows()[0];
            widest = widest.max(s.tcp.cc_state().cwnd / s.tcp.mss());
        }
        n.keep_open = false;
        n.run(30_000);
        assert_eq!(n.received, total);
        let buf = n.client.subflows()[0].sndbuf;
        if bulk {
            assert!(buf > floor, "a bulk writer's buffer grew: {buf}");
        } else {
            assert!(widest > 20, "the window grew to {widest} segments");
            assert_eq!(buf, floor, "window {widest} segments");
        }
    }
}

/// The sizes of the application's writes once the send buffer first
/// filled (to_send sampled every millisecond), over a 10 Mbit/s path.
fn writes_after_the_buffer_filled(wakeup_third: bool) -> (Vec<u64>, u64) {
    let mut n = Net::new(&[ip(1, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
    n.client.cfg.write_wakeup_third = wakeup_third;
    n.client.cfg.snd_buf = 200_000;
    let total = 2_000_000;
    n.to_send = total;
    let (mut left, mut filled, mut writes) = (total, false, Vec::new());
    for ms in 1..10_000 {
        n.run(ms);
        let wrote = left - n.to_send;
        left = n.to_send;
        if filled && wrote > 0 && left > 0 {
            writes.push(wrote);
        }
        filled |= n.client.send_space() == 0;
        if left == 0 {
            break;
        }
    }
    n.run(30_000);
    (writes, n.received)
}

/// Linux wakes a writer that filled the send buffer only once a third of
/// it is free (`sk_stream_write_space`), so the application writes in
/// large pieces; mplab lets it in as soon as any room frees.
#[test]
fn a_linux_writer_waits_for_a_third_of_the_buffer() {
    let (third, got) = writes_after_the_buffer_filled(true);
    assert_eq!(got, 2_000_000);
    assert!(third.len() > 5 && third.iter().all(|&w| w >= 200_000 / 3), "{third:?}");
    let (any, got) = writes_after_the_buffer_filled(false);
    assert_eq!(got, 2_000_000);
    assert!(any.len() > 5 * third.len() && any.iter().any(|&w| w < 200_000 / 10), "{} writes: {any:?}", any.len());
}

/// The `linux` profile's staleness: a path that dies is stale after five
/// connection-level retransmission periods without anything received on
/// it (well before its own backed-off timer would get there), and the
/// whole unacknowledged stream goes out again on the other subflow.
#[test]
fn linux_profile_marks_a_dead_subflow_stale_by_retransmission_periods() {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
    n.client.cfg = n.client.cfg.clone().with_profile(Profile::Linux);
    n.client.cfg.snd_autotune = false;
    n.to_send = 4_000_000;
    // A writer that closes only at the end: closed at once, the whole
    // 4 MB in the buffer, the connection would never join (Linux opens no
    // subflow once its DATA_FIN is queued).
    n.keep_open = true;
    n.drop = Box::new(move |s| {
        let c = if s.to_server { s.t.local.ip() } else { s.t.remote.ip() };
        c == ip(2, 1) && s.now >= Instant(1000 * MS)
    });
    let mut stale_at = None;
    for ms in (1000..20_000).step_by(50) {
        n.run(ms);
        if stale_at.is_none() && n.client.subflows().iter().any(|s| s.local.ip() == ip(2, 1) && s.stale) {
            stale_at = Some(ms);
        }
    }
    n.keep_open = false;
    n.run(60_000);
    assert_eq!(n.received, 4_000_000);
    assert_eq!(n.misplaced, 0);
    let dead = n.client.subflows().iter().find(|s| s.local.ip() == ip(2, 1)).unwrap();
    // Its own timer has backed off only a few times by then.
    let at = stale_at.expect("the dead subflow became stale");
    assert!(at < 4_000, "stale at {at} ms");
    assert!(dead.stale_count >= n.client.cfg.stale_after);
}

/// An upload whose bytes all fit in the send buffer: the application
/// writes them and closes at once, before the connection is established
/// at the data level. Linux opens no subflow once its DATA_FIN is queued
/// (the msk has left TCP_ESTABLISHED): the transfer stays on its first
/// subflow. mplab's profile still joins and spreads the tail.
#[test]
fn an_upload_closed_before_it_is_established_stays_on_its_first_subflow_under_linux() {
    for linux in [false, true] {
        let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
        n.client.cfg.joins_only_while_established = linux;
        n.server_cfg.joins_only_while_established = linux;
        n.to_send = 2_000_000;
        n.run(30_000);
        assert_eq!(n.received, 2_000_000);
        assert_eq!(n.misplaced, 0);
        let opened = n.client.subflows().len();
        let per = bytes_on(&n.client);
        if linux {
            assert_eq!(opened, 1, "no join once the DATA_FIN is queued: {per:?}");
        } else {
            assert!(opened == 2 && per.iter().all(|&b| b > 0), "mplab joins all the same: {per:?}");
        }
    }
}

/// The responder's side: a join whose third ACK arrives after the peer's
/// DATA_FIN is reset, administratively prohibited, as Linux's
/// `subflow_syn_recv_sock` does when `mptcp_can_accept_new_subflow` says
/// no (MPTCP_RST_EPROHIBIT); the download goes on over the first
/// subflow. The client here still opens joins (mplab's rule) and closes
/// its sending side at once.
#[test]
fn a_join_after_the_peers_data_fin_is_refused_at_its_third_ack() {
    for linux in [false, true] {
        let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 10, 10);
        n.server_cfg.joins_only_while_established = linux;
        n.down = 2_000_000;
        n.run(30_000);
        assert_eq!(n.down_received, 2_000_000);
        assert_eq!(n.down_misplaced, 0);
        let server = n.server();
        let joins: Vec<_> = server.subflows().iter().filter(|s| s.is_join()).collect();
        assert!(!joins.is_empty(), "the client's join reached the server");
        if linux {
            // The client (mplab's) opens its join again after each reset.
            assert!(joins.iter().all(|j| j.reset_reason == Some(mplab_wire::mptcp::tcprst_reason::ADMIN_PROHIBITED)));
            assert_eq!(server.stats().joins_refused, joins.len() as u64);
            assert_eq!(bytes_on(server).iter().filter(|&&b| b > 0).count(), 1, "{:?}", bytes_on(server));
        } else {
            assert_eq!(server.stats().joins_refused, 0);
            assert!(joins.len() == 1 && bytes_on(server).iter().all(|&b| b > 0), "{:?}", bytes_on(server));
        }
    }
}
