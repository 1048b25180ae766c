//! Two connections joined by a lossy, delaying, rate-limited pipe: the
//! whole state machine exercised without any simulator.

use super::*;
use mplab_wire::tcp::flags;
use proptest::prelude::*;

const MS: u64 = 1_000_000;

fn addr(p: u16) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, (p % 200) as u8 + 1], p))
}

struct InFlight {
    at: Instant,
    to_server: bool,
    h: TcpHeader,
    payload: Range<u64>,
}

/// One-way delay `delay`, a serialisation rate, and a drop rule deciding by
/// (direction, sequence of the packet in that direction, header).
struct Pipe<'a> {
    client: Connection,
    server: Option<Connection>,
    server_cfg: TcpConfig,
    delay: u64,
    /// Nanoseconds per byte (0 = infinitely fast).
    ns_per_byte: u64,
    busy_until: [Instant; 2],
    wire: Vec<InFlight>,
    now: Instant,
    sent: [u64; 2],
    drop: Box<dyn FnMut(bool, u64, &TcpHeader, u64) -> bool + 'a>,
    to_send: u64,
    received: u64,
    server_reads: bool,
    /// The client keeps the connection open once it wrote everything.
    keep_open: bool,
    misplaced: u64,
}

impl<'a> Pipe<'a> {
    fn new(cfg: TcpConfig, server_cfg: TcpConfig, iss: u32, delay_ms: u64, rate_mbit: u64) -> Self {
        let client = Connection::connect(cfg, addr(40000), addr(5001), iss, Instant(0));
        Pipe {
            client,
            server: None,
            server_cfg,
            delay: delay_ms * MS,
            ns_per_byte: if rate_mbit == 0 { 0 } else { 8000 / rate_mbit },
            busy_until: [Instant(0); 2],
            wire: Vec::new(),
            now: Instant(0),
            sent: [0; 2],
            drop: Box::new(|_, _, _, _| false),
            to_send: 0,
            received: 0,
            server_reads: true,
            keep_open: false,
            misplaced: 0,
        }
    }

    fn emit(&mut self, from_client: bool) {
        loop {
            let c = if from_client { Some(&mut self.client) } else { self.server.as_mut() };
            let Some(c) = c else { return };
            let Some(t) = c.poll_transmit(self.now) else { return };
            let d = from_client as usize;
            let idx = self.sent[d];
            self.sent[d] += 1;
            let len = t.payload.end - t.payload.start;
            let start = self.busy_until[d].max(self.now);
            let done = start + Duration::from_nanos((len + 52) * self.ns_per_byte);
            self.busy_until[d] = done;
            if (self.drop)(from_client, idx, &t.header, len) {
                continue;
            }
            self.wire.push(InFlight { at: done + Duration::from_nanos(self.delay), to_server: from_client, h: t.header, payload: t.payload });
        }
    }

    fn app(&mut self) {
        let n = self.client.send(self.to_send);
        self.to_send -= n;
        if self.to_send == 0 && !self.keep_open {
            self.client.close();
        }
        if let Some(s) = self.server.as_mut() {
            if self.server_reads {
                let r = s.recv(u64::MAX);
                assert_eq!(r.start, self.received, "reads are contiguous");
                self.received = r.end;
                if s.peer_closed() {
                    s.close();
                }
            }
        }
    }

    fn deliver(&mut self, p: InFlight) {
        if p.to_server {
            if self.server.is_none() {
                self.server = Connection::accept(self.server_cfg.clone(), addr(5001), addr(40000), &p.h, 0xdead_beef, self.now).ok();
            }
            if let Some(s) = self.server.as_mut() {
                let len = (p.payload.end - p.payload.start) as u32;
                if let Some(r) = s.handle_segment(self.now, &p.h, len) {
                    if r.start != p.payload.start {
                        self.misplaced += 1;
                    }
                }
            }
        } else {
            self.client.handle_segment(self.now, &p.h, (p.payload.end - p.payload.start) as u32);
        }
    }

    /// Runs until both ends are closed or `limit_ms` of virtual time passed.
    fn run(&mut self, limit_ms: u64) {
        let limit = Instant(limit_ms * MS);
        for _ in 0..10_000_000 {
            self.app();
            self.emit(true);
            self.emit(false);
            let next_pkt = self.wire.iter().map(|p| p.at).min();
            let timers = [self.client.poll_timeout(), self.server.as_ref().and_then(|s| s.poll_timeout())];
            let next_timer = timers.iter().flatten().min().copied();
            let Some(next) = [next_pkt, next_timer].into_iter().flatten().min() else { return };
            if next > limit {
                self.now = limit;
                return;
            }
            self.now = next;
            self.client.board.assert_consistent();
            if next_pkt == Some(next) {
                let i = self.wire.iter().position(|p| p.at == next).unwrap();
                let p = self.wire.remove(i);
                self.deliver(p);
            } else {
                self.client.handle_timeout(next);
                if let Some(s) = self.server.as_mut() {
                    s.handle_timeout(next);
                }
            }
            if self.client.is_closed() && self.server.as_ref().is_some_and(|s| s.is_closed()) {
                return;
            }
        }
        panic!("event budget exhausted");
    }
}

