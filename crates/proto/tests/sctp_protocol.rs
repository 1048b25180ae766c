//! Protocol behaviour of the SCTP association on hand-made packets:
//! handshake and cookie checks, verification tags, ABORT rules, unknown
//! chunks, a SACK beyond what was sent, delayed SACK, CUC.

use std::net::IpAddr;
use std::time::Duration;

use mplab_proto::sctp::{Association, CloseReason, CmtMode, SctpConfig, State, Transmit};
use mplab_proto::Instant;
use mplab_wire::sctp::chunk::{sack_flags, Chunk, DataChunk, GapBlock, SackChunk};
use mplab_wire::sctp::param::{ErrorCause, InitParam};
use mplab_wire::sctp::Packet;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn pair(cfg: SctpConfig) -> (Association, Association) {
    let a = Association::connect(cfg.clone(), vec![ip("10.0.0.1"), ip("10.0.1.1")], 5000, vec![ip("10.0.0.2"), ip("10.0.1.2")], 6000, 1, Instant::ZERO);
    let b = Association::listen(cfg, vec![ip("10.0.0.2"), ip("10.0.1.2")], 6000, [7; 32], 2);
    (a, b)
}

fn drain(x: &mut Association, now: Instant) -> Vec<Transmit> {
    std::iter::from_fn(|| x.poll_transmit(now)).collect()
}

/// Delivers packets through the codec until both sides are quiet.
fn pump(a: &mut Association, b: &mut Association, now: Instant) {
    for _ in 0..100 {
        let ta = drain(a, now);
        let tb = drain(b, now);
        if ta.is_empty() && tb.is_empty() {
            return;
        }
        for t in ta {
            let p = Packet::decode(&t.packet.encode().unwrap()).unwrap();
            b.on_packet(now, t.src, t.dst, &p);
        }
        for t in tb {
            let p = Packet::decode(&t.packet.encode().unwrap()).unwrap();
            a.on_packet(now, t.src, t.dst, &p);
        }
    }
    panic!("no quiet");
}

fn established(cfg: SctpConfig) -> (Association, Association) {
    let (mut a, mut b) = pair(cfg);
    pump(&mut a, &mut b, Instant::ZERO);
    assert_eq!(a.state(), State::Established);
    assert_eq!(b.state(), State::Established);
    (a, b)
}

/// One DATA packet from A, not delivered: (transmit, B's tag, its TSN).
fn data_from_a(a: &mut Association, now: Instant, bytes: &[u8]) -> (Transmit, u32, u32) {
    assert_eq!(a.send(now, bytes), bytes.len());
    let t = a.poll_transmit(now).expect("data");
    let tsn = match &t.packet.chunks[0] {
        Chunk::Data(d) => d.tsn,
        c => panic!("{c:?}"),
    };
    let tag = t.packet.header.verification_tag;
    (t, tag, tsn)
}

fn read_all(b: &mut Association, now: Instant) -> Vec<u8> {
    let mut buf = vec![0; 1 << 16];
    let n = b.recv(now, &mut buf);
    buf.truncate(n);
    buf
}

#[test]
fn handshake_negotiates_nr_sack_and_pairs_addresses() {
    let (a, b) = established(SctpConfig::cmt(CmtMode::Cmt));
    assert!(a.nr_sack_negotiated() && b.nr_sack_negotiated());
    assert_eq!(a.destinations(), 2);
    assert_eq!(b.destinations(), 2);
    let (a, _) = established(SctpConfig::default());
    assert!(!a.nr_sack_negotiated());
}

fn cookie_echo(a: &mut Association, b: &mut Association) -> Transmit {
    let init = a.poll_transmit(Instant::ZERO).unwrap();
    b.on_packet(Instant::ZERO, init.src, init.dst, &init.packet);
    let ack = b.poll_transmit(Instant::ZERO).unwrap();
    assert!(b.poll_transmit(Instant::ZERO).is_none(), "the listener keeps no state");
    a.on_packet(Instant::ZERO, ack.src, ack.dst, &ack.packet);
    let echo = a.poll_transmit(Instant::ZERO).unwrap();
    assert!(matches!(echo.packet.chunks[0], Chunk::CookieEcho { .. }));
    echo
}

