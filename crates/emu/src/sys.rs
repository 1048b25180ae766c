//! Thin, checked wrappers around the Linux calls the kernel backend needs:
//! entering a network namespace, commands with their errors, AF_PACKET
//! sockets, ethtool offloads, socket options.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Where `ip netns add NAME` puts the namespace handle.
pub fn netns_path(name: &str) -> PathBuf {
    PathBuf::from("/run/netns").join(name)
}

/// Moves the *calling thread* into the named network namespace.
pub fn enter_netns(name: &str) -> io::Result<()> {
    let f = File::open(netns_path(name)).map_err(|e| io::Error::new(e.kind(), format!("open netns {name}: {e}")))?;
    // SAFETY: setns on a valid fd; it only changes this thread's namespace.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("setns into {name}: {e}")));
    }
    Ok(())
}

/// Runs `f` on a fresh thread inside namespace `ns` and returns its result.
/// Sockets created there stay in that namespace after the thread is gone,
/// so this is how every socket of the backend is created.
pub fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> io::Result<T> + Send + 'static) -> io::Result<T> {
    let ns = ns.to_string();
    std::thread::Builder::new()
        .name("mplab-netns".into())
        .spawn(move || {
            enter_netns(&ns)?;
            f()
        })?
        .join()
        .map_err(|_| io::Error::other("namespace helper thread panicked"))?
}

/// Raises this process's open-file limit as far as the system allows
/// (root may lift the hard limit up to fs.nr_open without a container's
/// restrictions; else the soft limit goes up to the hard one); best effort.
pub fn raise_nofile() {
    let ceiling: u64 = std::fs::read_to_string("/proc/sys/fs/nr_open").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(1 << 20);
    let want = ceiling.min(1 << 20);
    let mut cur = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut cur) != 0 || cur.rlim_cur >= want as libc::rlim_t {
            return;
        }
        let lifted = libc::rlimit { rlim_cur: want as libc::rlim_t, rlim_max: (want as libc::rlim_t).max(cur.rlim_max) };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &lifted) != 0 {
            let soft = libc::rlimit { rlim_cur: cur.rlim_max, rlim_max: cur.rlim_max };
            libc::setrlimit(libc::RLIMIT_NOFILE, &soft);
        }
    }
}

pub fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// How long a configuration command (`ip`, `nft`, `tc`) may take. They
/// answer in milliseconds; one that does not answer in a minute waits on a
/// kernel lock that a stuck task holds, and the run must say so rather than
/// hang (docs/soak.md: an oops left `ip mptcp` blocked forever).
pub const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// Runs `cmd` with `stdin` (if any) to completion within `limit` and returns
/// its output; past the limit the command is killed (a task in
/// uninterruptible sleep stays, its pipes' readers detached) and the error
/// says it did not answer.
pub fn output_within(cmd: &mut Command, stdin: Option<&[u8]>, limit: Duration) -> Result<std::process::Output, String> {
    use std::io::Read;
    let what = format!("{:?}", cmd.get_program()).trim_matches('"').to_string();
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() }).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {what}: {e}"))?;
    if let (Some(mut i), Some(text)) = (child.stdin.take(), stdin) {
        // The command may exit early without reading: its error tells why.
        let _ = i.write_all(text);
    }
    let pipe = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            v
        })
    };
    let out = pipe(child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let err = pipe(child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let end = std::time::Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let stdout = out.join().unwrap_or_default();
                let stderr = err.join().unwrap_or_default();
                return Ok(std::process::Output { status, stdout, stderr });
            }
            Ok(None) if std::time::Instant::now() < end => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                return Err(format!("{what} did not answer within {} s (killed)", limit.as_secs()));
            }
            Err(e) => return Err(format!("{what}: {e}")),
        }
    }
}

/// Whether the kernel's MPTCP path manager answers `ip mptcp limits show`
/// within `limit`: the netlink family's one mutex is held forever when a
/// task died holding an MPTCP socket lock (an oops), and every later
/// `ip mptcp` would block.
pub fn mptcp_pm_answers(limit: Duration) -> Result<(), String> {
    match output_within(Command::new("ip").args(["mptcp", "limits", "show"]), None, limit) {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("`ip mptcp limits show` failed: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(_) => Err(format!(
            "the kernel's MPTCP path manager does not answer (`ip mptcp limits show` took over {} s): a stuck task holds it (see `dmesg` for an oops); only a reboot frees it",
            limit.as_secs()
        )),
    }
}

