//! One SCTP end on usrsctp, run as its own process inside a host's
//! namespace (`mplab usrsctp-host SPEC`): usrsctp is one stack per process
//! (global sysctls, timers and raw sockets), and opens its raw IPv4
//! protocol-132 socket in the namespace it starts in. The client connects
//! to every server address, writes the stream pattern and shuts down; the
//! server accepts one association and checks every byte it reads. Both
//! print JSON lines on stdout for the kernel backend: `connected`, a
//! `sample` every interval, and a final `done`.

use std::ffi::c_void;
use std::io::Write;
use std::net::Ipv4Addr;
use std::time::Duration;

use mplab_backend::apps::pattern_mismatch;
use serde::{Deserialize, Serialize};

use super::ffi::{self, PaddrInfo, SndInfo, Socket, Usrsctp};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Client,
    Server,
}

/// usrsctp's knobs for one host (its sysctls are per process, so per host).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// `sctp_cmt_on_off`: 0 off, 1 CMT, 2 RPv1, 3 RPv2, 4 MPTCP-like.
    pub cmt: u32,
    pub dac: bool,
    pub nr_sack: bool,
    /// `sctp_buffer_splitting` bits: 1 send side, 2 receive side.
    pub buffer_splitting: u32,
    pub heartbeat_ms: u32,
    pub rto_min_ms: u32,
    pub rto_initial_ms: u32,
    pub snd_buf: u32,
    pub rcv_buf: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostSpec {
    pub role: Role,
    /// Every address of this host (bound with bindx: multihoming), the
    /// primary path's first.
    pub local: Vec<Ipv4Addr>,
    /// Client: the server's addresses, primary first.
    pub remote: Vec<Ipv4Addr>,
    /// The server's port.
    pub port: u16,
    /// The client's own port (0: any).
    #[serde(default)]
    pub local_port: u16,
    /// Bytes the client writes; `None`: until `stop_ns`.
    pub bytes: Option<u64>,
    /// Payload bytes per message (one DATA chunk per packet).
    pub message: usize,
    /// The run's clock: CLOCK_REALTIME of time zero, then offsets from it.
    /// 0: read from stdin after [`Line::Ready`].
    pub t0_realtime_ns: u64,
    pub start_ns: u64,
    pub stop_ns: u64,
    /// Nothing runs past this, whatever happens.
    pub hard_ns: u64,
    pub interval_ns: u64,
    pub settings: Settings,
}

/// One path as usrsctp reports it (SCTP_GET_PEER_ADDR_INFO).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathLine {
    pub remote: String,
    pub active: bool,
    pub cwnd: u32,
    pub srtt_ms: u32,
}

/// What the host prints, one JSON object per line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Line {
    /// Bound (and listening): the run may start. With `t0_realtime_ns` 0
    /// in the spec, the host then reads time zero from its stdin.
    Ready,
    Connected { t_ns: u64 },
    /// Client: bytes written; server: bytes read (in order, checked).
    Sample { t_ns: u64, bytes: u64, paths: Vec<PathLine> },
    Done { bytes: u64, completed_ns: Option<u64>, mismatch: Option<String>, error: Option<String> },
}

fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn now_ns(spec: &HostSpec) -> u64 {
    realtime_ns().saturating_sub(spec.t0_realtime_ns)
}

fn sockaddr(a: Ipv4Addr, port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in { sin_family: libc::AF_INET as u16, sin_port: port.to_be(), sin_addr: libc::in_addr { s_addr: u32::from(a).to_be() }, sin_zero: [0; 8] }
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn would_block(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR) | Some(libc::EINPROGRESS))
}

struct Host<'a> {
    u: &'a Usrsctp,
    spec: HostSpec,
    out: &'a mut dyn Write,
    next_sample: u64,
}