fn bulk(bytes: u64) -> Pipe<'static> {
    let mut p = Pipe::new(TcpConfig::default(), TcpConfig::default(), 1000, 10, 100);
    p.to_send = bytes;
    p
}

#[test]
fn handshake_negotiates_options() {
    let mut p = bulk(0);
    p.run(100);
    let s = p.server.as_ref().unwrap();
    assert!(p.client.synced && s.synced);
    assert_eq!(p.client.mss(), 1448, "1460 minus 12 bytes of timestamps");
    assert!(p.client.sack_ok && p.client.ts_ok);
    assert_eq!(p.client.snd_wscale, s.rcv_wscale);
    assert_eq!(s.rcv_wscale, wscale_for(TcpConfig::default().rcv_buf));
    // RTT from the handshake: 2 x 10 ms plus serialisation.
    let rtt = p.client.srtt().unwrap();
    assert!(rtt >= Duration::from_millis(20) && rtt < Duration::from_millis(21), "{rtt:?}");
}

#[test]
fn bulk_transfer_delivers_every_byte_and_closes() {
    let mut p = bulk(3_000_000);
    p.run(10_000);
    assert_eq!(p.received, 3_000_000);
    assert_eq!(p.misplaced, 0);
    assert!(p.client.state() == State::TimeWait || p.client.is_closed(), "{:?}", p.client.state());
    assert!(p.server.as_ref().unwrap().is_closed());
    let st = p.client.stats();
    assert_eq!(st.bytes_acked, 3_000_000);
    assert_eq!(st.segments_retransmitted, 0);
}

#[test]
fn options_off_still_work() {
    let cfg = TcpConfig { sack: false, timestamps: false, wscale: false, delayed_ack: false, rcv_buf: 60_000, ..Default::default() };
    let mut p = Pipe::new(cfg.clone(), cfg, 7, 5, 50);
    p.to_send = 500_000;
    p.run(10_000);
    assert_eq!(p.received, 500_000);
    assert_eq!(p.client.mss(), 1460);
    assert!(!p.client.sack_ok && !p.client.ts_ok);
}

#[test]
fn sequence_numbers_wrap() {
    let mut p = Pipe::new(TcpConfig::default(), TcpConfig::default(), u32::MAX - 5000, 2, 0);
    p.to_send = 1_000_000;
    p.run(10_000);
    assert_eq!(p.received, 1_000_000);
    assert_eq!(p.misplaced, 0);
}

#[test]
fn single_loss_is_repaired_by_fast_retransmit_with_sack() {
    let mut p = bulk(2_000_000);
    p.drop = Box::new(|to_server, idx, _, len| to_server && idx == 40 && len > 0);
    p.run(10_000);
    assert_eq!(p.received, 2_000_000);
    let st = p.client.stats();
    assert_eq!(st.fast_recoveries, 1);
    assert_eq!(st.rto_count, 0);
    assert_eq!(st.segments_retransmitted, 1);
}

#[test]
fn burst_loss_without_sack_is_repaired_by_newreno() {
    let cfg = TcpConfig { sack: false, ..Default::default() };
    let mut p = Pipe::new(cfg.clone(), cfg, 1, 10, 100);
    p.to_send = 2_000_000;
    p.drop = Box::new(|to_server, idx, _, len| to_server && (40..43).contains(&idx) && len > 0);
    p.run(20_000);
    assert_eq!(p.received, 2_000_000);
    let st = p.client.stats();
    assert_eq!(st.fast_recoveries, 1);
    assert_eq!(st.rto_count, 0, "partial ACKs retransmit the next hole");
    assert_eq!(st.segments_retransmitted, 3);
}

#[test]
fn blackout_is_repaired_by_rto_with_backoff() {
    // Everything from the client is lost between 100 and 1500 ms.
    let mut p = bulk(2_000_000);
    let lost = std::cell::Cell::new(0u64);
    let now_ref = std::rc::Rc::new(std::cell::Cell::new(Instant(0)));
    let nr = now_ref.clone();
    p.drop = Box::new(move |to_server, _, _, _| {
        let t = nr.get().0 / MS;
        let d = to_server && (100..1500).contains(&t);
        if d {
            lost.set(lost.get() + 1);
        }
        d
    });
    // Keep the closure's clock in step with the pipe's.
    let limit = 20_000;
    let mut t = 0;
    while t < limit && p.received < 2_000_000 {
        t += 10;
        now_ref.set(Instant(t * MS));
        p.run(t);
    }
    assert_eq!(p.received, 2_000_000);
    let st = p.client.stats();
    assert!(st.rto_count >= 2, "several backed-off timeouts during the blackout: {}", st.rto_count);
}