/// Runs a command and returns its stdout; the error names the command line
/// and carries its stderr.
pub fn run(args: &[&str]) -> Result<String, String> {
    let line = args.join(" ");
    let out = output_within(Command::new(args[0]).args(&args[1..]), None, COMMAND_LIMIT).map_err(|e| format!("`{line}`: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("`{line}` failed ({}): {}", out.status, err.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Writes a sysctl of the calling thread's namespace (`net/ipv4/ip_forward`)
/// and reads it back.
pub fn sysctl_write(key: &str, value: &str) -> io::Result<()> {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    std::fs::write(&path, value).map_err(|e| io::Error::new(e.kind(), format!("sysctl {key}={value}: {e}")))?;
    let got = std::fs::read_to_string(&path)?;
    if got.split_whitespace().collect::<Vec<_>>() != value.split_whitespace().collect::<Vec<_>>() {
        return Err(io::Error::other(format!("sysctl {key}={value}: reads back {:?}", got.trim())));
    }
    Ok(())
}

pub fn sysctl_read(key: &str) -> io::Result<String> {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    Ok(std::fs::read_to_string(path)?.trim().to_string())
}

fn cvt(r: libc::c_int, what: &str) -> io::Result<libc::c_int> {
    if r < 0 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(r)
    }
}

/// `setsockopt` with a plain value.
pub fn setsockopt<T: Copy>(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: T, what: &str) -> io::Result<()> {
    // SAFETY: the pointer and size describe `v`.
    let r = unsafe { libc::setsockopt(fd, level, opt, &v as *const T as *const libc::c_void, std::mem::size_of::<T>() as libc::socklen_t) };
    cvt(r, what).map(|_| ())
}

pub fn setsockopt_bytes(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: &[u8], what: &str) -> io::Result<()> {
    // SAFETY: the pointer and size describe `v`.
    let r = unsafe { libc::setsockopt(fd, level, opt, v.as_ptr() as *const libc::c_void, v.len() as libc::socklen_t) };
    cvt(r, what).map(|_| ())
}

/// `getsockopt` into `buf`; returns the length the kernel wrote.
pub fn getsockopt_buf(fd: RawFd, level: libc::c_int, opt: libc::c_int, buf: &mut [u8]) -> io::Result<usize> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is valid for len bytes.
    let r = unsafe { libc::getsockopt(fd, level, opt, buf.as_mut_ptr() as *mut libc::c_void, &mut len) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(len as usize)
}

pub fn getsockopt_int(fd: RawFd, level: libc::c_int, opt: libc::c_int) -> io::Result<i32> {
    let mut b = [0u8; 4];
    getsockopt_buf(fd, level, opt, &mut b)?;
    Ok(i32::from_ne_bytes(b))
}

/// Interface index of `name` in the calling thread's namespace.
pub fn ifindex(name: &str) -> io::Result<i32> {
    let c = CString::new(name).map_err(|_| io::Error::other("bad interface name"))?;
    // SAFETY: valid C string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("interface {name}: {e}")));
    }
    Ok(i as i32)
}

pub const ETH_P_ALL: u16 = 0x0003;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// A raw AF_PACKET socket bound to `ifname` (calling thread's namespace),
/// non-blocking. `outgoing`: also see frames this host sends (captures);
/// the emulator ignores them (its own transmissions).
pub fn packet_socket(ifname: &str, outgoing: bool, bufsize: i32) -> io::Result<OwnedFd> {
    let idx = ifindex(ifname)?;
    // SAFETY: plain socket call.
    let fd = cvt(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, i32::from(ETH_P_ALL.to_be())) }, "socket(AF_PACKET)")?;
    // SAFETY: fd is a fresh socket we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let raw = fd.as_raw_fd();
    if !outgoing {
        setsockopt(raw, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1i32, "SO_TIMESTAMPNS")?;
        setsockopt(raw, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1i32, "PACKET_IGNORE_OUTGOING")?;
        setsockopt(raw, libc::SOL_PACKET, PACKET_QDISC_BYPASS, 1i32, "PACKET_QDISC_BYPASS")?;
    }
    // Root may exceed rmem_max/wmem_max; fall back to the ordinary options.
    if setsockopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, bufsize, "SO_RCVBUFFORCE").is_err() {
        setsockopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, bufsize, "SO_RCVBUF")?;
    }
    if setsockopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, bufsize, "SO_SNDBUFFORCE").is_err() {
        setsockopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUF, bufsize, "SO_SNDBUF")?;
    }
    // SAFETY: zeroed sockaddr_ll is valid; we fill the fields we need.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETH_P_ALL.to_be();
    sll.sll_ifindex = idx;
    // SAFETY: sll is a valid sockaddr_ll.
    let r = unsafe { libc::bind(raw, &sll as *const libc::sockaddr_ll as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t) };
    cvt(r, &format!("bind AF_PACKET to {ifname}"))?;
    Ok(fd)
}

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_SGRO: u32 = 0x2c;

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

