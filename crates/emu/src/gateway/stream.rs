//! Stream mode over a socket: frames in the byte stream of the flow's
//! kernel MPTCP or TCP connection, or of mplab's stack bridged in.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mplab_scenario::network::Flow;
use mplab_wire::tunnel::{encode_frame, FrameDecoder};

use super::device::{nodelay, Counts, Gateway};
use super::stall::StallWatch;
use crate::apps::{Clock, FlowState};
use crate::sys;

/// Stream mode: frames in the connection's byte stream.
pub(crate) fn carry(gw: &Gateway, fd: RawFd, st: &FlowState, clk: &Clock) -> Counts {
    let mut c = Counts::default();
    let mut dec = FrameDecoder::new(gw.mtu);
    let mut pkt = vec![0u8; 65_536];
    let mut rx = vec![0u8; 65_536];
    // A frame the socket took in part: the rest, before anything else.
    let mut out: Vec<u8> = Vec::new();
    let mut sent = 0usize;
    let mut broken: Option<&'static str> = None;
    let mut watch = StallWatch::new();
    let mut written = 0u64;
    while broken.is_none() && !clk.over() && clk.now_ns() < clk.end_ns {
        let mut p = [libc::pollfd { fd, events: libc::POLLIN | if sent < out.len() { libc::POLLOUT } else { 0 }, revents: 0 }, libc::pollfd { fd: gw.tun.raw_fd(), events: if sent < out.len() { 0 } else { libc::POLLIN }, revents: 0 }];
        let _ = sys::poll_in(&mut p, clk.poll_ns.min(10_000_000));
        // Ingress: from the TUN into the stream, while the socket takes it.
        for _ in 0..256 {
            if sent < out.len() {
                match send(fd, &out[sent..]) {
                    Some(n) => {
                        sent += n;
                        written += n as u64;
                    }
                    None => {
                        broken = Some("the tunnel's connection broke (send)");
                        break;
                    }
                }
                if sent < out.len() {
                    break;
                }
            }
            out.clear();
            sent = 0;
            let n = match gw.tun.recv(&mut pkt) {
                Ok(Some(n)) => n,
                _ => break,
            };
            if encode_frame(&pkt[..n], gw.mtu, &mut out).is_err() {
                c.ingress.oversize += 1;
                continue;
            }
            c.ingress.datagrams_in += 1;
            c.ingress.frame_bytes += out.len() as u64;
        }
        if !gw.bridged {
            watch.sample(fd, written, clk.now_ns());
        }
        // Egress: whole frames out of the stream, onto the TUN.
        for _ in 0..64 {
            // SAFETY: valid buffer.
            let r = unsafe { libc::recv(fd, rx.as_mut_ptr() as *mut libc::c_void, rx.len(), libc::MSG_DONTWAIT) };
            if r == 0 {
                broken = Some("the other gateway closed the tunnel");
                break;
            }
            if r < 0 {
                break;
            }
            if clk.now_ns() <= clk.end_ns {
                st.delivered.fetch_add(r as u64, Ordering::Relaxed);
            }
            dec.push(&rx[..r as usize]);
            while let Some(d) = dec.next_frame() {
                // A frame the decoder refused is counted by it; the stream
                // stays in step.
                if let Ok(d) = d {
                    if gw.tun.send(&d).unwrap_or(false) {
                        c.egress_out += 1;
                    }
                }
            }
        }
    }
    if let Some(why) = watch.stalled(clk.now_ns()) {
        st.errors.lock().map(|mut v| v.push(why)).ok();
    }
    if let Some(why) = broken {
        st.errors.lock().map(|mut v| v.push(why.to_string())).ok();
    }
    c
}

/// The tunnel's connection: the CPE connects at the flow's start, the HAG
/// accepts it.
pub(crate) fn open(f: &Flow, gw: &Gateway, st: &FlowState, clk: &Clock) -> Option<Arc<OwnedFd>> {
    let fd = gw.sock.as_raw_fd();
    if gw.bridged {
        // The host loop connects (or accepts) at the flow's start; frames
        // written earlier wait in the socket pair.
        if !clk.sleep_until(if gw.end == 0 { f.start_ns } else { 0 }) {
            return None;
        }
        // SAFETY: dup of a valid fd, owned by the new OwnedFd.
        return Some(Arc::new(unsafe { OwnedFd::from_raw_fd(libc::dup(fd)) }));
    }
    if gw.end == 0 {
        if !clk.sleep_until(f.start_ns) {
            return None;
        }
        let sa = libc::sockaddr_in { sin_family: libc::AF_INET as u16, sin_port: f.dport.to_be(), sin_addr: libc::in_addr { s_addr: u32::from(f.dst).to_be() }, sin_zero: [0; 8] };
        // Blocking connect bounded by the socket's SO_SNDTIMEO (100 ms),
        // retried until the flow's stop.
        loop {
            // SAFETY: valid sockaddr.
            let r = unsafe { libc::connect(fd, &sa as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_in>() as u32) };
            let e = std::io::Error::last_os_error();
            if r == 0 || e.raw_os_error() == Some(libc::EISCONN) {
                break;
            }
            if clk.over() || clk.now_ns() >= f.stop_ns {
                st.errors.lock().map(|mut v| v.push(format!("tunnel connect {}:{}: {e}", f.dst, f.dport))).ok();
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // SAFETY: dup of a valid fd, owned by the new OwnedFd.
        let c = Arc::new(unsafe { OwnedFd::from_raw_fd(libc::dup(fd)) });
        let _ = st.client.set(c.clone());
        st.connected.store(true, Ordering::Relaxed);
        Some(c)
    } else {
        loop {
            if clk.over() {
                return None;
            }
            let mut p = [libc::pollfd { fd, events: libc::POLLIN, revents: 0 }];
            if sys::poll_in(&mut p, 50_000_000).unwrap_or(0) == 0 {
                continue;
            }
            // SAFETY: accept on a listening socket with a connection ready.
            let c = unsafe { libc::accept4(fd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC) };
            if c >= 0 {
                // SAFETY: fresh fd.
                let c = Arc::new(unsafe { OwnedFd::from_raw_fd(c) });
                let _ = nodelay(c.as_raw_fd());
                let _ = st.server.set(c.clone());
                return Some(c);
            }
        }
    }
}

/// Writes what the socket takes now; None on a broken connection.
fn send(fd: RawFd, b: &[u8]) -> Option<usize> {
    // SAFETY: valid buffer.
    let r = unsafe { libc::send(fd, b.as_ptr() as *const libc::c_void, b.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
    if r >= 0 {
        return Some(r as usize);
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EINTR) => Some(0),
        _ => None,
    }
}