/// ACKs lost for 1.4 s while the data gets through (a return path that
/// goes down): the sender's RTO resends the first unacknowledged segment,
/// and the ACK of that copy also covers segments sent before the outage and
/// never resent. That ACK gives no sequence-based RTT sample (Karn); with
/// timestamps its echo measures the copy that arrived. The smoothed RTT
/// stays near the path's, never near the outage's length.
#[test]
fn an_ack_of_resent_data_takes_no_sample_from_the_outage() {
    for ts in [true, false] {
        let cfg = TcpConfig { timestamps: ts, ..TcpConfig::default() };
        let mut p = Pipe::new(cfg.clone(), cfg, 1000, 10, 100);
        p.to_send = 3_000_000;
        let now_ref = std::rc::Rc::new(std::cell::Cell::new(Instant(0)));
        let nr = now_ref.clone();
        p.drop = Box::new(move |to_server, _, _, _| !to_server && (100..1500).contains(&(nr.get().0 / MS)));
        let (mut before, mut after) = (Duration::ZERO, Duration::ZERO);
        let mut t = 0;
        while t < 20_000 && p.received < 3_000_000 {
            t += 5;
            now_ref.set(Instant(t * MS));
            p.run(t);
            let srtt = p.client.stats().srtt.unwrap_or_default();
            if t < 100 {
                before = before.max(srtt);
            } else if t > 1500 {
                after = after.max(srtt);
            }
        }
        assert_eq!(p.received, 3_000_000);
        assert!(p.client.stats().rto_count >= 1, "the outage fired the RTO");
        // An outage-long sample (1.4 s) would lift the srtt by an eighth of
        // it, 175 ms, over the 20 ms path's; queueing at 100 Mbit/s adds
        // a few ms. Twice the largest before the outage bounds it.
        assert!(after <= before * 2, "timestamps {ts}: srtt {after:?} after the outage, {before:?} before");
    }
}

#[test]
fn lost_syn_is_retransmitted_after_the_initial_rto() {
    let mut p = bulk(10_000);
    p.drop = Box::new(|to_server, idx, h, _| to_server && idx == 0 && h.syn());
    p.run(5_000);
    assert_eq!(p.received, 10_000);
    assert!(p.client.srtt().is_some());
    // The handshake finished only after the 1 s initial RTO.
    assert!(p.server.as_ref().unwrap().stats().segments_received > 0);
}

#[test]
fn receive_window_limits_the_sender_and_reopens() {
    let cfg = TcpConfig { rcv_buf: 64_000, ..Default::default() };
    let mut p = Pipe::new(TcpConfig::default(), cfg, 1, 5, 100);
    p.to_send = 1_000_000;
    p.server_reads = false;
    p.run(500);
    let s = p.server.as_ref().unwrap();
    assert!(s.readable() <= 64_000 && s.readable() > 60_000, "{}", s.readable());
    assert!(p.client.stats().peer_window < p.client.mss());
    p.server_reads = true;
    p.run(20_000);
    assert_eq!(p.received, 1_000_000);
}

#[test]
fn window_limited_throughput_is_window_over_rtt() {
    // 100 Mbit/s, 20 ms RTT: a 50 KB window gives ~20 Mbit/s.
    let cfg = TcpConfig { rcv_buf: 50_000, ..Default::default() };
    let mut p = Pipe::new(TcpConfig::default(), cfg, 1, 10, 100);
    p.to_send = 5_000_000;
    p.run(60_000);
    assert_eq!(p.received, 5_000_000);
    let secs = p.now.as_secs_f64();
    let mbit = 5e6 * 8.0 / secs / 1e6;
    assert!((17.0..21.0).contains(&mbit), "{mbit} Mbit/s");
}

#[test]
fn abort_sends_a_reset_that_closes_the_peer() {
    let mut p = bulk(u64::MAX / 4);
    p.run(200);
    p.client.abort();
    p.to_send = 0;
    p.run(400);
    assert!(p.server.as_ref().unwrap().was_reset());
}

#[test]
fn malformed_segments_do_not_panic() {
    let mut p = bulk(100_000);
    p.run(100);
    let mut h = TcpHeader { src_port: 5001, dst_port: 40000, seq: 12345, ack: 999, flags: 0xff, window: 0, urgent: 0, options: TcpOptions::new() };
    for f in [0u8, flags::ACK, flags::SYN, flags::FIN, flags::RST | flags::ACK, 0xff] {
        h.flags = f;
        p.client.handle_segment(p.now, &h, 1000);
        p.client.handle_segment(p.now, &h, 0);
    }
    p.run(10_000);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    /// Any pattern of up to 5 % loss in either direction: every byte arrives
    /// exactly once, in order, at the right offsets.
    #[test]
    fn random_loss_never_loses_data(seed: u64, loss_pct in 0u64..6, sack: bool, ts: bool, iss: u32) {
        let cfg = TcpConfig { sack, timestamps: ts, ..Default::default() };
        let mut p = Pipe::new(cfg.clone(), cfg, iss, 5, 50);
        p.to_send = 300_000;
        let mut x = seed | 1;
        p.drop = Box::new(move |_, _, _, _| {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            x % 100 < loss_pct
        });
        p.run(600_000);
        prop_assert_eq!(p.received, 300_000);
        prop_assert_eq!(p.misplaced, 0);
    }
}