#[repr(C)]
struct IfreqData {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

/// `ethtool -K IF tso off gso off gro off tx off` through the legacy
/// ETHTOOL ioctls, in the calling thread's namespace. Per-packet behaviour
/// of the emulator needs all of them off (and AF_PACKET relays need real
/// checksums in the frames).
pub fn offloads_off(ifname: &str) -> io::Result<()> {
    // SAFETY: plain socket call.
    let s = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) }, "socket for ethtool")?;
    // SAFETY: fresh fd we own.
    let s = unsafe { OwnedFd::from_raw_fd(s) };
    for (cmd, what) in [(ETHTOOL_STSO, "tso"), (ETHTOOL_SGSO, "gso"), (ETHTOOL_SGRO, "gro"), (ETHTOOL_STXCSUM, "tx")] {
        let mut v = EthtoolValue { cmd, data: 0 };
        let mut ifr = IfreqData { name: [0; libc::IFNAMSIZ], data: &mut v as *mut EthtoolValue as *mut libc::c_void, _pad: [0; 16] };
        for (d, b) in ifr.name.iter_mut().zip(ifname.bytes().take(libc::IFNAMSIZ - 1)) {
            *d = b as libc::c_char;
        }
        // SAFETY: ifr points at a valid ethtool_value for the duration of the call.
        let r = unsafe { libc::ioctl(s.as_raw_fd(), SIOCETHTOOL as _, &mut ifr) };
        cvt(r, &format!("ethtool -K {ifname} {what} off"))?;
    }
    Ok(())
}