#[test]
fn cookie_with_a_bad_mac_is_dropped_silently() {
    let (mut a, mut b) = pair(SctpConfig::default());
    let mut echo = cookie_echo(&mut a, &mut b);
    if let Chunk::CookieEcho { cookie } = &mut echo.packet.chunks[0] {
        cookie[3] ^= 1;
    }
    b.on_packet(Instant::ZERO, echo.src, echo.dst, &echo.packet);
    assert_eq!(b.state(), State::Listen);
    assert!(b.poll_transmit(Instant::ZERO).is_none());
    assert_eq!(b.stats(Instant::ZERO).cookies_bad_mac, 1);
}

#[test]
fn stale_cookie_gets_an_error_and_the_initiator_starts_over() {
    let (mut a, mut b) = pair(SctpConfig::default());
    let echo = cookie_echo(&mut a, &mut b);
    let late = Instant::ZERO + Duration::from_secs(61);
    b.on_packet(late, echo.src, echo.dst, &echo.packet);
    assert_eq!(b.state(), State::Listen);
    let err = b.poll_transmit(late).expect("ERROR");
    let Chunk::Error { causes } = &err.packet.chunks[0] else { panic!("{err:?}") };
    assert!(matches!(causes[0], ErrorCause::StaleCookie { staleness_us } if staleness_us >= 999_000));
    a.on_packet(late, err.src, err.dst, &err.packet);
    assert_eq!(a.state(), State::CookieWait);
    let init = a.poll_transmit(late).unwrap();
    let Chunk::Init(i) = &init.packet.chunks[0] else { panic!() };
    assert!(i.params.iter().any(|p| matches!(p, InitParam::CookiePreservative(_))));
    // And the second attempt succeeds.
    b.on_packet(late, init.src, init.dst, &init.packet);
    pump(&mut a, &mut b, late);
    assert_eq!(b.state(), State::Established);
}

#[test]
fn init_with_unknown_parameters_reports_them() {
    let (mut a, mut b) = pair(SctpConfig::default());
    let mut init = a.poll_transmit(Instant::ZERO).unwrap();
    let Chunk::Init(i) = &mut init.packet.chunks[0] else { panic!() };
    // 10: skip silently; 11: skip and report; 01: stop and report (and
    // nothing after it is looked at).
    i.params.push(InitParam::Unknown { param_type: 0x8123, value: vec![1] });
    i.params.push(InitParam::Unknown { param_type: 0xc123, value: vec![2] });
    i.params.push(InitParam::Unknown { param_type: 0x4123, value: vec![3] });
    i.params.push(InitParam::Unknown { param_type: 0xc124, value: vec![4] });
    b.on_packet(Instant::ZERO, init.src, init.dst, &init.packet);
    let ack = b.poll_transmit(Instant::ZERO).unwrap();
    let Chunk::InitAck(ia) = &ack.packet.chunks[0] else { panic!() };
    let rep = ia.params.iter().find_map(|p| match p {
        InitParam::UnrecognizedParameter(v) => Some(v.clone()),
        _ => None,
    });
    let rep = rep.expect("reported");
    let listed = InitParam::decode_list(&rep).unwrap();
    assert_eq!(
        listed,
        vec![InitParam::Unknown { param_type: 0xc123, value: vec![2] }, InitParam::Unknown { param_type: 0x4123, value: vec![3] }]
    );
}

#[test]
fn init_bundled_or_with_a_tag_is_dropped() {
    let (mut a, mut b) = pair(SctpConfig::default());
    let mut init = a.poll_transmit(Instant::ZERO).unwrap();
    init.packet.header.verification_tag = 5;
    b.on_packet(Instant::ZERO, init.src, init.dst, &init.packet);
    assert!(b.poll_transmit(Instant::ZERO).is_none());
    init.packet.header.verification_tag = 0;
    init.packet.chunks.push(Chunk::CookieAck);
    b.on_packet(Instant::ZERO, init.src, init.dst, &init.packet);
    assert!(b.poll_transmit(Instant::ZERO).is_none());
}