#[test]
fn a_lost_tail_is_recovered_by_a_probe_not_an_rto() {
    // The last 3 segments of a 30-segment transfer are lost: no duplicate
    // ACK can come back, so only a timer can notice.
    let mut p = Pipe::new(TcpConfig::default(), TcpConfig::default(), 1, 10, 100);
    p.to_send = 30 * 1448;
    // The first transmission of each of the last three segments is lost.
    let mut seen = std::collections::HashSet::new();
    p.drop = Box::new(move |to_server, _, h, len| to_server && len > 0 && h.seq.wrapping_sub(2) >= 27 * 1448 && seen.insert(h.seq));
    p.run(5_000);
    assert_eq!(p.received, 30 * 1448);
    let st = p.client.stats();
    assert_eq!(st.rto_count, 0, "the probe (2 x srtt) beat the 200 ms RTO");
    assert!(st.tail_loss_probes >= 1);
}

/// A burst loses a segment in its middle and its last one (a queue that
/// overflows twice, as on a fast subflow of 1 + 10 Mbit/s). Fast recovery
/// repairs the middle; the tail has nothing after it, so no SACK ever
/// covers anything beyond it, and no tail loss probe is armed in recovery.
/// The ACK of the middle's retransmission, sent after the tail, tells RACK
/// the tail is lost (RFC 8985 6.2, Linux's `tcp_rack_detect_loss`): it is
/// resent at once instead of after an RTO that would cut the window to one
/// segment.
#[test]
fn a_lost_tail_behind_a_repaired_hole_is_resent_without_an_rto() {
    let mut p = Pipe::new(TcpConfig::default(), TcpConfig::default(), 1, 10, 100);
    p.to_send = 30 * 1448;
    p.keep_open = true;
    let mut seen = std::collections::HashSet::new();
    p.drop = Box::new(move |to_server, _, h, len| {
        let off = h.seq.wrapping_sub(2) as u64;
        to_server && len > 0 && (off == 20 * 1448 || off == 29 * 1448) && seen.insert(h.seq)
    });
    p.run(2_000);
    assert_eq!(p.received, 30 * 1448);
    let st = p.client.stats();
    assert_eq!(st.rto_count, 0, "{st:?}");
    assert_eq!(st.segments_retransmitted, 2, "the hole and the tail, once each: {st:?}");
}

/// A FIN that arrives out of order is reported inside the SACK block that
/// ends at it, as Linux's receiver does (the FIN is part of the queued
/// segment's end_seq): the sender's last segment then counts as SACKed, FIN
/// and all, and RACK can judge what was sent before it.
#[test]
fn an_out_of_order_fin_is_inside_its_sack_block() {
    let mut p = Pipe::new(TcpConfig::default(), TcpConfig::default(), 1, 10, 100);
    p.to_send = 3 * 1448;
    let blocks = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen_blocks = blocks.clone();
    let mut dropped = false;
    p.drop = Box::new(move |to_server, _, h, len| {
        if !to_server {
            seen_blocks.borrow_mut().extend(h.options.sack().iter().map(|b| (b.left, b.right)));
            return false;
        }
        // The middle segment's first transmission is lost.
        let lose = len > 0 && h.seq.wrapping_sub(2) == 1448 && !dropped;
        dropped |= lose;
        lose
    });
    p.run(2_000);
    assert_eq!(p.received, 3 * 1448);
    let fin_seq = 2 + 3 * 1448;
    assert_eq!(blocks.borrow().first(), Some(&(2 + 2 * 1448, fin_seq + 1)), "the block ends past the FIN");
}

/// Three pure ACKs that acknowledge nothing new (MPTCP sends such ACKs to
/// carry ADD_ADDR and its echo): duplicate ACKs for a non-SACK sender,
/// but not under SACK unless they SACK new data (RFC 6675 2). Found in
/// seed 001's four-path run, where a server's ADD_ADDRs halved the first
/// subflow's window at its start.
#[test]
fn option_carrying_pure_acks_are_dupacks_only_without_sack() {
    for sack in [true, false] {
        let cfg = TcpConfig { sack, ..Default::default() };
        let mut p = Pipe::new(cfg.clone(), cfg, 1000, 10, 100);
        p.to_send = 1_000_000;
        p.run(35); // established, data in flight, nothing lost
        let s = p.server.as_mut().unwrap();
        s.ack_now();
        let t = s.poll_transmit(p.now).expect("a pure ACK");
        assert_eq!(t.payload.end - t.payload.start, 0);
        // The first copy may acknowledge something new; the next three
        // are duplicates while data stays outstanding.
        p.client.handle_segment(p.now, &t.header, 0);
        let out = p.client.poll_transmit(p.now);
        assert!(out.is_some_and(|t| !t.retransmission) && p.client.in_flight() > 0);
        for _ in 0..3 {
            p.client.handle_segment(p.now, &t.header, 0);
        }
        let st = p.client.stats();
        assert_eq!((st.fast_recoveries, st.segments_retransmitted > 0), if sack { (0, false) } else { (1, false) }, "sack {sack}: {st:?}");
        // Without SACK the retransmission goes out at the next transmit.
        if !sack {
            assert!(p.client.poll_transmit(p.now).is_some_and(|t| t.retransmission));
        }
    }
}

