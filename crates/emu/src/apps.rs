//! The scenario's applications on real sockets (TCP, or MPTCP with
//! IPPROTO_MPTCP = 262), created inside the hosts' namespaces. The
//! applications themselves are the simulator's state machines
//! (`mplab_backend::apps::App`), run on the run's clock over a non-blocking
//! socket: each stream carries the pattern and every received byte is
//! checked against it. Every loop is bounded by the run's deadline and an
//! abort flag.

use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant as Wall};

use mplab_scenario::network::{Flow, Transport};
use mplab_backend::apps::{pattern_byte, pattern_mismatch, App as BackendApp, StreamSocket};

use crate::sys;

pub const IPPROTO_MPTCP: i32 = 262;
pub const TCP_IS_MPTCP: i32 = 43;
const CHUNK: usize = 64 * 1024;

/// The pattern from offset 0, long enough for any chunk at any phase.
fn pattern() -> &'static [u8] {
    static P: OnceLock<Vec<u8>> = OnceLock::new();
    P.get_or_init(|| (0..(CHUNK + 256) as u64).map(pattern_byte).collect())
}

/// The pattern bytes of stream offsets `off .. off + n` (n <= CHUNK).
fn pattern_at(off: u64, n: usize) -> &'static [u8] {
    let s = (off % 256) as usize;
    &pattern()[s..s + n]
}

fn cvt(r: isize) -> std::io::Result<usize> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

fn sockaddr(a: Ipv4Addr, port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as u16,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(a).to_be() },
        sin_zero: [0; 8],
    }
}

fn sockaddr_str(sa: &libc::sockaddr_in) -> String {
    format!("{}:{}", Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr)), u16::from_be(sa.sin_port))
}

pub fn local_peer(fd: RawFd) -> (String, String) {
    let mut a: libc::sockaddr_in = sockaddr(Ipv4Addr::UNSPECIFIED, 0);
    let mut b = a;
    let mut la = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let mut lb = la;
    // SAFETY: valid sockaddr buffers.
    unsafe {
        libc::getsockname(fd, &mut a as *mut _ as *mut libc::sockaddr, &mut la);
        libc::getpeername(fd, &mut b as *mut _ as *mut libc::sockaddr, &mut lb);
    }
    (sockaddr_str(&a), sockaddr_str(&b))
}

/// Socket options of a flow end: buffers (like iperf -w), congestion
/// control, MSS, timeouts.
fn configure(fd: RawFd, f: &Flow) -> std::io::Result<()> {
    let name = f.mptcp.as_ref().map(|m| m.cc.clone()).unwrap_or_else(|| f.tcp.cc.clone());
    // A CC this kernel lacks can only reach here for a kernel end that
    // merely acknowledges an mplab sender's data (kconf::unsupported_on
    // refuses it on kernel senders): that end keeps the default.
    let cc = crate::kconf::kernel_name(mplab_proto::cc::REGISTRY, &name).unwrap_or_default();
    if crate::kconf::available_cc().contains(&cc) {
        sys::setsockopt_bytes(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, cc.as_bytes(), &format!("TCP_CONGESTION {cc}"))?;
    }
    if let Some(b) = f.tcp.snd_buf {
        sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, b.min(i32::MAX as u64 / 2) as i32, "SO_SNDBUF")?;
    }
    if let Some(b) = f.tcp.rcv_buf {
        sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, b.min(i32::MAX as u64 / 2) as i32, "SO_RCVBUF")?;
    }
    if let Some(m) = f.tcp.mss {
        sys::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, m as i32, "TCP_MAXSEG")?;
    }
    let tv = libc::timeval { tv_sec: 0, tv_usec: 100_000 };
    sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, tv, "SO_RCVTIMEO")?;
    sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDTIMEO, tv, "SO_SNDTIMEO")?;
    Ok(())
}

fn new_socket(f: &Flow) -> std::io::Result<OwnedFd> {
    let proto = if f.transport == Transport::MPTCP { IPPROTO_MPTCP } else { libc::IPPROTO_TCP };
    // SAFETY: plain socket call.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, proto) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(e.kind(), format!("socket({}): {e}", if proto == IPPROTO_MPTCP { "IPPROTO_MPTCP" } else { "IPPROTO_TCP" })));
    }
    // SAFETY: fresh fd.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    sys::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1i32, "SO_REUSEADDR")?;
    configure(fd.as_raw_fd(), f)?;
    Ok(fd)
}

