//! The userspace link emulator (mplab's netem): every scenario link A–B is
//! two veth pairs whose far ends live in the run's "wire" namespace; one
//! thread bridges frames between those far ends at layer 2 through the
//! simulator's own link model, `mplab_backend::link::LinkDirection`, one per
//! direction, driven by CLOCK_MONOTONIC.
//!
//! Per frame: read from the ingress end's TPACKET_V2 receive ring (an
//! mmap'ed AF_PACKET ring, no syscall per frame; `recvmmsg` on the socket
//! if the ring cannot be set up), copied into a slot of a buffer pool, the
//! slot index is `offer`ed to the link direction with the frame's IP size
//! (Ethernet header excluded, as in the simulator) at the kernel's receive
//! timestamp, and when `poll` hands it back at its arrival time it is sent
//! out of the other end with `sendmmsg` (qdisc bypassed). The thread runs
//! SCHED_FIFO and sleeps in `ppoll` until a socket is readable or the next
//! arrival, event or probe is due (timer slack 1 ns), waking a learned
//! margin early and polling until the deadline.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant as Wall};

use mplab_proto::Instant;
use mplab_scenario::network::{self, LinkAction, StripOn};
use mplab_backend::link::{DeliverySchedule, Jitter, LinkDirection, LinkParams, LinkStats, Offer};
use mplab_backend::results::QueueSample;
use mplab_backend::rng::SimRng;

use mplab_backend::attack::{AttackReport, Attacker, Seg, FORGED_PAYLOAD};
use mplab_scenario::attack::Mount;
use mplab_wire::packet::{build_ip_tcp, Datalink, TcpPacket};

use crate::frame::strip_mptcp;
use crate::sys;

/// One scenario link as the emulator runs it.
#[derive(Clone, Debug)]
pub struct EmuLink {
    pub name: String,
    /// Interface names of the two far ends in the wire namespace (a side, b side).
    pub ends: [String; 2],
    /// `ab`, `ba`.
    pub params: [LinkParams; 2],
    /// `ab`, `ba`: delivery schedules replacing the rate (trace-driven links).
    pub traces: [Option<DeliverySchedule>; 2],
    pub up: bool,
    /// Option-30 stripping per direction (a link-placed middlebox).
    pub strip: [Option<StripRule>; 2],
    /// An attacker on this link (both directions): attack, strike time, count.
    pub attack: Option<Mount>,
    pub mtu: u32,
    /// A cellular radio that sleeps when idle: (idle, promotion) in ns.
    pub radio: Option<(u64, u64)>,
}

/// A timed change, at nanoseconds since the run's start.
#[derive(Clone, Debug)]
pub struct EmuEvent {
    pub at_ns: u64,
    pub link: usize,
    pub action: LinkAction,
}

#[derive(Clone, Debug)]
pub struct EmuConfig {
    pub wire_ns: String,
    pub links: Vec<EmuLink>,
    pub events: Vec<EmuEvent>,
    pub seed: u64,
    /// Queue probes: sampling interval and links.
    pub probe_interval_ns: u64,
    pub probe_queues: Vec<usize>,
    pub duration_ns: u64,
}

/// What the emulator measured, handed back when it stops.
#[derive(Clone, Debug, Default)]
pub struct EmuReport {
    /// Per link, `[ab, ba]`.
    pub stats: Vec<[LinkStats; 2]>,
    pub queue_samples: Vec<QueueSample>,
    /// Frames the emulator could not send on (sendmmsg errors) or could not
    /// buffer (pool exhausted, truncated): losses not in the link model.
    pub tx_errors: u64,
    pub rx_dropped: u64,
    /// How late frames left compared with their model arrival time.
    pub lateness: Histogram,
    /// How long frames waited in the receive socket (kernel timestamp to
    /// the emulator's read): the part of the lateness due to reading late.
    pub read_delay: Histogram,
    /// How late the thread woke from a timed sleep (scheduling latency).
    pub oversleep: Histogram,
    /// The thread's CPU time and time spent runnable but waiting for a CPU
    /// (/proc/thread-self/schedstat), ns.
    pub cpu_ns: u64,
    pub run_delay_ns: u64,
    pub involuntary_switches: u64,
    pub frames: u64,
    pub errors: Vec<String>,
    /// Per link with an attacker: what it did and saw.
    pub attacks: Vec<(usize, AttackReport)>,
}

/// Lateness histogram: 1 µs buckets up to 20 ms, then one overflow bucket.
#[derive(Clone, Debug)]
pub struct Histogram {
    buckets: Vec<u64>,
    pub count: u64,
    pub max_ns: u64,
    pub sum_ns: u128,
}