fn fast_open(on: bool) -> TcpConfig {
    TcpConfig { fast_open: on, ..Default::default() }
}

/// The SYN and the SYN-ACK of a Fast Open handshake, stepped by hand: the
/// client's first SYN carries what the application wrote (up to the MSS
/// less the options room), the server takes those bytes as the stream's
/// first and acknowledges them in its SYN-ACK, which carries none.
fn fast_open_handshake(client_fo: bool, server_fo: bool, wrote: u64) -> (Connection, Connection, Transmit, Transmit) {
    let (ca, sa) = (addr(40000), addr(5001));
    let mut c = Connection::connect(fast_open(client_fo), ca, sa, 1000, Instant(0));
    assert_eq!(c.send(wrote), wrote);
    let syn = c.poll_transmit(Instant(0)).expect("the SYN");
    let mut s = Connection::accept(fast_open(server_fo), sa, ca, &syn.header, 77, Instant(0)).unwrap();
    let len = (syn.payload.end - syn.payload.start) as u32;
    let placed = s.handle_segment(Instant(0), &syn.header, len);
    assert_eq!(placed, server_fo.then_some(0..u64::from(len)).filter(|r| !r.is_empty()));
    assert!(!s.is_established());
    let synack = s.poll_transmit(Instant(0)).expect("the SYN-ACK");
    assert!(synack.header.syn() && synack.header.ack_flag());
    assert!(synack.payload.is_empty(), "the SYN-ACK carries no data");
    (c, s, syn, synack)
}

#[test]
fn fast_open_syn_carries_the_first_bytes() {
    let (mut c, mut s, syn, synack) = fast_open_handshake(true, true, 5000);
    // MSS 1460 less 40 bytes of option room.
    assert_eq!(syn.payload, 0..1420);
    assert_eq!(synack.header.ack, 1000 + 1 + 1420);
    // Readable before the handshake completes, as the stream's first bytes.
    assert_eq!(s.readable(), 1420);
    assert_eq!(s.recv(u64::MAX), 0..1420);
    c.handle_segment(Instant(0), &synack.header, 0);
    assert!(c.is_established());
    assert_eq!((c.syn_data_acked(), c.snd_una(), c.stats().bytes_acked), (1420, 1420, 1420));
    // The next bytes follow the SYN's: sequence number ISN + 1 + 1420.
    let t = c.poll_transmit(Instant(0)).expect("data with the ACK");
    assert_eq!((t.header.seq, t.payload.start), (1000 + 1 + 1420, 1420));
    s.handle_segment(Instant(0), &t.header, (t.payload.end - t.payload.start) as u32);
    assert!(s.is_established());
    assert_eq!(s.recv(u64::MAX).start, 1420);

    // The whole transfer: every byte once, in order, none resent.
    let mut p = Pipe::new(fast_open(true), fast_open(true), 1000, 10, 100);
    p.to_send = 300_000;
    let first = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let seen = first.clone();
    p.drop = Box::new(move |to_server, idx, h, len| {
        if idx == 0 {
            seen.borrow_mut().push((to_server, h.ack, len));
        }
        false
    });
    p.run(10_000);
    assert_eq!(p.received, 300_000);
    assert_eq!(p.misplaced, 0);
    assert_eq!(*first.borrow(), vec![(true, 0, 1420), (false, 1000 + 1 + 1420, 0)]);
    let st = p.client.stats();
    assert_eq!((st.bytes_acked, st.bytes_retransmitted), (300_000, 0));
}

#[test]
fn fast_open_bytes_a_server_leaves_go_again() {
    let (mut c, mut s, syn, synack) = fast_open_handshake(true, false, 500);
    assert_eq!(syn.payload, 0..500);
    assert_eq!(synack.header.ack, 1000 + 1, "only the SYN is acknowledged");
    assert_eq!(s.readable(), 0);
    c.handle_segment(Instant(0), &synack.header, 0);
    assert_eq!((c.syn_data_acked(), c.snd_una()), (0, 0));
    // The SYN's bytes go again as the first data, at ISN + 1.
    let t = c.poll_transmit(Instant(0)).expect("the bytes again");
    assert_eq!((t.header.seq, t.payload.clone()), (1000 + 1, 0..500));
    assert_eq!(s.handle_segment(Instant(0), &t.header, 500), Some(0..500));
    assert_eq!(s.recv(u64::MAX), 0..500);

    let mut p = Pipe::new(fast_open(true), fast_open(false), 1000, 10, 100);
    p.to_send = 300_000;
    p.run(10_000);
    assert_eq!(p.received, 300_000);
    assert_eq!(p.misplaced, 0);
}

