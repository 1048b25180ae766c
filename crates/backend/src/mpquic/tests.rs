//! Two ends joined by two paths in memory: client 10.0.0.1 to server
//! 10.0.0.2 (path 0) and client 10.0.1.1 to server 10.0.1.2 (path 1), each
//! direction of each path a serialiser at its rate with a drop-tail queue,
//! then its one-way delay. The client sends, the server reads and checks.

use super::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::{DefaultHasher, Hash, Hasher};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// One direction of one path.
#[derive(Clone)]
struct Wire {
    bits_per_s: u64,
    delay: u64,
    /// The most queueing (in time at the rate) the buffer holds.
    queue: u64,
    busy_until: u64,
}

struct Link {
    client: SocketAddr,
    server: SocketAddr,
    up: Wire,
    down: Wire,
    /// While `now` is in here the link loses everything, both ways.
    cut: Range<u64>,
}

fn link(client: &str, server: &str, bits_per_s: u64, delay: u64) -> Link {
    let w = Wire { bits_per_s, delay, queue: 50 * MS, busy_until: 0 };
    Link { client: sa(client), server: sa(server), up: w.clone(), down: w, cut: 0..0 }
}

/// A datagram on its way: (arrival, order sent, to the server?, from, to, bytes).
type InFlightDatagram = Reverse<(u64, u64, bool, SocketAddr, SocketAddr, Vec<u8>)>;

struct Net {
    links: Vec<Link>,
    wire: BinaryHeap<InFlightDatagram>,
    sent: u64,
    /// Every datagram either end sent, with its time: the run's transcript.
    transcript: DefaultHasher,
}

impl Net {
    fn send(&mut self, now: u64, to_server: bool, t: MpTransmit) {
        (now, to_server, t.local, t.remote, &t.data).hash(&mut self.transcript);
        self.sent += 1;
        let Some(local) = t.local else { return };
        let (client, server) = if to_server { (local, t.remote) } else { (t.remote, local) };
        let Some(l) = self.links.iter_mut().find(|l| l.client == client && l.server == server) else { return };
        if l.cut.contains(&now) {
            return;
        }
        let w = if to_server { &mut l.up } else { &mut l.down };
        let start = w.busy_until.max(now);
        if start - now > w.queue {
            return;
        }
        w.busy_until = start + t.data.len() as u64 * 8 * SEC / w.bits_per_s;
        self.wire.push(Reverse((w.busy_until + w.delay, self.sent, to_server, local, t.remote, t.data)));
    }

    fn next(&self) -> Option<u64> {
        self.wire.peek().map(|Reverse(d)| d.0)
    }
}

struct Scenario {
    seed: u64,
    bytes: u64,
    links: Vec<Link>,
    client: MpQuicConfig,
    server: MpQuicConfig,
    /// Open path 1 (as a backup if true) once the handshake allows.
    second_path: Option<bool>,
    /// Feed each end junk, truncated and corrupted copies of its datagrams.
    junk: bool,
}

impl Scenario {
    fn two_paths(seed: u64, bytes: u64) -> Scenario {
        Scenario {
            seed,
            bytes,
            links: vec![link("10.0.0.1:49152", "10.0.0.2:4433", 10_000_000, 10 * MS), link("10.0.1.1:49152", "10.0.1.2:4433", 10_000_000, 10 * MS)],
            client: MpQuicConfig::default(),
            server: MpQuicConfig::default(),
            second_path: Some(false),
            junk: false,
        }
    }
}

#[derive(Debug)]
struct Outcome {
    done_at: Option<u64>,
    received: u64,
    mismatch: Option<String>,
    multipath: Option<bool>,
    open_error: Option<String>,
    client_paths: Vec<MpPath>,
    server_paths: Vec<MpPath>,
    /// The largest bytes in flight seen on each of the client's paths.
    peak_in_flight: Vec<u64>,
    transcript: u64,
    datagrams: u64,
    dropped: (u64, u64),
    junk: (u64, u64),
}

impl Outcome {
    fn share(&self, id: u32) -> f64 {
        let total: u64 = self.client_paths.iter().map(|p| p.sent_bytes).sum();
        let p = self.client_paths.iter().find(|p| p.id == id).map_or(0, |p| p.sent_bytes);
        p as f64 / total.max(1) as f64
    }
}