#[test]
fn wrong_verification_tag_is_dropped_silently() {
    let (mut a, mut b) = established(SctpConfig::default());
    let now = Instant::ZERO;
    let (mut t, tag, _) = data_from_a(&mut a, now, b"hello");
    t.packet.header.verification_tag = tag.wrapping_add(1);
    b.on_packet(now, t.src, t.dst, &t.packet);
    assert_eq!(b.readable(), 0);
    assert!(b.poll_transmit(now).is_none());
    assert_eq!(b.poll_timeout().map(|x| x > now + Duration::from_secs(1)), Some(true), "no SACK timer either");
    assert_eq!(b.stats(now).dropped_bad_tag, 1);
    // The right tag goes through.
    t.packet.header.verification_tag = tag;
    b.on_packet(now, t.src, t.dst, &t.packet);
    assert_eq!(read_all(&mut b, now), b"hello");
}

#[test]
fn abort_tag_rules_rfc_9260_8_5_1() {
    let (mut a, mut b) = established(SctpConfig::default());
    let now = Instant::ZERO;
    let (t, b_tag, _) = data_from_a(&mut a, now, b"x");
    // A's own tag, as B would put it in packets to A.
    b.on_packet(now, t.src, t.dst, &t.packet);
    b.on_timeout(now + Duration::from_millis(300));
    let s = b.poll_transmit(now + Duration::from_millis(300)).expect("delayed SACK");
    let a_tag = s.packet.header.verification_tag;
    let abort = |tag: u32, t_bit: bool| Packet::new(5000, 6000, tag, vec![Chunk::Abort { t_bit, causes: vec![] }]);
    // Wrong tag, either bit: ignored.
    b.on_packet(now, t.src, t.dst, &abort(b_tag ^ 1, false));
    b.on_packet(now, t.src, t.dst, &abort(b_tag, true));
    assert_eq!(b.state(), State::Established);
    // T bit with the sender's own (A's) tag: accepted.
    b.on_packet(now, t.src, t.dst, &abort(a_tag, true));
    assert_eq!(b.state(), State::Closed);
    assert!(matches!(b.close_reason(), Some(CloseReason::PeerAbort(_))));
    // T clear with the receiver's tag: accepted.
    let (mut a, mut b) = established(SctpConfig::default());
    let (t, b_tag, _) = data_from_a(&mut a, now, b"x");
    b.on_packet(now, t.src, t.dst, &abort(b_tag, false));
    assert_eq!(b.state(), State::Closed);
}

#[test]
fn unknown_chunk_actions() {
    // (type, DATA after it processed, ERROR reported)
    for (ty, processed, reported) in [(0x3f, false, false), (0x7f, false, true), (0xbf, true, false), (0xff, true, true)] {
        let (mut a, mut b) = established(SctpConfig::default());
        let now = Instant::ZERO;
        let (mut t, _, _) = data_from_a(&mut a, now, b"payload");
        t.packet.chunks.insert(0, Chunk::Unknown { chunk_type: ty, flags: 3, value: vec![9, 9, 9] });
        let p = Packet::decode(&t.packet.encode().unwrap()).unwrap();
        b.on_packet(now, t.src, t.dst, &p);
        assert_eq!(b.readable() > 0, processed, "type {ty:#x}");
        let out = drain(&mut b, now);
        let errors: Vec<&Vec<ErrorCause>> = out
            .iter()
            .flat_map(|t| t.packet.chunks.iter())
            .filter_map(|c| match c {
                Chunk::Error { causes } => Some(causes),
                _ => None,
            })
            .collect();
        assert_eq!(!errors.is_empty(), reported, "type {ty:#x}");
        if reported {
            // The whole unrecognised chunk comes back.
            assert_eq!(errors[0][0], ErrorCause::UnrecognizedChunkType { chunk: vec![ty, 3, 0, 7, 9, 9, 9] });
        }
        assert_eq!(b.state(), State::Established);
    }
}