fn bind(fd: RawFd, a: Ipv4Addr, port: u16) -> std::io::Result<()> {
    let sa = sockaddr(a, port);
    // SAFETY: valid sockaddr.
    let r = unsafe { libc::bind(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(e.kind(), format!("bind {a}:{port}: {e}")));
    }
    Ok(())
}

/// The listening socket of flow `f`, in namespace `ns` (all addresses, the
/// flow's port, so MP_JOINs to any server address are accepted).
pub fn listen(ns: &str, f: &Flow) -> std::io::Result<OwnedFd> {
    let f = f.clone();
    sys::in_netns(ns, move || {
        let s = new_socket(&f)?;
        bind(s.as_raw_fd(), Ipv4Addr::UNSPECIFIED, f.dport)?;
        // SAFETY: valid fd.
        if unsafe { libc::listen(s.as_raw_fd(), 16) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(s)
    })
}

/// The client socket of flow `f`, bound to the flow's source address and
/// port (so policy routing sends it out of the right interface).
pub fn client_socket(ns: &str, f: &Flow) -> std::io::Result<OwnedFd> {
    let f = f.clone();
    sys::in_netns(ns, move || {
        let s = new_socket(&f)?;
        bind(s.as_raw_fd(), f.src, f.sport)?;
        Ok(s)
    })
}

/// A subflow of an end on mplab's stack, as the prober reads it: local and
/// remote address, TCP_INFO-like counters, and the Linux TCP state number
/// (1 established, 7 closed: a subflow reset by the peer stays listed
/// with its last counters).
pub type StackSubflow = (String, String, crate::probes::TcpInfo, u8);

/// What both ends of a flow share with the prober and the run.
#[derive(Default)]
pub struct FlowState {
    /// Bytes read by both receivers in order, up to the end of the run.
    pub delivered: AtomicU64,
    /// Nanoseconds since the run start when the bounded transfer completed.
    pub completed_ns: AtomicU64,
    pub client: OnceLock<Arc<OwnedFd>>,
    pub server: OnceLock<Arc<OwnedFd>>,
    /// The node whose listener accepted (a balanced flow has several).
    pub server_node: OnceLock<usize>,
    /// The client's TCP_IS_MPTCP was seen 0 after the connection was up.
    pub fell_back: AtomicBool,
    pub connected: AtomicBool,
    pub mismatch: Mutex<Option<String>>,
    pub errors: Mutex<Vec<String>>,
    pub latencies_ms: Mutex<Vec<f64>>,
    pub requests_done: AtomicU64,
    /// Ends on mplab's stack (userspace backend): the sender's subflows as
    /// the prober would read them from TCP_INFO, and the local addresses of
    /// backup subflows.
    pub stack_subflows: Mutex<Option<(Vec<StackSubflow>, Vec<String>)>>,
    /// Ends on mplab's stack: the MPTCP sender's send buffer and what it
    /// holds, as the prober reads them from a kernel socket.
    pub stack_send_buffer: Mutex<Option<(u64, u64)>>,
    /// A datagram flow's two ends (client, server) once they are over.
    pub datagram_ends: Mutex<[Option<mplab_backend::datagram::DatagramApp>; 2]>,
    /// A tunnel flow's counters, each gateway adding its own.
    pub tunnel: Mutex<mplab_backend::results::TunnelSummary>,
}

impl FlowState {
    fn error(&self, e: String) {
        if let Ok(mut v) = self.errors.lock() {
            if v.len() < 8 {
                v.push(e);
            }
        }
    }
    fn mismatch(&self, m: String) {
        if let Ok(mut v) = self.mismatch.lock() {
            v.get_or_insert(m);
        }
    }
}

/// Shared run clock and deadlines.
#[derive(Clone)]
pub struct Clock {
    pub t0: Wall,
    /// The scenario's duration: bytes read later are not counted.
    pub end_ns: u64,
    /// Hard stop for every loop: end plus a grace period.
    pub hard_ns: u64,
    pub abort: Arc<AtomicBool>,
    /// The longest an application thread sleeps before it looks at the
    /// deadline and the abort flag again: 100 ms, longer with thousands of
    /// flows (a thread per flow end waking ten times a second would take
    /// the cores from the link emulator).
    pub poll_ns: u64,
}

impl Clock {
    /// The poll step for a run of `flows` flows: 100 ms up to 500 flows,
    /// then growing to 1 s at 5000.
    pub fn poll_step(flows: usize) -> u64 {
        (flows as u64 * 200_000).clamp(100_000_000, 1_000_000_000)
    }
}

impl Clock {
    pub fn now_ns(&self) -> u64 {
        Wall::now().saturating_duration_since(self.t0).as_nanos() as u64
    }
    /// Sleeps until `ns` after time zero. Time zero itself is awaited even
    /// for `ns = 0`: `now_ns` reads 0 throughout the lead before it, and a
    /// SYN sent then would wait in the not yet running link emulator and
    /// give its connection a first RTT sample up to the lead long.
    pub(crate) fn sleep_until(&self, ns: u64) -> bool {
        loop {
            if self.abort.load(Ordering::Relaxed) || self.now_ns() >= self.hard_ns {
                return false;
            }
            let wall = Wall::now();
            if wall < self.t0 {
                std::thread::sleep((self.t0 - wall).min(Duration::from_nanos(self.poll_ns / 2)));
                continue;
            }
            let now = self.now_ns();
            if now >= ns {
                return true;
            }
            std::thread::sleep(Duration::from_nanos((ns - now).min(self.poll_ns / 2)));
        }
    }
    /// Waits for time zero (false: the run was aborted first). Everything
    /// that sends waits for it.
    pub fn wait_start(&self) -> bool {
        self.sleep_until(0)
    }
    pub(crate) fn over(&self) -> bool {
        self.abort.load(Ordering::Relaxed) || self.now_ns() >= self.hard_ns
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR))
}

