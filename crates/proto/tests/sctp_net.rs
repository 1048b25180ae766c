//! A tiny deterministic network for SCTP association tests: two endpoints,
//! N paths, each direction of each path a link with a rate, a one-way
//! delay, a drop-tail queue in bytes and optional random loss from a
//! fixed-seed xorshift; an event loop on virtual time. Packets go through
//! the real codec (encode, CRC32c, decode) on every hop.

#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use mplab_proto::sctp::{Association, SctpConfig, State, Transmit};
use mplab_proto::Instant;
use mplab_wire::sctp::Packet;

#[derive(Debug, Clone, Copy)]
pub struct PathSpec {
    pub rate_bps: f64,
    pub delay: Duration,
    pub queue_bytes: u64,
    /// Loss probability in the forward (A to B) direction.
    pub loss: f64,
}

impl PathSpec {
    pub fn new(mbit: f64, delay_ms: u64) -> PathSpec {
        let rate = mbit * 1e6;
        // Queue of about one bandwidth-delay product (round trip), at least 30 packets.
        let bdp = (rate / 8.0 * 2.0 * delay_ms as f64 / 1000.0) as u64;
        PathSpec { rate_bps: rate, delay: Duration::from_millis(delay_ms), queue_bytes: bdp.max(45_000), loss: 0.0 }
    }
}

struct Link {
    spec: PathSpec,
    busy_until: Instant,
    queue: VecDeque<(Instant, u64)>,
    queued: u64,
    rng: u64,
    /// Drop everything from this time on (path failure).
    down_at: Option<Instant>,
    pub dropped: u64,
}

impl Link {
    fn new(spec: PathSpec, seed: u64) -> Link {
        Link { spec, busy_until: Instant::ZERO, queue: VecDeque::new(), queued: 0, rng: seed | 1, down_at: None, dropped: 0 }
    }
    fn rand(&mut self) -> f64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Arrival time at the far end, or None if dropped.
    fn offer(&mut self, now: Instant, size: u64, lossy: bool) -> Option<Instant> {
        while let Some(&(end, n)) = self.queue.front() {
            if end <= now {
                self.queue.pop_front();
                self.queued -= n;
            } else {
                break;
            }
        }
        if self.down_at.is_some_and(|t| now >= t) || self.queued + size > self.spec.queue_bytes {
            self.dropped += 1;
            return None;
        }
        if lossy && self.spec.loss > 0.0 && self.rand() < self.spec.loss {
            self.dropped += 1;
            return None;
        }
        let start = if self.busy_until > now { self.busy_until } else { now };
        let end = start + Duration::from_secs_f64(size as f64 * 8.0 / self.spec.rate_bps);
        self.busy_until = end;
        self.queue.push_back((end, size));
        self.queued += size;
        Some(end + self.spec.delay)
    }
}

/// A packet on the wire: arrival, sequence, towards B, source, destination, bytes.
type InFlight = (Instant, u64, bool, IpAddr, IpAddr, Vec<u8>);

pub fn a_addr(i: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, i as u8, 1))
}
pub fn b_addr(i: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, i as u8, 2))
}

pub struct Result {
    pub established_at: Instant,
    pub done_at: Option<Instant>,
    pub received: Vec<u8>,
    pub goodput_mbps: f64,
    pub a: Association,
    pub b: Association,
    pub packets: u64,
    pub dropped: u64,
    /// Bytes sent (DATA payload) per path.
    pub bytes_per_path: Vec<u64>,
}

pub struct Net {
    pub paths: Vec<PathSpec>,
    /// (path, time) at which the path stops carrying anything.
    pub fail: Option<(usize, Duration)>,
    pub limit: Duration,
    pub seed: u64,
}

impl Net {
    pub fn new(paths: Vec<PathSpec>) -> Net {
        Net { paths, fail: None, limit: Duration::from_secs(300), seed: 7 }
    }

