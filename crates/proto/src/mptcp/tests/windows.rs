//! Windows: the peer window's right edge, joins, out-of-order data, receive autotuning.

use super::*;

/// The peer's window is DATA_ACK + window, and its right edge never moves
/// back: an ACK on a slower subflow with an older DATA_ACK, or a subflow
/// whose receiver opens its window gradually (Linux), does not shrink what
/// the sender may send; a DATA_ACK beyond what was sent is not believed.
#[test]
fn the_peer_windows_right_edge_never_moves_back() {
    let mut c = Connection::connect(cfg(&[ip(1, 1)], "default"), SocketAddr::new(ip(1, 1), 40000), SocketAddr::new(ip(9, 1), 5001), 1, Instant(0));
    c.app_end = 1_000_000;
    c.advance_wnd_end(100_000, 200_000);
    c.data_una = 100_000;
    assert_eq!(c.peer_wnd(), 200_000);
    c.advance_wnd_end(50_000, 100_000);
    assert_eq!(c.peer_wnd(), 200_000, "an older DATA_ACK with a smaller window");
    c.advance_wnd_end(100_000, 65_160);
    assert_eq!(c.peer_wnd(), 200_000, "a subflow still opening its window");
    c.advance_wnd_end(200_000, 150_000);
    c.data_una = 200_000;
    assert_eq!(c.peer_wnd(), 150_000);
    c.advance_wnd_end(2_000_000, 10);
    assert_eq!(c.peer_wnd(), 150_000, "a DATA_ACK beyond what was sent");
}

/// The responder of a join sends its fourth ACK as soon as the third ACK
/// arrives (RFC 8684 3.2), so the initiator may use the subflow one round
/// trip after its third ACK, without resending it. Under the `linux`
/// profile no window update happens to carry that ACK.
#[test]
fn a_join_is_usable_one_round_trip_after_its_third_ack() {
    let mut n = Net::new(&[ip(1, 1), ip(2, 1)], &[ip(9, 1)], "fullmesh", 10, 100);
    n.client.cfg = n.client.cfg.clone().with_profile(Profile::Linux);
    n.server_cfg = n.server_cfg.clone().with_profile(Profile::Linux);
    n.to_send = 2_000_000;
    let mut usable_at = None;
    for ms in 1..=400 {
        n.run(ms);
        if n.client.subflows().get(1).is_some_and(|s| s.usable()) {
            usable_at = Some(ms);
            break;
        }
    }
    let usable_at = usable_at.expect("the join became usable within 400 ms");
    let at_ms = |l: &String| l.split_whitespace().next().unwrap().trim_start_matches("Instant(").trim_end_matches(')').parse::<u64>().unwrap() / MS;
    let third_acks: Vec<u64> = n.log.iter().filter(|l| l.contains(" true ") && l.contains("MpJoin(Ack")).map(at_ms).collect();
    assert_eq!(third_acks.len(), 1, "the third ACK was sent again: at {third_acks:?} ms");
    // A 20 ms round trip (and a little serialisation).
    assert!(usable_at <= third_acks[0] + 22, "third ACK at {} ms, usable only at {usable_at} ms", third_acks[0]);
}

/// Under the `linux` profile data held out of order takes its room from
/// the receive window (Linux's `__mptcp_space`), so while a slow path
/// holds a hole the window shrinks by what the fast path delivered beyond
/// it; under `mplab` the window counts from the next byte expected, and
/// what lies beyond it is already inside.
#[test]
fn out_of_order_data_takes_its_room_from_the_window_under_the_linux_profile() {
    for profile in [Profile::Linux, Profile::Mplab] {
        let mut n = Net::new(&[ip(1, 1)], &[ip(9, 1), ip(9, 2)], "fullmesh", 5, 10);
        n.client.cfg = n.client.cfg.clone().with_profile(profile);
        n.server_cfg = n.server_cfg.clone().with_profile(profile);
        n.skew = Some((ip(9, 2), 60 * MS));
        n.to_send = 3_000_000;
        let mut held = 0;
        for ms in (10..20_000).step_by(5) {
            n.run(ms);
            let s = n.server();
            let ooo = s.rcv.ooo_bytes();
            if ooo < 10_000 {
                continue;
            }
            held += 1;
            let buf = s.autotune.as_ref().map_or(s.cfg.rcv_buf, |a| a.window());
            let unread = s.rcv.nxt() - s.read_off;
            let want = match profile {
                Profile::Linux => buf.saturating_sub(unread + ooo),
                Profile::Mplab => buf.saturating_sub(unread),
            };
            assert_eq!(s.rcv_window(), want, "{profile:?} at {ms} ms: buffer {buf}, unread {unread}, out of order {ooo}");
        }
        assert_eq!(n.received, 3_000_000);
        assert!(held > 20, "{profile:?}: out-of-order data held at only {held} samples");
    }
}

/// Receive-buffer autotuning times its measurement by the subflows'
/// receiver-side RTTs only (Linux's `mptcp_rcv_space_adjust` takes the
/// largest `rcv_rtt_est`): a subflow that has joined but carried no data
/// yet does not count, however long its handshake took, so the window
/// keeps growing at the pace of the path the data is on.
#[test]
fn autotuning_ignores_a_subflow_that_carried_no_data_yet() {
    let mut n = Net::new(&[ip(1, 1)], &[ip(9, 1), ip(9, 2)], "fullmesh", 5, 10);
    n.client.cfg = n.client.cfg.clone().with_profile(Profile::Linux);
    n.server_cfg = n.server_cfg.clone().with_profile(Profile::Linux);
    // The second server address is 200 ms further away each way.
    n.skew = Some((ip(9, 2), 200 * MS));
    n.to_send = 2_000_000;
    let mut seen = 0;
    for ms in (5..3_000).step_by(5) {
        n.run(ms);
        let Some(s) = n.server.as_ref() else { continue };
        let [first, joined] = s.subflows() else { continue };
        let (Some(handshake), 0) = (joined.tcp.srtt(), joined.tcp.stats().bytes_received) else { continue };
        assert!(handshake > Duration::from_millis(300), "the join's handshake RTT {handshake:?}");
        assert_eq!(joined.tcp.rcv_rtt(), None, "at {ms} ms: no data, no receiver estimate");
        let data_rtt = first.tcp.rcv_rtt().expect("the first subflow carries data");
        assert_eq!(s.autotune_rtt(), Some(data_rtt), "at {ms} ms");
        seen += 1;
    }
    assert!(seen >= 20, "the joined subflow waited for data at only {seen} samples");
    n.run(30_000);
    assert_eq!(n.received, 2_000_000);
}