/// A small deterministic stream for the junk.
fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Junk for an end before a real datagram reaches it: random bytes, the
/// datagram cut short, the datagram with one byte flipped.
fn junk_for(d: &[u8], x: &mut u64) -> [Vec<u8>; 3] {
    let n = 1 + (xorshift(x) % 1400) as usize;
    let random: Vec<u8> = (0..n).map(|_| xorshift(x) as u8).collect();
    let cut = d[..d.len() / 2].to_vec();
    let mut flipped = d.to_vec();
    let i = (xorshift(x) % d.len() as u64) as usize;
    flipped[i] ^= 1 << (xorshift(x) % 8);
    [random, cut, flipped]
}

fn run(sc: Scenario) -> Outcome {
    let (c0, s0) = (sc.links[0].client, sc.links[0].server);
    let mut c = MpQuicEnd::client(c0, s0, sc.seed, 0, &sc.client).unwrap();
    let mut s = MpQuicEnd::server(s0, sc.seed + 1, &sc.server).unwrap();
    let second = sc.links.get(1).map(|l| (l.client, l.server));
    let mut net = Net { links: sc.links, wire: BinaryHeap::new(), sent: 0, transcript: DefaultHasher::new() };
    let (mut now, mut sent, mut got) = (0u64, 0u64, 0u64);
    let (mut open_error, mut opened, mut done_at) = (None, false, None);
    let mut peak_in_flight = vec![0u64; 2];
    let (mut junk, mut x) = ((0u64, 0u64), sc.seed | 1);
    for step in 0..2_000_000u64 {
        // The application: the client opens its second path and writes, the server reads.
        if let (Some(backup), Some((cl, sv)), Some(mp)) = (sc.second_path, second, c.multipath()) {
            if !opened && open_error.is_none() {
                match c.open_path(now, cl, sv, backup) {
                    Ok(_) => opened = true,
                    // Without multipath it never will; otherwise the peer's path IDs are on their way.
                    Err(e) if !mp => open_error = Some(e),
                    Err(_) => {}
                }
            }
        }
        while sent < sc.bytes && c.send_space() > 0 {
            let k = c.send(sc.bytes - sent);
            if k == 0 {
                break;
            }
            sent += k;
            if sent == sc.bytes {
                c.close();
            }
        }
        got = s.recv(s.readable()).end.max(got);
        if s.peer_closed() {
            done_at = Some(now);
            break;
        }
        if step % 64 == 0 {
            for p in c.paths() {
                if let Some(m) = peak_in_flight.get_mut(p.id as usize) {
                    *m = (*m).max(p.in_flight);
                }
            }
        }
        while let Some(t) = c.poll_transmit(now) {
            net.send(now, true, t);
        }
        while let Some(t) = s.poll_transmit(now) {
            net.send(now, false, t);
        }
        let Some(next) = [net.next(), c.poll_timeout(), s.poll_timeout()].into_iter().flatten().min() else { break };
        if next > 60 * SEC {
            break;
        }
        now = now.max(next);
        while net.next().is_some_and(|t| t <= now) {
            let Some(Reverse((_, k, to_server, from, to, d))) = net.wire.pop() else { break };
            let end = if to_server { &mut s } else { &mut c };
            if sc.junk && k % 25 == 7 {
                for j in junk_for(&d, &mut x) {
                    end.on_datagram(now, to, from, &j);
                    if to_server { junk.1 += 1 } else { junk.0 += 1 }
                }
            }
            end.on_datagram(now, to, from, &d);
        }
        c.on_timeout(now);
        s.on_timeout(now);
    }
    Outcome {
        done_at,
        received: got,
        mismatch: s.mismatch.clone(),
        multipath: c.multipath(),
        open_error,
        client_paths: c.paths(),
        server_paths: s.paths(),
        peak_in_flight,
        transcript: net.transcript.finish(),
        datagrams: net.sent,
        dropped: (c.dropped_datagrams(), s.dropped_datagrams()),
        junk,
    }
}