/// Lets a thread's timers fire within a nanosecond of their deadline
/// instead of the default 50 us slack.
pub fn tight_timer_slack() {
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Nanoseconds of CLOCK_REALTIME (pcap timestamps are converted from it).
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time the calling thread has used, user and system (ns).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `ppoll` on `fds` (all for POLLIN) for at most `timeout_ns`.
pub fn poll_in(fds: &mut [libc::pollfd], timeout_ns: u64) -> io::Result<usize> {
    let ts = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t, tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long };
    // SAFETY: fds is a valid slice of pollfd; ts valid.
    let r = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

/// Gives the calling thread a real-time priority (SCHED_FIFO) if allowed,
/// so application threads on the same cores cannot delay the emulator's
/// deadlines. Best effort: returns whether it worked.
pub fn realtime_priority(prio: i32) -> bool {
    let p = libc::sched_param { sched_priority: prio };
    // SAFETY: valid sched_param; 0 = this thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

const PACKET_RX_RING: libc::c_int = 5;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_STATISTICS: libc::c_int = 6;
const TPACKET_V2: libc::c_int = 1;
/// `tp_status` bits of a ring frame.
pub const TP_STATUS_USER: u32 = 1;
pub const TP_STATUS_COPY: u32 = 2;

/// A TPACKET_V2 receive ring of an AF_PACKET socket, mapped into this
/// process. V2 hands over frame by frame (`tp_status`), so a frame is
/// readable as soon as the kernel wrote it; TPACKET_V3 hands over whole
/// blocks, retired when full or after a timeout of at least 1 ms, a delay
/// the emulator would add to every frame at low rates.
pub struct RxRing {
    base: *mut u8,
    len: usize,
    frame_size: usize,
    frames_per_block: usize,
    block_size: usize,
    frames: usize,
    head: usize,
}

// SAFETY: the mapping is owned by the ring and used by one thread at a time.
unsafe impl Send for RxRing {}

/// One received frame in the ring (valid until [`RxRing::release`]).
pub struct RingFrame<'a> {
    pub data: &'a [u8],
    /// Original length on the wire (may exceed `data` when truncated).
    pub len: usize,
    /// Kernel receive timestamp, CLOCK_REALTIME ns.
    pub realtime_ns: u64,
}

impl RxRing {
    fn status(&self, i: usize) -> &std::sync::atomic::AtomicU32 {
        let off = (i / self.frames_per_block) * self.block_size + (i % self.frames_per_block) * self.frame_size;
        // SAFETY: off is the start of frame i inside the mapping; tp_status
        // is its first, 4-byte aligned field, shared with the kernel.
        unsafe { &*(self.base.add(off) as *const std::sync::atomic::AtomicU32) }
    }

    /// The frame at the head of the ring if the kernel has handed it over.
    pub fn peek(&self) -> Option<RingFrame<'_>> {
        let st = self.status(self.head).load(std::sync::atomic::Ordering::Acquire);
        if st & TP_STATUS_USER == 0 {
            return None;
        }
        let off = (self.head / self.frames_per_block) * self.block_size + (self.head % self.frames_per_block) * self.frame_size;
        // SAFETY: the kernel owns no frame marked USER; the header fields
        // (struct tpacket2_hdr) and the data lie inside the frame.
        unsafe {
            let h = self.base.add(off);
            let rd32 = |o: usize| std::ptr::read(h.add(o) as *const u32);
            let len = rd32(4) as usize;
            let snap = rd32(8) as usize;
            let mac = std::ptr::read(h.add(12) as *const u16) as usize;
            let (sec, nsec) = (rd32(16), rd32(20));
            let snap = snap.min(self.frame_size.saturating_sub(mac));
            Some(RingFrame { data: std::slice::from_raw_parts(h.add(mac), snap), len, realtime_ns: u64::from(sec) * 1_000_000_000 + u64::from(nsec) })
        }
    }

    /// Gives the head frame back to the kernel and moves on.
    pub fn release(&mut self) {
        self.status(self.head).store(0, std::sync::atomic::Ordering::Release);
        self.head = (self.head + 1) % self.frames;
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: base/len are the mapping made in packet_ring_socket.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

/// Frames the kernel dropped on a packet socket since the last call
/// (ring or queue full), from PACKET_STATISTICS.
pub fn packet_drops(fd: RawFd) -> u64 {
    let mut b = [0u8; 8];
    getsockopt_buf(fd, libc::SOL_PACKET, PACKET_STATISTICS, &mut b).map(|_| u64::from(u32::from_ne_bytes(b[4..8].try_into().unwrap()))).unwrap_or(0)
}

/// Like [`packet_socket`] (non-blocking, own transmissions ignored, qdisc
/// bypassed on send) with a TPACKET_V2 receive ring of about `ring_bytes`
/// whose frames hold `max_frame` bytes of packet. The ring is set up
/// before the bind so no frame lands in the ordinary queue.
pub fn packet_ring_socket(ifname: &str, max_frame: usize, ring_bytes: usize, sndbuf: i32) -> io::Result<(OwnedFd, RxRing)> {
    let idx = ifindex(ifname)?;
    // SAFETY: plain socket call; protocol 0 receives nothing until the bind.
    let fd = cvt(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) }, "socket(AF_PACKET)")?;
    // SAFETY: fd is a fresh socket we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let raw = fd.as_raw_fd();
    setsockopt(raw, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1i32, "PACKET_IGNORE_OUTGOING")?;
    setsockopt(raw, libc::SOL_PACKET, PACKET_QDISC_BYPASS, 1i32, "PACKET_QDISC_BYPASS")?;
    if setsockopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, sndbuf, "SO_SNDBUFFORCE").is_err() {
        setsockopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUF, sndbuf, "SO_SNDBUF")?;
    }
    setsockopt(raw, libc::SOL_PACKET, PACKET_VERSION, TPACKET_V2, "PACKET_VERSION")?;
    // Header (tpacket2_hdr + sockaddr_ll, aligned) and the frame in one
    // power-of-two slot; 64 KB blocks (order-4 pages, easy to allocate).
    let frame_size = (max_frame + 128).next_power_of_two().max(2048);
    let block_size = frame_size.max(1 << 16);
    let block_nr = (ring_bytes / block_size).max(2);
    let frames_per_block = block_size / frame_size;
    let req: [u32; 4] = [block_size as u32, block_nr as u32, frame_size as u32, (block_nr * frames_per_block) as u32];
    setsockopt(raw, libc::SOL_PACKET, PACKET_RX_RING, req, "PACKET_RX_RING")?;
    let len = block_size * block_nr;
    // SAFETY: mapping the ring the kernel just allocated for this socket.
    let base = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_POPULATE, raw, 0) };
    if base == libc::MAP_FAILED {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("mmap of the packet ring on {ifname}: {e}")));
    }
    let ring = RxRing { base: base as *mut u8, len, frame_size, frames_per_block, block_size, frames: block_nr * frames_per_block, head: 0 };
    // SAFETY: zeroed sockaddr_ll is valid; we fill the fields we need.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETH_P_ALL.to_be();
    sll.sll_ifindex = idx;
    // SAFETY: sll is a valid sockaddr_ll.
    let r = unsafe { libc::bind(raw, &sll as *const libc::sockaddr_ll as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t) };
    cvt(r, &format!("bind AF_PACKET to {ifname}"))?;
    Ok((fd, ring))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_bounded_in_time() {
        let e = output_within(Command::new("sleep").arg("30"), None, Duration::from_millis(300)).unwrap_err();
        assert!(e.contains("did not answer within"), "{e}");
        let o = output_within(&mut Command::new("cat"), Some(b"abc"), Duration::from_secs(30)).unwrap();
        assert_eq!((o.status.success(), o.stdout.as_slice()), (true, &b"abc"[..]));
        let e = run(&["sh", "-c", "echo bad >&2; exit 3"]).unwrap_err();
        assert!(e.contains("bad") && e.contains("sh -c"), "{e}");
        assert!(run(&["/nonexistent-mplab-cmd"]).unwrap_err().contains("cannot run"));
    }
}