/// A kernel socket as the application sees it ([`StreamSocket`]): writes
/// carry the pattern at their stream offset; reads come from a buffer the
/// driver fills before each step and are checked against the pattern.
struct KernelSock<'a> {
    fd: RawFd,
    st: &'a FlowState,
    /// Bytes written (the next write's stream offset).
    tx: u64,
    /// Read but not yet taken by the application, from stream offset `rx`.
    buf: Vec<u8>,
    rx: u64,
    /// The last write did not take everything: wait for POLLOUT.
    full: bool,
    /// A write since the driver last looked: the application may have more.
    wrote: bool,
    eof: bool,
    failed: bool,
}

impl<'a> KernelSock<'a> {
    fn new(fd: RawFd, st: &'a FlowState) -> Self {
        KernelSock { fd, st, tx: 0, buf: Vec::with_capacity(CHUNK), rx: 0, full: false, wrote: false, eof: false, failed: false }
    }

    /// Reads what the socket holds, up to one chunk, without blocking.
    fn fill(&mut self) {
        if self.eof || self.failed || !self.buf.is_empty() {
            return;
        }
        self.buf.resize(CHUNK, 0);
        // SAFETY: valid buffer of CHUNK bytes.
        let r = cvt(unsafe { libc::recv(self.fd, self.buf.as_mut_ptr() as *mut libc::c_void, CHUNK, libc::MSG_DONTWAIT) });
        let n = match r {
            Ok(0) => {
                self.eof = true;
                0
            }
            Ok(k) => k,
            Err(e) if is_timeout(&e) => 0,
            Err(e) => {
                self.st.error(format!("recv at stream offset {}: {e}", self.rx));
                self.failed = true;
                0
            }
        };
        self.buf.truncate(n);
    }
}

impl StreamSocket for KernelSock<'_> {
    fn send_space(&self) -> u64 {
        if self.full || self.failed {
            0
        } else {
            CHUNK as u64
        }
    }
    fn send(&mut self, n: u64) -> u64 {
        let n = n.min(CHUNK as u64) as usize;
        if n == 0 || self.failed {
            return 0;
        }
        let buf = pattern_at(self.tx, n);
        // SAFETY: valid buffer.
        match cvt(unsafe { libc::send(self.fd, buf.as_ptr() as *const libc::c_void, n, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) }) {
            Ok(k) => {
                self.tx += k as u64;
                self.full = k < n;
                self.wrote = k > 0;
                k as u64
            }
            Err(e) if is_timeout(&e) => {
                self.full = true;
                0
            }
            Err(e) => {
                self.st.error(format!("send at stream offset {}: {e}", self.tx));
                self.failed = true;
                0
            }
        }
    }
    fn readable(&self) -> u64 {
        self.buf.len() as u64
    }
    fn recv(&mut self, max: u64) -> std::ops::Range<u64> {
        let k = (max as usize).min(self.buf.len());
        if let Some(m) = pattern_mismatch(self.rx, &self.buf[..k]) {
            self.st.mismatch(m);
        }
        self.buf.drain(..k);
        let r = self.rx..self.rx + k as u64;
        self.rx = r.end;
        r
    }
    fn close(&mut self) {
        // SAFETY: valid fd.
        unsafe { libc::shutdown(self.fd, libc::SHUT_WR) };
    }
    fn peer_closed(&self) -> bool {
        self.eof && self.buf.is_empty()
    }
}