/// A lost data SYN: the retransmitted SYN goes bare (as Linux's), the
/// server acknowledges only it, and the bytes follow the handshake. A
/// lost SYN-ACK: the server took the bytes, its SYN-ACK sent again
/// acknowledges them, and the client accepts that answer to its bare SYN.
#[test]
fn fast_open_retransmitted_syn_is_bare() {
    for lost_synack in [false, true] {
        let mut p = Pipe::new(fast_open(true), fast_open(true), 1000, 10, 100);
        p.to_send = 100_000;
        let syns = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let seen = syns.clone();
        p.drop = Box::new(move |to_server, idx, h, len| {
            if h.syn() {
                seen.borrow_mut().push((to_server, h.ack, len));
            }
            idx == 0 && to_server != lost_synack
        });
        p.run(10_000);
        assert_eq!(p.received, 100_000);
        assert_eq!(p.misplaced, 0);
        let syns = syns.borrow();
        let client_syns: Vec<u64> = syns.iter().filter(|s| s.0).map(|s| s.2).collect();
        assert_eq!(client_syns, vec![1420, 0], "lost_synack {lost_synack}: {syns:?}");
        let synack_ack = syns.iter().rev().find(|s| !s.0).unwrap().1;
        assert_eq!(synack_ack, if lost_synack { 1000 + 1 + 1420 } else { 1000 + 1 });
        assert_eq!(p.client.syn_data_acked(), if lost_synack { 1420 } else { 0 });
    }
}

/// A copy of the data SYN (the network duplicated it, or the SYN-ACK was
/// lost) takes nothing more and is answered with the same SYN-ACK; a data
/// SYN arriving after a SYN-ACK that acknowledged only a bare SYN gives
/// nothing (the client sends its bytes again after the handshake).
#[test]
fn fast_open_a_data_syn_is_taken_once() {
    let (_, mut s, syn, synack) = fast_open_handshake(true, true, 300);
    assert_eq!(s.handle_segment(Instant(0), &syn.header, 300), None);
    let again = s.poll_transmit(Instant(0)).expect("the SYN-ACK again");
    assert!(again.header.syn() && again.header.ack == synack.header.ack && again.payload.is_empty());
    assert_eq!(s.readable(), 300);

    // The retransmitted (bare) SYN first, then the delayed data SYN.
    let (ca, sa) = (addr(40000), addr(5001));
    let mut s = Connection::accept(fast_open(true), sa, ca, &syn.header, 77, Instant(0)).unwrap();
    assert_eq!(s.handle_segment(Instant(0), &syn.header, 0), None);
    let first = s.poll_transmit(Instant(0)).unwrap();
    assert_eq!(first.header.ack, 1000 + 1);
    assert_eq!(s.handle_segment(Instant(0), &syn.header, 300), None);
    assert_eq!(s.poll_transmit(Instant(0)).unwrap().header.ack, 1000 + 1);
    assert_eq!(s.readable(), 0);
}

/// A Fast Open server may answer before the handshake's ACK arrives
/// (RFC 7413 4.2.2): its data follows the SYN-ACK, within the initial
/// window; no FIN goes before the handshake completes.
#[test]
fn fast_open_server_sends_before_the_third_ack() {
    let (mut c, mut s, _, synack) = fast_open_handshake(true, true, 24);
    assert!(s.sends_early());
    assert_eq!(s.send(20_000), 20_000);
    s.close();
    let mut early = Vec::new();
    while let Some(t) = s.poll_transmit(Instant(0)) {
        assert!(!t.header.fin() && !t.header.syn());
        early.push(t);
    }
    let sent: u64 = early.iter().map(|t| t.payload.end - t.payload.start).sum();
    assert!(sent > 0 && sent < 20_000 && sent <= s.cc_state().cwnd, "{sent}");
    assert_eq!(early[0].payload.start, 0);
    // The client takes them once established; the server completes its
    // handshake on the ACK and sends the rest, then its FIN.
    c.handle_segment(Instant(0), &synack.header, 0);
    for t in &early {
        let len = (t.payload.end - t.payload.start) as u32;
        assert_eq!(c.handle_segment(Instant(0), &t.header, len), Some(t.payload.clone()));
    }
    let ack = c.poll_transmit(Instant(0)).expect("an ACK");
    s.handle_segment(Instant(0), &ack.header, 0);
    assert!(s.is_established());
    assert_eq!(s.snd_una(), sent);
    let rest: Vec<Transmit> = std::iter::from_fn(|| s.poll_transmit(Instant(0))).collect();
    assert_eq!(rest[0].payload.start, sent);
}

/// RFC 2861's restart (Linux's default `tcp_slow_start_after_idle`): after
/// two seconds of silence, many RTOs, the window is back at the initial
/// window when data flows again; without it the window is kept.
#[test]
fn a_window_restarts_after_idle_only_when_asked() {
    for restart in [false, true] {
        let cfg = TcpConfig { slow_start_after_idle: restart, ..TcpConfig::default() };
        let mut p = Pipe::new(cfg, TcpConfig::default(), 1000, 10, 100);
        p.keep_open = true;
        p.to_send = 2_000_000;
        p.run(1_000);
        assert_eq!(p.received, 2_000_000);
        let mss = p.client.cc_state.mss;
        let grown = p.client.cc_state.cwnd;
        assert!(grown > 40 * mss, "the window grew: {grown}");
        // Nothing is due: the pipe's clock stops, so let two seconds pass.
        assert!(p.now < Instant(1_000 * MS) && p.client.poll_timeout().is_none());
        p.now = Instant(3_000 * MS);
        assert_eq!(p.client.cc_state.cwnd, grown, "idle alone changes nothing");
        p.to_send = 100_000;
        p.app();
        p.emit(true);
        let after = p.client.cc_state.cwnd;
        if restart {
            assert_eq!(after, 10 * mss);
            assert!(p.client.cc_state.ssthresh >= grown / 2 + grown / 4);
        } else {
            assert_eq!(after, grown);
        }
        p.run(6_000);
        assert_eq!(p.received, 2_100_000);
    }
}

