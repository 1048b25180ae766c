//! Datagram mode (`mode = "datagram"`): no connection; each packet goes
//! out on every access link over UDP behind a sequence number, and the
//! first copy to arrive is the one delivered.

use std::os::fd::AsRawFd;

use super::device::{Counts, Gateway};
use crate::apps::Clock;
use crate::sys;

/// Datagram mode: the sequence number ahead of each packet.
const DATAGRAM_HEADER: usize = 8;
/// Datagram mode: sequence numbers remembered to drop second copies.
const SEEN: usize = 1 << 16;

/// Datagram mode: each packet from the TUN goes out on every access link
/// behind a sequence number; of what arrives, the first copy of each goes
/// to the TUN.
pub(crate) fn carry(gw: &Gateway, clk: &Clock) -> Counts {
    let mut c = Counts::default();
    let mut seq = 0u64;
    let mut seen: std::collections::HashSet<u64> = Default::default();
    let mut order: std::collections::VecDeque<u64> = Default::default();
    let mut buf = vec![0u8; 65_536];
    while !clk.over() && clk.now_ns() < clk.end_ns {
        let mut p: Vec<libc::pollfd> = std::iter::once(gw.tun.raw_fd()).chain(gw.udp.iter().map(|s| s.as_raw_fd())).map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
        let _ = sys::poll_in(&mut p, clk.poll_ns.min(10_000_000));
        for _ in 0..256 {
            let n = match gw.tun.recv(&mut buf[DATAGRAM_HEADER..]) {
                Ok(Some(n)) => n,
                _ => break,
            };
            if n > gw.mtu {
                c.ingress.oversize += 1;
                continue;
            }
            buf[..DATAGRAM_HEADER].copy_from_slice(&seq.to_be_bytes());
            seq += 1;
            c.ingress.datagrams_in += 1;
            for s in &gw.udp {
                // SAFETY: valid buffer; a connected socket.
                let r = unsafe { libc::send(s.as_raw_fd(), buf.as_ptr() as *const libc::c_void, DATAGRAM_HEADER + n, libc::MSG_DONTWAIT) };
                if r > 0 {
                    // On the wire: the packet, the sequence number, UDP and IP.
                    c.ingress.frame_bytes += r as u64 + 28;
                }
            }
        }
        for s in &gw.udp {
            for _ in 0..256 {
                // SAFETY: valid buffer.
                let r = unsafe { libc::recv(s.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len(), libc::MSG_DONTWAIT) };
                if r < DATAGRAM_HEADER as isize {
                    break;
                }
                let n = u64::from_be_bytes(buf[..DATAGRAM_HEADER].try_into().unwrap_or_default());
                if !seen.insert(n) {
                    c.duplicates += 1;
                    continue;
                }
                order.push_back(n);
                if order.len() > SEEN {
                    if let Some(old) = order.pop_front() {
                        seen.remove(&old);
                    }
                }
                if gw.tun.send(&buf[DATAGRAM_HEADER..r as usize]).unwrap_or(false) {
                    c.egress_out += 1;
                }
            }
        }
    }
    c
}