/// Publishes what the application did since `before` (bytes delivered,
/// requests answered, their latencies, completion) to the flow's shared
/// state, counting up to the end of the run only. Both the kernel's
/// applications and the userspace backend's report through it.
pub(crate) fn report(app: &BackendApp, before: (u64, u64, usize), st: &FlowState, t_ns: u64, clk: &Clock, start_ns: u64) {
    if t_ns > clk.end_ns {
        return;
    }
    let (delivered, done, n_lat) = before;
    st.delivered.fetch_add(app.rx.delivered - delivered, Ordering::Relaxed);
    st.requests_done.fetch_add(app.requests_done - done, Ordering::Relaxed);
    if app.latencies.len() > n_lat {
        if let Ok(mut l) = st.latencies_ms.lock() {
            l.extend(app.latencies[n_lat..].iter().map(|d| d.as_secs_f64() * 1e3));
        }
    }
    if let Some(c) = app.completed_at {
        if st.completed_ns.load(Ordering::Relaxed) == 0 {
            st.completed_ns.store(c.0.saturating_sub(start_ns).max(1), Ordering::Relaxed);
        }
    }
}

/// What [`report`] compares against.
pub(crate) fn progress(app: &BackendApp) -> (u64, u64, usize) {
    (app.rx.delivered, app.requests_done, app.latencies.len())
}

/// Runs the flow end's application (the simulator's state machine, on the
/// run's clock) on a connected kernel socket: until it has closed its side
/// and read the peer's end, or the run's hard deadline.
fn run_app(f: &Flow, fd: RawFd, client: bool, st: &FlowState, clk: &Clock) {
    let stop = mplab_proto::Instant(f.stop_ns.min(clk.end_ns));
    let mut app = BackendApp::new(mplab_backend::apps::Kind::of(&f.app), client, Some(stop));
    let mut sock = KernelSock::new(fd, st);
    let mut started = false;
    while !clk.over() && !sock.failed {
        sock.fill();
        let t = clk.now_ns();
        let before = progress(&app);
        if started {
            app.pump(mplab_proto::Instant(t), &mut sock);
        } else {
            app.on_connected(mplab_proto::Instant(t), &mut sock);
            started = true;
        }
        report(&app, before, st, t, clk, f.start_ns);
        if !sock.buf.is_empty() || std::mem::take(&mut sock.wrote) && !sock.full {
            continue; // more to hand over now, or room for more to send
        }
        if app.is_closed() && sock.eof {
            return; // both sides done
        }
        // Sleep until readable (until the peer's end), writable again, the
        // application's timer or 100 ms (the deadline and abort checks).
        let wait_ns = app.poll_timer().map_or(clk.poll_ns, |d| d.0.saturating_sub(clk.now_ns())).min(clk.poll_ns);
        let events = if sock.eof { 0 } else { libc::POLLIN } | if sock.full { libc::POLLOUT } else { 0 };
        let mut p = [libc::pollfd { fd, events, revents: 0 }];
        if wait_ns > 0 {
            let _ = sys::poll_in(&mut p, wait_ns);
        }
        if p[0].revents & libc::POLLOUT != 0 {
            sock.full = false;
        }
    }
}

fn is_mptcp(fd: RawFd) -> Option<bool> {
    sys::getsockopt_int(fd, libc::IPPROTO_TCP, TCP_IS_MPTCP).ok().map(|v| v != 0)
}

/// Checks the client socket for a fallback to TCP.
pub fn check_fallback(f: &Flow, st: &FlowState) {
    if f.transport != Transport::MPTCP || !st.connected.load(Ordering::Relaxed) {
        return;
    }
    if let Some(c) = st.client.get() {
        if is_mptcp(c.as_raw_fd()) == Some(false) {
            st.fell_back.store(true, Ordering::Relaxed);
        }
    }
}