const HIST_BUCKETS: usize = 20_000;

impl Default for Histogram {
    fn default() -> Self {
        Histogram { buckets: vec![0; HIST_BUCKETS + 1], count: 0, max_ns: 0, sum_ns: 0 }
    }
}

impl Histogram {
    pub fn add(&mut self, ns: u64) {
        let b = ((ns / 1000) as usize).min(HIST_BUCKETS);
        self.buckets[b] += 1;
        self.count += 1;
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += u128::from(ns);
    }
    /// The `q` quantile (0..=1) in microseconds (bucket upper bound).
    pub fn quantile_us(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let want = ((self.count as f64 * q).ceil() as u64).max(1);
        let mut acc = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            acc += c;
            if acc >= want {
                return Some(if i == HIST_BUCKETS { self.max_ns as f64 / 1e3 } else { (i + 1) as f64 });
            }
        }
        Some(self.max_ns as f64 / 1e3)
    }
    /// Share (0..=1) of the values below `us` microseconds.
    pub fn share_within_us(&self, us: u64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let n: u64 = self.buckets.iter().take((us as usize).min(HIST_BUCKETS)).sum();
        Some(n as f64 / self.count as f64)
    }
    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.count += o.count;
        self.max_ns = self.max_ns.max(o.max_ns);
        self.sum_ns += o.sum_ns;
    }
}

/// A running emulator; `stop` ends it and returns its report.
pub struct Emulator {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<EmuReport>>,
}