#[test]
fn sack_beyond_what_was_sent_aborts_the_association() {
    let (mut a, mut b) = established(SctpConfig::default());
    let now = Instant::ZERO;
    let (t, _, tsn) = data_from_a(&mut a, now, b"abc");
    b.on_packet(now, t.src, t.dst, &t.packet);
    b.on_timeout(now + Duration::from_millis(200));
    let mut s = b.poll_transmit(now + Duration::from_millis(200)).expect("SACK");
    let Chunk::Sack(sack) = &mut s.packet.chunks[0] else { panic!() };
    assert_eq!(sack.cum_tsn_ack, tsn);
    sack.cum_tsn_ack = tsn.wrapping_add(5);
    a.on_packet(now, s.src, s.dst, &s.packet);
    assert_eq!(a.state(), State::Closed);
    assert!(matches!(a.close_reason(), Some(CloseReason::ProtocolViolation(_))));
    let abort = a.poll_transmit(now).expect("ABORT");
    assert!(matches!(&abort.packet.chunks[0], Chunk::Abort { t_bit: false, causes } if matches!(causes[0], ErrorCause::ProtocolViolation { .. })));
}

#[test]
fn delayed_sack_rules() {
    for dac in [false, true] {
        let mut cfg = SctpConfig::cmt(CmtMode::Cmt);
        cfg.dac = dac;
        cfg.nr_sack = false;
        let (mut a, mut b) = established(cfg);
        let now = Instant::ZERO;
        // One in-order packet: SACK waits for the 200 ms timer.
        let (t1, _, _) = data_from_a(&mut a, now, b"one");
        b.on_packet(now, t1.src, t1.dst, &t1.packet);
        assert!(b.poll_transmit(now).is_none());
        assert_eq!(b.poll_timeout(), Some(now + Duration::from_millis(200)));
        // A second packet: SACK at once; with DAC it says "two packets".
        let (t2, _, _) = data_from_a(&mut a, now, b"two");
        b.on_packet(now, t2.src, t2.dst, &t2.packet);
        let s = b.poll_transmit(now).expect("SACK after two packets");
        let Chunk::Sack(s) = &s.packet.chunks[0] else { panic!() };
        assert_eq!(s.flags & sack_flags::DAC != 0, dac);
        // Out of order (the third packet lost): immediate without DAC,
        // delayed with DAC.
        let _lost = data_from_a(&mut a, now, b"three");
        let (t4, _, _) = data_from_a(&mut a, now, b"four");
        b.on_packet(now, t4.src, t4.dst, &t4.packet);
        let out = b.poll_transmit(now);
        assert_eq!(out.is_some(), !dac, "dac {dac}");
        if let Some(o) = out {
            let Chunk::Sack(s) = &o.packet.chunks[0] else { panic!() };
            assert_eq!(s.gaps, vec![GapBlock { start: 2, end: 2 }]);
        }
        // A duplicate: immediate, and reported.
        b.on_packet(now, t2.src, t2.dst, &t2.packet);
        let o = b.poll_transmit(now).expect("SACK on duplicate");
        let Chunk::Sack(s) = &o.packet.chunks[0] else { panic!() };
        assert_eq!(s.dup_tsns.len(), 1);
    }
}

#[test]
fn nr_sack_frees_the_send_buffer_at_once() {
    for nr in [false, true] {
        let mut cfg = SctpConfig::cmt(CmtMode::Cmt);
        cfg.nr_sack = nr;
        cfg.dac = false;
        let (mut a, mut b) = established(cfg);
        let now = Instant::ZERO;
        let (_lost, _, _) = data_from_a(&mut a, now, &[1; 1000]);
        let (t, _, _) = data_from_a(&mut a, now, &[2; 1000]);
        b.on_packet(now, t.src, t.dst, &t.packet);
        let s = b.poll_transmit(now).expect("gap: SACK at once");
        assert_eq!(matches!(&s.packet.chunks[0], Chunk::Sack(SackChunk { nr_gaps: Some(_), .. })), nr);
        assert_eq!(a.buffered(), 2000);
        a.on_packet(now, s.src, s.dst, &s.packet);
        // Gap-acked data stays buffered with a plain SACK (the receiver
        // may renege); an NR-SACK frees it.
        assert_eq!(a.buffered(), if nr { 1000 } else { 2000 });
    }
}