/// Linux's receiver (`grow_window_gradually`) opens its window two
/// segments per segment received, from 65160 bytes, and ACKs each such
/// segment at once; mplab's advertises the whole buffer and ACKs every
/// second segment. Both deliver every byte.
#[test]
fn a_linux_receiver_opens_its_window_gradually_and_acks_every_segment() {
    for gradual in [false, true] {
        let server = TcpConfig { grow_window_gradually: gradual, ..TcpConfig::default() };
        let mut p = Pipe::new(TcpConfig::default(), server, 1000, 10, 100);
        p.to_send = 1_000_000;
        let seen = std::rc::Rc::new(std::cell::RefCell::new((0u64, 0u64, None::<u8>, Vec::new())));
        let s2 = seen.clone();
        p.drop = Box::new(move |from_client, _, h, len| {
            let mut s = s2.borrow_mut();
            if from_client {
                s.0 += u64::from(len > 0);
            } else if h.syn() {
                s.2 = h.options.wscale;
            } else if s.0 > 0 {
                s.1 += 1;
                let w = u64::from(h.window) << s.2.unwrap_or(0);
                s.3.push(w);
            }
            false
        });
        p.run(20_000);
        assert_eq!(p.received, 1_000_000);
        let s = seen.borrow();
        let acks_per_segment = s.1 as f64 / s.0 as f64;
        let first = s.3[0];
        if gradual {
            assert!(acks_per_segment > 0.9, "{acks_per_segment}");
            assert!(first <= 65_160 + 2 * 2_896, "{first}");
            assert!(s.3.windows(2).all(|w| w[1] + 1_448 >= w[0]), "the window opens, never closes much");
            assert!(*s.3.last().unwrap() > first + 100 * 1_448, "{:?}", s.3.last());
        } else {
            assert!(acks_per_segment < 0.6, "{acks_per_segment}");
            assert!(first > 1 << 20, "{first}");
        }
    }
}

/// Linux's quick-ACK mode (`quick_acks`): the first 16 data segments are
/// ACKed one by one, and again after a silence longer than the RTO; then
/// every second segment. mplab delays ACKs from the first segment on.
/// Counted over two 40-segment transfers, one second apart.
#[test]
fn a_linux_receiver_acks_each_segment_at_the_start_and_after_a_silence() {
    for quick in [false, true] {
        let server = TcpConfig { quick_acks: quick, ..TcpConfig::default() };
        let mut p = Pipe::new(TcpConfig::default(), server, 1000, 10, 100);
        p.keep_open = true;
        // ACKs of new data and data segments, per transfer (0 or 1).
        let seen = std::rc::Rc::new(std::cell::RefCell::new([[0u64; 2]; 2]));
        let (s2, phase) = (seen.clone(), std::rc::Rc::new(std::cell::Cell::new(0usize)));
        let ph = phase.clone();
        let mut last_ack = 0u32;
        p.drop = Box::new(move |from_client, _, h, len| {
            let mut s = s2.borrow_mut();
            if from_client && len > 0 {
                s[ph.get()][1] += 1;
            } else if !from_client && !h.syn() && h.ack != last_ack {
                if last_ack != 0 {
                    s[ph.get()][0] += 1;
                }
                last_ack = h.ack;
            }
            false
        });
        p.to_send = 40 * 1448;
        p.run(1_000);
        // Nothing is left to happen: the second transfer starts a second
        // later.
        p.now = Instant(1_000 * MS);
        phase.set(1);
        p.to_send = 40 * 1448;
        p.run(2_000);
        assert_eq!(p.received, 80 * 1448);
        let s = *seen.borrow();
        for (k, [acks, segs]) in s.into_iter().enumerate() {
            assert_eq!(segs, 40, "transfer {k}");
            if quick {
                // 16 one by one, then 24 in pairs.
                assert!(acks >= 16 + 12 - 1, "transfer {k}: {acks} ACKs");
            } else {
                assert!(acks <= 20 + 1, "transfer {k}: {acks} ACKs");
            }
        }
    }
}

/// Linux's window validation (`cwnd_limited_per_round`): a sender whose
/// data runs out keeps growing its window in slow start while it is below
/// twice the most the round had out, and a round that found the window
/// full counts as limited to its end. mplab grows it only on ACKs that
/// follow a send the window stopped.
#[test]
fn a_linux_window_grows_to_twice_what_a_round_had_out() {
    let mut end = Vec::new();
    for per_round in [false, true] {
        let cfg = TcpConfig { cwnd_limited_per_round: per_round, ..TcpConfig::default() };
        let mut p = Pipe::new(cfg, TcpConfig::default(), 1000, 10, 100);
        p.keep_open = true;
        p.to_send = 100 * 1448;
        p.run(2_000);
        assert_eq!(p.received, 100 * 1448);
        end.push(p.client.cc_state.cwnd / p.client.cc_state.mss);
    }
    // mplab's window stops at what the last round had out (55 segments);
    // Linux's goes on to twice that, never past twice all there was.
    assert!(end[1] >= 2 * end[0] - 2 && end[1] <= 200, "{end:?}");
}