impl Emulator {
    /// Opens the AF_PACKET sockets in the wire namespace and starts the
    /// thread. `epoch` is the run's time zero (it may lie in the future:
    /// until then the model sees time 0).
    pub fn start(cfg: EmuConfig, epoch: Wall) -> Result<Emulator, String> {
        let names: Vec<String> = cfg.links.iter().flat_map(|l| l.ends.clone()).collect();
        let slot = slot_size(&cfg);
        // MPLAB_EMU_RING=0: recvmmsg instead (to compare, or for a kernel
        // that refuses the ring).
        let use_ring = std::env::var("MPLAB_EMU_RING").map_or(true, |v| v != "0");
        // 4 MB per port holds 2048 full-size frames, 25 ms of 1 Gbit/s:
        // more than the longest stalls seen on a busy 2-vCPU machine. The
        // ring is pinned kernel memory, so many links share 64 MB (at least
        // 1 MB each).
        let ring_bytes = ((64usize << 20) / names.len().max(1)).clamp(1 << 20, 4 << 20);
        // A receive ring per port (no syscall per received batch); the
        // plain socket if the ring cannot be set up.
        let socks = sys::in_netns(&cfg.wire_ns, move || {
            names
                .iter()
                .map(|n| match use_ring.then(|| sys::packet_ring_socket(n, slot, ring_bytes, 4 << 20)) {
                    Some(Ok((fd, ring))) => Ok((fd, Some(ring), None)),
                    other => sys::packet_socket(n, false, 4 << 20).map(|fd| (fd, None, other.and_then(|r| r.err()).map(|e| e.to_string()))),
                })
                .collect::<std::io::Result<Vec<_>>>()
        })
        .map_err(|e| format!("emulator sockets in {}: {e}", cfg.wire_ns))?;
        let mut ports = Vec::with_capacity(socks.len());
        let mut rings = Vec::with_capacity(socks.len());
        let mut notes = Vec::new();
        for (fd, ring, err) in socks {
            ports.push(fd);
            rings.push(ring);
            if let Some(e) = err {
                if notes.is_empty() {
                    notes.push(format!("emulator: no receive ring ({e}), using recvmmsg"));
                }
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let handle = std::thread::Builder::new()
            .name("mplab-emu".into())
            .spawn(move || {
                sys::tight_timer_slack();
                // Real time so that application threads cannot delay the
                // deadlines (without it, p99 lateness under load is 10-100x
                // worse here). It sleeps whenever nothing is due, so it
                // cannot starve the machine.
                let rt = sys::realtime_priority(10);
                let rt_err = std::io::Error::last_os_error();
                let mut e = Engine::new(cfg, ports, epoch);
                e.rings = rings;
                e.report.errors.extend(notes);
                if !rt {
                    e.report.errors.push(format!("the emulator thread runs without real-time priority (SCHED_FIFO: {rt_err}): its timing depends on the machine's load"));
                }
                e.run(&st);
                e.finish()
            })
            .map_err(|e| format!("emulator thread: {e}"))?;
        Ok(Emulator { stop, handle: Some(handle) })
    }

    pub fn stop(mut self) -> EmuReport {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> EmuReport {
        self.stop.store(true, Ordering::SeqCst);
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => EmuReport { errors: vec!["emulator thread panicked".into()], ..Default::default() },
            None => EmuReport::default(),
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        if self.handle.is_some() {
            let _ = self.stop_inner();
        }
    }
}

// ------------------------------------------------------------------ engine

const BATCH: usize = 64;
const CHUNK_SLOTS: usize = 256;
/// At most this many frames buffered (in queues and in flight) at once.
const MAX_SLOTS: usize = 1 << 18;

/// Fixed-size frame buffers addressed by index, in chunks that never move.
struct Pool {
    slot: usize,
    chunks: Vec<Box<[u8]>>,
    len: Vec<u32>,
    free: Vec<u32>,
}

impl Pool {
    fn new(slot: usize) -> Pool {
        Pool { slot, chunks: Vec::new(), len: Vec::new(), free: Vec::new() }
    }
    fn alloc(&mut self) -> Option<u32> {
        if self.free.is_empty() {
            if self.len.len() >= MAX_SLOTS {
                return None;
            }
            let base = self.len.len();
            self.chunks.push(vec![0u8; self.slot * CHUNK_SLOTS].into_boxed_slice());
            self.len.resize(base + CHUNK_SLOTS, 0);
            self.free.extend((base..base + CHUNK_SLOTS).rev().map(|i| i as u32));
        }
        self.free.pop()
    }
    fn ptr(&mut self, i: u32) -> *mut u8 {
        let i = i as usize;
        let off = (i % CHUNK_SLOTS) * self.slot;
        // SAFETY: off + slot <= chunk length by construction.
        unsafe { self.chunks[i / CHUNK_SLOTS].as_mut_ptr().add(off) }
    }
    fn frame(&mut self, i: u32) -> &mut [u8] {
        let n = self.len[i as usize] as usize;
        let idx = i as usize;
        let off = (idx % CHUNK_SLOTS) * self.slot;
        &mut self.chunks[idx / CHUNK_SLOTS][off..off + n]
    }
    /// The first `n` bytes of slot `i`, whatever length it holds now.
    fn frame_len(&mut self, i: u32, n: usize) -> &mut [u8] {
        let idx = i as usize;
        let off = (idx % CHUNK_SLOTS) * self.slot;
        &mut self.chunks[idx / CHUNK_SLOTS][off..off + n.min(self.slot)]
    }
    fn release(&mut self, i: u32) {
        self.free.push(i);
    }
}

struct Dir {
    link: LinkDirection<u32>,
    rng: SimRng,
    out_port: usize,
    strip: Option<StripRule>,
    /// Time of the latest offer (offers never go back in time).
    last_offer: u64,
}

/// A link-placed strip_mptcp middlebox: which segments, and when it acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StripRule {
    pub on: StripOn,
    pub from_ns: u64,
    pub until_ns: Option<u64>,
}

impl StripRule {
    fn active_at(&self, now_ns: u64) -> bool {
        now_ns >= self.from_ns && self.until_ns.is_none_or(|u| now_ns < u)
    }
}

/// The kernel receive timestamp of a frame (SCM_TIMESTAMPNS, realtime) in
/// nanoseconds since the epoch of the run's monotonic clock.
fn rx_time(h: &libc::msghdr, real_offset: i128) -> Option<u64> {
    // SAFETY: walking control messages the kernel wrote into our buffer.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let t = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                let real = i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec);
                return u64::try_from((real - real_offset).max(0)).ok();
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

/// Receive batches per port and wake-up (64 frames each): bounded so that
/// departures due meanwhile are not held up for long.
const RX_BATCHES: usize = 8;

/// Buffer size of one frame: the largest MTU plus Ethernet header and VLAN tag.
fn slot_size(cfg: &EmuConfig) -> usize {
    let mtu = cfg.links.iter().map(|l| l.mtu as usize).max().unwrap_or(1500);
    ((mtu + 14 + 4).div_ceil(64) * 64).max(2048)
}

struct Engine {
    cfg: EmuConfig,
    ports: Vec<OwnedFd>,
    /// Receive rings of the ports (None: recvmmsg on the socket).
    rings: Vec<Option<sys::RxRing>>,
    /// `dirs[2 * link + d]`; port `p` feeds `dirs[p]` (a end -> ab).
    dirs: Vec<Dir>,
    /// Each link's cellular radio, if it has one (both directions wait for it).
    radios: Vec<Option<mplab_backend::link::Radio>>,
    pool: Pool,
    epoch: Wall,
    next_event: usize,
    next_probe: u64,
    report: EmuReport,
    discarded: Vec<u32>,
    out: Vec<u32>,
    /// CLOCK_REALTIME minus the run clock, in ns (converts rx timestamps).
    real_offset: i128,
    /// How long before a deadline to stop sleeping and start polling.
    margin_ns: u64,
    over_ewma: f64,
    /// Per link: its attacker, if any.
    attacks: Vec<Option<LinkAttacker>>,
}

/// An attacker on a link, over frames: the shared state machine, the last
/// Ethernet header seen each way (to address forged frames) and a scratch
/// buffer.
struct LinkAttacker {
    att: Attacker,
    eth: [Option<[u8; 14]>; 2],
    buf: Vec<u8>,
}

impl Engine {
    fn new(cfg: EmuConfig, ports: Vec<OwnedFd>, epoch: Wall) -> Engine {
        let mut dirs = Vec::new();
        for (li, l) in cfg.links.iter().enumerate() {
            for d in 0..2 {
                let mut link = LinkDirection::new(l.params[d]);
                if let Some(t) = &l.traces[d] {
                    link.set_trace(t.clone());
                }
                if !l.up {
                    link.set_up(Instant(0), false);
                }
                dirs.push(Dir {
                    link,
                    // The simulator's stream ids for link loss/jitter/RED draws.
                    rng: SimRng::new(cfg.seed, 0x11_0000 + 2 * li as u64 + d as u64),
                    out_port: 2 * li + (1 - d),
                    strip: l.strip[d],
                    last_offer: 0,
                });
            }
        }
        let slot = slot_size(&cfg);
        let n = cfg.links.len();
        let attacks = cfg
            .links
            .iter()
            .enumerate()
            .map(|(li, l)| l.attack.map(|m| LinkAttacker { att: Attacker::new(&m, cfg.seed, li), eth: [None; 2], buf: Vec::with_capacity(2048) }))
            .collect();
        let first_probe = if cfg.probe_queues.is_empty() { u64::MAX } else { cfg.probe_interval_ns };
        let radios = cfg.links.iter().map(|l| l.radio.map(|(idle, promotion)| mplab_backend::link::Radio::new(idle, promotion))).collect();
        Engine {
            cfg,
            ports,
            rings: Vec::new(),
            dirs,
            radios,
            pool: Pool::new(slot),
            epoch,
            next_event: 0,
            next_probe: first_probe,
            report: EmuReport { stats: vec![[LinkStats::default(); 2]; n], ..Default::default() },
            discarded: Vec::new(),
            out: Vec::with_capacity(BATCH),
            real_offset: 0,
            margin_ns: 50_000,
            over_ewma: 30_000.0,
            attacks,
        }
    }

    #[inline]
    fn now(&self) -> u64 {
        Wall::now().saturating_duration_since(self.epoch).as_nanos() as u64
    }

    fn run(&mut self, stop: &AtomicBool) {
        // Run clock = realtime - offset; measured as a tight pair of reads.
        let signed = |e: Wall| -> i128 {
            let n = Wall::now();
            if n >= e {
                (n - e).as_nanos() as i128
            } else {
                -((e - n).as_nanos() as i128)
            }
        };
        let a = signed(self.epoch);
        let r = sys::realtime_ns();
        let b = signed(self.epoch);
        self.real_offset = i128::from(r) - (a + b) / 2;
        let mut fds: Vec<libc::pollfd> = self.ports.iter().map(|p| libc::pollfd { fd: p.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
        while !stop.load(Ordering::Relaxed) {
            let now = self.now();
            self.apply_events(now);
            self.probe(now);
            for li in 0..self.attacks.len() {
                if self.attacks[li].is_some() {
                    self.forge(li, now);
                }
            }
            for d in 0..self.dirs.len() {
                self.deliver(d, now);
            }
            let mut wake = self.now() + 20_000_000; // re-check the stop flag
            for d in &self.dirs {
                if let Some(w) = d.link.next_wakeup() {
                    wake = wake.min(w.0);
                }
            }
            if let Some(e) = self.cfg.events.get(self.next_event) {
                wake = wake.min(e.at_ns);
            }
            wake = wake.min(self.next_probe);
            for la in self.attacks.iter().flatten() {
                for dir in 0..2 {
                    if let Some(t) = la.att.next_deadline(dir) {
                        wake = wake.min(t.as_nanos());
                    }
                }
            }
            let now = self.now();
            let timeout = wake.saturating_sub(now);
            for f in fds.iter_mut() {
                f.revents = 0;
            }
            // Sleep until `margin` before the deadline (the typical
            // oversleep of a timer wake-up here), then poll without
            // sleeping until it: deadlines are met within a few µs at the
            // cost of spinning for about `margin` per wake-up.
            let sleep = if timeout > self.margin_ns { timeout - self.margin_ns } else { 0 };
            let t_sleep = self.now();
            let r = sys::poll_in(&mut fds, sleep);
            if sleep > 0 && matches!(r, Ok(0)) {
                let over = self.now().saturating_sub(t_sleep + sleep);
                self.report.oversleep.add(over);
                // EWMA of the oversleep, margin = 1.5 x that, 5..300 µs.
                self.over_ewma = 0.9 * self.over_ewma + 0.1 * over as f64;
                self.margin_ns = ((self.over_ewma * 1.5) as u64).clamp(5_000, 300_000);
            }
            match r {
                Ok(0) => continue,
                Ok(_) => {}
                Err(e) => {
                    self.report.errors.push(format!("ppoll: {e}"));
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
            }
            for p in 0..fds.len() {
                if fds[p].revents & libc::POLLIN != 0 {
                    self.receive(p);
                }
            }
        }
    }

    /// Offers one received frame (already in pool slot `s`, `len` bytes,
    /// kernel timestamp `at`) to direction `p`.
    fn offer(&mut self, p: usize, s: u32, len: usize, at: u64) {
        if self.attacks[p / 2].is_some() {
            return self.offer_attacked(p, s, len, at);
        }
        self.offer_frame(p, s, len, at);
    }

    fn offer_frame(&mut self, p: usize, s: u32, len: usize, at: u64) {
        self.pool.len[s as usize] = len as u32;
        let d = &mut self.dirs[p];
        if d.link.duplicates(&mut d.rng) {
            // A copy in a slot of its own, queued right behind the original.
            if let Some(c) = self.pool.alloc() {
                let (from, to) = (self.pool.ptr(s), self.pool.ptr(c));
                // SAFETY: two distinct slots, each at least `len` bytes.
                unsafe { std::ptr::copy_nonoverlapping(from, to, len) };
                self.pool.len[c as usize] = len as u32;
                self.offer_one(p, s, len, at);
                self.offer_one(p, c, len, at);
                return;
            }
        }
        self.offer_one(p, s, len, at);
    }

    fn offer_one(&mut self, p: usize, s: u32, len: usize, at: u64) {
        let size = (len - 14).max(1) as u32;
        let d = &mut self.dirs[p];
        let at = at.max(d.last_offer);
        let at = self.radios[p / 2].as_mut().map_or(at, |r| r.offer_at(at));
        d.last_offer = at;
        // Refused, lost or not: whatever the link will never deliver comes
        // back through take_discarded.
        let _: Offer = d.link.offer(Instant(at), s, size, &mut d.rng);
        d.link.take_discarded(&mut self.discarded);
        for x in self.discarded.drain(..) {
            self.pool.release(x);
        }
    }

    /// A frame on a link with an attacker: it sees the segment, may drop,
    /// change or split it, and what it forged goes onto the link after it.
    fn offer_attacked(&mut self, p: usize, s: u32, len: usize, at: u64) {
        let (li, dir) = (p / 2, p % 2);
        let mut la = self.attacks[li].take().expect("checked by offer");
        let frame = &self.pool.frame_len(s, len)[..];
        let mut eth = [0u8; 14];
        eth.copy_from_slice(&frame[..14]);
        la.eth[dir] = Some(eth);
        let mut keep = true;
        let mut second: Option<Vec<u8>> = None;
        let mut new_len = len;
        if let Ok(pkt) = TcpPacket::parse_frame(Datalink::Ethernet, frame) {
            if let (std::net::IpAddr::V4(src), std::net::IpAddr::V4(dst), true) = (pkt.src, pkt.dst, pkt.payload.len() == pkt.payload_len) {
                let mut seg = Seg { src, dst, tcp: pkt.tcp, payload_len: pkt.payload_len as u32 };
                let t = la.att.on_segment(Instant(at), dir, &mut seg);
                keep = !t.drop;
                if keep && (t.header || t.corrupt || t.split_at.is_some()) {
                    let mut payload = pkt.payload.to_vec();
                    if t.corrupt {
                        if let Some(b) = payload.first_mut() {
                            *b ^= 0xff;
                        }
                    }
                    let cut = t.split_at.map_or(payload.len(), |n| (n as usize).min(payload.len()));
                    let ttl = pkt.ttl;
                    let mut tcp = seg.tcp;
                    let fin = tcp.fin();
                    if cut < payload.len() {
                        tcp.flags &= !mplab_wire::tcp::flags::FIN;
                    }
                    if build_ip_tcp(seg.src.into(), seg.dst.into(), ttl, 0, &tcp, &payload[..cut], &mut la.buf).is_ok() && 14 + la.buf.len() <= self.pool.slot {
                        let f = self.pool.frame_len(s, 14 + la.buf.len());
                        f[14..].copy_from_slice(&la.buf);
                        new_len = 14 + la.buf.len();
                    }
                    if cut < payload.len() {
                        let mut rest = seg.tcp;
                        rest.seq = rest.seq.wrapping_add(cut as u32);
                        if fin {
                            rest.flags |= mplab_wire::tcp::flags::FIN;
                        }
                        if build_ip_tcp(seg.src.into(), seg.dst.into(), ttl, 0, &rest, &payload[cut..], &mut la.buf).is_ok() {
                            let mut v = eth.to_vec();
                            v.extend_from_slice(&la.buf);
                            second = Some(v);
                        }
                    }
                }
            }
        }
        if keep {
            self.offer_frame(p, s, new_len, at);
        } else {
            self.pool.release(s);
        }
        if let Some(v) = second {
            self.offer_bytes(p, &v, at);
        }
        self.attacks[li] = Some(la);
        self.forge(li, at);
    }

    /// Puts what the attacker of link `li` forged by `now` onto its link.
    fn forge(&mut self, li: usize, now: u64) {
        let Some(mut la) = self.attacks[li].take() else { return };
        let payload = vec![0xa5u8; FORGED_PAYLOAD as usize];
        for dir in 0..2 {
            while let Some(f) = la.att.poll_forged(Instant(now), dir) {
                // Frames go out with the addresses last seen that way.
                let Some(eth) = la.eth[dir] else { continue };
                let n = f.seg.payload_len as usize;
                if build_ip_tcp(f.seg.src.into(), f.seg.dst.into(), 64, 0, &f.seg.tcp, &payload[..n.min(payload.len())], &mut la.buf).is_ok() {
                    let mut v = eth.to_vec();
                    v.extend_from_slice(&la.buf);
                    self.offer_bytes(2 * li + dir, &v, now);
                }
            }
        }
        self.attacks[li] = Some(la);
    }

    /// Offers a frame the emulator made (not read from a port).
    fn offer_bytes(&mut self, p: usize, frame: &[u8], at: u64) {
        if frame.len() > self.pool.slot {
            return;
        }
        let Some(s) = self.pool.alloc() else {
            self.report.rx_dropped += 1;
            return;
        };
        self.pool.frame_len(s, frame.len()).copy_from_slice(frame);
        self.offer_frame(p, s, frame.len(), at);
    }

    /// Reads what port `p`'s ring holds (a bounded number of frames).
    fn receive_ring(&mut self, p: usize) {
        let now = self.now();
        let Some(mut ring) = self.rings[p].take() else { return };
        for _ in 0..BATCH * RX_BATCHES {
            let Some(f) = ring.peek() else { break };
            if f.data.len() < f.len || f.len < 14 {
                self.report.rx_dropped += 1;
                ring.release();
                continue;
            }
            let Some(s) = self.pool.alloc() else {
                self.report.rx_dropped += 1;
                ring.release();
                continue;
            };
            let len = f.data.len();
            // SAFETY: the slot holds at least slot_size >= the ring's largest frame.
            unsafe { std::ptr::copy_nonoverlapping(f.data.as_ptr(), self.pool.ptr(s), len.min(self.pool.slot)) };
            let real = i128::from(f.realtime_ns);
            ring.release();
            // The frame entered the link when the kernel received it (its
            // timestamp), not when this thread woke up to read it.
            let at = u64::try_from((real - self.real_offset).max(0)).unwrap_or(0).min(now);
            self.report.read_delay.add(now - at);
            self.offer(p, s, len.min(self.pool.slot), at);
        }
        self.rings[p] = Some(ring);
    }

    /// Reads what port `p` has (a bounded number of batches) into dir `p`.
    fn receive(&mut self, p: usize) {
        if self.rings.get(p).is_some_and(|r| r.is_some()) {
            return self.receive_ring(p);
        }
        let fd = self.ports[p].as_raw_fd();
        for _ in 0..RX_BATCHES {
            let mut slots = [0u32; BATCH];
            let mut n_slots = 0;
            while n_slots < BATCH {
                match self.pool.alloc() {
                    Some(s) => {
                        slots[n_slots] = s;
                        n_slots += 1;
                    }
                    None => break,
                }
            }
            if n_slots == 0 {
                // Pool exhausted: drain the socket into a scratch buffer.
                let mut scratch = [0u8; 65536];
                // SAFETY: valid buffer.
                while unsafe { libc::recv(fd, scratch.as_mut_ptr() as *mut libc::c_void, scratch.len(), libc::MSG_DONTWAIT) } > 0 {
                    self.report.rx_dropped += 1;
                }
                return;
            }
            let mut iov: [libc::iovec; BATCH] = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH];
            // SAFETY: zeroed mmsghdr is valid.
            let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
            let mut cmsg = [[0u64; 8]; BATCH];
            for i in 0..n_slots {
                iov[i] = libc::iovec { iov_base: self.pool.ptr(slots[i]) as *mut libc::c_void, iov_len: self.pool.slot };
                msgs[i].msg_hdr.msg_iov = &mut iov[i];
                msgs[i].msg_hdr.msg_iovlen = 1;
                msgs[i].msg_hdr.msg_control = cmsg[i].as_mut_ptr() as *mut libc::c_void;
                msgs[i].msg_hdr.msg_controllen = std::mem::size_of_val(&cmsg[i]);
            }
            // SAFETY: msgs/iov point into live pool buffers.
            let r = unsafe { libc::recvmmsg(fd, msgs.as_mut_ptr(), n_slots as u32, libc::MSG_DONTWAIT, std::ptr::null_mut()) };
            let got = if r < 0 { 0 } else { r as usize };
            let now = self.now();
            for i in 0..got {
                let s = slots[i];
                let len = msgs[i].msg_len as usize;
                if msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0 || len < 14 {
                    self.report.rx_dropped += 1;
                    self.pool.release(s);
                    continue;
                }
                // The frame entered the link when the kernel received it
                // (its timestamp), not when this thread woke up to read it.
                let at = rx_time(&msgs[i].msg_hdr, self.real_offset).map_or(now, |t| t.min(now));
                self.report.read_delay.add(now - at);
                self.offer(p, s, len, at);
            }
            for &s in &slots[got..n_slots] {
                self.pool.release(s);
            }
            if got < n_slots {
                return;
            }
        }
    }

    /// Sends everything of direction `d` that has arrived by `now`.
    fn deliver(&mut self, d: usize, now: u64) {
        loop {
            self.out.clear();
            // Lateness counts to just before the send call that hands the
            // batch to the kernel (a fresh clock per batch: a long burst
            // takes a while to send).
            let t_send = self.now();
            while self.out.len() < BATCH {
                let Some(p) = self.dirs[d].link.poll(Instant(now)) else { break };
                self.report.lateness.add(t_send.saturating_sub(p.at.0));
                self.out.push(p.packet);
            }
            if self.out.is_empty() {
                return;
            }
            // A box with a time window acts on the frames leaving the link
            // inside it (the simulator's box sees them entering: the two
            // differ by the queueing delay at the window's edges).
            if let Some(rule) = self.dirs[d].strip.filter(|r| r.active_at(now)) {
                for i in 0..self.out.len() {
                    let s = self.out[i];
                    strip_mptcp(self.pool.frame(s), rule.on == StripOn::Syn);
                }
            }
            self.send(self.dirs[d].out_port, d);
            let full = self.out.len() == BATCH;
            let out = std::mem::take(&mut self.out);
            for &s in &out {
                self.pool.release(s);
            }
            self.out = out;
            if !full {
                return;
            }
        }
    }

    fn send(&mut self, port: usize, _d: usize) {
        let fd = self.ports[port].as_raw_fd();
        let n = self.out.len();
        let mut iov: [libc::iovec; BATCH] = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; BATCH];
        // SAFETY: zeroed mmsghdr is valid.
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for i in 0..n {
            let s = self.out[i];
            iov[i] = libc::iovec { iov_base: self.pool.ptr(s) as *mut libc::c_void, iov_len: self.pool.len[s as usize] as usize };
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        let mut done = 0;
        let mut tries = 0;
        while done < n && tries < 16 {
            tries += 1;
            // SAFETY: msgs[done..n] describe live pool buffers.
            let r = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr().add(done), (n - done) as u32, 0) };
            if r > 0 {
                done += r as usize;
                self.report.frames += r as u64;
            } else {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => std::thread::yield_now(),
                    _ => {
                        // A frame the interface refuses (too big, link gone): skip it.
                        if self.report.errors.len() < 8 {
                            self.report.errors.push(format!("sendmmsg on {}: {e}", self.port_name(port)));
                        }
                        self.report.tx_errors += 1;
                        done += 1;
                    }
                }
            }
        }
        self.report.tx_errors += (n - done) as u64;
    }

    fn port_name(&self, p: usize) -> String {
        self.cfg.links[p / 2].ends[p % 2].clone()
    }

    fn apply_events(&mut self, now: u64) {
        while let Some(ev) = self.cfg.events.get(self.next_event) {
            if ev.at_ns > now {
                break;
            }
            let ev = ev.clone();
            self.next_event += 1;
            if !ev.action.is_link_change() {
                continue; // a host's address event: the backend runs it
            }
            // Applied now: at most a loop iteration after the event's time
            // (the model's clock never goes backwards).
            let t = Instant(now);
            let which: &[usize] = match ev.action {
                LinkAction::Set { direction: network::Direction::Ab, .. } => &[0],
                LinkAction::Set { direction: network::Direction::Ba, .. } => &[1],
                _ => &[0, 1],
            };
            for &d in which {
                let dir = &mut self.dirs[2 * ev.link + d];
                let l = &mut dir.link;
                match ev.action {
                    LinkAction::Down => l.set_up(t, false),
                    LinkAction::Up => l.set_up(t, true),
                    LinkAction::Set { rate_bps, delay_ns, jitter_ns, loss, .. } => {
                        if let Some(r) = rate_bps {
                            l.set_rate(t, r);
                        }
                        if let Some(dl) = delay_ns {
                            l.set_delay(t, Duration::from_nanos(dl));
                        }
                        if let Some(j) = jitter_ns {
                            let cur = l.params().jitter;
                            l.set_jitter(if j == 0 { Jitter::None } else { cur.with_scale(Duration::from_nanos(j)) });
                        }
                        if let Some(p) = loss {
                            l.set_loss(mplab_backend::config::loss_model(p, None));
                        }
                    }
                    LinkAction::RemoveAddr { .. } | LinkAction::AddAddr { .. } | LinkAction::Prio { .. } => {}
                }
                l.take_discarded(&mut self.discarded);
                for x in self.discarded.drain(..) {
                    self.pool.release(x);
                }
            }
        }
    }

    fn probe(&mut self, now: u64) {
        while self.next_probe <= now && self.next_probe <= self.cfg.duration_ns {
            let t = self.next_probe;
            for &li in &self.cfg.probe_queues {
                for d in 0..2 {
                    let l = &mut self.dirs[2 * li + d].link;
                    l.advance(Instant(now));
                    let s = l.stats();
                    self.report.queue_samples.push(QueueSample {
                        time_s: t as f64 / 1e9,
                        link: self.cfg.links[li].name.clone(),
                        direction: ["ab", "ba"][d].into(),
                        queue_bytes: s.queue_bytes,
                        drops: s.drops_total(),
                    });
                }
            }
            self.next_probe += self.cfg.probe_interval_ns.max(1);
        }
        if self.next_probe > self.cfg.duration_ns {
            self.next_probe = u64::MAX;
        }
    }

    fn finish(mut self) -> EmuReport {
        self.report.attacks = self.attacks.iter().enumerate().filter_map(|(li, a)| a.as_ref().map(|a| (li, a.att.report().clone()))).collect();
        // Frames the kernel could not put into a full ring or queue.
        for p in &self.ports {
            self.report.rx_dropped += sys::packet_drops(p.as_raw_fd());
        }
        let st = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
        let v: Vec<u64> = st.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        if v.len() >= 2 {
            self.report.cpu_ns = v[0];
            self.report.run_delay_ns = v[1];
        }
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
        self.report.involuntary_switches = status.lines().find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:")).and_then(|x| x.trim().parse().ok()).unwrap_or(0);
        let now = Instant(self.now().min(self.cfg.duration_ns.max(1)));
        for (i, d) in self.dirs.iter_mut().enumerate() {
            d.link.advance(now);
            self.report.stats[i / 2][i % 2] = d.link.stats();
        }
        self.report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_and_shares() {
        let mut h = Histogram::default();
        assert_eq!(h.quantile_us(0.5), None);
        assert_eq!(h.share_within_us(200), None);
        // 98 frames 0.5 µs late, one 150 µs, one 3 ms.
        for _ in 0..98 {
            h.add(500);
        }
        h.add(150_000);
        h.add(3_000_000);
        assert_eq!(h.quantile_us(0.5), Some(1.0));
        assert_eq!(h.quantile_us(0.99), Some(151.0));
        assert_eq!(h.quantile_us(1.0), Some(3001.0));
        assert_eq!(h.share_within_us(200), Some(0.99));
        assert_eq!(h.share_within_us(1), Some(0.98));
        // Beyond 20 ms: the overflow bucket reports the maximum.
        h.add(50_000_000);
        assert_eq!(h.quantile_us(1.0), Some(50_000.0));
        assert_eq!(h.max_ns, 50_000_000);
    }
}
