//! The datagram applications (`voip`, `game`) on kernel UDP sockets in the
//! hosts' namespaces. The application is the simulator's state machine
//! (`mplab_backend::datagram::DatagramApp`) on the run's clock: the client
//! sends on its schedule from a connected socket, the server answers (a
//! game's echo) to whoever sent last. Send and arrival times are read from
//! the run's clock, which both ends share (one monotonic clock for every
//! namespace), so one-way delays need no clock synchronisation. Every loop
//! ends at the scenario's duration or on the abort flag.

use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mplab_backend::datagram::DatagramApp;
use mplab_proto::Instant;
use mplab_scenario::network::Flow;

use crate::apps::{Clock, FlowState};
use crate::sys;

fn sockaddr(a: Ipv4Addr, port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in { sin_family: libc::AF_INET as u16, sin_port: port.to_be(), sin_addr: libc::in_addr { s_addr: u32::from(a).to_be() }, sin_zero: [0; 8] }
}

const SA_LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

/// A UDP socket in namespace `ns`, bound to `local`, connected to `peer`
/// when given (the client: its datagrams go there, and only the peer's
/// come back).
pub fn socket(ns: &str, local: (Ipv4Addr, u16), peer: Option<(Ipv4Addr, u16)>) -> std::io::Result<OwnedFd> {
    sys::in_netns(ns, move || {
        // SAFETY: plain socket call.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, libc::IPPROTO_UDP) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fresh fd.
        let s = unsafe { OwnedFd::from_raw_fd(fd) };
        // A voice call's burst after an outage must not be dropped by a
        // small default socket buffer before the application reads it.
        sys::setsockopt(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, 1 << 20, "SO_RCVBUF")?;
        let sa = sockaddr(local.0, local.1);
        // SAFETY: valid sockaddr.
        if unsafe { libc::bind(s.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, SA_LEN) } < 0 {
            let e = std::io::Error::last_os_error();
            return Err(std::io::Error::new(e.kind(), format!("bind {}:{}: {e}", local.0, local.1)));
        }
        if let Some((a, p)) = peer {
            let sa = sockaddr(a, p);
            // SAFETY: valid sockaddr.
            if unsafe { libc::connect(s.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, SA_LEN) } < 0 {
                let e = std::io::Error::last_os_error();
                return Err(std::io::Error::new(e.kind(), format!("connect {a}:{p}: {e}")));
            }
        }
        Ok(s)
    })
}

/// Runs one end of a datagram flow until the end of the scenario, then
/// leaves its application (what it sent and received) in the flow's state.
pub fn run(f: Flow, sock: OwnedFd, client: bool, st: Arc<FlowState>, clk: Clock) {
    // Send and arrival times are measured here: a real-time priority (below
    // the emulator's) keeps scheduling delays of a busy machine out of them.
    sys::realtime_priority(5);
    let stop = Instant(f.stop_ns.min(clk.end_ns));
    let Some(mut app) = DatagramApp::new(&f.app, client, Instant(f.start_ns), stop) else { return };
    let fd = sock.as_raw_fd();
    let mut peer: Option<libc::sockaddr_in> = None;
    let mut buf = vec![0u8; 65_536];
    let mut refused = 0u64;
    if !clk.wait_start() {
        return;
    }
    while !clk.over() && clk.now_ns() < clk.end_ns {
        app.on_timer(Instant(clk.now_ns()));
        if client || peer.is_some() {
            flush(&mut app, fd, if client { None } else { peer.as_ref() }, &f, &st, &mut refused);
        }
        let wait = app.poll_timer().map_or(clk.poll_ns, |t| t.0.saturating_sub(clk.now_ns())).min(clk.poll_ns).min(clk.end_ns.saturating_sub(clk.now_ns()));
        let mut p = [libc::pollfd { fd, events: libc::POLLIN, revents: 0 }];
        if wait > 0 {
            let _ = sys::poll_in(&mut p, wait);
        }
        let before = app.delivered();
        // Bounded: at most what arrived since the last look.
        for _ in 0..10_000 {
            let mut from = sockaddr(Ipv4Addr::UNSPECIFIED, 0);
            let mut len = SA_LEN;
            // SAFETY: valid buffer and sockaddr.
            let r = unsafe { libc::recvfrom(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT, &mut from as *mut _ as *mut libc::sockaddr, &mut len) };
            if r < 0 {
                break;
            }
            app.on_datagram(Instant(clk.now_ns()), &buf[..r as usize]);
            peer = Some(from);
        }
        if !client {
            st.delivered.fetch_add(app.delivered() - before, Ordering::Relaxed);
        }
        // A game's echoes leave at once.
        if client || peer.is_some() {
            flush(&mut app, fd, if client { None } else { peer.as_ref() }, &f, &st, &mut refused);
        }
    }
    if refused > 0 {
        if let Ok(mut v) = st.errors.lock() {
            v.push(format!("{refused} datagrams refused (ICMP port unreachable) on port {}", f.sport));
        }
    }
    if let Ok(mut ends) = st.datagram_ends.lock() {
        ends[usize::from(!client)] = Some(app);
    }
}

/// Sends what the application has queued: on the connected socket
/// (`to` None, the client) or to `to` (the server's last sender).
fn flush(app: &mut DatagramApp, fd: std::os::fd::RawFd, to: Option<&libc::sockaddr_in>, f: &Flow, st: &FlowState, refused: &mut u64) {
    while let Some(d) = app.poll_transmit() {
        // SAFETY: valid buffer; a valid sockaddr when given.
        let r = unsafe {
            match to {
                None => libc::send(fd, d.as_ptr() as *const libc::c_void, d.len(), libc::MSG_DONTWAIT),
                Some(p) => libc::sendto(fd, d.as_ptr() as *const libc::c_void, d.len(), libc::MSG_DONTWAIT, p as *const _ as *const libc::sockaddr, SA_LEN),
            }
        };
        if r < 0 {
            // A datagram that cannot leave is lost, as on a real host: an
            // ICMP port unreachable from a server not yet up (ECONNREFUSED),
            // or a full queue. Others are noted.
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::ECONNREFUSED) => *refused += 1,
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) => {}
                _ => {
                    if let Ok(mut v) = st.errors.lock() {
                        if v.len() < 8 {
                            v.push(format!("send on port {}: {e}", f.sport));
                        }
                    }
                }
            }
        }
    }
}