/// A receive buffer small enough to need no window scaling: Linux
/// (`round_window_to_mss`) offers whole segments, so a sender held by the
/// window still sends full-sized ones; mplab offers the free space as it
/// is. Both deliver every byte.
#[test]
fn an_unscaled_linux_window_is_whole_segments() {
    for round in [false, true] {
        let server = TcpConfig { rcv_buf: 39_000, window_scale_space: Some(39_000), round_window_to_mss: round, ..TcpConfig::default() };
        let mut p = Pipe::new(TcpConfig::default(), server, 1000, 10, 100);
        p.to_send = 500_000;
        let seen = std::rc::Rc::new(std::cell::RefCell::new((Vec::new(), Vec::new())));
        let s2 = seen.clone();
        p.drop = Box::new(move |from_client, _, h, len| {
            let mut s = s2.borrow_mut();
            if from_client && len > 0 {
                s.1.push(len);
            } else if !from_client && h.syn() {
                assert_eq!(h.options.wscale, Some(0), "39000 bytes need no scaling");
            } else if !from_client && !s.1.is_empty() {
                s.0.push(u64::from(h.window));
            }
            false
        });
        p.run(20_000);
        assert_eq!(p.received, 500_000);
        let s = seen.borrow();
        let (windows, sizes) = (&s.0, &s.1);
        assert!(windows.iter().all(|&w| w <= 39_000), "{windows:?}");
        let whole = windows.iter().all(|&w| w % 1448 == 0);
        let runts = sizes.iter().filter(|&&l| l < 1448).count();
        if round {
            assert!(whole, "{windows:?}");
            assert!(runts <= 1, "only the last segment may be short: {runts}");
        } else {
            assert!(!whole, "the free space as it is: {windows:?}");
        }
    }
}

/// RFC 5961 3.2: only a RST at exactly RCV.NXT resets, in SYN-RECEIVED as
/// when established; one elsewhere in the window gets a challenge ACK,
/// one outside it nothing. Found by `mplab attack --product`: 1000 blind
/// RSTs at 10 ms (the server in SYN-RECEIVED) ended the connection, and
/// an established subflow took any RST in its window.
#[test]
fn a_rst_resets_only_at_exactly_rcv_nxt() {
    let syn = TcpHeader { src_port: 40000, dst_port: 5001, seq: 1000, flags: flags::SYN, window: 65535, ..Default::default() };
    let mut s = Connection::accept(TcpConfig::default(), addr(5001), addr(40000), &syn, 7, Instant(0)).unwrap();
    let rst = |seq: u32| TcpHeader { src_port: 40000, dst_port: 5001, seq, flags: flags::RST, ..Default::default() };
    for blind in [1002u32, 1000 + 30_000, 5] {
        s.handle_segment(Instant(MS), &rst(blind), 0);
        assert_eq!(s.state(), State::SynReceived, "a RST at {blind} in SYN-RECEIVED");
    }
    s.handle_segment(Instant(MS), &rst(1001), 0);
    assert!(s.is_closed() && s.was_reset(), "the genuine RST, at the client's ISN + 1");

    // Established, mid-transfer.
    let mut p = Pipe::new(TcpConfig::default(), TcpConfig::default(), 1, 5, 100);
    p.to_send = 10_000_000;
    p.run(200);
    let now = p.now;
    let srv = p.server.as_mut().unwrap();
    assert_eq!(srv.state(), State::Established);
    let nxt = srv.rcv_nxt_seq();
    let skipped = srv.stats().oow_acks_skipped;
    for (k, off) in [1u32, 1000, 20_000].into_iter().enumerate() {
        srv.handle_segment(now, &TcpHeader { src_port: 40000, dst_port: 5001, seq: nxt.wrapping_add(off), flags: flags::RST, ..Default::default() }, 0);
        assert_eq!(srv.state(), State::Established, "in the window, {off} past RCV.NXT");
        // One challenge ACK, the next ones within 500 ms skipped.
        assert_eq!(srv.stats().oow_acks_skipped - skipped, k as u64);
    }
    srv.handle_segment(now, &TcpHeader { src_port: 40000, dst_port: 5001, seq: nxt.wrapping_add(1 << 31), flags: flags::RST, ..Default::default() }, 0);
    assert_eq!(srv.state(), State::Established, "outside the window");
    assert_eq!(srv.stats().rsts_ignored, 4);
    srv.handle_segment(now, &TcpHeader { src_port: 40000, dst_port: 5001, seq: nxt, flags: flags::RST, ..Default::default() }, 0);
    assert!(srv.is_closed() && srv.was_reset());
}