fn report(name: &str, o: &Outcome) {
    eprintln!(
        "{name}: done at {:?} ms, {} bytes, multipath {:?}, {} datagrams, dropped (client, server) {:?} of junk {:?}",
        o.done_at.map(|t| t as f64 / MS as f64),
        o.received,
        o.multipath,
        o.datagrams,
        o.dropped,
        o.junk
    );
    for p in &o.client_paths {
        eprintln!("  client path {p:?} share {:.3}", o.share(p.id));
    }
    for p in &o.server_paths {
        eprintln!("  server path {p:?}");
    }
}

#[test]
fn two_equal_paths_carry_a_transfer_faster_than_one() {
    let o = run(Scenario::two_paths(7, 2_000_000));
    report("two paths", &o);
    assert_eq!(o.received, 2_000_000);
    assert_eq!(o.mismatch, None);
    assert_eq!(o.multipath, Some(true));
    assert!(o.client_paths.iter().all(|p| p.state == MpPathState::Available), "{:?}", o.client_paths);
    assert!(o.share(0) > 0.25 && o.share(1) > 0.25, "{} / {}", o.share(0), o.share(1));
    // One 10 Mbit/s path needs 2 MB * 8 / 10 Mbit/s = 1.6 s for the
    // stream bytes alone, before any header, handshake or slow start.
    let done = o.done_at.unwrap();
    assert!(done < 1_600 * MS, "{} ms", done / MS);
    // Each path's addresses: the server answers from where the client sent to.
    let sp1 = o.server_paths.iter().find(|p| p.id == 1).unwrap();
    assert_eq!((sp1.local, sp1.remote), (Some(sa("10.0.1.2:4433")), sa("10.0.1.1:49152")));
    assert!(o.peak_in_flight.iter().all(|&b| b > 10_000), "{:?}", o.peak_in_flight);
    assert!(o.client_paths.iter().all(|p| p.rtt_ns.is_some_and(|r| r >= 20 * MS)), "{:?}", o.client_paths);
}

#[test]
fn the_same_seed_sends_the_same_datagrams_at_the_same_times() {
    let a = run(Scenario::two_paths(11, 300_000));
    let b = run(Scenario::two_paths(11, 300_000));
    let other = run(Scenario::two_paths(12, 300_000));
    report("seed 11", &a);
    assert_eq!(a.received, 300_000);
    assert_eq!((a.transcript, a.datagrams, a.done_at), (b.transcript, b.datagrams, b.done_at));
    assert_ne!(a.transcript, other.transcript);
}

#[test]
fn a_backup_path_carries_no_data_while_the_first_works() {
    let mut sc = Scenario::two_paths(3, 1_000_000);
    sc.second_path = Some(true);
    let o = run(sc);
    report("backup", &o);
    assert_eq!(o.received, 1_000_000);
    assert_eq!(o.mismatch, None);
    let p1 = o.client_paths.iter().find(|p| p.id == 1).unwrap();
    assert_eq!(p1.state, MpPathState::Backup);
    // A path challenge, keep-alives, a few acknowledgements: no stream data.
    assert!(p1.sent_bytes < 10_000, "{p1:?}");
    // The server heard the status and keeps the path a backup too.
    assert_eq!(o.server_paths.iter().find(|p| p.id == 1).map(|p| p.state), Some(MpPathState::Backup));
}

#[test]
fn a_cut_path_is_abandoned_and_the_other_finishes_the_transfer() {
    let mut sc = Scenario::two_paths(5, 2_000_000);
    // Path 1 dies 400 ms in, for longer than the transfer takes.
    sc.links[1].cut = 400 * MS..30 * SEC;
    let o = run(sc);
    report("cut", &o);
    assert_eq!(o.received, 2_000_000);
    assert_eq!(o.mismatch, None);
    // noq keeps sending probes on the dead path until it has been silent
    // for PATH_IDLE_TIMEOUT, then abandons it; what was in flight on it is
    // declared lost when it drains and goes out again on path 0.
    let p1 = o.client_paths.iter().find(|p| p.id == 1).unwrap();
    assert_eq!(p1.state, MpPathState::Abandoned, "{p1:?}");
    assert!(o.done_at.unwrap() < 30 * SEC);
}

