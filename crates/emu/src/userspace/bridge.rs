//! A connection of mplab's stack handed to a program that expects a
//! socket: the hybrid-access gateway and converter programs
//! (crates/emu/src/gateway/, converter.rs), the same code the kernel
//! backend runs over Linux's MPTCP sockets.
//!
//! The program gets one end of a Unix stream socket pair; the host loop
//! ([`super::host`]) owns the other and moves bytes between it and the
//! connection ([`Bridge::pump`]): what the program writes is written into
//! the connection as far as its send buffer has room, and kept until it
//! is acknowledged; what the connection delivers in order is
//! written to the program. End of file either way becomes DATA_FIN (or
//! FIN), and a reset closes the program's end. Unlike the applications'
//! pattern bytes, these are real bytes: the frames of the tunnel, the
//! Convert messages and the relayed streams.
//!
//! Converters open and take connections at run time: an [`Exchange`]
//! carries the CPE's dials to the loop and the HAG's accepted carriers to
//! the program, each direction with an eventfd doorbell to poll.

use std::cell::Cell;
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use mplab_proto::mptcp::PayloadSource;

use super::conn::Conn;
use crate::apps::Clock;

/// Socket buffer of each side of the pair: small, so that bytes queue in
/// the stack's send buffer (where its scheduler and the tunnel's ingress
/// see them), not unseen between the program and the loop.
const PAIR_BUF: i32 = 64 * 1024;
/// Most bytes moved per read or write.
const CHUNK: usize = 64 * 1024;

/// A Unix stream socket pair: (the loop's end, non-blocking; the
/// program's end, blocking with 100 ms send and receive timeouts like the
/// kernel backend's sockets).
pub fn pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: valid array of two ints.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: two fresh fds, owned from here on.
    let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for fd in [&a, &b] {
        crate::sys::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, PAIR_BUF, "SO_SNDBUF")?;
        crate::sys::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, PAIR_BUF, "SO_RCVBUF")?;
    }
    let tv = libc::timeval { tv_sec: 0, tv_usec: 100_000 };
    crate::sys::setsockopt(b.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDTIMEO, tv, "SO_SNDTIMEO")?;
    crate::sys::setsockopt(b.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVTIMEO, tv, "SO_RCVTIMEO")?;
    // SAFETY: fcntl on a valid fd.
    unsafe { libc::fcntl(a.as_raw_fd(), libc::F_SETFL, libc::fcntl(a.as_raw_fd(), libc::F_GETFL) | libc::O_NONBLOCK) };
    Ok((a, b))
}

/// The loop's side of one bridged connection.
pub struct Bridge {
    fd: Option<OwnedFd>,
    /// Bytes written into the connection, from stream offset `kept_from`:
    /// those not yet acknowledged (the connection may ask for any of them
    /// again), dropped in batches once acknowledged.
    kept: VecDeque<u8>,
    kept_from: u64,
    /// Bytes the connection asked for that were no longer kept (zero
    /// unless the connection asks for acknowledged bytes; meta.json
    /// reports it).
    pub gone: Cell<u64>,
    /// Read from the connection, not yet taken by the program.
    pending: Vec<u8>,
    /// The program closed its side for writing (DATA_FIN sent).
    eof_in: bool,
    /// The program's side was shut for writing (the peer's DATA_FIN).
    shut_out: bool,
}

/// Acknowledged bytes are dropped once there are this many (one drain per
/// megabyte, not one per ACK).
const DROP_BATCH: u64 = 1 << 20;

impl Bridge {
    pub fn new(fd: OwnedFd) -> Bridge {
        Bridge { fd: Some(fd), kept: VecDeque::new(), kept_from: 0, gone: Cell::new(0), pending: Vec::new(), eof_in: false, shut_out: false }
    }

    /// Bytes for the connection before it sends anything (its SYN may
    /// carry them: TCP Fast Open).
    pub fn preload(&mut self, conn: &mut Conn, bytes: &[u8]) -> u64 {
        let n = conn.send(bytes.len() as u64);
        self.kept.extend(&bytes[..n as usize]);
        n
    }

    fn raw(&self) -> Option<RawFd> {
        self.fd.as_ref().map(|f| f.as_raw_fd())
    }