#[test]
fn fast_retransmit_after_three_miss_indications_plain_sctp() {
    let (mut a, mut b) = established(SctpConfig::default());
    let now = Instant::ZERO;
    let (_lost, _, lost_tsn) = data_from_a(&mut a, now, &[0; 1000]);
    let mut fr = None;
    for k in 0..4 {
        let (t, _, _) = data_from_a(&mut a, now, &[k; 1000]);
        b.on_packet(now, t.src, t.dst, &t.packet);
        for s in drain(&mut b, now) {
            a.on_packet(now, s.src, s.dst, &s.packet);
        }
        if let Some(r) = a.poll_transmit(now) {
            fr = Some((k, r));
            break;
        }
    }
    let (k, r) = fr.expect("fast retransmit");
    assert_eq!(k, 2, "after the third SACK reporting the hole");
    assert!(matches!(&r.packet.chunks[0], Chunk::Data(DataChunk { tsn, .. }) if *tsn == lost_tsn));
    assert_eq!(a.path_stats()[0].fast_retransmits, 1);
}

#[test]
fn cuc_grows_a_destination_when_its_own_pseudo_cumack_moves() {
    // CMT: TSN t0 to path 0 is lost, t1 goes to path 1. A SACK gap-acking
    // t1 moves path 1's pseudo-cumack: its cwnd grows although the
    // cumulative ack did not move. Plain SCTP would not grow.
    let mut cfg = SctpConfig::cmt(CmtMode::Cmt);
    cfg.dac = false;
    cfg.max_burst = 16;
    let (mut a, mut b) = established(cfg);
    let now = Instant::ZERO;
    // Fill both windows so they are fully used.
    let mut sent = Vec::new();
    a.send(now, &vec![5u8; 20_000]);
    while let Some(t) = a.poll_transmit(now) {
        sent.push(t);
    }
    let first_dst = sent[0].dst;
    let before: Vec<u64> = a.path_stats().iter().map(|p| p.cwnd).collect();
    // Deliver everything except the packets of path 0.
    for t in &sent {
        if t.dst != first_dst {
            b.on_packet(now, t.src, t.dst, &t.packet);
        }
    }
    for s in drain(&mut b, now) {
        a.on_packet(now, s.src, s.dst, &s.packet);
    }
    let after: Vec<u64> = a.path_stats().iter().map(|p| p.cwnd).collect();
    assert!(after[1] > before[1], "path 1 grew: {before:?} -> {after:?}");
    assert_eq!(after[0], before[0], "path 0 did not: {before:?} -> {after:?}");
}

mod hostile {
    use super::*;
    use proptest::prelude::*;

    fn gaps() -> impl Strategy<Value = Vec<GapBlock>> {
        proptest::collection::vec((any::<u16>(), any::<u16>()).prop_map(|(start, end)| GapBlock { start, end }), 0..6)
    }