/// The client end: connects at the flow's start and runs its side of the app.
pub fn run_client(f: Flow, sock: OwnedFd, st: Arc<FlowState>, clk: Clock) {
    let sock = Arc::new(sock);
    let _ = st.client.set(sock.clone());
    latency_priority(&f);
    let fd = sock.as_raw_fd();
    if !clk.sleep_until(f.start_ns) {
        return;
    }
    let sa = sockaddr(f.dst, f.dport);
    // Connect, retrying on timeouts until the flow's stop.
    loop {
        // SAFETY: valid sockaddr.
        let r = unsafe { libc::connect(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32) };
        if r == 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINPROGRESS) | Some(libc::EALREADY) | Some(libc::EAGAIN) | Some(libc::EINTR) => {
                // Wait for the handshake (SO_SNDTIMEO expired).
                let mut p = [libc::pollfd { fd, events: libc::POLLOUT, revents: 0 }];
                // SAFETY: valid pollfd.
                unsafe { libc::poll(p.as_mut_ptr(), 1, 100) };
                if p[0].revents & libc::POLLOUT != 0 {
                    let err = sys::getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_ERROR).unwrap_or(0);
                    if err == 0 {
                        break;
                    }
                    st.error(format!("connect {}:{}: {}", f.dst, f.dport, std::io::Error::from_raw_os_error(err)));
                    return;
                }
            }
            Some(libc::EISCONN) => break,
            _ => {
                st.error(format!("connect {}:{}: {e}", f.dst, f.dport));
                return;
            }
        }
        if clk.over() || clk.now_ns() >= f.stop_ns {
            st.error(format!("connect {}:{}: no connection by the flow's stop", f.dst, f.dport));
            return;
        }
    }
    st.connected.store(true, Ordering::Relaxed);
    check_fallback(&f, &st);
    run_app(&f, fd, true, &st, &clk);
    check_fallback(&f, &st);
}

/// The server end on `node`: accepts one connection and runs its side of
/// the app. A balanced flow listens on every backend; the one a balancer
/// sends the connection to serves it, the others time out at the end.
pub fn run_server(f: Flow, listener: Arc<OwnedFd>, node: usize, st: Arc<FlowState>, clk: Clock) {
    latency_priority(&f);
    let lfd = listener.as_raw_fd();
    let conn = loop {
        if clk.over() {
            return;
        }
        // Wait for a connection in bounded steps: an MPTCP listener's
        // accept does not honour SO_RCVTIMEO (the timeout stays on the
        // MPTCP socket, the wait happens on its subflow listener), and a
        // balanced flow's other backends never get one.
        let mut pfd = libc::pollfd { fd: lfd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, (clk.poll_ns / 1_000_000) as i32) } <= 0 {
            continue;
        }
        // SAFETY: accept on a valid listening socket with a connection ready.
        let c = unsafe { libc::accept4(lfd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC) };
        if c >= 0 {
            // SAFETY: fresh fd.
            break unsafe { OwnedFd::from_raw_fd(c) };
        }
        let e = std::io::Error::last_os_error();
        if !is_timeout(&e) {
            st.error(format!("accept on port {}: {e}", f.dport));
            return;
        }
    };
    let conn = Arc::new(conn);
    if st.server.set(conn.clone()).is_err() {
        // Another backend holds this flow's connection: one per flow.
        abortive_close(&conn);
        return;
    }
    let _ = st.server_node.set(node);
    let fd = conn.as_raw_fd();
    let _ = configure(fd, &f);
    run_app(&f, fd, false, &st, &clk);
}

/// Closes a connection with an RST (linger 0), so no orphan keeps the
/// namespace alive after the run.
pub fn abortive_close(fd: &OwnedFd) {
    let l = libc::linger { l_onoff: 1, l_linger: 0 };
    let _ = sys::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_LINGER, l, "SO_LINGER");
}

/// Ends whose results are latencies (request/response): a real-time priority (below the
/// emulator's) keeps scheduler delays on a busy machine out of it. They
/// sleep between exchanges, so this costs nobody CPU time.
fn latency_priority(f: &Flow) {
    if mplab_backend::apps::Kind::of(&f.app).timed() {
        sys::realtime_priority(5);
    }
}