    /// The poll events the loop should wait for on the program's side:
    /// its bytes while the connection has room, and room for ours.
    pub fn interest(&self, conn: Option<&Conn>) -> Option<(RawFd, i16)> {
        let fd = self.raw()?;
        let mut ev = 0;
        if !self.eof_in && conn.is_some_and(|c| c.send_space() > 0) {
            ev |= libc::POLLIN;
        }
        if !self.pending.is_empty() {
            ev |= libc::POLLOUT;
        }
        Some((fd, ev))
    }

    /// Moves what can move between the program and `conn`, with the
    /// connection's in-order bytes taken by `take` (which reads them off
    /// the receive ring into the given buffer).
    pub fn pump(&mut self, conn: &mut Conn, mut take: impl FnMut(&mut Conn, u64, &mut Vec<u8>)) {
        let Some(fd) = self.raw() else { return };
        if conn.was_reset() {
            // The program sees the end at once; what it had not read is lost,
            // as with a reset socket.
            self.fd = None;
            return;
        }
        let mut buf = [0u8; CHUNK];
        // The program's bytes, as far as the send buffer has room.
        while !self.eof_in {
            let room = (conn.send_space() as usize).min(CHUNK);
            if room == 0 {
                break;
            }
            // SAFETY: valid buffer of at least `room` bytes.
            let r = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, room, libc::MSG_DONTWAIT) };
            if r > 0 {
                let n = conn.send(r as u64) as usize;
                debug_assert_eq!(n, r as usize, "the send buffer had room");
                self.kept.extend(&buf[..r as usize]);
                continue;
            }
            let again = r < 0 && matches!(io::Error::last_os_error().raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR));
            if !again {
                // End of file (or the program's end is gone): DATA_FIN.
                self.eof_in = true;
                conn.close();
            }
            break;
        }
        let acked = conn.acked_offset().min(self.kept_from + self.kept.len() as u64);
        if acked >= self.kept_from + DROP_BATCH {
            self.kept.drain(..(acked - self.kept_from) as usize);
            self.kept_from = acked;
        }
        // The connection's bytes, in order, as far as the program takes them.
        loop {
            if !self.pending.is_empty() {
                // SAFETY: valid buffer.
                let r = unsafe { libc::send(fd, self.pending.as_ptr() as *const libc::c_void, self.pending.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
                if r < 0 {
                    if !matches!(io::Error::last_os_error().raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)) {
                        // The program closed its end: nothing more to give it.
                        self.pending.clear();
                        self.shut_out = true;
                    }
                    break;
                }
                self.pending.drain(..r as usize);
                if !self.pending.is_empty() {
                    break;
                }
            }
            let n = conn.readable().min(CHUNK as u64);
            if n == 0 || self.shut_out {
                break;
            }
            take(conn, n, &mut self.pending);
        }
        if !self.shut_out && self.pending.is_empty() && conn.peer_closed() && conn.readable() == 0 {
            // SAFETY: shutdown on a valid socket.
            unsafe { libc::shutdown(fd, libc::SHUT_WR) };
            self.shut_out = true;
        }
        if self.eof_in && self.shut_out {
            self.fd = None;
        }
    }
}

impl PayloadSource for Bridge {
    fn fill(&self, off: u64, buf: &mut [u8]) {
        let end = self.kept_from + self.kept.len() as u64;
        if off < self.kept_from || off + buf.len() as u64 > end {
            self.gone.set(self.gone.get() + buf.len() as u64);
            buf.fill(0);
            return;
        }
        let start = (off - self.kept_from) as usize;
        let (a, b) = self.kept.as_slices();
        for (i, slot) in buf.iter_mut().enumerate() {
            let k = start + i;
            *slot = if k < a.len() { a[k] } else { b[k - a.len()] };
        }
    }
}

fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: no pointers.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ring(fd: &OwnedFd) {
    let one = 1u64.to_ne_bytes();
    // SAFETY: 8-byte buffer, as eventfd wants.
    unsafe { libc::write(fd.as_raw_fd(), one.as_ptr() as *const libc::c_void, 8) };
}

fn drain(fd: &OwnedFd) {
    let mut b = [0u8; 8];
    // SAFETY: 8-byte buffer.
    unsafe { libc::read(fd.as_raw_fd(), b.as_mut_ptr() as *mut libc::c_void, 8) };
}

/// A carrier the CPE's program asks for: its first bytes (the Convert
/// request, in the SYN with Fast Open), and where the answer goes (the
/// program's end, and whether the first bytes rode the SYN).
pub struct Dial {
    pub first: Vec<u8>,
    pub reply: mpsc::Sender<Option<(OwnedFd, bool)>>,
}