    /// Transfers `data` from A to B; B's application reads at once.
    pub fn transfer(&self, cfg_a: SctpConfig, cfg_b: SctpConfig, data: &[u8]) -> Result {
        let n = self.paths.len();
        let mut fwd: Vec<Link> = self.paths.iter().enumerate().map(|(i, p)| Link::new(*p, self.seed + 1 + i as u64)).collect();
        let mut rev: Vec<Link> = self.paths.iter().enumerate().map(|(i, p)| Link::new(*p, self.seed + 101 + i as u64)).collect();
        if let Some((p, t)) = self.fail {
            fwd[p].down_at = Some(Instant::ZERO + t);
            rev[p].down_at = Some(Instant::ZERO + t);
        }
        let la: Vec<IpAddr> = (0..n).map(a_addr).collect();
        let lb: Vec<IpAddr> = (0..n).map(b_addr).collect();
        let mut now = Instant::ZERO;
        let mut a = Association::connect(cfg_a, la, 5000, lb.clone(), 6000, self.seed, now);
        let mut b = Association::listen(cfg_b, lb, 6000, [9; 32], self.seed ^ 0x5555);
        // (arrival, seq, to_b, src, dst, bytes)
        let mut heap: BinaryHeap<Reverse<InFlight>> = BinaryHeap::new();
        let mut seq = 0u64;
        let mut written = 0usize;
        let mut received = Vec::with_capacity(data.len());
        let mut established_at = None;
        let mut done_at = None;
        let mut packets = 0;
        let mut buf = vec![0u8; 1 << 16];
        let end = Instant::ZERO + self.limit;
        loop {
            if established_at.is_none() && a.state() == State::Established {
                established_at = Some(now);
            }
            if a.state() == State::Established && written < data.len() {
                written += a.send(now, &data[written..]);
            }
            loop {
                let k = b.recv(now, &mut buf);
                if k == 0 {
                    break;
                }
                received.extend_from_slice(&buf[..k]);
            }
            if received.len() == data.len() && done_at.is_none() {
                done_at = Some(now);
                break;
            }
            for (from_a, ep) in [(true, &mut a), (false, &mut b)] {
                while let Some(Transmit { src, dst, packet }) = ep.poll_transmit(now) {
                    let bytes = packet.encode().expect("encodes");
                    packets += 1;
                    let path = match dst {
                        IpAddr::V4(v) => v.octets()[2] as usize,
                        _ => 0,
                    };
                    let link = if from_a { &mut fwd[path % n] } else { &mut rev[path % n] };
                    if let Some(at) = link.offer(now, bytes.len() as u64 + 20, from_a) {
                        seq += 1;
                        heap.push(Reverse((at, seq, from_a, src, dst, bytes)));
                    }
                }
            }
            let mut next = heap.peek().map(|Reverse(e)| e.0);
            for t in [a.poll_timeout(), b.poll_timeout()].into_iter().flatten() {
                next = Some(next.map_or(t, |x: Instant| x.min(t)));
            }
            let Some(next) = next else { break };
            if next > end {
                break;
            }
            now = now.max(next);
            while heap.peek().is_some_and(|Reverse(e)| e.0 <= now) {
                let Some(Reverse((_, _, to_b, src, dst, bytes))) = heap.pop() else { break };
                let p = Packet::decode(&bytes).expect("decodes");
                if to_b {
                    b.on_packet(now, src, dst, &p);
                } else {
                    a.on_packet(now, src, dst, &p);
                }
            }
            if a.poll_timeout().is_some_and(|t| t <= now) {
                a.on_timeout(now);
            }
            if b.poll_timeout().is_some_and(|t| t <= now) {
                b.on_timeout(now);
            }
        }
        let est = established_at.unwrap_or(Instant::ZERO);
        let goodput_mbps = done_at.map_or(0.0, |d| received.len() as f64 * 8.0 / (d - est).as_secs_f64() / 1e6);
        let bytes_per_path = a.path_stats().iter().map(|s| s.bytes_sent).collect();
        Result {
            established_at: est,
            done_at,
            received,
            goodput_mbps,
            a,
            b,
            packets,
            dropped: fwd.iter().chain(rev.iter()).map(|l| l.dropped).sum(),
            bytes_per_path,
        }
    }
}

/// Deterministic test payload.
pub fn payload(n: usize) -> Vec<u8> {
    let mut x = 0x1234_5678_9abc_def0u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