#[test]
fn without_the_servers_consent_the_transfer_runs_on_one_path() {
    let mut sc = Scenario::two_paths(9, 2_000_000);
    sc.server.max_paths = 1;
    let o = run(sc);
    report("single", &o);
    assert_eq!(o.received, 2_000_000);
    assert_eq!(o.mismatch, None);
    assert_eq!(o.multipath, Some(false));
    assert!(o.open_error.as_deref().is_some_and(|e| e.contains("multipath not negotiated")), "{:?}", o.open_error);
    assert_eq!(o.client_paths.len(), 1);
    assert!(o.done_at.unwrap() > 1_600 * MS);
}

#[test]
fn junk_is_counted_and_the_connection_goes_on() {
    let mut sc = Scenario::two_paths(13, 1_000_000);
    sc.junk = true;
    let o = run(sc);
    report("junk", &o);
    assert_eq!(o.received, 1_000_000);
    assert_eq!(o.mismatch, None);
    assert!(o.junk.0 > 30 && o.junk.1 > 30, "{:?}", o.junk);
    assert!(o.dropped.0 >= o.junk.0 && o.dropped.1 >= o.junk.1, "dropped {:?} junk {:?}", o.dropped, o.junk);
}

#[test]
fn every_congestion_controller_carries_a_transfer() {
    for cc in [MpQuicCc::NewReno, MpQuicCc::Bbr3] {
        let mut sc = Scenario::two_paths(17, 500_000);
        sc.client.cc = cc;
        sc.server.cc = cc;
        let o = run(sc);
        report(&format!("{cc:?}"), &o);
        assert_eq!((o.received, o.mismatch.clone()), (500_000, None), "{cc:?}");
        assert!(o.share(1) > 0.1, "{cc:?}: {}", o.share(1));
    }
}

#[test]
fn open_path_on_the_server_and_before_the_handshake_is_refused() {
    let cfg = MpQuicConfig::default();
    let mut c = MpQuicEnd::client(sa("10.0.0.1:49152"), sa("10.0.0.2:4433"), 1, 0, &cfg).unwrap();
    assert_eq!(c.multipath(), None);
    assert!(c.open_path(0, sa("10.0.1.1:49152"), sa("10.0.1.2:4433"), false).is_err());
    assert!(c.close_path(0, 0).is_err());
    let mut s = MpQuicEnd::server(sa("10.0.0.2:4433"), 2, &cfg).unwrap();
    assert!(s.open_path(0, sa("10.0.1.2:4433"), sa("10.0.1.1:49152"), false).is_err());
    assert!(s.paths().is_empty());
    assert_eq!(c.paths().len(), 1);
    assert_eq!(c.paths()[0].state, MpPathState::Validating);
}

/// Collects the labels of the secrets it is given.
#[derive(Debug, Default)]
struct Labels(std::sync::Mutex<Vec<String>>);

impl rustls::KeyLog for Labels {
    fn log(&self, label: &str, _: &[u8], _: &[u8]) {
        self.0.lock().unwrap().push(label.to_string());
    }
}

#[test]
fn the_key_log_receives_the_secrets() {
    let labels = Arc::new(Labels::default());
    let mut sc = Scenario::two_paths(19, 50_000);
    sc.client.keylog = Some(labels.clone());
    let o = run(sc);
    assert_eq!(o.received, 50_000);
    let l = labels.0.lock().unwrap();
    for want in ["CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"] {
        assert!(l.iter().any(|x| x == want), "{want} not in {l:?}");
    }
}