impl Host<'_> {
    fn emit(&mut self, l: &Line) {
        if let Ok(s) = serde_json::to_string(l) {
            let _ = writeln!(self.out, "{s}");
            let _ = self.out.flush();
        }
    }

    fn over(&self) -> bool {
        now_ns(&self.spec) >= self.spec.hard_ns
    }

    /// Like `apps::Clock::sleep_until`: time zero is awaited too, as
    /// `now_ns` reads 0 throughout the lead before it.
    fn sleep_until(&self, t: u64) {
        while realtime_ns() < self.spec.t0_realtime_ns {
            std::thread::sleep(Duration::from_nanos((self.spec.t0_realtime_ns - realtime_ns().min(self.spec.t0_realtime_ns)).min(20_000_000)));
        }
        while now_ns(&self.spec) < t.min(self.spec.hard_ns) {
            std::thread::sleep(Duration::from_nanos((t - now_ns(&self.spec).min(t)).min(20_000_000)));
        }
    }

    fn paths(&self, so: *mut Socket) -> Vec<PathLine> {
        let mut out = Vec::new();
        let mut addrs: *mut libc::sockaddr = std::ptr::null_mut();
        // SAFETY: usrsctp allocates the array and returns its length; it is
        // freed with freepaddrs below.
        let n = unsafe { (self.u.getpaddrs)(so, 0, &mut addrs) };
        if n <= 0 || addrs.is_null() {
            return out;
        }
        for i in 0..n as usize {
            // SAFETY: an IPv4-only association lists sockaddr_in entries.
            let sa = unsafe { *(addrs as *const libc::sockaddr_in).add(i) };
            // SAFETY: zeroed is a valid PaddrInfo (plain integers).
            let mut info: PaddrInfo = unsafe { std::mem::zeroed() };
            // SAFETY: sockaddr_in fits the sockaddr_storage at the start.
            unsafe { std::ptr::write(&mut info.address as *mut _ as *mut libc::sockaddr_in, sa) };
            let mut len = std::mem::size_of::<PaddrInfo>() as libc::socklen_t;
            // SAFETY: info is a PaddrInfo of the size given.
            let r = unsafe { (self.u.getsockopt)(so, ffi::IPPROTO_SCTP, ffi::SCTP_GET_PEER_ADDR_INFO, &mut info as *mut _ as *mut c_void, &mut len) };
            if r == 0 {
                let a = Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr));
                out.push(PathLine { remote: a.to_string(), active: info.state == ffi::SCTP_ACTIVE, cwnd: info.cwnd, srtt_ms: info.srtt });
            }
        }
        // SAFETY: the array getpaddrs returned.
        unsafe { (self.u.freepaddrs)(addrs) };
        out
    }

    /// A sample when an interval boundary has passed.
    fn maybe_sample(&mut self, so: *mut Socket, bytes: u64) {
        let t = now_ns(&self.spec);
        if t >= self.next_sample {
            let paths = self.paths(so);
            self.emit(&Line::Sample { t_ns: t, bytes, paths });
            while self.next_sample <= t {
                self.next_sample += self.spec.interval_ns.max(1_000_000);
            }
        }
    }
}

fn configure(u: &Usrsctp, s: &Settings) {
    // SAFETY: plain setters of usrsctp's global sysctls, before any socket.
    unsafe {
        (u.sysctl_cmt_on_off)(s.cmt);
        (u.sysctl_cmt_use_dac)(u32::from(s.dac));
        (u.sysctl_nrsack_enable)(u32::from(s.nr_sack));
        (u.sysctl_buffer_splitting)(s.buffer_splitting);
        (u.sysctl_heartbeat_interval_default)(s.heartbeat_ms);
        (u.sysctl_rto_min_default)(s.rto_min_ms);
        (u.sysctl_rto_initial_default)(s.rto_initial_ms);
        (u.sysctl_sendspace)(s.snd_buf);
        (u.sysctl_recvspace)(s.rcv_buf);
        // The model has no ECN: keep the two stacks comparable.
        (u.sysctl_ecn_enable)(0);
        if let Some(v) = std::env::var("MPLAB_USRSCTP_CHUNK_OH").ok().and_then(|v| v.parse().ok()) {
            (u.sysctl_peer_chunk_oh)(v);
        }
    }
}