    fn chunk() -> impl Strategy<Value = Chunk> {
        prop_oneof![
            (any::<u8>(), -20i32..40, proptest::collection::vec(any::<u8>(), 0..50)).prop_map(|(flags, d, payload)| {
                Chunk::Data(DataChunk { flags, tsn: d as u32, stream_id: 0, ssn: 0, ppid: 0, payload })
            }),
            (any::<u8>(), -20i32..40, any::<u32>(), gaps(), proptest::option::of(gaps()), proptest::collection::vec(any::<u32>(), 0..3))
                .prop_map(|(flags, d, a_rwnd, gaps, nr_gaps, dup_tsns)| Chunk::Sack(SackChunk {
                    flags,
                    cum_tsn_ack: d as u32,
                    a_rwnd,
                    gaps,
                    nr_gaps,
                    dup_tsns
                })),
            proptest::collection::vec(any::<u8>(), 0..30).prop_map(|info| Chunk::HeartbeatAck { info }),
            proptest::collection::vec(any::<u8>(), 0..30).prop_map(|info| Chunk::Heartbeat { info }),
            (-20i32..40).prop_map(|d| Chunk::Shutdown { cum_tsn_ack: d as u32 }),
            Just(Chunk::ShutdownAck),
            Just(Chunk::CookieAck),
            proptest::collection::vec(any::<u8>(), 0..60).prop_map(|cookie| Chunk::CookieEcho { cookie }),
            (any::<u8>(), proptest::collection::vec(any::<u8>(), 0..10))
                .prop_map(|(t, value)| Chunk::Unknown { chunk_type: t | 0x20, flags: 0, value }),
            Just(Chunk::Error { causes: vec![ErrorCause::StaleCookie { staleness_us: 5 }] }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Chunks with the right tag but arbitrary contents (TSNs near the
        /// real ones), in the middle of a transfer: never a panic, and the
        /// association stays consistent enough to answer.
        #[test]
        fn hostile_chunks_never_panic(script in proptest::collection::vec((any::<bool>(), proptest::collection::vec(chunk(), 1..4), 0u64..300), 1..30)) {
            let mut cfg = SctpConfig::cmt(CmtMode::RpV2);
            cfg.dac = true;
            let (mut a, mut b) = established(cfg);
            let mut now = Instant::ZERO;
            let (t, b_tag, base) = data_from_a(&mut a, now, &[1; 3000]);
            b.on_packet(now, t.src, t.dst, &t.packet);
            b.on_timeout(now + Duration::from_millis(200));
            let s = b.poll_transmit(now + Duration::from_millis(200)).unwrap();
            let a_tag = s.packet.header.verification_tag;
            for (to_b, chunks, dt) in script {
                now += Duration::from_millis(dt);
                let chunks: Vec<Chunk> = chunks.into_iter().map(|c| match c {
                    Chunk::Data(mut d) => { d.tsn = d.tsn.wrapping_add(base); Chunk::Data(d) }
                    Chunk::Sack(mut s) => { s.cum_tsn_ack = s.cum_tsn_ack.wrapping_add(base); Chunk::Sack(s) }
                    Chunk::Shutdown { cum_tsn_ack } => Chunk::Shutdown { cum_tsn_ack: cum_tsn_ack.wrapping_add(base) },
                    c => c,
                }).collect();
                let (x, tag) = if to_b { (&mut b, b_tag) } else { (&mut a, a_tag) };
                let p = Packet::new(if to_b { 5000 } else { 6000 }, if to_b { 6000 } else { 5000 }, tag, chunks);
                x.on_packet(now, ip("10.0.1.1"), ip("10.0.1.2"), &p);
                let _ = drain(x, now);
                if x.poll_timeout().is_some_and(|t| t <= now) {
                    x.on_timeout(now);
                }
                let _ = a.send(now, &[3; 2000]);
                let _ = drain(&mut a, now);
                let mut buf = [0u8; 4096];
                let _ = b.recv(now, &mut buf);
                let total: u64 = a.path_stats().iter().map(|p| p.flight).sum();
                prop_assert!(total <= 1 << 24);
            }
        }
    }
}

#[test]
fn graceful_shutdown() {
    let (mut a, mut b) = established(SctpConfig::default());
    let now = Instant::ZERO;
    a.send(now, b"last words");
    a.shutdown(now);
    assert_eq!(a.state(), State::ShutdownPending);
    for k in 0..5 {
        let t = now + Duration::from_millis(200 * k);
        if b.poll_timeout().is_some_and(|x| x <= t) {
            b.on_timeout(t);
        }
        pump(&mut a, &mut b, t);
    }
    assert_eq!(read_all(&mut b, now), b"last words");
    assert_eq!(a.state(), State::Closed);
    assert_eq!(b.state(), State::Closed);
    assert_eq!(a.close_reason(), Some(&CloseReason::Shutdown));
    assert_eq!(b.close_reason(), Some(&CloseReason::Shutdown));
}

/// The handshake is four packets, one of each: the COOKIE ECHO that
/// creates the association is answered once, not again as a duplicate.
#[test]
fn handshake_is_four_packets_with_one_cookie_ack() {
    let (mut a, mut b) = pair(SctpConfig::default());
    let now = Instant::ZERO;
    let mut kinds = Vec::new();
    for _ in 0..4 {
        for t in drain(&mut a, now) {
            kinds.push(format!("{:?}", t.packet.chunks[0]).split([' ', '(', '{']).next().unwrap().to_string());
            b.on_packet(now, t.src, t.dst, &Packet::decode(&t.packet.encode().unwrap()).unwrap());
        }
        for t in drain(&mut b, now) {
            kinds.push(format!("{:?}", t.packet.chunks[0]).split([' ', '(', '{']).next().unwrap().to_string());
            a.on_packet(now, t.src, t.dst, &Packet::decode(&t.packet.encode().unwrap()).unwrap());
        }
    }
    assert_eq!(kinds, ["Init", "InitAck", "CookieEcho", "CookieAck"]);
    assert_eq!((a.state(), b.state()), (State::Established, State::Established));
}