#[test]
fn a_storm_of_junk_on_fresh_ends_is_counted() {
    let cfg = MpQuicConfig::default();
    let (c0, s0) = (sa("10.0.0.1:49152"), sa("10.0.0.2:4433"));
    let mut c = MpQuicEnd::client(c0, s0, 21, 0, &cfg).unwrap();
    let mut s = MpQuicEnd::server(s0, 22, &cfg).unwrap();
    let mut x = 99u64;
    for i in 0..2000u64 {
        let n = (xorshift(&mut x) % 1500) as usize;
        let mut d: Vec<u8> = (0..n).map(|_| xorshift(&mut x) as u8).collect();
        if i % 2 == 0 && n > 30 {
            // A long header of QUIC v1 with a plausible destination ID length,
            // so that the server tries the Initial's keys on it.
            d[0] = 0xc0 | (d[0] & 0x3f);
            d[1..5].copy_from_slice(&1u32.to_be_bytes());
            d[5] = 8 + d[5] % 13;
        }
        s.on_datagram(i * MS, s0, c0, &d);
        c.on_datagram(i * MS, c0, s0, &d);
        while s.poll_transmit(i * MS).is_some() {}
        while c.poll_transmit(i * MS).is_some() {}
    }
    assert_eq!((c.dropped_datagrams(), s.dropped_datagrams()), (2000, 2000));
    assert!(!s.is_established() && !c.is_established());
}

/// A tunnel's use of the connection: real bytes written into the stream
/// (not the applications' pattern) come out the same at the other end,
/// and DATAGRAM frames sent beside them arrive whole, each once, on a
/// link that loses nothing; a datagram larger than a packet carries is
/// refused, not cut.
#[test]
fn real_bytes_and_datagrams_cross_side_by_side() {
    let l = link("10.0.0.1:49152", "10.0.0.2:4433", 10_000_000, 10 * MS);
    let (c0, s0) = (l.client, l.server);
    let mut c = MpQuicEnd::client(c0, s0, 7, 0, &MpQuicConfig::default()).unwrap();
    let mut s = MpQuicEnd::server(s0, 8, &MpQuicConfig::default()).unwrap();
    let mut net = Net { links: vec![l], wire: BinaryHeap::new(), sent: 0, transcript: DefaultHasher::new() };
    let mut x = 99u64;
    let data: Vec<u8> = (0..300_000).map(|_| xorshift(&mut x) as u8).collect();
    let (mut now, mut written, mut got) = (0u64, 0usize, Vec::new());
    let (mut sent_dgrams, mut got_dgrams) = (0u32, Vec::new());
    let mut too_large = None;
    for _ in 0..200_000 {
        if c.is_established() {
            if written < data.len() {
                written += c.write_bytes(&data[written..]);
            }
            if sent_dgrams < 100 {
                let d: Vec<u8> = sent_dgrams.to_be_bytes().iter().copied().chain(std::iter::repeat_n(0xab, 96)).collect();
                if c.send_datagram(&d).is_ok() {
                    sent_dgrams += 1;
                }
            }
            if too_large.is_none() {
                too_large = Some((c.max_datagram(), c.send_datagram(&[0u8; 2000])));
            }
        }
        s.read_bytes(usize::MAX, &mut got);
        while let Some(d) = s.recv_datagram() {
            got_dgrams.push(d);
        }
        if got.len() == data.len() && got_dgrams.len() == 100 {
            break;
        }
        while let Some(t) = c.poll_transmit(now) {
            net.send(now, true, t);
        }
        while let Some(t) = s.poll_transmit(now) {
            net.send(now, false, t);
        }
        let Some(next) = [net.next(), c.poll_timeout(), s.poll_timeout()].into_iter().flatten().min() else { break };
        now = now.max(next);
        while net.next().is_some_and(|t| t <= now) {
            let Some(Reverse((_, _, to_server, from, to, d))) = net.wire.pop() else { break };
            if to_server { s.on_datagram(now, to, from, &d) } else { c.on_datagram(now, to, from, &d) }
        }
        c.on_timeout(now);
        s.on_timeout(now);
    }
    assert!(got == data, "stream: {} of {} bytes, equal so far: {}", got.len(), data.len(), data.starts_with(&got));
    assert_eq!(s.mismatch, None, "real bytes are not checked against the pattern");
    let mut ids: Vec<u32> = got_dgrams.iter().map(|d| u32::from_be_bytes(d[..4].try_into().unwrap())).collect();
    assert!(got_dgrams.iter().all(|d| d.len() == 100 && d[4..].iter().all(|&b| b == 0xab)));
    ids.sort_unstable();
    assert_eq!(ids, (0..100).collect::<Vec<u32>>());
    let (max, refused) = too_large.unwrap();
    assert!(max.is_some_and(|m| (1000..2000).contains(&m)), "{max:?}");
    assert!(refused.is_err());
}