fn set_int(u: &Usrsctp, so: *mut Socket, level: i32, opt: i32, v: i32) -> Result<(), String> {
    // SAFETY: an int option of the size given.
    let r = unsafe { (u.setsockopt)(so, level, opt, &v as *const i32 as *const c_void, 4) };
    if r < 0 {
        return Err(format!("setsockopt({level}, {opt}): {}", errno()));
    }
    Ok(())
}

/// Runs the host described by `spec`, printing [`Line`]s to `out`; reads
/// time zero from `t0` when the spec leaves it 0.
pub fn run(spec: &HostSpec, out: &mut dyn Write, t0: &mut dyn FnMut() -> Result<u64, String>) -> Result<Line, String> {
    if spec.local.is_empty() || (spec.role == Role::Client && spec.remote.is_empty()) {
        return Err("a host needs local addresses, and a client the server's".into());
    }
    let u = Usrsctp::load()?;
    // Port 0: no UDP encapsulation; SCTP in raw IPv4 packets (protocol 132).
    // SAFETY: first and only initialisation in this process.
    unsafe { (u.init)(0, std::ptr::null(), std::ptr::null()) };
    configure(&u, &spec.settings);
    let mut h = Host { u: &u, spec: spec.clone(), out, next_sample: spec.interval_ns.max(1_000_000) };
    let done = match spec.role {
        Role::Server => serve(&mut h, t0),
        Role::Client => send(&mut h, t0),
    };
    let done = done.unwrap_or_else(|e| Line::Done { bytes: 0, completed_ns: None, mismatch: None, error: Some(e) });
    h.emit(&done);
    // usrsctp_finish refuses while associations linger: bounded retries.
    for _ in 0..30 {
        // SAFETY: no socket is used after this point.
        if unsafe { (u.finish)() } == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(done)
}

fn new_socket(h: &Host) -> Result<*mut Socket, String> {
    let u = h.u;
    // SAFETY: a one-to-one style socket without callbacks (the blocking API).
    let so = unsafe { (u.socket)(libc::AF_INET, libc::SOCK_STREAM, ffi::IPPROTO_SCTP, std::ptr::null(), std::ptr::null(), 0, std::ptr::null_mut()) };
    if so.is_null() {
        return Err(format!("usrsctp_socket: {}", errno()));
    }
    let s = &h.spec.settings;
    set_int(u, so, libc::SOL_SOCKET, libc::SO_SNDBUF, s.snd_buf as i32)?;
    set_int(u, so, libc::SOL_SOCKET, libc::SO_RCVBUF, s.rcv_buf as i32)?;
    // Full messages go out at once, as the model sends them.
    set_int(u, so, ffi::IPPROTO_SCTP, ffi::SCTP_NODELAY, 1)?;
    Ok(so)
}

fn bind_all(h: &Host, so: *mut Socket, port: u16) -> Result<(), String> {
    let mut addrs: Vec<libc::sockaddr_in> = h.spec.local.iter().map(|&a| sockaddr(a, port)).collect();
    // SAFETY: an array of addrs.len() sockaddr_in.
    let r = unsafe { (h.u.bindx)(so, addrs.as_mut_ptr() as *mut libc::sockaddr, addrs.len() as i32, ffi::SCTP_BINDX_ADD_ADDR) };
    if r < 0 {
        return Err(format!("bindx {:?} port {port}: {}", h.spec.local, errno()));
    }
    Ok(())
}

fn set_non_blocking(h: &Host, so: *mut Socket) -> Result<(), String> {
    // SAFETY: a socket of this process.
    if unsafe { (h.u.set_non_blocking)(so, 1) } < 0 {
        return Err(format!("set_non_blocking: {}", errno()));
    }
    Ok(())
}

/// Announces readiness and learns time zero, if the spec left it open.
fn ready(h: &mut Host, t0: &mut dyn FnMut() -> Result<u64, String>) -> Result<(), String> {
    h.emit(&Line::Ready);
    if h.spec.t0_realtime_ns == 0 {
        h.spec.t0_realtime_ns = t0()?;
    }
    Ok(())
}

fn serve(h: &mut Host, t0: &mut dyn FnMut() -> Result<u64, String>) -> Result<Line, String> {
    let so = new_socket(h)?;
    bind_all(h, so, h.spec.port)?;
    // SAFETY: a bound socket.
    if unsafe { (h.u.listen)(so, 1) } < 0 {
        return Err(format!("listen: {}", errno()));
    }
    ready(h, t0)?;
    let c = accept_until_hard(h, so)?;
    h.emit(&Line::Connected { t_ns: now_ns(&h.spec) });
    set_non_blocking(h, c)?;
    let mut buf = vec![0u8; 1 << 16];
    let (mut total, mut counted) = (0u64, 0u64);
    let mut mismatch = None;
    let mut completed_ns = None;
    let expected = h.spec.bytes;
    loop {
        if h.over() {
            break;
        }
        let mut info = [0u8; 64];
        let mut infolen = info.len() as libc::socklen_t;
        let (mut infotype, mut flags) = (0u32, 0);
        // SAFETY: buffers of the lengths given.
        let n = unsafe { (h.u.recvv)(c, buf.as_mut_ptr() as *mut c_void, buf.len(), std::ptr::null_mut(), std::ptr::null_mut(), info.as_mut_ptr() as *mut c_void, &mut infolen, &mut infotype, &mut flags) };
        if n == 0 {
            break; // the peer's SHUTDOWN: everything it sent was read
        }
        if n < 0 {
            let e = errno();
            if !would_block(&e) {
                return Err(format!("recv: {e}"));
            }
            h.maybe_sample(c, counted);
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        let got = &buf[..n as usize];
        if mismatch.is_none() {
            mismatch = pattern_mismatch(total, got);
        }
        total += n as u64;
        let t = now_ns(&h.spec);
        if t <= h.spec.stop_ns {
            counted = total;
        }
        if completed_ns.is_none() && expected.is_some_and(|b| total >= b) {
            completed_ns = Some(t);
        }
        h.maybe_sample(c, counted);
    }
    // SAFETY: sockets this function opened.
    unsafe {
        (h.u.close)(c);
        (h.u.close)(so);
    }
    Ok(Line::Done { bytes: counted, completed_ns, mismatch, error: None })
}

fn accept_until_hard(h: &Host, so: *mut Socket) -> Result<*mut Socket, String> {
    // A blocking accept in a helper thread: usrsctp has no accept timeout,
    // and the process ends at the hard deadline whatever it waits for.
    let hard = h.spec.hard_ns;
    let t0 = h.spec.t0_realtime_ns;
    std::thread::spawn(move || {
        let spec_now = || {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: valid timespec pointer.
            unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
            (ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64).saturating_sub(t0)
        };
        // Two seconds after the deadline, so a host that ends on time
        // prints its last line first.
        while spec_now() < hard + 2_000_000_000 {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::process::exit(3);
    });
    // SAFETY: a listening socket; no peer address wanted.
    let c = unsafe { (h.u.accept)(so, std::ptr::null_mut(), std::ptr::null_mut()) };
    if c.is_null() {
        return Err(format!("accept: {}", errno()));
    }
    Ok(c)
}

fn send(h: &mut Host, t0: &mut dyn FnMut() -> Result<u64, String>) -> Result<Line, String> {
    let so = new_socket(h)?;
    bind_all(h, so, h.spec.local_port)?;
    ready(h, t0)?;
    h.sleep_until(h.spec.start_ns);
    let remote: Vec<libc::sockaddr_in> = h.spec.remote.iter().map(|&a| sockaddr(a, h.spec.port)).collect();
    let mut id = 0u32;
    // SAFETY: an array of remote.len() sockaddr_in; blocks until the
    // association is up or fails (INIT retransmissions are bounded).
    if unsafe { (h.u.connectx)(so, remote.as_ptr() as *const libc::sockaddr, remote.len() as i32, &mut id) } < 0 {
        return Err(format!("connectx {:?}: {}", h.spec.remote, errno()));
    }
    h.emit(&Line::Connected { t_ns: now_ns(&h.spec) });
    set_non_blocking(h, so)?;
    let msg = h.spec.message.clamp(1, 65536);
    let mut chunk = vec![0u8; msg];
    let mut sent = 0u64;
    let limit = h.spec.bytes.unwrap_or(u64::MAX);
    while sent < limit && now_ns(&h.spec) < h.spec.stop_ns && !h.over() {
        let n = ((limit - sent) as usize).min(msg);
        mplab_backend::apps::fill_pattern(sent, &mut chunk[..n]);
        let mut info = SndInfo::default();
        // SAFETY: a buffer of n bytes and an SndInfo of its size.
        let r = unsafe { (h.u.sendv)(so, chunk.as_ptr() as *const c_void, n, std::ptr::null_mut(), 0, &mut info as *mut _ as *mut c_void, std::mem::size_of::<SndInfo>() as libc::socklen_t, ffi::SCTP_SENDV_SNDINFO, 0) };
        if r < 0 {
            let e = errno();
            if !would_block(&e) {
                return Err(format!("send at offset {sent}: {e}"));
            }
            h.maybe_sample(so, sent);
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        sent += r as u64;
        h.maybe_sample(so, sent);
    }
    // Graceful close: SHUTDOWN once everything is acknowledged; keep
    // sampling until the peer is done or the run is over.
    // SAFETY: the connected socket.
    unsafe { (h.u.shutdown)(so, libc::SHUT_WR) };
    while !h.over() && now_ns(&h.spec) < h.spec.stop_ns {
        let paths = h.paths(so);
        if paths.is_empty() {
            break; // the association is gone: the peer completed the shutdown
        }
        h.maybe_sample(so, sent);
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: the socket this function opened.
    unsafe { (h.u.close)(so) };
    Ok(Line::Done { bytes: sent, completed_ns: None, mismatch: None, error: None })
}

/// `mplab usrsctp-host SPEC_JSON`: exit 0 when the host ran without error
/// (and, for a bounded server, every byte arrived and matched).
pub fn host_main(spec_json: &str) -> i32 {
    let spec: HostSpec = match serde_json::from_str(spec_json) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("usrsctp-host: bad spec: {e}");
            return 2;
        }
    };
    let mut out = std::io::stdout().lock();
    let mut t0 = || {
        let mut l = String::new();
        std::io::stdin().read_line(&mut l).map_err(|e| format!("reading time zero: {e}"))?;
        l.trim().parse::<u64>().map_err(|e| format!("time zero {:?}: {e}", l.trim()))
    };
    match run(&spec, &mut out, &mut t0) {
        Ok(Line::Done { error: None, mismatch: None, .. }) => 0,
        Ok(_) => 1,
        Err(e) => {
            eprintln!("usrsctp-host: {e}");
            let _ = writeln!(out, "{}", serde_json::to_string(&Line::Done { bytes: 0, completed_ns: None, mismatch: None, error: Some(e) }).unwrap_or_default());
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_and_lines_round_trip_and_bad_specs_are_refused() {
        let s = HostSpec {
            role: Role::Client,
            local: vec!["10.0.0.2".parse().unwrap()],
            remote: vec!["10.0.0.1".parse().unwrap(), "10.0.1.1".parse().unwrap()],
            port: 5001,
            local_port: 0,
            bytes: Some(1000),
            message: 1452,
            t0_realtime_ns: 1,
            start_ns: 0,
            stop_ns: 10,
            hard_ns: 20,
            interval_ns: 5,
            settings: Settings { cmt: 1, dac: true, nr_sack: true, buffer_splitting: 0, heartbeat_ms: 30000, rto_min_ms: 1000, rto_initial_ms: 1000, snd_buf: 1 << 18, rcv_buf: 1 << 18 },
        };
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<HostSpec>(&j).unwrap(), s);
        let l = Line::Sample { t_ns: 5, bytes: 9, paths: vec![PathLine { remote: "10.0.0.1".into(), active: true, cwnd: 4380, srtt_ms: 20 }] };
        assert_eq!(serde_json::from_str::<Line>(&serde_json::to_string(&l).unwrap()).unwrap(), l);
        assert_eq!(host_main("{\"role\": \"client\"}"), 2);
    }
}