/// Converter carriers between a gateway's program and its host loop.
pub struct Exchange {
    /// Rung by the program: dials wait.
    to_loop: OwnedFd,
    /// Rung by the loop: accepted carriers wait.
    to_program: OwnedFd,
    dials: Mutex<VecDeque<Dial>>,
    accepted: Mutex<VecDeque<OwnedFd>>,
}

impl Exchange {
    pub fn new() -> io::Result<Exchange> {
        Ok(Exchange { to_loop: eventfd()?, to_program: eventfd()?, dials: Mutex::new(VecDeque::new()), accepted: Mutex::new(VecDeque::new()) })
    }

    /// The program: a new carrier led by `first`; None if the loop did not
    /// answer before the run ended.
    pub fn dial(&self, first: Vec<u8>, clk: &Clock) -> Option<(OwnedFd, bool)> {
        let (tx, rx) = mpsc::channel();
        self.dials.lock().ok()?.push_back(Dial { first, reply: tx });
        ring(&self.to_loop);
        while !clk.over() {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(r) => return r,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            }
        }
        None
    }

    /// The program: the next carrier the loop accepted, waiting at most
    /// `wait_ns`.
    pub fn accept(&self, wait_ns: u64) -> Option<OwnedFd> {
        if let Some(fd) = self.accepted.lock().ok()?.pop_front() {
            return Some(fd);
        }
        let mut p = [libc::pollfd { fd: self.to_program.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
        let _ = crate::sys::poll_in(&mut p, wait_ns);
        drain(&self.to_program);
        self.accepted.lock().ok()?.pop_front()
    }

    /// The loop: the doorbell it polls for dials.
    pub fn doorbell(&self) -> RawFd {
        self.to_loop.as_raw_fd()
    }

    /// The loop: the dials waiting.
    pub fn take_dials(&self) -> Vec<Dial> {
        drain(&self.to_loop);
        self.dials.lock().map(|mut q| q.drain(..).collect()).unwrap_or_default()
    }

    /// The loop: an accepted carrier's program end, for the program.
    pub fn hand_over(&self, fd: OwnedFd) {
        if let Ok(mut q) = self.accepted.lock() {
            q.push_back(fd);
        }
        ring(&self.to_program);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mplab_proto::tcp::{Connection, TcpConfig};
    use std::net::SocketAddr;

    #[test]
    fn kept_bytes_fill_by_offset_and_gone_ones_are_counted() {
        let (a, _b) = pair().unwrap();
        let mut br = Bridge::new(a);
        br.kept.extend(b"hello world");
        br.kept_from = 100;
        let mut out = [0u8; 5];
        br.fill(106, &mut out);
        assert_eq!(&out, b"world");
        br.fill(99, &mut out);
        assert_eq!(br.gone.get(), 5);
    }

    #[test]
    fn bytes_cross_both_ways_and_end_of_file_is_passed_on() {
        let (loop_end, prog) = pair().unwrap();
        let cfg = TcpConfig::default();
        let (l, r): (SocketAddr, SocketAddr) = ("10.0.0.1:1000".parse().unwrap(), "10.0.0.2:2000".parse().unwrap());
        let mut conn = Conn::Tcp { c: Box::new(Connection::connect(cfg, l, r, 1, mplab_proto::Instant(0))), local: l, remote: r };
        let mut br = Bridge::new(loop_end);
        let msg = b"frame bytes";
        // SAFETY: valid buffer.
        assert_eq!(unsafe { libc::send(prog.as_raw_fd(), msg.as_ptr() as *const libc::c_void, msg.len(), 0) }, msg.len() as isize);
        // SAFETY: shutdown on a valid socket.
        unsafe { libc::shutdown(prog.as_raw_fd(), libc::SHUT_WR) };
        br.pump(&mut conn, |_, _, _| unreachable!("nothing readable"));
        assert!(br.eof_in, "end of file seen");
        let mut out = vec![0u8; msg.len()];
        br.fill(0, &mut out);
        assert_eq!((&out[..], br.gone.get()), (&msg[..], 0));
        let Conn::Tcp { c, .. } = &conn else { unreachable!() };
        assert_eq!(c.unsent(), msg.len() as u64, "written into the connection");
    }

    #[test]
    fn exchange_hands_accepted_carriers_over() {
        let ex = Exchange::new().unwrap();
        assert!(ex.accept(1_000_000).is_none());
        let (a, _b) = pair().unwrap();
        ex.hand_over(a);
        assert!(ex.accept(1_000_000).is_some());
    }
}
