//! QUIC flows (`transport = "quic"`) on the kernel backend: the same
//! quinn-proto end as on the simulator (`mplab_backend::quic`), driven by
//! the run's clock over a kernel UDP socket in the host's namespace, with
//! the flow's stream application on top. Every loop ends at the run's
//! hard deadline or on the abort flag.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mplab_backend::apps::App as BackendApp;
use mplab_backend::quic::QuicEnd;
use mplab_proto::Instant;
use mplab_scenario::network::Flow;

use crate::apps::{progress, report, Clock, FlowState};
use crate::sys;

fn sockaddr(a: Ipv4Addr, port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in { sin_family: libc::AF_INET as u16, sin_port: port.to_be(), sin_addr: libc::in_addr { s_addr: u32::from(a).to_be() }, sin_zero: [0; 8] }
}

const SA_LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

/// Runs one end of a QUIC flow on `sock` (bound; the client's connected).
pub fn run(f: Flow, sock: OwnedFd, client: bool, seed: u64, st: Arc<FlowState>, clk: Clock) {
    let fd = sock.as_raw_fd();
    let local = if client { SocketAddr::new(f.src.into(), f.sport) } else { SocketAddr::new(f.dst.into(), f.dport) };
    let remote = SocketAddr::new(f.dst.into(), f.dport);
    let made = if client {
        if !clk.sleep_until(f.start_ns) {
            return;
        }
        QuicEnd::client(local, remote, seed, clk.now_ns())
    } else {
        QuicEnd::server(local, seed)
    };
    let mut q = match made {
        Ok(q) => q,
        Err(e) => {
            if let Ok(mut v) = st.errors.lock() {
                v.push(format!("QUIC: {e}"));
            }
            return;
        }
    };
    let stop = Instant(f.stop_ns.min(clk.end_ns));
    let mut app = BackendApp::new(mplab_backend::apps::Kind::of(&f.app), client, Some(stop));
    let mut started = false;
    let mut buf = vec![0u8; 65_536];
    while !clk.over() {
        // In: every datagram waiting.
        for _ in 0..1024 {
            let mut from = sockaddr(Ipv4Addr::UNSPECIFIED, 0);
            let mut len = SA_LEN;
            // SAFETY: valid buffer and sockaddr.
            let r = unsafe { libc::recvfrom(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT, &mut from as *mut _ as *mut libc::sockaddr, &mut len) };
            if r < 0 {
                break;
            }
            let src = SocketAddr::new(IpAddr::V4(Ipv4Addr::from(u32::from_be(from.sin_addr.s_addr))), u16::from_be(from.sin_port));
            q.on_datagram(clk.now_ns(), src, &buf[..r as usize]);
        }
        let now = clk.now_ns();
        if q.poll_timeout().is_some_and(|t| t <= now) {
            q.on_timeout(now);
        }
        if q.is_established() {
            let before = progress(&app);
            if started {
                app.pump(Instant(now), &mut q);
            } else {
                app.on_connected(Instant(now), &mut q);
                started = true;
                st.connected.store(true, Ordering::Relaxed);
            }
            report(&app, before, &st, now, &clk, f.start_ns);
        }
        // Out: everything quinn will send now (its pacing decides).
        for _ in 0..1024 {
            let Some((to, d)) = q.poll_transmit(clk.now_ns()) else { break };
            let IpAddr::V4(a) = to.ip() else { continue };
            let sa = sockaddr(a, to.port());
            // SAFETY: valid buffer and sockaddr. A full socket buffer drops
            // the datagram, which QUIC recovers like a loss.
            unsafe { libc::sendto(fd, d.as_ptr() as *const libc::c_void, d.len(), libc::MSG_DONTWAIT, &sa as *const _ as *const libc::sockaddr, SA_LEN) };
        }
        if app.is_closed() && q.peer_closed() && clk.now_ns() >= clk.end_ns {
            break;
        }
        let now = clk.now_ns();
        let wake = [q.poll_timeout(), app.poll_timer().map(|t| t.0)].into_iter().flatten().min().map_or(clk.poll_ns, |t| t.saturating_sub(now)).min(clk.poll_ns);
        let mut p = [libc::pollfd { fd, events: libc::POLLIN, revents: 0 }];
        if wake > 0 {
            let _ = sys::poll_in(&mut p, wake);
        }
    }
    if let Some(m) = q.mismatch.clone() {
        if let Ok(mut v) = st.mismatch.lock() {
            v.get_or_insert(m);
        }
    }
}
